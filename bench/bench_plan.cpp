// Benchmarks of `peakcast plan` and of the per-configuration cost against the GPU count (issue #24;
// figures and commands in docs/planning.md):
//   plan_llama3_70b/N/T/GBS/W: Llama 3 70B bf16 on N H100s (32, 1024), seq 4096, T threads, window W
//   plan_deepseek_v3/N/T:      DeepSeek-V3 on N H100s (8, 64, 1024, 16384), seq 4096, GBS N, alltoall, grouped GEMM
//   predict_vs_gpus/N:   one prediction of Llama 3 8B TP2 PP2 with the distributed optimizer at DP N / 4,
//                        4 micro-batches per DP rank: what a sweep pays per configuration, against N
//   predictor_reuse_vs_gpus/N: the same through one Predictor (what rank and plan pay per policy)
//   static_memory_vs_gpus/N:   static_memory_per_rank alone, and /all_shards the every-shard reference
#include <benchmark/benchmark.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "../model/src/static_memory_internal.hpp"
#include "peakcast/model/layer_plan.hpp"
#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/static_memory.hpp"
#include "peakcast/sim/planner.hpp"
#include "peakcast/sim/prediction.hpp"

namespace {

using namespace peakcast;

model::RunSpec parse_or_throw(const std::string& text) {
  auto r = model::parse_run_spec(text);
  if (!r.spec) throw std::runtime_error("benchmark spec does not parse: " + r.diagnostics.front().message);
  return *r.spec;
}

std::string llama70b(std::int64_t gpus, std::int64_t gbs) {
  return R"({"model":{"preset":"llama3-70b","seq_length":4096,"bf16":true},"train":{"micro_batch_size":1,"global_batch_size":)" +
         std::to_string(gbs) + R"(},"cluster":{"num_gpus":)" + std::to_string(gpus) + R"(,"gpu":"h100-sxm-80gb"}})";
}

std::string deepseek_v3(std::int64_t gpus) {
  return R"({"model":{"preset":"deepseek-v3","seq_length":4096,"bf16":true,"moe_grouped_gemm":true,
    "moe_router_score_function":"sigmoid","moe_token_dispatcher_type":"alltoall"},
    "train":{"micro_batch_size":1,"global_batch_size":)" +
         std::to_string(gpus) + R"(},"cluster":{"num_gpus":)" + std::to_string(gpus) + R"(,"gpu":"h100-sxm-80gb"}})";
}

void report(benchmark::State& state, const sim::PlanResult& r) {
  const auto& s = r.stats;
  state.counters["configurations"] = static_cast<double>(s.configurations);
  state.counters["layouts"] = static_cast<double>(s.layouts);
  state.counters["simulated"] = static_cast<double>(s.simulated);
  state.counters["timed"] = static_cast<double>(s.timed);
  state.counters["fitting"] = static_cast<double>(s.fitting);
  state.counters["shown"] = static_cast<double>(r.entries.size());
  if (r.entries.empty()) state.SkipWithError("nothing fits");
}

// Arguments: GPUs, threads (the issue's target is 2 cores), global batch, uneven-pipeline window.
// {32, 2, 512, 8}: 1.56 M configurations, more than Calculon's 1,477,136 for this model on 32 GPUs
// (GBS 512 as Bridge's llama3_70b recipes; the window lets the end stages be up to 8 layers lighter).
void BM_plan_llama3_70b(benchmark::State& state) {
  const model::RunSpec base = parse_or_throw(llama70b(state.range(0), state.range(2)));
  sim::PlanOptions o;
  o.threads = static_cast<unsigned>(state.range(1));
  o.uneven_pipeline_window = state.range(3);
  sim::PlanResult r;
  for (auto _ : state) r = sim::plan(base, o);
  report(state, r);
  state.counters["us_per_configuration"] = r.stats.seconds * 1e6 / static_cast<double>(std::max<std::size_t>(1, r.stats.configurations));
}
BENCHMARK(BM_plan_llama3_70b)->Args({32, 2, 32, 4})->Args({32, 2, 512, 8})->Args({1024, 2, 1024, 4})->Unit(benchmark::kSecond)->Iterations(1);

void BM_plan_deepseek_v3(benchmark::State& state) {
  const model::RunSpec base = parse_or_throw(deepseek_v3(state.range(0)));
  sim::PlanOptions o;
  o.threads = static_cast<unsigned>(state.range(1));
  sim::PlanResult r;
  for (auto _ : state) r = sim::plan(base, o);
  report(state, r);
}
BENCHMARK(BM_plan_deepseek_v3)->Args({8, 2})->Args({64, 2})->Args({1024, 2})->Args({16384, 2})->Unit(benchmark::kSecond)->Iterations(1);

std::string llama8b_dp(std::int64_t gpus) {
  const std::int64_t dp = gpus / 4;
  return R"({"model":{"preset":"llama3-8b","tensor_model_parallel_size":2,"pipeline_model_parallel_size":2,
    "sequence_parallel":true,"seq_length":4096,"bf16":true},"train":{"micro_batch_size":1,"global_batch_size":)" +
         std::to_string(4 * dp) + R"(},"optimizer":{"use_distributed_optimizer":true},
    "ddp":{"use_distributed_optimizer":true,"overlap_grad_reduce":true},"cluster":{"num_gpus":)" +
         std::to_string(gpus) + R"(,"gpu":"h100-sxm-80gb"}})";
}

void BM_predict_vs_gpus(benchmark::State& state) {
  const model::RunSpec spec = parse_or_throw(llama8b_dp(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(sim::predict(spec));
}
BENCHMARK(BM_predict_vs_gpus)->RangeMultiplier(8)->Range(8, 4096)->Arg(16384)->Unit(benchmark::kMicrosecond);

void BM_predictor_reuse_vs_gpus(benchmark::State& state) {
  sim::Predictor p(parse_or_throw(llama8b_dp(state.range(0))));
  sim::RecomputeChoice c;
  c.granularity = model::RecomputeGranularity::selective;
  c.modules = {model::RecomputeTag::core_attn};
  for (auto _ : state) benchmark::DoNotOptimize(p.run(c));
}
BENCHMARK(BM_predictor_reuse_vs_gpus)->RangeMultiplier(8)->Range(8, 4096)->Arg(16384)->Unit(benchmark::kMicrosecond);

void BM_static_memory_vs_gpus(benchmark::State& state) {
  const model::RunSpec spec = parse_or_throw(llama8b_dp(state.range(0)));
  const model::Derived d = model::derive(spec);
  const model::LayerPlan plan = model::build_layer_plan(spec, d);
  for (auto _ : state) benchmark::DoNotOptimize(model::static_memory_per_rank(spec, d, plan));
}
BENCHMARK(BM_static_memory_vs_gpus)->RangeMultiplier(8)->Range(8, 4096)->Arg(16384)->Unit(benchmark::kMicrosecond);

// The every-shard reference: what static_memory_per_rank cost before it became O(1) in DP.
void BM_static_memory_all_shards_vs_gpus(benchmark::State& state) {
  const model::RunSpec spec = parse_or_throw(llama8b_dp(state.range(0)));
  const model::Derived d = model::derive(spec);
  const model::LayerPlan plan = model::build_layer_plan(spec, d);
  for (auto _ : state) benchmark::DoNotOptimize(model::detail::static_memory_per_rank_all_shards(spec, d, plan));
}
BENCHMARK(BM_static_memory_all_shards_vs_gpus)->RangeMultiplier(8)->Range(8, 4096)->Arg(16384)->Unit(benchmark::kMicrosecond);

}  // namespace
