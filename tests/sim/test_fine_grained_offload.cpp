// Fine-grained activation offloading in one decoder layer (sim/src/offload_lifetimes.cpp,
// docs/research/fine-grained-offloading-memory-facts.md): the saves of an offload_modules group with at least
// min_offloaded_tensor_size elements leave the GPU at the group's commit, a forced release frees the layer input,
// and every reload is gone again once its node has run. Expectations from the layer's shapes.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "peakcast/sim/layer_graph.hpp"
#include "spec_layer.hpp"

using namespace peakcast;

namespace {

// A small GQA layer: N = s x b = 2048 tokens, h = 1024, 8 query heads and 2 key/value groups of 128, bf16.
constexpr std::int64_t kN = 2048, kH = 1024, kQ = 8 * 128, kKv = 2 * 128, kHeads = 8, kBf16 = 2, kFp32 = 4;
// min_offloaded_tensor_size's default, in elements (transformer_config.py:1247).
constexpr std::int64_t kMinElements = 1024 * 1024;

std::string spec_text(const char* impl) {
  return std::string(R"({
  "model": {"num_layers": 2, "hidden_size": 1024, "num_attention_heads": 8, "num_query_groups": 2, "kv_channels": 128,
            "ffn_hidden_size": 4096, "vocab_size": 32000, "seq_length": 2048, "bf16": true, "transformer_impl": ")") +
         impl + R"(", "attention_backend": "flash", "normalization": "RMSNorm", "gated_linear_unit": true,
            "activation_func": "silu", "add_bias_linear": false, "hidden_dropout": 0.0, "attention_dropout": 0.0,
            "position_embedding_type": "rope", "fine_grained_activation_offloading": true,
            "offload_modules": ["attn_norm", "qkv_linear", "core_attn"]},
  "train": {"micro_batch_size": 1, "global_batch_size": 1},
  "cluster": {"num_gpus": 1, "gpu": "h100-sxm-80gb"}})";
}

sim::LayerGraph layer(const char* impl) {
  const std::string text = spec_text(impl);
  return test::spec_layer(text.c_str(), {}, {0, model::MixerKind::attention, model::FfnKind::dense, false});
}

sim::OffloadContext offload(std::uint32_t groups, std::int64_t min_elements) {
  sim::OffloadContext o;
  o.offloaded = groups;
  o.min_elements = min_elements;
  return o;
}

// Live bytes once the backward is done, absolute: what the module held, the output's gradient, and the
// backward's last step.
Bytes after_backward(const sim::LayerGraph& g, const sim::CheckpointSet& ck, const sim::OffloadContext* o) {
  const sim::ModuleProfile p = sim::profile_module(g, ck, o);
  const std::vector<sim::OpEvent> events = sim::trace_module(g, ck, o);
  return p.held + p.output_bytes + events.back().live_delta;
}

}  // namespace

TEST_CASE("TE layer: qkv_linear and core_attn send their large saves to the host at their commits",
          "[sim][offload]") {
  const sim::LayerGraph g = layer("transformer_engine");
  const sim::CheckpointSet none{};
  const sim::ModuleProfile plain = sim::profile_module(g, none);
  // TE fuses the input norm into linear_qkv (an IdentityOp input_layernorm): attn_norm starts no group, so
  // listing it changes nothing.
  const sim::OffloadContext with_norm = offload(sim::kOffAttnNorm | sim::kOffQkvLinear | sim::kOffCoreAttn, kMinElements);
  const sim::OffloadContext without_norm = offload(sim::kOffQkvLinear | sim::kOffCoreAttn, kMinElements);
  const sim::ModuleProfile off = sim::profile_module(g, none, &with_norm);
  CHECK(off.held == sim::profile_module(g, none, &without_norm).held);
  // Leaving (>= 2^20 elements): qkv_linear's layer input x [N, h] and norm output [N, h] (TE's LayerNormLinear
  // saves both), core_attn's RoPE'd query [N, 8 x 128]. Staying: the norm's fp32 rstd [N] and the core's fp32
  // softmax statistics [8, s] (2048 and 16384 elements), the key and the value copy [N, 2 x 128] (524288
  // elements, 1 MiB: bytes would pass the limit, elements do not), and the core output, which linear_proj
  // saves outside any group.
  const Bytes leaving{(kN * kH + kN * kH + kN * kQ) * kBf16};
  CHECK(plain.held - off.held == leaving);
  CHECK_FALSE(off.input_held);
  CHECK_FALSE(off.input_released);  // qkv_linear force-frees nothing (attention.py:1386-1395)

  SECTION("min_offloaded_tensor_size 0: the small saves go too") {
    const sim::OffloadContext all = offload(sim::kOffQkvLinear | sim::kOffCoreAttn, 0);
    const Bytes small{kN * kFp32 + 2 * kN * kKv * kBf16 + kHeads * kN * kFp32};  // rstd, key, value, statistics
    CHECK(plain.held - sim::profile_module(g, none, &all).held == leaving + small);
  }
  SECTION("every reload is gone when the backward ends: the same bytes as without offloading") {
    CHECK(after_backward(g, none, &with_norm) == after_backward(g, none, nullptr));
  }
}

TEST_CASE("local layer: attn_norm offloads the separate input norm's saves and force-frees the layer input",
          "[sim][offload]") {
  const sim::LayerGraph g = layer("local");
  const sim::CheckpointSet none{};
  const sim::ModuleProfile plain = sim::profile_module(g, none);
  const sim::OffloadContext norm_only = offload(sim::kOffAttnNorm, kMinElements);
  const sim::ModuleProfile off = sim::profile_module(g, none, &norm_only);
  // The input norm saves x [N, h] (leaves) and its fp32 rstd [N] (stays); the commit after self_attn_bda
  // resizes the residual, the layer input, to 0 (transformer_layer.py:689-693).
  CHECK(plain.input_held);
  CHECK(plain.held - off.held == Bytes{kN * kH * kBf16});
  CHECK(off.input_released);
  CHECK(after_backward(g, none, &norm_only) == after_backward(g, none, nullptr));
}

TEST_CASE("offload groups: a layer under full recompute starts none", "[sim][offload]") {
  const sim::LayerGraph g = layer("transformer_engine");
  sim::CheckpointSet whole{};
  whole.whole_module = true;
  const sim::OffloadContext o = offload(sim::kOffQkvLinear | sim::kOffCoreAttn, 0);
  CHECK(sim::profile_module(g, whole, &o).held == sim::profile_module(g, whole).held);
}
