// EXAONE 4's layer (Bridge exaone4_layer_spec; docs/research/exaone-qwen35-memory-facts.md section 1): no pre-norms,
// Megatron's DotProductAttention as the core, post-norm row-parallel linears. Every expected byte count is written
// from the shapes: N tokens a micro-batch, bf16 activations, fp32 statistics.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>

#include "held_tensors.hpp"
#include "peakcast/model/layer_plan.hpp"
#include "peakcast/sim/module_graphs.hpp"

using namespace peakcast;
using nlohmann::json;

namespace {
// EXAONE-4.0-1.2B's shapes (configs/hf/LGAI-EXAONE--EXAONE-4.0-1.2B.json): hidden 2048, 32 heads and 8 KV heads of
// 64, SwiGLU 4096, on one GPU at the SFT recipe's sequence.
constexpr std::int64_t kSeq = 2048, kMbs = 1, kHidden = 2048, kHeads = 32, kGroups = 8, kHeadDim = 64, kF = 4096, kVocab = 102400;
constexpr std::int64_t N = kSeq * kMbs, kAct = 2, kFp32 = 4;

json exaone4_like(const json& extra = json::object()) {
  json m = {{"num_layers", 2}, {"hidden_size", kHidden}, {"ffn_hidden_size", kF}, {"num_attention_heads", kHeads}, {"num_query_groups", kGroups}, {"kv_channels", kHeadDim}, {"vocab_size", kVocab}, {"seq_length", kSeq}, {"bf16", true}, {"normalization", "RMSNorm"}, {"gated_linear_unit", true}, {"activation_func", "silu"}, {"add_bias_linear", false}, {"position_embedding_type", "rope"}, {"attention_dropout", 0.0}, {"hidden_dropout", 0.0}, {"qk_layernorm", true}, {"share_embeddings_and_output_weights", true}, {"masked_softmax_fusion", true}, {"attention_softmax_in_fp32", false}, {"pre_linear_layernorm", false}, {"post_linear_layernorm", true}, {"core_attention_module", "dot_product"}};
  m.update(extra);
  return {{"model", m}, {"train", {{"micro_batch_size", kMbs}, {"global_batch_size", kMbs}}}, {"cluster", {{"num_gpus", 1}, {"gpu", "h100-sxm-80gb"}}}};
}

Bytes held(const json& doc, const std::string& module) {
  auto h = test::held_by_module(test::valid_spec(doc.dump()));
  REQUIRE(h.count(module));
  return test::total_bytes(h[module]);
}
}  // namespace

TEST_CASE("exaone 4: one layer's saved bytes a micro-batch, no pre-norms, DotProductAttention, post-norm linears", "[sim][graph][exaone]") {
  const std::int64_t h = kHidden, q = kHeads * kHeadDim, kv = kGroups * kHeadDim;
  const std::int64_t probs = kMbs * kHeads * kSeq * kSeq * kAct;  // the fused causal softmax's output
  const std::int64_t saved =
      N * h * kAct                                // the layer input itself: linear_qkv (no fused norm) saves it
      + N * (q + 2 * kv) * kAct                   // the QKV output, kept by k_layernorm through the key view
      + N * q * kAct                              // the query copy (8 groups of 4 heads: the reshape copies), q_layernorm's input
      + N * kHeads * kFp32 + N * kGroups * kFp32  // q / k layernorm 1/RMS, one per head and token
      + N * q * kAct                              // RoPE'd query, saved by the baddbmm
      + 4 * kSeq * kHeadDim * kAct                // unfused RoPE's cos and sin for Q and K
      + 2 * N * q * kAct                          // repeat_interleave'd key and value (dot_product_attention.py:169-175)
      + probs                                     // the probabilities (FusedScaleMaskSoftmax's kernel keeps only them)
      + N * q * kAct                              // the context, linear_proj's input
      + N * h * kAct + N * kFp32                  // linear_proj's output, kept by its post-norm, and 1/RMS
      + N * h * kAct                              // the residual sum: linear_fc1 (no pre-MLP norm) saves it
      + N * 2 * kF * kAct                         // fc1's output (silu keeps its first half, a view)
      + 3 * N * kF * kAct                         // silu(x0) and x1 + 0 (the product's operands), the product (fc2's input)
      + N * h * kAct + N * kFp32;                 // fc2's output, kept by its post-norm, and 1/RMS
  CHECK(held(exaone4_like(), "L0") == Bytes{saved});
}

