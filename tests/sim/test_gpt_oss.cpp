// GPT-OSS (GPTOSSBridge): attention sinks (softmax_type learnable), the clamped quick-GeGLU
// (activation_func_clamp_value) and the HF mapping of GptOssForCausalLM. Expected bytes come from the
// shapes; what each path saves was read from the pinned code (docs/research/gpt-oss-memory-facts.md)
// and measured on the H200 (calibration/data/te_build/h200_gpt_oss_s19_te.jsonl, h200_gpt_oss_s19.jsonl).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "held_tensors.hpp"
#include "peakcast/model/static_memory.hpp"

using namespace peakcast;
using nlohmann::json;

namespace {
constexpr std::int64_t kSeq = 2048, kHidden = 1024, kHeads = 16, kGroups = 4, kHeadDim = 64, kF = 1024, kExperts = 8, kTopk = 4;

// The shape of the measured cases (calibration/harness/cases_s19/), two layers; `extra` overrides model keys.
json base(bool te, bool moe) {
  json m = {{"num_layers", 2}, {"hidden_size", kHidden}, {"ffn_hidden_size", 2 * kF}, {"num_attention_heads", kHeads}, {"num_query_groups", kGroups}, {"kv_channels", kHeadDim}, {"vocab_size", 32000}, {"seq_length", kSeq}, {"bf16", true}, {"params_dtype", "bf16"}, {"normalization", "RMSNorm"}, {"gated_linear_unit", true}, {"activation_func", "quick_gelu"}, {"activation_func_clamp_value", 7.0}, {"glu_linear_offset", 1.0}, {"add_bias_linear", true}, {"add_qkv_bias", true}, {"bias_activation_fusion", true}, {"bias_dropout_fusion", false}, {"softmax_type", "learnable"}, {"window_size", {127, 0}}, {"window_attn_skip_freq", 2}, {"attention_softmax_in_fp32", true}, {"attention_dropout", 0.0}, {"hidden_dropout", 0.0}, {"position_embedding_type", "rope"}, {"share_embeddings_and_output_weights", false}, {"transformer_impl", te ? "transformer_engine" : "local"}, {"attention_backend", te ? "fused" : "unfused"}};
  if (moe)
    m.update({{"num_moe_experts", kExperts}, {"moe_router_topk", kTopk}, {"moe_ffn_hidden_size", kF}, {"moe_token_dispatcher_type", "alltoall"}, {"moe_grouped_gemm", te}, {"moe_router_load_balancing_type", "none"}});
  return {{"model", m},
          {"train", {{"micro_batch_size", 1}, {"global_batch_size", 2}}},
          {"cluster", {{"num_gpus", 1}, {"gpu", "h200-141gb"}, {"calibration_harness", true}}}};
}

Bytes layer0_saved(json doc, const json& extra = json::object()) {
  doc["model"].update(extra);
  auto held = test::held_by_module(test::valid_spec(doc.dump()));
  REQUIRE(held.count("L0"));
  return test::total_bytes(held["L0"]);
}

std::vector<model::Diagnostic> diagnostics_of(const json& doc) {
  auto r = model::parse_run_spec(doc.dump());
  std::vector<model::Diagnostic> d = r.diagnostics;
  if (r.spec) {
    const auto v = model::validate(*r.spec);
    d.insert(d.end(), v.begin(), v.end());
  }
  return d;
}

bool has(const std::vector<model::Diagnostic>& d, model::Severity s, const std::string& path, const std::string& rule) {
  for (const auto& x : d)
    if (x.severity == s && x.path == path && x.rule == rule) return true;
  return false;
}
}  // namespace

TEST_CASE("gpt-oss: the fused quick-GeGLU keeps a clamped copy of fc1's output beside it", "[sim][graph][gpt_oss]") {
  // TEGroupedMLP, weighted_bias_quick_geglu_impl: the clamps save fc1's halves (all of fc1's output), the
  // fused function the concatenated clamped copy: one more [tokens x topk, 2F] bf16 a MoE layer.
  const std::int64_t rows = kSeq * kTopk;
  CHECK(layer0_saved(base(true, true)) - layer0_saved(base(true, true), {{"activation_func_clamp_value", nullptr}}) ==
        Bytes{rows * 2 * kF * 2});
}

TEST_CASE("gpt-oss: the Python GLU keeps the clamped gate half", "[sim][graph][gpt_oss]") {
  // mlp.py glu: x_glu.clamp saves fc1's half (fc1 is saved anyway), quick_gelu saves the clamped half
  // [s, F] bf16; the clamped linear half lives only until the offset is added.
  json dense = base(false, false);
  dense["model"]["bias_activation_fusion"] = false;
  dense["model"]["softmax_type"] = "vanilla";
  CHECK(layer0_saved(dense) - layer0_saved(dense, {{"activation_func_clamp_value", nullptr}}) == Bytes{kSeq * (2 * kF) * 2});  // ffn_hidden_size 2F
}

