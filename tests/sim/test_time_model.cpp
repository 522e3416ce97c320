// The time model's host, sync and collective terms, against values written out from the constants
// and the layer's shapes.
#include <catch2/catch.hpp>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/sim/layer_graph.hpp"
#include "peakcast/sim/module_graphs.hpp"
#include "peakcast/sim/prediction.hpp"
#include "peakcast/sim/time_model.hpp"

using namespace peakcast;

namespace {
sim::FittedConstants constants() {
  sim::FittedConstants f;
  f.gemm_efficiency = 0.5;
  f.attention_efficiency = 0.5;
  f.memory_efficiency = 0.5;
  f.host_forward_s_per_call = 1e-4;
  f.host_backward_s_per_call = 2e-4;
  f.comm_efficiency = 0.5;
  f.optimizer_memory_efficiency = 0.25;
  return f;
}
model::GpuSpec gpu() {
  model::GpuSpec g;
  g.bf16_dense_tflops = 1000;  // 1e15 FLOP/s
  g.hbm_bandwidth_gbps = 4000;
  g.nvlink_bandwidth_gbps = 800;  // 400 GB/s one direction
  return g;
}
// One MLA + MoE layer of Moonlight 16B on 8 EP ranks with the given token dispatcher (JSON fields).
sim::LayerGraph moonlight_moe_layer(const std::string& dispatcher) {
  auto r = model::parse_run_spec(R"({
    "model": {"preset": "moonlight-16b", "seq_length": 4096, "bf16": true, "expert_model_parallel_size": 8, )" +
                                 dispatcher + R"(},
    "train": {"micro_batch_size": 1, "global_batch_size": 8},
    "cluster": {"num_gpus": 8, "gpu": "h100-sxm-80gb"}})");
  REQUIRE(r.spec);
  const auto d = model::derive(*r.spec);
  const auto ctx = sim::make_shape_context(*r.spec, d);
  return sim::build_layer_graph(*r.spec, d, ctx, {1, model::MixerKind::mla, model::FfnKind::moe, false}, false);
}
}  // namespace

TEST_CASE("a module takes the longer of its GPU and host time, and both when it blocks the host", "[sim][time]") {
  const sim::TimeModel t(gpu(), constants());
  sim::ModuleProfile::Work w;
  w.gemm_flops = 1e12;  // 1e12 / (0.5 x 1e15) = 2 ms on the GPU
  w.host_calls = 10;    // 10 x 0.1 ms = 1 ms on the host
  CHECK(t.seconds(w) == Approx(2e-3));
  w.host_calls = 50;  // 5 ms on the host: host-bound
  CHECK(t.seconds(w) == Approx(5e-3));
  w.host_syncs = 1;  // the host waits for the GPU: no overlap
  CHECK(t.seconds(w) == Approx(7e-3));
  // Backward: 2x the GEMM work (4 ms) against 50 x 0.2 ms = 10 ms of host work.
  CHECK(t.backward_seconds(w) == Approx(10e-3));
  // Collectives at half of one 400 GB/s direction.
  w = {};
  w.comm_bytes = 200e6;
  CHECK(t.seconds(w) == Approx(200e6 / 200e9));
  CHECK(t.optimizer_seconds(1e9) == Approx(1e9 / 1000e9));
}

