// DeepSeek sparse attention (docs/research/dsa-memory-facts.md): one hybrid "D" layer (the same AbsorbedMLA +
// DSAttention module a GPT "dsa" layer builds, hybrid_layer_specs.py:137-176) under the cuDNN kernels, one H100 rank,
// bf16, the sparse indexer loss on. Expectations from the shapes: T = 1024 tokens, hidden 1024, 64 heads (FlashMLA
// pads nothing on compute capability 9), q_lora 256, kv_lora 512, qk 64 + rope 64, v 64, an indexer of 32 x 128
// heads selecting K = 512 keys.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "held_tensors.hpp"
#include "peakcast/model/dsa.hpp"
#include "peakcast/model/static_memory.hpp"
#include "peakcast/sim/layer_graph.hpp"
#include "peakcast/sim/module_graphs.hpp"
#include "spec_layer.hpp"

using namespace peakcast;

namespace {

constexpr std::int64_t kT = 1024, kH = 1024, kNp = 64, kRq = 256, kR = 512, kDr = 64, kDn = 64, kDv = 64, kHi = 32, kDi = 128,
                       kK = 512, kBf16 = 2, kFp32 = 4, kI32 = 4;

std::string spec_text(const std::string& pattern, const std::string& extra = "") {
  return R"({"model": {"hybrid_override_pattern": ")" + pattern + R"(", "hidden_size": 1024, "num_attention_heads": 64,
      "vocab_size": 1024, "seq_length": 1024, "bf16": true, "normalization": "RMSNorm", "add_bias_linear": false,
      "hidden_dropout": 0.0, "attention_dropout": 0.0, "position_embedding_type": "rope", "apply_rope_fusion": false,
      "multi_latent_attention": true, "q_lora_rank": 256, "kv_lora_rank": 512, "qk_head_dim": 64, "qk_pos_emb_head_dim": 64,
      "v_head_dim": 64, "qk_layernorm": true, "experimental_attention_variant": "dsa", "dsa_kernel_backend": "cudnn",
      "dsa_indexer_n_heads": 32, "dsa_indexer_head_dim": 128, "dsa_indexer_topk": 512, "dsa_indexer_loss_coeff": 0.001,
      "dsa_indexer_use_sparse_loss": true, "dsa_indexer_rotate_activation": false)" +
         extra + R"(},
    "train": {"micro_batch_size": 1, "global_batch_size": 1}, "cluster": {"num_gpus": 1, "gpu": "h100-sxm-80gb"}})";
}

test::HeldTensors layer_held(const std::string& pattern, const std::string& module, const std::string& extra = "") {
  auto held = test::held_by_module(test::valid_spec(spec_text(pattern, extra)));
  REQUIRE(held.count(module));
  for (const auto& t : held[module]) UNSCOPED_INFO(t.name << " " << t.bytes.value);
  return held[module];
}

// What every DSA layer keeps (no recompute): the input and its RMSNorm's rstd, the normed input (the down
// projections), q_c and kv (the q / kv RMSNorms, with their rstd), the normed q_c (linear_q_up_proj), q (the
// absorbing einsum), RoPE's cos / sin, the query and key FlashMLA saves, the contiguous V up-projection weight,
// FlashMLA's sink, clamped top-k, output and lse, and linear_proj's input.
constexpr std::int64_t kCommon = kT * kH * kBf16 + kT * kFp32 + kT * kH * kBf16 + kT * kRq * kBf16 + kT * kFp32 +
                                 kT * (kR + kDr) * kBf16 + kT * kFp32 + kT * kRq * kBf16 + kT * kNp * (kDn + kDr) * kBf16 +
                                 4 * kT * kDr * kBf16 + kT * kNp * (kR + kDr) * kBf16 + kT * (kR + kDr) * kBf16 +
                                 kNp * kDv * kR * kBf16 + kNp * kFp32 + kT * kK * kI32 + kT * kNp * kR * kBf16 + kT * kNp * kFp32 +
                                 kT * kNp * kDv * kBf16;
// A layer with an indexer adds linear_wk's output (kept by the LayerNorm k_norm, with its fp32 mean and rstd) and the
// indexer gradients the loss computes in the forward: [T, 32 x 128], [T, 128], [T, 32].
constexpr std::int64_t kIndexer = kT * kDi * kBf16 + 2 * kT * kFp32 + kT * kHi * kDi * kBf16 + kT * kDi * kBf16 + kT * kHi * kBf16;

}  // namespace

