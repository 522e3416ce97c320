// Megatron's schedule counts: warm-up forwards and micro-batches in flight per pipeline rank.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "peakcast/sim/schedule.hpp"

using namespace peakcast::sim;

namespace {
// Largest number of (chunk, micro-batch) forwards whose backward has not run yet.
int max_in_flight(const std::vector<ScheduleStep>& steps) {
  int live = 0, peak = 0;
  for (const auto& s : steps) {
    live += s.forward ? 1 : -1;
    peak = std::max(peak, live);
  }
  return peak;
}
}  // namespace

TEST_CASE("no pipelining runs one micro-batch at a time", "[sim][schedule]") {
  const auto steps = pipeline_schedule({1, 1, 8, 0, false}, 0);
  CHECK(steps.size() == 16);
  CHECK(max_in_flight(steps) == 1);
}

TEST_CASE("1F1B holds min(pp - rank, m) micro-batches on each rank", "[sim][schedule]") {
  const ScheduleParams p{4, 1, 8, 0, false};
  for (int r = 0; r < 4; ++r) {
    INFO("rank " << r);
    CHECK(warmup_steps(p, r) == std::min(4 - r - 1, 8));
    CHECK(max_in_flight(pipeline_schedule(p, r)) == std::min(4 - r, 8));
  }
  // Fewer micro-batches than stages: the warm-up is clamped to m.
  CHECK(max_in_flight(pipeline_schedule({8, 1, 2, 0, false}, 0)) == 2);
}

TEST_CASE("interleaved schedule: warm-up (p-r-1)*2 + (v-1)*G and every pair runs once", "[sim][schedule]") {
  // Llama 3 70B seed layout: p = 4, v = 5, m = 16, G = p.
  const ScheduleParams p{4, 5, 16, 0, false};
  CHECK(warmup_steps(p, 0) == 3 * 2 + 4 * 4);
  CHECK(warmup_steps(p, 3) == 0 * 2 + 4 * 4);
  const auto steps = pipeline_schedule(p, 0);
  CHECK(max_in_flight(steps) == 22 + 1);
  std::set<std::pair<int, int>> fwd, bwd;
  for (const auto& s : steps) (s.forward ? fwd : bwd).insert({s.chunk, s.microbatch});
  CHECK(fwd.size() == 16 * 5);
  CHECK(bwd.size() == 16 * 5);
  // A chunk's backward never precedes its own forward.
  std::set<std::pair<int, int>> seen;
  for (const auto& s : steps) {
    if (s.forward) seen.insert({s.chunk, s.microbatch});
    else CHECK(seen.count({s.chunk, s.microbatch}) == 1);
  }
}

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/sim/prediction.hpp"

TEST_CASE("walking a shortened steady state finds the same peaks as the full step", "[sim][schedule]") {
  // The timeline option walks every micro-batch; plain predictions drop repeated steady-state groups.
  for (const char* layout : {R"("pipeline_model_parallel_size": 4)",
                             R"("pipeline_model_parallel_size": 4, "virtual_pipeline_model_parallel_size": 2)",
                             R"("pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 4)"}) {
    INFO(layout);
    for (int gbs : {64, 72, 200}) {
      INFO("global batch " << gbs);
      const std::string text = std::string(R"({"model": {"preset": "llama3-8b", "num_layers": 16, "seq_length": 2048,
        "bf16": true, "attention_backend": "fused", )") +
                               layout + R"(},
        "train": {"micro_batch_size": 1, "global_batch_size": )" +
                               std::to_string(gbs) + R"(},
        "cluster": {"num_gpus": 8, "gpu": "h100-sxm-80gb"}})";
      const auto parsed = peakcast::model::parse_run_spec(text);
      for (const auto& d : parsed.diagnostics) INFO(peakcast::model::format(d));
      if (!parsed.spec) continue;  // a batch Megatron's interleaved schedule refuses
      peakcast::sim::Predictor p(*parsed.spec);
      const auto shortened = p.run();
      peakcast::sim::PredictOptions full;
      full.walk_every_microbatch = true;
      const auto walked = p.run(full);
      REQUIRE(shortened.ranks.size() == walked.ranks.size());
      for (std::size_t i = 0; i < walked.ranks.size(); ++i) {
        CHECK(shortened.ranks[i].peak_allocated == walked.ranks[i].peak_allocated);
        CHECK(shortened.ranks[i].steady_peak_allocated == walked.ranks[i].steady_peak_allocated);
        CHECK(shortened.ranks[i].peak_phase == walked.ranks[i].peak_phase);
      }
    }
  }
}
