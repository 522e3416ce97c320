// Benchmarks of the three user-facing workloads (figures in docs/ranking-and-sweeps.md):
//   predict: DeepSeek-V3 on 1024 GPUs, TP2 PP8 VPP4 EP64, seq 4096, MBS 1, GBS 16384
//   rank:    every recompute candidate of that run
//   sweep:   51,200 Moonlight 16B configurations (seq x MBS x TP x EP x GPUs x GPU type x recompute),
//            and 102,400 with GBS 1024 and 4096 (the issue's 100,000-configuration target)
#include <benchmark/benchmark.h>

#include <stdexcept>
#include <string>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/sim/prediction.hpp"
#include "peakcast/sim/ranking.hpp"
#include "peakcast/sim/sweep.hpp"

namespace {

using namespace peakcast;

// 61 decoder layers over PP8 x VPP4 = 32 virtual stages: 1 layer with the embedding, 30 x 2 layers,
// the MTP block with the loss (Megatron requires an explicit layout; 61 is prime).
std::string deepseek_v3_layout() {
  std::string l = "Et|";
  for (int i = 0; i < 30; ++i) l += "tt|";
  return l + "mL";
}

std::string deepseek_v3_text(int global_batch) {
  return R"({"model":{"preset":"deepseek-v3","tensor_model_parallel_size":2,"pipeline_model_parallel_size":8,
    "virtual_pipeline_model_parallel_size":4,"expert_model_parallel_size":64,"expert_tensor_parallel_size":1,
    "sequence_parallel":true,"seq_length":4096,"bf16":true,"moe_grouped_gemm":true,
    "moe_router_score_function":"sigmoid","moe_token_dispatcher_type":"alltoall",
    "pipeline_model_parallel_layout":")" +
         deepseek_v3_layout() + R"("},
    "train":{"micro_batch_size":1,"global_batch_size":)" +
         std::to_string(global_batch) + R"(},
    "optimizer":{"use_distributed_optimizer":true},"ddp":{"use_distributed_optimizer":true,"overlap_grad_reduce":true},
    "cluster":{"num_gpus":1024,"gpu":"h100-sxm-80gb"}})";
}

model::RunSpec parse_or_throw(const std::string& text) {
  auto r = model::parse_run_spec(text);
  if (!r.spec) throw std::runtime_error("benchmark spec does not parse: " + r.diagnostics.front().message);
  return *r.spec;
}

void BM_predict_deepseek_v3(benchmark::State& state) {
  const model::RunSpec spec = parse_or_throw(deepseek_v3_text(static_cast<int>(state.range(0))));
  for (auto _ : state) benchmark::DoNotOptimize(sim::predict(spec));
}
BENCHMARK(BM_predict_deepseek_v3)->Arg(1024)->Arg(16384)->Unit(benchmark::kMillisecond);

// The same with every rank's allocations replayed through the caching-allocator model
// (PredictOptions::replay_allocator), and the seed's Moonlight default both ways.
void BM_predict_replay_deepseek_v3(benchmark::State& state) {
  const model::RunSpec spec = parse_or_throw(deepseek_v3_text(static_cast<int>(state.range(0))));
  sim::PredictOptions opt;
  opt.replay_allocator = true;
  std::int64_t requests = 0;
  for (auto _ : state) {
    const auto p = sim::predict(spec, opt);
    requests = 0;
    for (const auto& r : p.ranks) requests += r.allocator ? r.allocator->requests : 0;
  }
  state.counters["requests"] = static_cast<double>(requests);
}
BENCHMARK(BM_predict_replay_deepseek_v3)->Arg(1024)->Unit(benchmark::kMillisecond);

// What `predict` adds for a MoE run: the replayed stream again under kPredictRoutingBandSamples sampled
// routings (AllocatorReplay::routing_band), next to the balanced replay above.
void BM_predict_routing_band_deepseek_v3(benchmark::State& state) {
  const model::RunSpec spec = parse_or_throw(deepseek_v3_text(static_cast<int>(state.range(0))));
  sim::PredictOptions opt;
  opt.routing_band_samples = sim::kPredictRoutingBandSamples;
  for (auto _ : state) benchmark::DoNotOptimize(sim::predict(spec, opt));
}
BENCHMARK(BM_predict_routing_band_deepseek_v3)->Arg(1024)->Unit(benchmark::kMillisecond);

