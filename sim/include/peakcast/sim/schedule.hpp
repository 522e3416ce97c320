#pragma once
// The order in which one pipeline rank runs forward and backward passes of (model chunk,
// micro-batch) pairs, as Megatron's schedules.py computes it.
#include <cstdint>
#include <vector>

namespace peakcast::sim {

struct ScheduleStep {
  bool forward = true;
  int chunk = 0;  // virtual pipeline chunk on this rank
  int microbatch = 0;
  // A backward that runs combined with the forward just before it (overlap_moe_expert_parallel_comm's
  // combined 1F1B step: the two micro-batches' layers interleave, combined_1f1b.py:281-470).
  bool combined = false;
};

struct ScheduleParams {
  std::int64_t pp = 1, vpp = 1, microbatches = 1;
  std::int64_t group_size = 0;  // microbatch_group_size_per_vp_stage; 0 = pp
  // overlap_moe_expert_parallel_comm: the combined 1F1B schedule (one more warm-up micro-batch when
  // interleaved, schedules.py:948-952; every steady forward paired with a backward).
  bool combined_1f1b = false;
};

// forward_backward_no_pipelining (pp == 1), 1F1B (vpp == 1) or the interleaved schedule.
std::vector<ScheduleStep> pipeline_schedule(const ScheduleParams& p, std::int64_t pp_rank);

// Warm-up forwards before the first backward on this rank (Megatron's num_warmup_microbatches).
std::int64_t warmup_steps(const ScheduleParams& p, std::int64_t pp_rank);

}  // namespace peakcast::sim
