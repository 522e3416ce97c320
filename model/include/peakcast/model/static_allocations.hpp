#pragma once
// The tensors of a rank's model state in the order the run creates them, for the caching-allocator
// replay (sim/allocator_replay.hpp): what static_memory_per_rank sums, one request at a time.
#include <cstdint>
#include <vector>

#include "peakcast/model/layer_plan.hpp"
#include "peakcast/model/run_spec.hpp"
#include "peakcast/model/static_memory.hpp"

namespace peakcast::model {

struct StaticAllocations {
  // Model build: one tensor per parameter, in registration order, for every chunk of the stage.
  std::vector<Bytes> parameters;
  std::vector<bool> rebuilt;  // per parameter: built twice, the first copy freed (param_count.hpp)
  // DDP wrap, per _ParamAndGradBuffer in creation order: param_data (with the distributed
  // optimizer; 0 without), grad_data, and how many of `parameters` (from `first_parameter` on, in
  // order) it re-homes and frees (param_and_grad_buffer.py:1184-1196, :1305-1310).
  struct Buffer {
    Bytes param_data, grad_data;
    std::vector<std::size_t> members;  // indices into `parameters`
  };
  std::vector<Buffer> buffers;
  bool parameters_move_into_buffers = false;  // distributed optimizer
  // Optimizer build and steps, per tensor the optimizer owns (a parameter, or its DistOpt shard):
  // a clone of the model parameter turned into the fp32 main parameter (the clone is freed), the
  // state tensors of the first step, main.grad copies and the foreach temporary of each step.
  struct OptimizerTensor {
    Bytes clone, main;
    std::vector<Bytes> states;
    Bytes grad_copy, temporary, clip_temporary;
    bool own_optimizer = false;  // an expert-parallel parameter stepped by its own optimizer
  };
  std::vector<OptimizerTensor> optimizer;
};

// The stage's parameters and the optimizer tensors of `rank` (its DistOpt shard).
StaticAllocations static_allocations(const RunSpec& spec, const Derived& d, const PipelineStage& stage, const RankId& rank);

}  // namespace peakcast::model
