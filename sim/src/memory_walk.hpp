#pragma once
// The memory walk: live allocated bytes of one pipeline rank, op by op, through Megatron's schedule
// for each pass (iteration) of the run, with its static memory, the gradient sync and the optimizer
// step. Private to peakcast_sim.
#include <string>
#include <vector>

#include "graph_pool.hpp"
#include "peakcast/model/static_memory.hpp"
#include "peakcast/sim/prediction.hpp"
#include "peakcast/sim/schedule.hpp"
#include "segment.hpp"

namespace peakcast::sim::detail {

class AllocRecorder;

// Everything one rank's walk needs besides its chunks and schedule.
struct WalkSetup {
  int microbatches = 1;             // micro-batches the schedule walks
  bool deallocate_outputs = true;   // deallocate_pipeline_outputs
  std::int64_t deferral_limit = 0;  // wgrad_deferral_limit (0: every micro-batch)
  Bytes fixed;                      // framework bytes held throughout (workspaces, global buffer, fitted)
  Bytes backward_workspaces;        // of `fixed`: created by iteration 1's first backward
  Bytes dummy_wgrads;               // gradient_accumulation_fusion's dummies, from the first backward
  Bytes drain_buffers;              // the deferral flush's gather buffers, from the first flush
  GraphPool graphs;                 // per-layer graph pool and static buffers
  PassPlan plan;
  std::vector<TimelineEvent>* timeline = nullptr;  // filled when set
  AllocRecorder* recorder = nullptr;               // the caching-allocator replay, when asked for
};

// One pass's peak and what it is made of.
struct PassPeak {
  Bytes peak;
  Phase phase = Phase::forward;
  std::string op;
  Breakdown breakdown;
};

struct RankWalk {
  PassPeak first, steady;      // iteration 1; the highest later pass
  Bytes last_pass_peak;        // the last pass walked (the graphed one when graphs replay)
  Bytes graph_pool;            // the pool, with a full-iteration capture's working set
  Bytes peak_with_graph_pool;  // every pass's peak, with the pool beside a replaying one
};

RankWalk walk_rank(const std::vector<ChunkModel>& chunks, const std::vector<ScheduleStep>& steps,
                   const model::StaticMemory& sm, const WalkSetup& setup);

}  // namespace peakcast::sim::detail
