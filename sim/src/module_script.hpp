#pragma once
// The allocations and frees of one module's forward and backward in program order, for the
// caching-allocator replay: the same lifetimes as its profile (layer_graph.cpp), tensor by tensor.
// Private to peakcast_sim.
#include <cstdint>
#include <string>
#include <vector>

#include "peakcast/sim/layer_graph.hpp"

namespace peakcast::sim::detail {

// Slots: t < n is tensor t's value, n + t its gradient, 2n the running op's scratch, 2n + 1 a
// gradient sum being formed, 2n + 2 + k the (k+1)-th further block of a backward's scratch, then the parked blocks
// the module never frees: (keep_output_grad) the output gradient the caller holds, (retains_moe_input) the moe
// checkpoint's input and its gradient.
struct ModuleScript {
  // move: `slot` takes over `from`'s block; workspaces: the run's first backward GEMM is here, where
  // PyTorch's autograd thread creates its cuBLAS workspaces (the recorder's, once a run; no slot)
  enum class Kind : std::uint8_t { alloc,
                                   free,
                                   move,
                                   workspaces };
  struct Step {
    Kind kind;
    std::int32_t slot;
    std::int32_t from;   // move only
    std::int64_t bytes;  // alloc only
    // free only: the block is a parameter's gradient the DDP hook drops (OpNode::param_grad); under
    // Megatron's local CUDA graphs its release waits for the host's next sync (alloc_recorder.cpp).
    bool param_grad = false;
    // alloc only: the tensor's routed rows (TensorNode::row_group, row_groups), -1 when not routed
    std::int16_t row_group = -1;
    std::int16_t row_groups = 0;
  };
  std::vector<Step> forward, backward;
  std::int32_t tensors = 0;           // n
  std::vector<std::int32_t> inputs;   // external tensor slots (alive when the forward starts)
  std::int32_t output = -1;           // handed to the next module at the forward's end
  std::vector<std::int32_t> held;     // alive from the forward's end to the backward
  bool output_grad = false;           // the backward starts with slot n + output alive
  std::int32_t scratch_blocks = 1;    // the most blocks one op's backward scratch takes
  const LayerGraph* graph = nullptr;  // the graph it was written from (slot_name)
  // CheckpointSet::keep_output_grad: the last slot, where the output gradient's block goes when the module lets go
  // of it (the caller frees it); -1 without.
  std::int32_t kept_output_grad = -1;
  // CheckpointSet::retains_moe_input: the slot the checkpoint's input goes to where the module would free it, and the
  // next one for its gradient (the dispatcher's attribute keeps both); -1 without.
  std::int32_t retained_input = -1;
  // The forward step at which the token dispatcher takes new probabilities (LayerGraph::dispatcher_takes_probs): where
  // the previous backward's retained blocks go; -1 without.
  std::int32_t dispatcher_step = -1;
  std::int32_t slots() const {
    return 2 * tensors + 1 + scratch_blocks + (kept_output_grad >= 0 ? 1 : 0) + (retained_input >= 0 ? 2 : 0);
  }
  std::int32_t grad(std::int32_t t) const { return tensors + t; }
};

ModuleScript module_script(const LayerGraph& g, const CheckpointSet& ckpt);

// What a slot holds, by the graph's tensor names: "name", "grad name", "scratch", "grad sum", "scratch k".
std::string slot_name(const ModuleScript& s, std::int32_t slot);

// The script's largest live bytes above its start, forward and backward (the start: the inputs;
// the held tensors and the output gradient): equal to the profile's excesses (tested).
struct ScriptExcess {
  Bytes forward, backward;
};
ScriptExcess script_excess(const ModuleScript& s, const LayerGraph& g);

}  // namespace peakcast::sim::detail
