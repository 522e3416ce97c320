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