TEST_CASE("TP2 with sequence parallelism moves each linear's gathered or scattered activation over the ring", "[sim][time]") {
  auto r = model::parse_run_spec(R"({
    "model": {"preset": "llama3-8b", "num_layers": 2, "seq_length": 1024, "bf16": true,
              "tensor_model_parallel_size": 2, "sequence_parallel": true},
    "train": {"micro_batch_size": 1, "global_batch_size": 4},
    "cluster": {"num_gpus": 2, "gpu": "h100-sxm-80gb"}})");
  REQUIRE(r.spec);
  const auto d = model::derive(*r.spec);
  const auto ctx = sim::make_shape_context(*r.spec, d);
  const auto g = sim::build_layer_graph(*r.spec, d, ctx, {0, model::MixerKind::attention, model::FfnKind::dense, false}, false);
  const auto p = sim::profile_module(g, sim::CheckpointSet{});
  // Full-sequence activation [1024, 4096] bf16; a 2-rank ring moves half of it per collective.
  const double act = 1024.0 * 4096 * 2, ring = 0.5;
  // Forward: all-gather before linear_qkv and linear_fc1, reduce-scatter after linear_proj and
  // linear_fc2. Backward: the column linears re-gather their input and reduce-scatter the dgrad,
  // the row linears all-gather the output gradient.
  CHECK(p.forward_work.comm_bytes == Approx(4 * ring * act));
  CHECK(p.forward_work.backward_comm_bytes == Approx((2 * 2 + 2 * 1) * ring * act));
}

TEST_CASE("EP8 alltoall moves the routed rows that leave the rank, priced as wire time only", "[sim][time]") {
  const auto g = moonlight_moe_layer(R"("moe_token_dispatcher_type": "alltoall")");
  // 4096 tokens x top-6 routed rows of hidden 2048 in bf16; 7 of 8 destinations are other ranks.
  const double rows = 4096.0 * 6, wire = rows * 2048 * 2 * 7.0 / 8.0;
  int collectives = 0;
  for (const auto& op : g.ops) {
    if (op.name.find("all_to_all") == std::string::npos) continue;
    ++collectives;
    CHECK(op.comm_bytes == Approx(wire));
    CHECK(op.forward_bytes_moved == 0);  // its HBM traffic overlaps the wire time
    CHECK(op.host_sync == (op.name.find("dispatch") != std::string::npos));
  }
  CHECK(collectives == 2);  // dispatch and combine
}

TEST_CASE("the flex dispatcher sends a token once per destination rank, not once per expert", "[sim][time]") {
  const auto g = moonlight_moe_layer(R"("moe_token_dispatcher_type": "flex", "moe_flex_dispatcher_backend": "hybridep")");
  // Moonlight: 64 experts, 8 per rank, top-6. P(no expert of a given rank among the 6) =
  // C(56, 6) / C(64, 6) = (56 x 55 x 54 x 53 x 52 x 51) / (64 x 63 x 62 x 61 x 60 x 59).
  const double miss = (56.0 * 55 * 54 * 53 * 52 * 51) / (64.0 * 63 * 62 * 61 * 60 * 59);
  const double ranks_hit = 8 * (1 - miss);  // about 4.4 of the 6 routed copies
  const double wire = 4096.0 * ranks_hit * 2048 * 2 * 7.0 / 8.0;
  int collectives = 0;
  for (const auto& op : g.ops) {
    if (op.name.find("all_to_all") == std::string::npos) continue;
    ++collectives;
    CHECK(op.comm_bytes == Approx(wire));
  }
  CHECK(collectives == 2);
  CHECK(ranks_hit < 6);
}

TEST_CASE("a rank's step is its forward-backward, exposed grad sync and optimizer step", "[sim][time]") {
  auto r = model::parse_run_spec(R"({
    "model": {"preset": "llama3-8b", "num_layers": 4, "seq_length": 2048, "bf16": true,
              "recompute_granularity": "selective", "recompute_modules": ["core_attn"]},
    "train": {"micro_batch_size": 1, "global_batch_size": 8},
    "ddp": {"overlap_grad_reduce": false},
    "cluster": {"num_gpus": 2, "gpu": "h100-sxm-80gb"}})");
  REQUIRE(r.spec);
  const auto p = sim::predict(*r.spec);
  REQUIRE_FALSE(p.ranks.empty());
  for (const auto& rk : p.ranks) {
    CHECK(rk.step_time_s == Approx(rk.time.forward_backward_s + rk.time.grad_sync_s + rk.time.optimizer_s));
    CHECK(rk.time.grad_sync_s > 0);              // DP 2 without overlap: the reduction is exposed
    CHECK(rk.time.checkpoint_regions == 4 * 4);  // core_attn in 4 layers, 4 micro-batches per DP rank
    CHECK(rk.replay_time_s > 0);
    CHECK(rk.replay_time_s < rk.time.forward_backward_s);
  }
}

