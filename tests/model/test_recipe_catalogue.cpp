// The Bridge recipe catalogue: every recipe either predicts on its GPU and world size with the layout,
// precision and recompute settings the recipe assigns (configs/recipes/<name>.json, traced from the
// pinned code), or is refused with a reason that names what peakcast does not simulate.
#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "peakcast/model/recipes.hpp"
#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/validate.hpp"
#include "peakcast/sim/catalogue.hpp"

using namespace peakcast;

namespace {
nlohmann::json recipe_file(const std::string& name) {
  std::ifstream in(std::string(PEAKCAST_SOURCE_DIR) + "/configs/recipes/" + name + ".json");
  return nlohmann::json::parse(in);
}
}  // namespace

TEST_CASE("every catalogue recipe predicts or names why not", "[model][recipes]") {
  const std::set<std::string> reasons = {"recipe_hf_config_missing", "recipe_model_not_simulated", "peft_not_simulated",
                                         "hf_unknown_architecture", "recipe_vocab_unknown", "bridge_gpu_unknown",
                                         "value_out_of_range", "layers_divisible_by_pp", "moe_tp_needs_sequence_parallel",
                                         "bridge_world_size_unknown", "fsdp_not_simulated",
                                         // Gemma 2's attention raises on the packed batches its SFT / PEFT recipes build
                                         "gemma2_attention_packed_sequence",
                                         // as EXAONE 4's DotProductAttention (exaone4_layer_spec) does on its SFT / PEFT recipes'
                                         "dot_product_attention_packed_sequence",
                                         // DeepSeek-V4's dsv4_hybrid attention, mHC and hash routing: Megatron-LM dev's, not the pin's
                                         "dsv4_hybrid_not_in_pinned_megatron"};
  const auto rows = sim::predict_catalogue();
  REQUIRE(rows.size() == model::recipe_catalogue().size());
  int predicted = 0;
  for (const auto& r : rows) {
    INFO(r.recipe.name << ": [" << r.error_rule << "] " << r.error);
    if (!r.predicted) {
      CHECK(reasons.count(r.error_rule) == 1);
      continue;
    }
    ++predicted;
    CHECK(r.max_peak.value > 0);
  }
  // What this revision of the catalogue covers (docs/recipes.md lists each one).
  CHECK(predicted >= 160);
}

TEST_CASE("a predicted recipe runs with the recipe's own layout, precision and recompute", "[model][recipes]") {
  for (const auto& info : model::recipe_catalogue()) {
    const auto parsed = model::parse_spec_input("bridge:" + info.name, "", {});
    if (!parsed.spec) continue;
    INFO(info.name);
    const auto recipe = recipe_file(info.name);
    const auto& m = recipe["config"]["model"];
    const auto& s = parsed.spec->model;
    const auto check_int = [&](const char* key, std::int64_t value) {
      if (m.contains(key) && m[key].is_number_integer()) CHECK(m[key].get<std::int64_t>() == value);
    };
    check_int("tensor_model_parallel_size", s.tensor_model_parallel_size);
    check_int("pipeline_model_parallel_size", s.pipeline_model_parallel_size);
    check_int("context_parallel_size", s.context_parallel_size);
    check_int("expert_model_parallel_size", s.expert_model_parallel_size);
    CHECK(parsed.spec->cluster.num_gpus == info.num_gpus);
    const auto& train = recipe["config"]["train"];
    if (train.contains("micro_batch_size")) CHECK(train["micro_batch_size"].get<std::int64_t>() == parsed.spec->train.micro_batch_size);
    if (train.contains("global_batch_size")) CHECK(train["global_batch_size"].get<std::int64_t>() == parsed.spec->train.global_batch_size);
    // Precision is the mixed-precision section's (MixedPrecisionConfig.setup copies it onto the model).
    const auto& mp = recipe["config"]["mixed_precision"];
    if (mp.is_object() && mp.contains("bf16")) CHECK(mp["bf16"].get<bool>() == s.bf16);
    if (mp.is_object() && mp.value("_preset", std::string()).find("fp8") != std::string::npos) CHECK(s.fp8.has_value());
    if (m.contains("recompute_granularity")) {
      const auto& g = m["recompute_granularity"];
      const auto want = g.is_null()   ? model::RecomputeGranularity::none
                        : g == "full" ? model::RecomputeGranularity::full
                                      : model::RecomputeGranularity::selective;
      CHECK(want == s.recompute_granularity);
    }
  }
}

TEST_CASE("a recipe Megatron cannot build says which split it can, and predicts with it", "[model][recipes]") {
  // GLM-4.5-Air: 46 layers (zai-org/GLM-4.5-Air num_hidden_layers) over the recipe's PP 4
  // (bridge:src/megatron/bridge/recipes/glm/h100/glm45.py:180) do not split evenly, which
  // get_num_layers_to_build asserts (transformer_block.py:151). The last stage taking 10 leaves
  // 36 = 3 x 12 for the other three, the split closest to 46 / 4.
  const std::string name = "bridge:glm45_air_106b_pretrain_32gpu_h100_bf16_config";
  const auto parsed = model::parse_spec_input(name, "", {});
  REQUIRE(parsed.spec);
  bool named = false;
  for (const auto& d : model::validate(*parsed.spec))
    named = named || (d.rule == "layers_divisible_by_pp" && d.message.find("num_layers_in_last_pipeline_stage=10 (3 stages of 12)") != std::string::npos);
  CHECK(named);
  const auto split = model::parse_spec_input(name, "", {"model.num_layers_in_last_pipeline_stage=10"});
  REQUIRE(split.spec);
  const auto diagnostics = model::validate(*split.spec);
  for (const auto& d : diagnostics) UNSCOPED_INFO(model::format(d));
  CHECK_FALSE(model::has_errors(diagnostics));
  CHECK(split.spec->model.pipeline_model_parallel_size == 4);
  CHECK(split.spec->model.expert_model_parallel_size == 8);
}
