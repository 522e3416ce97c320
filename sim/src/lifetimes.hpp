#pragma once
// The tensor lifetimes of one module under a checkpoint set, shared by the module profile
// (layer_graph.cpp) and the allocation script of the caching-allocator replay (module_script.cpp).
// Private to peakcast_sim.
#include <cstdint>
#include <vector>

#include "peakcast/sim/layer_graph.hpp"

namespace peakcast::sim::detail {

// One save fine-grained offloading sent to the host (a save call of its own: a tensor two nodes save goes
// twice, fine_grained_activation_offload.py:960-970), and the GPU tensor its reload makes for the backward.
struct Reload {
  int tensor = -1;
  std::uint32_t group = kNoOffloadGroup;
  int first_use = -1;  // the op whose backward unpacks it (a checkpoint's saves: its recompute's hook op)
  int last_use = -1;   // the op after whose backward it goes (a checkpoint's: the checkpoint's own backward)
};

struct Lifetimes {
  std::vector<int> last_forward_use;  // op index; producer index when never read
  std::vector<int> first_saver;       // smallest saving op index (its backward runs last), -1 if none
  std::vector<bool> held;             // kept from forward until backward under the checkpoint set
  std::vector<bool> replayed;         // dropped by a checkpoint and re-materialised at its backward
  // Fine-grained offloading (OffloadContext): the offloaded saves in graph order; the tensors whose GPU block
  // goes because a commit dropped their last reference (record_stream'd on the copy's stream,
  // fine_grained_activation_offload.py:1015); whether a commit freed the external input's storage.
  std::vector<Reload> reloads;
  std::vector<bool> offload_freed;
  bool input_released = false;
};

inline bool in_region(const OpNode& op, std::uint32_t mask) { return (op.regions & mask) != 0; }

Lifetimes analyse(const LayerGraph& g, const CheckpointSet& ckpt, const OffloadContext* offload = nullptr);

// The `moe` checkpoint's input: the largest tensor a kMoe op reads that no kMoe op makes (the hidden states the
// checkpoint is called with, moe_layer.py:696-706); -1 without kMoe ops.
int moe_checkpoint_input(const LayerGraph& g);

// Outermost active mechanism-1 region of an op (or the whole module), as a mask; 0 when none.
std::uint32_t active_keep_region(const OpNode& op, const CheckpointSet& ckpt);

// The offload groups a module starts under `ckpt` among `configured` (offload_modules): the tagged ones,
// except a group inside an active mechanism-1 checkpoint (a recomputed core attention never enters its
// offload context, attention.py:1545-1553) and all of them under full recompute (not simulated).
std::uint32_t started_offload_groups(const LayerGraph& g, const CheckpointSet& ckpt, std::uint32_t configured);

// A group's first op: its start-backward event follows that op's backward. -1 when the group has no op.
int offload_group_first_op(const LayerGraph& g, std::uint32_t group);

// The bytes of the saves of `group` that go to the host under `offload` (its offloaded bits and size limit).
Bytes offload_group_bytes(const LayerGraph& g, const CheckpointSet& ckpt, const OffloadContext& offload, std::uint32_t group);

// analyse()'s fine-grained offloading pass over the plain lifetimes (offload_lifetimes.cpp).
void apply_offload(const LayerGraph& g, const CheckpointSet& ckpt, const OffloadContext& offload, Lifetimes& lt);

}  // namespace peakcast::sim::detail
