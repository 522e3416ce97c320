#pragma once
// The tensor lifetimes of one module under a checkpoint set, shared by the module profile
// (layer_graph.cpp) and the allocation script of the caching-allocator replay (module_script.cpp).
// Private to peakcast_sim.
#include <cstdint>
#include <vector>

#include "peakcast/sim/layer_graph.hpp"

namespace peakcast::sim::detail {

struct Lifetimes {
  std::vector<int> last_forward_use;  // op index; producer index when never read
  std::vector<int> first_saver;       // smallest saving op index (its backward runs last), -1 if none
  std::vector<bool> held;             // kept from forward until backward under the checkpoint set
  std::vector<bool> replayed;         // dropped by a checkpoint and re-materialised at its backward
};

inline bool in_region(const OpNode& op, std::uint32_t mask) { return (op.regions & mask) != 0; }

Lifetimes analyse(const LayerGraph& g, const CheckpointSet& ckpt);

// Outermost active mechanism-1 region of an op (or the whole module), as a mask; 0 when none.
std::uint32_t active_keep_region(const OpNode& op, const CheckpointSet& ckpt);

}  // namespace peakcast::sim::detail
