// OLMoE (Bridge olmoe_layer_spec): q and k normalized over all heads' channels. Expected bytes come
// from the shapes of OLMoESelfAttention.get_query_key_value_tensors (olmoe_provider.py:168-186):
// the query and key reshaped to [s, b, heads x hd] are copies, which the norms save with one
// statistic a token, where Megatron's per-head norms save views of the fused QKV output and one
// statistic a head and token.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>

#include "held_tensors.hpp"
#include "peakcast/model/static_memory.hpp"

using namespace peakcast;
using nlohmann::json;

namespace {
constexpr std::int64_t kSeq = 4096, kHeads = 16, kHeadDim = 128, kHidden = 2048;

json olmoe_like(bool full_width) {
  return {{"model",
           {{"num_layers", 2}, {"hidden_size", kHidden}, {"ffn_hidden_size", 1024}, {"num_attention_heads", kHeads}, {"num_query_groups", kHeads}, {"kv_channels", kHeadDim}, {"vocab_size", 50304}, {"seq_length", kSeq}, {"bf16", true}, {"normalization", "RMSNorm"}, {"gated_linear_unit", true}, {"activation_func", "silu"}, {"add_bias_linear", false}, {"position_embedding_type", "rope"}, {"qk_layernorm", true}, {"qk_layernorm_full_width", full_width}, {"attention_dropout", 0.0}, {"hidden_dropout", 0.0}, {"num_moe_experts", 8}, {"moe_router_topk", 2}, {"moe_ffn_hidden_size", 1024}, {"moe_grouped_gemm", true}, {"moe_token_dispatcher_type", "alltoall"}}},
          {"train", {{"micro_batch_size", 1}, {"global_batch_size", 8}}},
          {"cluster", {{"num_gpus", 1}, {"gpu", "h100-sxm-80gb"}}}};
}

Bytes layer0_saved(bool full_width) {
  auto held = test::held_by_module(test::valid_spec(olmoe_like(full_width).dump()));
  REQUIRE(held.count("L0"));
  return test::total_bytes(held["L0"]);
}
}  // namespace

TEST_CASE("olmoe: full-width q/k norms save flattened copies, not the fused QKV output", "[sim][graph][olmoe]") {
  const std::int64_t N = kSeq, qk = kHeads * kHeadDim;
  const std::int64_t full = 2 * N * qk * 2 + 2 * N * 4;               // two copies, one fp32 statistic a token each
  const std::int64_t per_head = N * 3 * qk * 2 + 2 * N * kHeads * 4;  // the QKV output, a statistic a head and token
  CHECK(layer0_saved(true) - layer0_saved(false) == Bytes{full - per_head});
}

TEST_CASE("olmoe: the norm weights span every head", "[model][params][olmoe]") {
  const auto a = test::valid_spec(olmoe_like(true).dump()), b = test::valid_spec(olmoe_like(false).dump());
  CHECK(model::total_parameters(a, model::derive(a)) - model::total_parameters(b, model::derive(b)) ==
        2 * 2 * (kHeads * kHeadDim - kHeadDim));  // two layers, q and k
}

TEST_CASE("olmoe: the norms' width must match what the rank holds", "[validate][olmoe]") {
  json tp = olmoe_like(true);
  tp["model"]["tensor_model_parallel_size"] = 2;
  tp["cluster"]["num_gpus"] = 2;
  json gqa = olmoe_like(true);
  gqa["model"]["num_query_groups"] = 4;
  for (const auto& [doc, path] : {std::pair{tp, "model.tensor_model_parallel_size"}, std::pair{gqa, "model.num_query_groups"}}) {
    const auto r = model::parse_run_spec(doc.dump());
    REQUIRE(r.spec);
    bool found = false;
    for (const auto& d : model::validate(*r.spec)) found = found || (d.rule == "olmoe_qk_norm_width" && d.path == path);
    CHECK(found);
  }
}

TEST_CASE("olmoe: the Bridge provider's layer spec sets the full-width norms", "[model][bridge][olmoe]") {
  const auto recipe = model::parse_spec_input("bridge:olmoe_7b_pretrain_8gpu_h100_bf16_config", "", {});
  for (const auto& d : recipe.diagnostics) UNSCOPED_INFO(model::format(d));
  REQUIRE(recipe.spec);
  CHECK(recipe.spec->model.qk_layernorm_full_width);
  CHECK(recipe.spec->model.qk_layernorm);
  CHECK(recipe.origins.at("model.qk_layernorm_full_width").source.find("olmoe_layer_spec") != std::string::npos);
}