TEST_CASE("DSA: one layer's saved bytes per micro-batch, with and without an indexer", "[sim][graph][dsa]") {
  // No top-k sharing: the fused cuDNN path (FusedIndexerSparseAttnFunc) saves query, key, the sink, the top-k, out,
  // lse and the indexer gradients (dsa_cudnn_kernels.py:2264-2274).
  const auto fused = layer_held("D", "L0");
  CHECK(test::total_bytes(fused).value == kCommon + kIndexer);
  CHECK(test::holds_suffix(fused, "indexer_loss.grad_q"));
  // Top-k sharing, offset 3 and frequency 4: layers 1-3 compute (FusedQKTopKWithSparseLossFunc keeps the same
  // gradients, FusedSparseAttentionFunc the attention's tensors), layer 4 reuses layer 3's and builds no indexer.
  const std::string sharing = R"(, "dsa_indexer_topk_freq": 4, "dsa_indexer_skip_topk_offset": 3)";
  CHECK(test::total_bytes(layer_held("DDDD", "L0", sharing)).value == kCommon + kIndexer);
  const auto skip = layer_held("DDDD", "L3", sharing);
  CHECK(test::total_bytes(skip).value == kCommon);
  CHECK_FALSE(test::holds_suffix(skip, "indexer_loss.grad_q"));
}

TEST_CASE("DSA: the top-k holder under sharing", "[sim][graph][dsa]") {
  const std::string sharing = R"(, "dsa_indexer_topk_freq": 4, "dsa_indexer_skip_topk_offset": 3)";
  const std::string text = spec_text("DDDD", sharing);
  const model::LayerSpec computing{0, model::MixerKind::dsa, model::FfnKind::none, false};
  const model::LayerSpec reusing{3, model::MixerKind::dsa, model::FfnKind::none, false};
  // Pretraining (no packed_seq_params, no mask): the holder is the config, one [T, K] int32 top-k and [T] int32
  // lengths per computing layer for the run (dsa.py:1593-1612).
  CHECK(test::spec_layer(text.c_str(), {}, computing).persistent.value == kT * kK * kI32 + kT * kI32);
  CHECK(test::spec_layer(text.c_str(), {}, reusing).persistent.value == 0);
  // Packed sequences: the holder is the micro-batch's packed_seq_params, which full recompute's checkpoint keeps
  // until the backward: the top-k stays with the layer input, per micro-batch.
  const auto packed = test::spec_layer(text.c_str(), {"train.packed_sequence=true"}, computing);
  CHECK(packed.persistent.value == 0);
  sim::CheckpointSet full;
  full.whole_module = true;
  const auto p = sim::profile_module(packed, full);
  CHECK(p.held.value == kT * kH * kBf16 + kT * kK * kI32 + kT * kI32);
  const auto plain = sim::profile_module(test::spec_layer(text.c_str(), {}, computing), full);
  CHECK(plain.held.value == kT * kH * kBf16);
}

TEST_CASE("DSA: the ops follow AbsorbedMLA and the cuDNN path", "[sim][graph][dsa]") {
  const std::string text = spec_text("D");
  const auto g = test::spec_layer(text.c_str(), {}, {0, model::MixerKind::dsa, model::FfnKind::none, false});
  // The absorbed query: 2 T np qk r FLOPs (absorbed_mla.py:624); the V up-projection 2 T np r v (dsa.py:173).
  const sim::OpNode* absorb = test::named(g.ops, ".q_absorb");
  const sim::OpNode* v_up = test::named(g.ops, ".v_up_projection");
  REQUIRE(absorb);
  REQUIRE(v_up);
  CHECK(absorb->forward_flops == Approx(2.0 * kT * kNp * kDn * kR));
  CHECK(v_up->forward_flops == Approx(2.0 * kT * kNp * kR * kDv));
  // The indexer's linears see detached inputs: their backward is the weight gradient alone (dsa.py:1887-1888).
  const sim::OpNode* wq_b = test::named(g.ops, ".indexer.linear_wq_b");
  REQUIRE(wq_b);
  CHECK(wq_b->forward_flops == Approx(2.0 * kT * kRq * kHi * kDi));
  CHECK(wq_b->backward_flops == Approx(wq_b->forward_flops));
  // One autograd node scores, selects, attends and computes the loss; its scratch holds at least the fp32 [T, T]
  // score chunk (one chunk: 4 MiB < 1 GiB, dsa_cudnn_kernels.py:503-510) and the top-k wrapper's 2 x int32 per key.
  const sim::OpNode* fused = test::named(g.ops, ".dsa_fused_indexer_sparse_attention");
  REQUIRE(fused);
  CHECK(fused->forward_workspace.value >= kT * kT * kFp32 + kT * kT * kI32 * 2);
  CHECK(fused->is_fused_attention);
  // mla_up_proj discards query and key until core_attn_out's gradient (absorbed_mla.py:894-897).
  const sim::LayerGraph::Discard* up = nullptr;
  for (const auto& d : g.discards)
    if (d.region == sim::kMlaUpProj) up = &d;
  REQUIRE(up);
  CHECK(up->tensors.size() == 2);
  CHECK(g.ops.at(static_cast<std::size_t>(up->hook_op)).name == v_up->name);
}
