// Gemma 2 / Gemma 3 layers, embedding and output (docs/research/gemma-memory-facts.md). Every expected
// byte count is written from the shapes: N tokens a micro-batch, bf16 activations, fp32 statistics.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>

#include "held_tensors.hpp"
#include "peakcast/model/layer_plan.hpp"
#include "peakcast/sim/layer_graph.hpp"
#include "peakcast/sim/module_graphs.hpp"

using namespace peakcast;
using nlohmann::json;

namespace {
// A Gemma 2 2B-shaped layer (google/gemma-2-2b: hidden 2304, 8 heads, 4 KV heads of 256, GeGLU 9216) on one GPU.
constexpr std::int64_t kSeq = 2048, kMbs = 2, kHidden = 2304, kHeads = 8, kGroups = 4, kHeadDim = 256, kF = 9216, kVocab = 32000;
constexpr std::int64_t N = kSeq * kMbs, kAct = 2, kFp32 = 4;

json gemma2_like(const json& extra = json::object()) {
  json m = {{"num_layers", 2}, {"hidden_size", kHidden}, {"ffn_hidden_size", kF}, {"num_attention_heads", kHeads}, {"num_query_groups", kGroups}, {"kv_channels", kHeadDim}, {"vocab_size", kVocab}, {"seq_length", kSeq}, {"bf16", true}, {"normalization", "RMSNorm"}, {"gated_linear_unit", true}, {"activation_func", "fast_gelu"}, {"add_bias_linear", false}, {"position_embedding_type", "rope"}, {"attention_dropout", 0.0}, {"hidden_dropout", 0.0}, {"layernorm_zero_centered_gamma", true}, {"share_embeddings_and_output_weights", true}, {"core_attention_module", "gemma2"}, {"post_linear_layernorm", true}, {"scale_embeddings_by_hidden_size", true}, {"final_logit_softcapping", 30.0}, {"window_size", {4095, 0}}};
  m.update(extra);
  return {{"model", m}, {"train", {{"micro_batch_size", kMbs}, {"global_batch_size", kMbs}}}, {"cluster", {{"num_gpus", 1}, {"gpu", "h100-sxm-80gb"}}}};
}

Bytes held(const json& doc, const std::string& module) {
  auto h = test::held_by_module(test::valid_spec(doc.dump()));
  REQUIRE(h.count(module));
  return test::total_bytes(h[module]);
}

sim::ModuleProfile profile(const json& doc, bool output) {
  const auto spec = test::valid_spec(doc.dump());
  const auto d = model::derive(spec);
  const auto ctx = sim::make_shape_context(spec, d);
  return sim::profile_module(output ? sim::build_output_graph(spec, d, ctx) : sim::build_embedding_graph(spec, d, ctx), sim::CheckpointSet{});
}
}  // namespace

TEST_CASE("gemma 2: one layer's saved bytes a micro-batch, FlexAttention core and post-norm linears", "[sim][graph][gemma]") {
  const std::int64_t h = kHidden, q = kHeads * kHeadDim, kv = kGroups * kHeadDim;
  const std::int64_t saved =
      N * h * kAct                                   // the layer input, kept by linear_qkv's fused norm
      + N * h * kAct + N * kFp32                     // the fused input norm's output (the GEMM's input) and 1/RMS
      + N * (q + 2 * kv) * kAct                      // the fused QKV output: FlexAttention keeps the value, a view of it
      + N * q * kAct + N * kv * kAct                 // RoPE'd query and key (new tensors; the permutes are views)
      + 4 * kSeq * kHeadDim * kAct                   // unfused RoPE's cos and sin, for Q and K
      + N * q * kAct + kMbs * kHeads * kSeq * kFp32  // FlexAttention's output (linear_proj's input too) and logsumexp
      + N * h * kAct + N * kFp32                     // linear_proj's output, kept by its post-norm, and 1/RMS
      + N * h * kAct                                 // the residual sum, the next fused norm's input
      + N * h * kAct + N * kFp32                     // the pre-MLP fused norm's output and 1/RMS
      + N * 2 * kF * kAct                            // fc1's output (fast_gelu keeps its first half, a view)
      + 3 * N * kF * kAct                            // fast_gelu(x0) and x1 + 0 (the product's operands), the product (fc2's input)
      + N * h * kAct + N * kFp32;                    // fc2's output, kept by its post-norm, and 1/RMS
  CHECK(held(gemma2_like(), "L0") == Bytes{saved});
}

