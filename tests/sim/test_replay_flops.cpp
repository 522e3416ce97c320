// Replay FLOPs per policy, against counts written out from the layer's shapes.
#include <catch2/catch.hpp>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/sim/layer_graph.hpp"
#include "peakcast/sim/module_graphs.hpp"

using namespace peakcast;

namespace {
struct DenseLayer {
  model::RunSpec spec;
  model::Derived d;
  sim::ShapeContext ctx;
  sim::LayerGraph graph;
};

DenseLayer dense_layer() {
  auto r = model::parse_run_spec(R"({
    "model": {"preset": "llama3-8b", "num_layers": 2, "seq_length": 1024, "bf16": true},
    "train": {"micro_batch_size": 2, "global_batch_size": 2},
    "cluster": {"num_gpus": 1, "gpu": "h100-sxm-80gb"}})");
  REQUIRE(r.spec);
  DenseLayer l{*r.spec, model::derive(*r.spec), {}, {}};
  l.ctx = sim::make_shape_context(l.spec, l.d);
  l.graph = sim::build_layer_graph(l.spec, l.d, l.ctx, {0, model::MixerKind::attention, model::FfnKind::dense, false}, false);
  return l;
}
}  // namespace

TEST_CASE("mlp replays the fused pre-MLP norm, fc1, the SwiGLU and fc2", "[sim][replay]") {
  const DenseLayer l = dense_layer();
  const double N = 1024.0 * 2, h = 4096, F = 14336;  // Llama 3 8B, TP 1
  sim::CheckpointSet ck;
  ck.keep_inputs = sim::kMlp;
  const auto p = sim::profile_module(l.graph, ck);
  const double fc1 = 2 * N * h * (2 * F), swiglu = 6 * N * F, fc2 = 2 * N * F * h, norm = 5 * N * h;
  CHECK(p.replay_flops == Approx(fc1 + swiglu + fc2 + norm));
}

TEST_CASE("core_attn replays the causal attention core only", "[sim][replay]") {
  const DenseLayer l = dense_layer();
  const double b = 2, s = 1024, heads = 32, hd = 128;
  sim::CheckpointSet ck;
  ck.keep_inputs = sim::kCoreAttn;
  const auto p = sim::profile_module(l.graph, ck);
  // QK^T and PV, 2 FLOPs per multiply-add, half the s x s square under the causal mask.
  CHECK(p.replay_flops == Approx(2 * 2 * b * heads * s * s * hd * 0.5));
}

TEST_CASE("full recompute replays the whole layer forward; no policy replays nothing", "[sim][replay]") {
  const DenseLayer l = dense_layer();
  sim::CheckpointSet whole;
  whole.whole_module = true;
  const auto p = sim::profile_module(l.graph, whole);
  CHECK(p.replay_flops == Approx(p.forward_flops));
  CHECK(sim::profile_module(l.graph, sim::CheckpointSet{}).replay_flops == 0);
  // Sanity on the forward count itself: the four GEMMs dominate.
  const double N = 2048, h = 4096, F = 14336, q = 32 * 128, kv = 8 * 128;
  const double gemms = 2 * N * h * (q + 2 * kv) + 2 * N * q * h + 2 * N * h * 2 * F + 2 * N * F * h;
  CHECK(p.forward_work.gemm_flops == Approx(gemms));
}

TEST_CASE("each active checkpoint region is one checkpoint call; full recompute is one per module", "[sim][replay]") {
  const DenseLayer l = dense_layer();
  sim::CheckpointSet ck;
  ck.keep_inputs = sim::kCoreAttn | sim::kMlp;
  CHECK(sim::profile_module(l.graph, ck).replay_work.checkpoint_regions == 2);
  ck.keep_inputs = sim::kCoreAttn;
  CHECK(sim::profile_module(l.graph, ck).replay_work.checkpoint_regions == 1);
  sim::CheckpointSet whole;
  whole.whole_module = true;
  CHECK(sim::profile_module(l.graph, whole).replay_work.checkpoint_regions == 1);
  CHECK(sim::profile_module(l.graph, sim::CheckpointSet{}).replay_work.checkpoint_regions == 0);
}

namespace {
Bytes held_named(const sim::ModuleProfile& p, const std::string& suffix) {
  Bytes sum{};
  for (const auto& t : p.held_tensors)
    if (t.name.size() >= suffix.size() && t.name.compare(t.name.size() - suffix.size(), suffix.size(), suffix) == 0)
      sum += t.bytes;
  return sum;
}

sim::LayerGraph local_gqa_layer(bool rope_fusion) {
  auto r = model::parse_run_spec(std::string(R"({
    "model": {"preset": "llama3-8b", "num_layers": 2, "seq_length": 1024, "bf16": true,
              "transformer_impl": "local", "attention_backend": "unfused", "apply_rope_fusion": )") +
                                 (rope_fusion ? "true" : "false") + R"(},
    "train": {"micro_batch_size": 2, "global_batch_size": 2},
    "cluster": {"num_gpus": 1, "gpu": "h100-sxm-80gb"}})");
  REQUIRE(r.spec);
  const model::Derived d = model::derive(*r.spec);
  const sim::ShapeContext ctx = sim::make_shape_context(*r.spec, d);
  return sim::build_layer_graph(*r.spec, d, ctx, {0, model::MixerKind::attention, model::FfnKind::dense, false}, false);
}
}  // namespace

TEST_CASE("local GQA core_attn checkpoint keeps Q, K and the fused QKV output that V is a view of", "[sim][memory]") {
  const sim::LayerGraph g = local_gqa_layer(false);
  const std::int64_t b = 2, s = 1024, hq = 32, hkv = 8, hd = 128, bf16 = 2;
  sim::CheckpointSet ck;
  ck.keep_inputs = sim::kCoreAttn;
  const auto p = sim::profile_module(g, ck);
  CHECK(held_named(p, "q_rope") == Bytes{b * s * hq * hd * bf16});
  CHECK(held_named(p, "k_rope") == Bytes{b * s * hkv * hd * bf16});
  CHECK(held_named(p, "linear_qkv.out") == Bytes{b * s * (hq + 2 * hkv) * hd * bf16});
  // Nothing of the core's own (expanded K/V, scores, probabilities) survives the forward.
  CHECK(held_named(p, "gqa_expand.k") == Bytes{0});
  CHECK(held_named(p, "softmax.out") == Bytes{0});
}

TEST_CASE("unfused RoPE keeps cos and sin of each rotation, [s, 1, 1, d] in bf16; the fused kernel none", "[sim][memory]") {
  const std::int64_t s = 1024, hd = 128, bf16 = 2;
  // Q and K each: cos_ and sin_ saved by the two products (rope_utils.py _apply_rotary_pos_emb_bshd).
  CHECK(held_named(sim::profile_module(local_gqa_layer(false), {}), "rope.cos_sin") == Bytes{4 * s * hd * bf16});
  CHECK(held_named(sim::profile_module(local_gqa_layer(true), {}), "rope.cos_sin") == Bytes{0});
}
