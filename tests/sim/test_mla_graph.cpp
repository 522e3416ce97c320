// Multi-latent attention's projections and unfused RoPE as MLASelfAttention runs them (multi_latent_attention.py,
// rope_utils.py): one dense layer of a Moonlight-shaped model on the local stack, bf16, unfused RoPE. Expectations from
// the shapes: T = 4096 tokens, hidden 2048, 16 heads, kv_lora 512, qk 128 + rope 64, v 128. The local DotProductAttention
// takes MLA only as our calibration harness patches it (cluster.calibration_harness, validate_attention.cpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "module_script.hpp"
#include "peakcast/sim/layer_graph.hpp"
#include "script_walk.hpp"
#include "spec_layer.hpp"

using namespace peakcast;

namespace {

constexpr std::int64_t kT = 4096, kNp = 16, kR = 512, kDn = 128, kDr = 64, kDv = 128, kBf16 = 2;

constexpr const char* kSpec = R"({"model": {"num_layers": 1, "transformer_impl": "local", "attention_backend": "unfused",
    "hidden_size": 2048, "num_attention_heads": 16, "ffn_hidden_size": 4096, "vocab_size": 1024, "seq_length": 4096,
    "bf16": true, "normalization": "RMSNorm", "add_bias_linear": false, "hidden_dropout": 0.0, "attention_dropout": 0.0,
    "position_embedding_type": "rope", "apply_rope_fusion": false, "multi_latent_attention": true, "q_lora_rank": null,
    "kv_lora_rank": 512, "qk_head_dim": 128, "qk_pos_emb_head_dim": 64, "v_head_dim": 128, "kv_channels": 128,
    "qk_layernorm": false, "rope_type": "rope"},
  "train": {"micro_batch_size": 1, "global_batch_size": 1}, "cluster": {"num_gpus": 1, "gpu": "h200-141gb", "calibration_harness": true}})";

sim::LayerGraph layer(const std::vector<std::string>& sets = {}) {
  return test::spec_layer(kSpec, sets, {0, model::MixerKind::mla, model::FfnKind::dense, false});
}

bool has_tensor(const sim::LayerGraph& g, const std::string& tail) { return test::named(g.tensors, tail) != nullptr; }

}  // namespace

TEST_CASE("MLA: the kv norm exists only with qk_layernorm, and the down projection comes first", "[sim][graph][mla]") {
  // Without qk_layernorm the local spec's kv_layernorm is IdentityOp (gpt_layer_specs.py:428-429): kv_up_proj reads the
  // split view of kv_combined, so it saves the whole down projection, [T, 512 + 64].
  const sim::LayerGraph g = layer();
  CHECK_FALSE(has_tensor(g, "kv_layernorm.out"));
  const auto* up = test::named(g.ops, "linear_kv_up_proj");
  REQUIRE(up);
  const auto kvd = test::tensor_index(g, "linear_kv_down_proj.out");
  CHECK(g.tensors[static_cast<std::size_t>(kvd)].bytes.value == kT * (kR + kDr) * kBf16);
  CHECK(std::find(up->saves.begin(), up->saves.end(), kvd) != up->saves.end());
  // _qkv_down_projection before qkv_up_proj_and_rope_apply (multi_latent_attention.py:638-664, :855-878).
  const auto order = [&](const std::string& name) { return test::named(g.ops, name) - g.ops.data(); };
  CHECK(order("linear_kv_down_proj") < order("linear_q_proj"));
  CHECK(order("linear_q_proj") < order("linear_kv_up_proj"));
  // With it, the norm's output [T, 512] is what the up projection saves.
  const sim::LayerGraph n = layer({"model.qk_layernorm=true"});
  REQUIRE(has_tensor(n, "kv_layernorm.out"));
  CHECK(n.tensors[static_cast<std::size_t>(test::tensor_index(n, "kv_layernorm.out"))].bytes.value == kT * kR * kBf16);
}

TEST_CASE("MLA: unfused RoPE's temporaries, and the function's locals until the value's copy", "[sim][graph][mla]") {
  const sim::LayerGraph g = layer();
  const auto script = sim::detail::module_script(g, sim::CheckpointSet{});
  const std::int64_t pe = kT * kNp * kDr * kBf16;  // the positional part of the query, [T, 16, 64]
  // At rotate_half(t) * sin_ (rope_utils.py:128): the de-interleaved t (rebound only after the sum), t * cos_, and the
  // rotated half are alive beside the product.
  const auto at_sin = test::live_at_alloc(g, 0, test::tensor_index(g, "rope_q.sin_product"));
  REQUIRE_FALSE(at_sin.empty());
  for (const char* name : {"rope_q.interleaved", "rope_q.cos_product", "rope_q.rotate_half", "rope_q.sin_product"}) {
    INFO(name);
    CHECK(at_sin[static_cast<std::size_t>(test::tensor_index(g, name))]);
    CHECK(g.tensors[static_cast<std::size_t>(test::tensor_index(g, name))].bytes.value == pe);
  }
  // At value.contiguous() (:968): q, kv, the rotated query part and the rotated key part are still the function's
  // locals (measured: freed after the value's copy, calibration/data/diagnostics/alloc_traces_s16).
  const auto value = test::tensor_index(g, ".value");
  const auto at_value = test::live_at_alloc(g, 0, value);
  REQUIRE_FALSE(at_value.empty());
  for (const char* name : {"linear_q_proj.out", "linear_kv_up_proj.out", "rope_q.out", "rope_k.out", ".query", ".key"}) {
    INFO(name);
    CHECK(at_value[static_cast<std::size_t>(test::tensor_index(g, name))]);
  }
  CHECK(g.tensors[static_cast<std::size_t>(test::tensor_index(g, "rope_k.out"))].bytes.value == kT * kDr * kBf16);
  CHECK(g.tensors[static_cast<std::size_t>(value)].bytes.value == kT * kNp * kDv * kBf16);
  CHECK(g.tensors[static_cast<std::size_t>(test::tensor_index(g, ".query"))].bytes.value == kT * kNp * (kDn + kDr) * kBf16);
  // After it they are gone: at the scores, none of them is alive.
  const auto at_scores = test::live_at_alloc(g, 0, test::tensor_index(g, "scores"));
  REQUIRE_FALSE(at_scores.empty());
  for (const char* name : {"linear_q_proj.out", "rope_q.out", "rope_k.out", "rope_q.interleaved"}) {
    INFO(name);
    CHECK_FALSE(at_scores[static_cast<std::size_t>(test::tensor_index(g, name))]);
  }
}
