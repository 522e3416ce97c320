// Whole-model parameter counts. Each expected value is written out from the architecture
// (shape x count per module) and must also equal the public total.
#include <catch2/catch.hpp>

#include "peakcast/model/run_spec.hpp"
#include "peakcast/model/static_memory.hpp"
#include "test_params_models.hpp"

using namespace peakcast;
using namespace peakcast::model;

namespace {

// Dense GQA + SwiGLU + RMSNorm layer: qkv, proj, fc1 (2F), fc2, two RMSNorm weights.
std::int64_t gqa_swiglu_layer(std::int64_t h, std::int64_t heads, std::int64_t groups, std::int64_t kv, std::int64_t ffn) {
  const std::int64_t qkv = h * (heads * kv + 2 * groups * kv);
  const std::int64_t proj = heads * kv * h;
  const std::int64_t mlp = h * 2 * ffn + ffn * h;
  const std::int64_t norms = 2 * h;
  return qkv + proj + mlp + norms;
}

// Routed experts + router (+ optional SwiGLU shared expert). Gated: fc1 is 2F wide.
std::int64_t moe_block(std::int64_t h, std::int64_t experts, std::int64_t ffn, std::int64_t shared, bool gated) {
  const std::int64_t glu = gated ? 2 : 1;
  const std::int64_t router = experts * h;
  const std::int64_t routed = experts * (h * glu * ffn + ffn * h);
  const std::int64_t shared_mlp = shared > 0 ? h * glu * shared + shared * h : 0;
  return router + routed + shared_mlp;
}

// MLA attention with qk_layernorm (q/kv norms exist only where there is a LoRA rank).
std::int64_t mla_block(std::int64_t h, std::int64_t heads, std::int64_t q_lora, std::int64_t kv_lora, std::int64_t qk,
                       std::int64_t rope, std::int64_t v) {
  const std::int64_t q = q_lora == 0 ? h * heads * (qk + rope) : h * q_lora + q_lora + q_lora * heads * (qk + rope);
  const std::int64_t kv_down = h * (kv_lora + rope);
  const std::int64_t kv_norm = kv_lora;
  const std::int64_t kv_up = kv_lora * heads * (qk + v);
  const std::int64_t proj = heads * v * h;
  return q + kv_down + kv_norm + kv_up + proj;
}

}  // namespace

TEST_CASE("Llama 3 8B and 70B totals", "[model][params]") {
  {
    const auto spec = test_models::llama3_8b();
    const std::int64_t h = 4096, vocab = 128256;
    const std::int64_t expected = 2 * vocab * h + 32 * gqa_swiglu_layer(h, 32, 8, 128, 14336) + h;
    CHECK(expected == 8'030'261'248);
    CHECK(total_parameters(spec, derive(spec)) == expected);
  }
  {
    const auto spec = test_models::llama3_70b();
    const std::int64_t h = 8192, vocab = 128256;
    const std::int64_t expected = 2 * vocab * h + 80 * gqa_swiglu_layer(h, 64, 8, 128, 28672) + h;
    CHECK(expected == 70'553'706'496);
    CHECK(total_parameters(spec, derive(spec)) == expected);
  }
}

TEST_CASE("Qwen3-30B-A3B total: QK layernorm over one head, 128 experts every layer", "[model][params]") {
  const auto spec = test_models::qwen3_30b_a3b();
  const std::int64_t h = 2048, vocab = 151936;
  const std::int64_t attn = h * (32 * 128 + 2 * 4 * 128) + 32 * 128 * h + 2 * 128;
  const std::int64_t layer = attn + 2 * h + moe_block(h, 128, 768, 0, true);
  const std::int64_t expected = 2 * vocab * h + 48 * layer + h;
  CHECK(expected == 30'532'122'624);
  CHECK(total_parameters(spec, derive(spec)) == expected);
}

TEST_CASE("Moonlight 16B total with the 163840-row vocabulary", "[model][params]") {
  const auto spec = test_models::moonlight_16b();
  const auto d = derive(spec);
  const std::int64_t h = 2048, vocab = 163840;
  const std::int64_t attn = mla_block(h, 16, 0, 512, 128, 64, 128);
  const std::int64_t dense_layer = attn + 2 * h + (h * 2 * 11264 + 11264 * h);
  const std::int64_t moe_layer = attn + 2 * h + moe_block(h, 64, 1408, 2816, true);
  const std::int64_t expected = 2 * vocab * h + dense_layer + 26 * moe_layer + h;
  CHECK(total_parameters(spec, d) == expected);
  CHECK(expected == 15'960'108'544);
  // The public 15,960,110,208 also counts the 26 MoE layers' fp32 expert_bias (64 each), a
  // buffer in Megatron (router.py:191), not a parameter.
  CHECK(total_checkpointed_buffers(spec, d) == 26 * 64);
  CHECK(expected + total_checkpointed_buffers(spec, d) == 15'960'110'208);
}

TEST_CASE("DeepSeek-V3 total without MTP, and the MTP block", "[model][params]") {
  const auto spec = test_models::deepseek_v3();
  const auto d = derive(spec);
  const std::int64_t h = 7168, vocab = 129280;
  const std::int64_t attn = mla_block(h, 128, 1536, 512, 128, 64, 128);
  const std::int64_t dense_layer = attn + 2 * h + (h * 2 * 18432 + 18432 * h);
  const std::int64_t moe_layer = attn + 2 * h + moe_block(h, 256, 2048, 2048, true);
  const std::int64_t expected = 2 * vocab * h + 3 * dense_layer + 58 * moe_layer + h;
  CHECK(expected == 671'026'404'352);
  CHECK(total_parameters(spec, d, false) == expected);
  // MTP depth: enorm + hnorm + eh_proj (2h -> h) + one MoE layer + its final norm.
  const std::int64_t mtp = h + h + 2 * h * h + moe_layer + h;
  CHECK(mtp == 11'610'067'968);
  CHECK(total_parameters(spec, d, true) == expected + mtp);
}

TEST_CASE("Nemotron 3 Nano total: Mamba, attention and MoE layers from the hybrid pattern", "[model][params]") {
  const auto spec = test_models::nemotron3_nano();
  const auto d = derive(spec);
  const std::int64_t h = 2688, vocab = 131072;
  // Mamba: d_inner = 64 heads * 64, 8 groups * 128 state.
  const std::int64_t heads = 64, d_inner = 64 * 64, gs = 8 * 128;
  const std::int64_t in_proj = h * (2 * d_inner + 2 * gs + heads);
  const std::int64_t conv = (d_inner + 2 * gs) * 4 + (d_inner + 2 * gs);
  const std::int64_t mamba = h + in_proj + conv + 3 * heads + d_inner + d_inner * h;
  const std::int64_t attention = h + h * (32 * 128 + 2 * 2 * 128) + 32 * 128 * h;
  const std::int64_t moe = h + moe_block(h, 128, 1856, 3712, false);  // squared ReLU: not gated
  const std::int64_t expected = 2 * vocab * h + 23 * mamba + 6 * attention + 23 * moe + h;
  CHECK(total_parameters(spec, d) == expected);
  CHECK(expected == 31'577'937'344);
  // The public 31,577,940,288 includes the 23 MoE layers' fp32 expert_bias buffers.
  CHECK(expected + total_checkpointed_buffers(spec, d) == 31'577'940'288);
}