void BM_predict_moonlight(benchmark::State& state) {
  const model::RunSpec spec = parse_or_throw(std::string(model::default_run_spec_text()));
  sim::PredictOptions opt;
  opt.replay_allocator = state.range(0) != 0;
  for (auto _ : state) benchmark::DoNotOptimize(sim::predict(spec, opt));
}
BENCHMARK(BM_predict_moonlight)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// The same with one Predictor reused, as rank does (graphs and profiles cached).
void BM_predictor_reuse_deepseek_v3(benchmark::State& state) {
  sim::Predictor p(parse_or_throw(deepseek_v3_text(static_cast<int>(state.range(0)))));
  for (auto _ : state) benchmark::DoNotOptimize(p.run());
}
BENCHMARK(BM_predictor_reuse_deepseek_v3)->Arg(1024)->Arg(16384)->Unit(benchmark::kMillisecond);

void BM_rank_deepseek_v3(benchmark::State& state) {
  const model::RunSpec spec = parse_or_throw(deepseek_v3_text(static_cast<int>(state.range(0))));
  std::size_t n = 0;
  for (auto _ : state) {
    const auto r = sim::rank_candidates(spec, Bytes{80'000'000'000});
    n = r.candidates.size();
  }
  if (n == 0) state.SkipWithError("no candidates: the benchmark spec no longer validates");
  state.counters["candidates"] = static_cast<double>(n);
}
BENCHMARK(BM_rank_deepseek_v3)->Arg(1024)->Arg(16384)->Unit(benchmark::kMillisecond);

// size 0: the first three axes (80 points); 1: all seven (51,200); 2: those under GBS 1024 and 4096
// (102,400; the first half is size 1's sweep).
std::vector<sim::SweepAxis> sweep_axes(std::int64_t size) {
  std::vector<sim::SweepAxis> axes = {
      {"model.seq_length", {"1024", "2048", "4096", "8192", "16384"}},
      {"train.micro_batch_size", {"1", "2", "4", "8"}},
      {"model.tensor_model_parallel_size", {"1", "2", "4", "8"}},
      {"model.expert_model_parallel_size", {"1", "2", "4", "8"}},
      {"cluster.num_gpus", {"8", "16", "32", "64", "128"}},
      {"cluster.gpu", {"h100-sxm-80gb", "h200-141gb", "b200", "a100-80gb"}},
      {"model.recompute_modules",
       {"[]", "[\"core_attn\"]", "[\"moe_act\"]", "[\"layernorm\"]", "[\"moe\"]", "[\"mla_up_proj\"]",
        "[\"moe_act\",\"layernorm\"]", "[\"mla_up_proj\",\"moe_act\",\"layernorm\"]"}}};
  if (size == 0) axes.resize(3);
  if (size == 2) axes.insert(axes.begin(), sim::SweepAxis{"train.global_batch_size", {"1024", "4096"}});
  return axes;
}

void BM_sweep_moonlight(benchmark::State& state) {
  const std::string text(model::default_run_spec_text());
  const auto axes = sweep_axes(state.range(0));
  sim::SweepOptions opt;
  opt.threads = static_cast<unsigned>(state.range(1));
  std::size_t points = 0, invalid = 0;
  for (auto _ : state) {
    const auto r = sim::run_sweep(text, {"train.global_batch_size=1024"}, axes, opt);
    points = r.points.size();
    invalid = r.invalid_count();
  }
  state.counters["points"] = static_cast<double>(points);
  state.counters["invalid"] = static_cast<double>(invalid);
}
// Arg 0: the 80-point slice (quick); 1: all 51,200 points; 2: 102,400 points. Second arg: threads.
BENCHMARK(BM_sweep_moonlight)->Args({0, 1})->Args({0, 2})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_sweep_moonlight)->Args({1, 2})->Args({2, 2})->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