TEST_CASE("gemma 2: FlexAttention keeps the whole QKV output where TE's fused attention copies the value", "[sim][graph][gemma]") {
  const std::int64_t q = kHeads * kHeadDim, kv = kGroups * kHeadDim;
  const Bytes flex = held(gemma2_like(), "L0");
  const Bytes te = held(gemma2_like({{"core_attention_module", "default"}, {"attention_backend", "fused"}}), "L0");
  // TE: a contiguous value copy [N, kv] and the same LSE; the QKV output goes with the forward.
  CHECK(flex - te == Bytes{N * (q + 2 * kv) * kAct - N * kv * kAct});
}

TEST_CASE("gemma: the post-norm linears keep their outputs and statistics", "[sim][graph][gemma]") {
  const Bytes with = held(gemma2_like(), "L0");
  const Bytes without = held(gemma2_like({{"post_linear_layernorm", false}}), "L0");
  CHECK(with - without == Bytes{2 * (N * kHidden * kAct + N * kFp32)});  // linear_proj and fc2
}

TEST_CASE("gemma 2: the final logit soft-cap keeps its tanh; three logits-sized tensors at its forward", "[sim][graph][gemma]") {
  const std::int64_t logits = N * kVocab * kAct;  // 32000 is a multiple of 128: no padding rows
  const auto capped = profile(gemma2_like(), true), plain = profile(gemma2_like({{"final_logit_softcapping", nullptr}}), true);
  CHECK(capped.held - plain.held == Bytes{logits});
  // The soft-cap's own peak, three logits-sized tensors (the linear's logits, kept by the layer's `output`,
  // logits / 30 and the tanh), stays under the cross entropy's (its input and the fp32 softmax, four), which
  // now runs beside the kept tanh: one more logits-sized tensor at the forward's peak.
  CHECK(capped.forward_peak_excess - plain.forward_peak_excess == Bytes{logits});
}

TEST_CASE("gemma: the embedding's sqrt(hidden) scaling is a transient, nothing saved", "[sim][graph][gemma]") {
  const auto scaled = profile(gemma2_like(), false), plain = profile(gemma2_like({{"scale_embeddings_by_hidden_size", false}}), false);
  CHECK(scaled.held == plain.held);
  CHECK(scaled.forward_peak_excess - plain.forward_peak_excess == Bytes{N * kHidden * kAct});
}

TEST_CASE("gemma 3: the windowed TE core saves what TE's fused attention saves; its RoPE tables stay", "[sim][graph][gemma]") {
  // Gemma3TEDotProductAttention is a TEDotProductAttention with a per-layer window: the same tensors.
  const json g3 = {{"core_attention_module", "gemma3"}, {"window_size", 512}, {"interleaved_attn_pattern", {5, 1}}, {"attention_backend", "fused"}, {"qk_layernorm", true}};
  json te = g3;
  te["core_attention_module"] = "default";
  te["window_size"] = {511, 0};
  te.erase("interleaved_attn_pattern");
  CHECK(held(gemma2_like(g3), "L0") == held(gemma2_like(te), "L0"));
  // Gemma3RotaryEmbedding caches its local table [s, 1, 1, d] and the stack [2, s, 1, 1, d] of both, fp32,
  // for the run (gemma3_provider.py:311-346): the whole difference between the two runs' peaks.
  const auto a = sim::predict(test::valid_spec(gemma2_like(g3).dump()), {}), b = sim::predict(test::valid_spec(gemma2_like(te).dump()), {});
  CHECK(a.ranks.at(0).peak_allocated - b.ranks.at(0).peak_allocated == Bytes{3 * kSeq * kHeadDim * kFp32});
}
