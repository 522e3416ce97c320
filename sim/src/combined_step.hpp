#pragma once
// The combined 1F1B step of overlap_moe_expert_parallel_comm: one micro-batch's forward and another's
// backward run as one step, their layers interleaved so that each layer's all-to-all overlaps the
// other pass's computation (combined_1f1b.py:281-470, model_chunk_schedule_plan.py:500-620). Private
// to peakcast_sim.
#include <cstddef>
#include <vector>

#include "segment.hpp"

namespace peakcast::sim::detail {

struct CombinedOp {
  enum Kind { forward,
              backward,
              backward_done } kind = forward;
  std::size_t module = 0;  // the segment's index in its chunk (forward, backward)
};

// The order of a combined step's modules. The forward's pre-process (the embedding) runs first, then
// the backward's post-process (the loss and output layer, backward), then layer pairs: the forward's
// i-th layer with the backward's i-th from the end (model_chunk_schedule_plan.py:558-575), then
// whichever pass has layers left (:577-594); the backward's gradient is sent (:604-614) before the
// forward's post-process runs the output layer and the loss (:616-618), and the backward's
// pre-process (the embedding's backward) comes last (:619-621). Within a pair the
// forward's layer comes first: TransformerLayerSchedulePlan.run starts the forward's attention
// before the backward's MLP and ends with the backward's attention (:236-301), so the forward's
// attention saved set is alive beside the whole of the backward's layer; taking the forward's MLP
// first as well over-states the pair by the smaller of the two halves.
// A pass that runs nothing module by module (`*_whole`) contributes no modules.
std::vector<CombinedOp> combined_order(const ChunkModel& f, const ChunkModel& b, bool f_whole, bool b_whole);

}  // namespace peakcast::sim::detail