TEST_CASE("a fused attention kernel costs its fixed part per call plus FLOPs at its own rate", "[sim][time]") {
  auto f = constants();
  f.fused_attention_efficiency = 0.5;  // 5e14 FLOP/s
  f.fused_attention_s_per_call = 50e-6;
  f.fused_attention_backward_efficiency = 0.2;  // 2e14 forward FLOP/s
  f.fused_attention_backward_s_per_call = 100e-6;
  const sim::TimeModel t(gpu(), f);
  sim::ModuleProfile::Work w;
  w.fused_attention_flops = 1e12;
  w.fused_attention_calls = 2;
  CHECK(t.compute_seconds(w) == Approx(2 * 50e-6 + 1e12 / 5e14));
  CHECK(t.backward_compute_seconds(w) == Approx(2 * 100e-6 + 1e12 / 2e14));
  // Without a fused-attention fit the kernel is timed like the unfused core (2.5x backward).
  const sim::TimeModel plain(gpu(), constants());
  CHECK(plain.compute_seconds(w) == Approx(1e12 / 5e14));
  CHECK(plain.backward_compute_seconds(w) == Approx(2.5 * 1e12 / 5e14));
}

TEST_CASE("Transformer Engine attention goes to the fused class, the local core to the batched GEMMs", "[sim][time]") {
  const auto work_of = [](const std::string& impl) {
    auto r = model::parse_run_spec(R"({"model":{"preset":"llama3-8b","num_layers":2,"seq_length":4096,"bf16":true,
      "transformer_impl":")" + impl +
                                   R"("},"train":{"micro_batch_size":1,"global_batch_size":1},
      "cluster":{"num_gpus":1,"gpu":"h200-141gb"}})");
    REQUIRE(r.spec);
    const auto d = model::derive(*r.spec);
    const auto ctx = sim::make_shape_context(*r.spec, d);
    const model::LayerSpec layer{0, model::MixerKind::attention, model::FfnKind::dense, false};
    return sim::profile_module(sim::build_layer_graph(*r.spec, d, ctx, layer, false), sim::CheckpointSet{}).forward_work;
  };
  const auto te = work_of("transformer_engine");
  const auto local = work_of("local");
  // 32 heads, s = 4096, d = 128, causal: 2 x 2 x h s^2 d / 2.
  const double causal = 2.0 * 2.0 * 32 * 4096.0 * 4096.0 * 128 * 0.5;
  CHECK(te.fused_attention_flops == Approx(causal));
  CHECK(te.fused_attention_calls == 1);
  CHECK(te.attention_flops == 0);
  CHECK(local.fused_attention_flops == 0);
  CHECK(local.attention_flops > 0);
}

TEST_CASE("row gathers and block copies take the measured movement rate, other byte ops the memory one", "[sim][time]") {
  auto f = constants();         // memory efficiency 0.5 of 4000 GB/s
  f.movement_efficiency = 0.8;  // 3200 GB/s
  const sim::TimeModel t(gpu(), f);
  sim::ModuleProfile::Work w;
  w.movement_bytes = 3.2e9;
  w.other_bytes = 2e9;
  CHECK(t.compute_seconds(w) == Approx(3.2e9 / 3200e9 + 2e9 / 2000e9));
  CHECK(t.backward_compute_seconds(w) == Approx(2 * (3.2e9 / 3200e9 + 2e9 / 2000e9)));
  // Without a movement fit they are timed like every other memory-bound op.
  const sim::TimeModel plain(gpu(), constants());
  CHECK(plain.compute_seconds(w) == Approx(5.2e9 / 2000e9));
}
