#pragma once
// CUDA-graph pool accounting, and the passes (iterations) the walk must take for the run's graph
// implementation. Private to peakcast_sim.
#include <cstdint>
#include <vector>

#include "peakcast/model/run_spec.hpp"
#include "peakcast/sim/schedule.hpp"
#include "segment.hpp"

namespace peakcast::sim::detail {

// Hidden-state-sized static buffers a chain of captured layers keeps beyond its two per layer:
// measured with Megatron's local graphs on 2, 4 and 8 layers (calibration/data/h200_cuda_graphs.jsonl:
// the persistent allocation grows by two hidden states a layer, and 4 layers hold 14), and traced to
// the first graph's fresh input buffers (cuda_graphs.py:280) and two forward outputs and two input
// gradients of linear layers (tensor_parallel/layers.py:575, :625) that the runners keep referenced.
constexpr std::int64_t kCudaGraphChainEndBuffers = 6;

// Graph sets per chunk: one when micro-batches run one at a time (PP 1: the local manager reuses
// its graphs, cuda_graphs.py:1846-1849; TE reuses the static buffers of finished micro-batches),
// else one per micro-batch in flight.
std::int64_t graph_sets(const std::vector<ScheduleStep>& steps, std::size_t chunks, std::int64_t pp);

struct GraphPool {
  bool any_captured = false;
  Bytes pool;            // reserved by the graphs' private pool, outside the allocated bytes
  Bytes static_buffers;  // the graphs' static inputs and outputs: allocated while graphs replay
  std::int64_t sets = 1;
};

// Per-layer graphs (local or transformer_engine): every captured segment's saved set (checkpoints
// bypassed) for each graph set, plus the largest working memory one of them needs beside it. Static
// input and output buffers stay allocated: two hidden states per captured layer (its static output
// and its static input gradient), kCudaGraphChainEndBuffers more per chunk, and the static rotary
// table the layers take as an input (`rotary_table`, per graph set).
GraphPool layer_graph_pool(const std::vector<ChunkModel>& captured, std::int64_t graph_sets, Bytes rotary_table);

// One iteration the walk takes: the first (Adam state is created at its step) or a later one,
// eager or replaying graphs; `capture` when a full-iteration graph captures in it.
struct Pass {
  int iteration = 1;
  bool first = false, graphed = false, capture = false;
};

struct PassPlan {
  std::vector<Pass> passes;
  bool steady_eager = true;  // a later iteration runs eagerly (no graphs yet, or none at all)
  bool full_graph = false;   // cuda_graph_impl full_iteration
};

// Megatron's local manager records iteration 1 eagerly and captures at its end (schedules.py:871);
// Transformer Engine captures after cuda_graph_warmup_steps eager iterations (training.py:3824-3832);
// a full-iteration graph (FullCudaGraphWrapper) captures the whole forward-backward after
// cuda_graph_warmup_steps eager calls. Later iterations replay. `any_captured`: some segment is captured
// (always true for full-iteration graphs).
PassPlan plan_passes(model::CudaGraphImpl impl, std::int64_t cuda_graph_warmup_steps, bool any_captured);

}  // namespace peakcast::sim::detail
