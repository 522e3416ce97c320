#pragma once
// Step-time assembly: a rank's forward, backward and replay time per micro-batch from its segments'
// work, the pipeline bubble, the exposed gradient sync and the optimizer step. Private to peakcast_sim.
#include <vector>

#include "peakcast/model/run_spec.hpp"
#include "peakcast/model/static_memory.hpp"
#include "peakcast/sim/prediction.hpp"
#include "peakcast/sim/time_model.hpp"
#include "segment.hpp"

namespace peakcast::sim::detail {

struct RankTime {
  RankPrediction::StepTime time;
  double step_time_s = 0;
  double replay_time_s = 0;  // per iteration
  double replay_flops = 0;   // per iteration
  // What no recompute policy on these chunks' layers can go under: the GPU part of every segment's
  // forward and backward (a segment takes the longer of its GPU and host time, or their sum, and a
  // replay only adds; grouping layers for full recompute leaves the GPU work the same) through the
  // same schedule slots, the per-micro-batch host time, the gradient sync and the optimizer step.
  double any_policy_lower_bound_s = 0;
};

RankTime rank_step_time(const std::vector<ChunkModel>& chunks, const model::RunSpec& spec, const model::Derived& d,
                        const model::StaticMemory& sm, const TimeModel& time);

}  // namespace peakcast::sim::detail