TEST_CASE("gpt-oss: sinks add a softmax column on the unfused paths and nothing to TE's fused attention", "[sim][graph][gpt_oss]") {
  const std::int64_t E = kHeads * kSeq * kSeq, rows = kHeads * kSeq;  // micro-batch 1
  // TE fused attention saves q, k, v, out and the statistics either way (the fp32 offset is [1, h, 1, 1]).
  CHECK(layer0_saved(base(true, true)) == layer0_saved(base(true, true), {{"softmax_type", "vanilla"}}));
  // Megatron's DotProductAttention: the fp32 softmax of [b, np, sq, sk+1] is saved instead of [b, np, sq, sk];
  // the bf16 probabilities the bmm saves are the copy without the sink column, as without sinks.
  json dense = base(false, false);
  dense["model"]["bias_activation_fusion"] = false;
  CHECK(layer0_saved(dense) - layer0_saved(dense, {{"softmax_type", "vanilla"}}) == Bytes{rows * 4});
  // TE's UnfusedDotProductAttention keeps the sink column in the bf16 copy too, and pads the [s, s] mask.
  const Bytes te_unfused = layer0_saved(base(true, true), {{"attention_backend", "unfused"}});
  const Bytes te_unfused_vanilla = layer0_saved(base(true, true), {{"attention_backend", "unfused"}, {"softmax_type", "vanilla"}});
  // Without sinks TE's fused causal softmax kernel runs here and saves only the bf16 probabilities [E];
  // with them the mask [s, s+1], the fp32 softmax and its bf16 cast, both [E + rows], are saved.
  CHECK(te_unfused - te_unfused_vanilla == Bytes{(E + rows) * 4 + (E + rows) * 2 - E * 2 + kSeq * (kSeq + 1)});
}

TEST_CASE("gpt-oss: one learnable sink logit per local head and layer", "[model][params][gpt_oss]") {
  for (int tp : {1, 2}) {
    json on = base(true, true);
    on["model"]["tensor_model_parallel_size"] = tp;
    on["model"]["sequence_parallel"] = tp > 1;
    on["model"]["expert_tensor_parallel_size"] = 1;  // MoE biases need ETP 1 (transformer_config.py:2307)
    on["cluster"]["num_gpus"] = tp;
    json off = on;
    off["model"]["softmax_type"] = "vanilla";
    const auto a = test::valid_spec(on.dump()), b = test::valid_spec(off.dump());
    CHECK(model::total_parameters(a, model::derive(a)) - model::total_parameters(b, model::derive(b)) == 2 * kHeads);
  }
}

TEST_CASE("gpt-oss: Transformer Engine's backend filter and Megatron's run-time rules", "[validate][gpt_oss]") {
  using model::Severity;
  json flash = base(true, true);
  flash["model"]["attention_backend"] = "flash";
  CHECK(has(diagnostics_of(flash), Severity::error, "model.attention_backend", "softmax_type_no_backend"));
  json cp = base(true, true);
  cp["model"].update({{"context_parallel_size", 2}});
  cp["cluster"]["num_gpus"] = 2;
  CHECK(has(diagnostics_of(cp), Severity::error, "model.cp_comm_type", "softmax_type_no_backend"));
  cp["model"]["cp_comm_type"] = "a2a";
  CHECK_FALSE(has(diagnostics_of(cp), Severity::error, "model.cp_comm_type", "softmax_type_no_backend"));
  CHECK(has(diagnostics_of(base(true, true)), Severity::warning, "model.softmax_type", "softmax_type_needs_cudnn"));
  // Measured: local SequentialMLP experts with a bias at expert TP 1 and EP 1 raise at the first forward.
  CHECK(has(diagnostics_of(base(false, true)), Severity::error, "model.add_bias_linear", "sequential_mlp_bias_in_place"));
  json ep = base(false, true);
  ep["model"]["expert_model_parallel_size"] = 2;
  ep["cluster"]["num_gpus"] = 2;
  CHECK_FALSE(has(diagnostics_of(ep), Severity::error, "model.add_bias_linear", "sequential_mlp_bias_in_place"));
}

TEST_CASE("gpt-oss: GptOssForCausalLM maps as GPTOSSBridge sets it", "[model][hf][gpt_oss]") {
  std::ifstream f(std::string(PEAKCAST_SOURCE_DIR) + "/configs/hf/openai--gpt-oss-20b.json");
  REQUIRE(f);
  std::stringstream text;
  text << f.rdbuf();
  const json hf = json::parse(text.str());
  const auto spec_with = [&](const json& config) {
    const std::string path = "/tmp/peakcast-gpt-oss-" + std::to_string(::getpid()) + ".json";
    std::ofstream(path) << config.dump();
    return json{{"model", {{"hf_config", path}, {"seq_length", 4096}, {"expert_model_parallel_size", 8}}},
                {"cluster", {{"num_gpus", 8}, {"gpu", "h100-sxm-80gb"}}}};
  };
  auto r = model::parse_run_spec(spec_with(hf).dump());
  for (const auto& d : r.diagnostics) UNSCOPED_INFO(model::format(d));
  REQUIRE(r.spec);
  const auto& m = r.spec->model;
  CHECK(m.softmax_type == model::SoftmaxType::learnable);
  CHECK(m.activation_func_clamp_value == std::optional<double>(7.0));
  CHECK(m.glu_linear_offset == 1.0);
  CHECK(m.activation_func_name == "quick_gelu");
  CHECK(m.moe_ffn_hidden_size == std::optional<std::int64_t>(2880));  // intermediate_size (gpt_oss_bridge.py:96)
  CHECK(m.num_moe_experts == std::optional<std::int64_t>(32));
  CHECK(m.moe_router_topk == 4);
  CHECK(m.add_bias_linear);
  CHECK(m.add_qkv_bias);
  CHECK(m.position_embedding_type == model::PositionEmbedding::yarn);
  // A config the bridge's constants would contradict is refused, naming the key.
  json limit = hf;
  limit["swiglu_limit"] = 6.0;
  CHECK_FALSE(model::parse_run_spec(spec_with(limit).dump()).spec);
  json types = hf;
  types["layer_types"][0] = "full_attention";
  const auto t = model::parse_run_spec(spec_with(types).dump());
  CHECK_FALSE(t.spec);
  bool named = false;
  for (const auto& d : t.diagnostics) named = named || (d.rule == "hf_unmapped_shape_key" && d.path.find("layer_types") != std::string::npos);
  CHECK(named);
}
