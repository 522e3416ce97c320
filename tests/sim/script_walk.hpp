#pragma once
// Walks a module script's forward steps with the set of live slots: `at_alloc(slot, live)` is called right after each
// allocation, with that slot already live.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "module_script.hpp"
#include "peakcast/sim/layer_graph.hpp"

namespace peakcast::test {

template <class AtAlloc>
void walk_forward(const sim::detail::ModuleScript& script, AtAlloc&& at_alloc) {
  std::vector<bool> live(static_cast<std::size_t>(script.slots()), false);
  for (const auto& st : script.forward) {
    if (st.kind == sim::detail::ModuleScript::Kind::alloc) {
      live[static_cast<std::size_t>(st.slot)] = true;
      at_alloc(st.slot, live);
    } else if (st.kind == sim::detail::ModuleScript::Kind::free) {
      live[static_cast<std::size_t>(st.slot)] = false;
    }
  }
}

// The live slots right after `slot`'s first allocation in the forward of `g` under `regions` recomputed (mechanism 1,
// the checkpoint keeps the regions' inputs); empty if it is never allocated.
inline std::vector<bool> live_at_alloc(const sim::LayerGraph& g, std::uint32_t regions, std::int32_t slot) {
  sim::CheckpointSet ckpt;
  ckpt.keep_inputs = regions;
  std::vector<bool> at;
  walk_forward(sim::detail::module_script(g, ckpt), [&](std::int32_t s, const std::vector<bool>& live) {
    if (s == slot && at.empty()) at = live;
  });
  return at;
}

}  // namespace peakcast::test
