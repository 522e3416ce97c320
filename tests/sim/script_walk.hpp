#pragma once
// Walks a module script's forward steps with the set of live slots: `at_alloc(slot, live)` is called right after each
// allocation, with that slot already live.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "module_script.hpp"

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

}  // namespace peakcast::test