TEST_CASE("exaone 4: without pre-norms a layer keeps no normalized copies and no statistics", "[sim][graph][exaone]") {
  // With the usual TE pre-norms (TELayerNormColumnParallelLinear): each fused norm keeps its input (the same
  // tensor the plain linear kept), its output (the GEMM's input) and 1/RMS.
  const Bytes without = held(exaone4_like(), "L0");
  const Bytes with = held(exaone4_like({{"pre_linear_layernorm", true}}), "L0");
  CHECK(with - without == Bytes{2 * (N * kHidden * kAct + N * kFp32)});
}

TEST_CASE("exaone 4: DotProductAttention keeps the expanded K/V and the probabilities where TE's fused attention does not", "[sim][graph][exaone]") {
  const std::int64_t q = kHeads * kHeadDim, kv = kGroups * kHeadDim;
  const Bytes local = held(exaone4_like(), "L0");
  const Bytes te = held(exaone4_like({{"core_attention_module", "default"}, {"attention_backend", "fused"}}), "L0");
  // TE: the RoPE'd key and the contiguous value copy [N, kv] each, and the fp32 LSE [b, heads, s]; the QKV output
  // stays either way (k_layernorm's input). Megatron's: the expanded key and value [N, heads x d] and the
  // probabilities. The RoPE'd query and the context are saved in both (by the core or the baddbmm, by linear_proj).
  const std::int64_t megatron_core = 2 * N * q * kAct + kMbs * kHeads * kSeq * kSeq * kAct;
  const std::int64_t te_core = 2 * N * kv * kAct + kMbs * kHeads * kSeq * kFp32;
  CHECK(local - te == Bytes{megatron_core - te_core});
}

TEST_CASE("exaone 4: beyond the fused softmax's 4096 keys the torch softmax also keeps the causal mask", "[sim][graph][exaone]") {
  // FusedScaleMaskSoftmax.is_kernel_available needs 16 < sk <= 4096 (fused_softmax.py:256); at 8192 the torch path
  // masks in place and saves the probabilities and the bool [s, s] mask (attention_softmax).
  const std::int64_t s = 8192;
  const Bytes fused = held(exaone4_like({{"seq_length", 4096}}), "L0");
  const Bytes torch = held(exaone4_like({{"seq_length", s}}), "L0");
  // Everything but the probabilities scales with the tokens; the probabilities with their square.
  const std::int64_t probs_4k = kMbs * kHeads * 4096 * 4096 * kAct, probs_8k = kMbs * kHeads * s * s * kAct;
  const Bytes linear_4k = fused - Bytes{probs_4k};
  CHECK(torch == linear_4k * 2 + Bytes{probs_8k + s * s});
}

TEST_CASE("exaone 4: the run keeps Megatron's scores buffer, one [b x heads, s, s] bf16 block", "[sim][graph][exaone]") {
  // DotProductAttention's baddbmm takes the global "mpu" buffer as its input (dot_product_attention.py:189-191):
  // allocated at the first forward and kept for the run.
  const auto buffer = [](const json& doc) {
    const auto spec = test::valid_spec(doc.dump());
    const auto d = model::derive(spec);
    return sim::global_memory_buffer_bytes(spec, d, sim::make_shape_context(spec, d));
  };
  CHECK(buffer(exaone4_like()) == Bytes{kMbs * kHeads * kSeq * kSeq * kAct});
  CHECK(buffer(exaone4_like({{"core_attention_module", "default"}, {"attention_backend", "fused"}})) == Bytes{});
}
