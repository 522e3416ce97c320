#pragma once
// Chunks of hand-sized modules for white-box tests of the memory walk (memory_walk.hpp): each module a
// plain segment whose bytes the test chooses, walked through a schedule with nothing else on the rank.
#include <cstdint>
#include <string>
#include <vector>

#include "memory_walk.hpp"
#include "peakcast/sim/schedule.hpp"

namespace peakcast::sim::test {

// A module taking `input` bytes, keeping `held` to its backward and handing on `output`.
inline detail::Segment hand_module(const std::string& name, std::int64_t input, std::int64_t held, std::int64_t output) {
  detail::Segment s;
  s.name = name;
  s.input_bytes = Bytes{input};
  s.held = Bytes{held};
  s.output_bytes = Bytes{output};
  s.parts.push_back({Bytes{held}, Bytes{}, Bytes{input}, Bytes{}, true, nullptr, {}});
  return s;
}

// The walk of `chunks` through `steps` without CUDA graphs, static memory or fixed bytes.
inline detail::RankWalk walk_hand_chunks(const std::vector<detail::ChunkModel>& chunks, const std::vector<ScheduleStep>& steps,
                                         int microbatches) {
  detail::WalkSetup setup;
  setup.microbatches = microbatches;
  setup.plan = detail::plan_passes(model::CudaGraphImpl::none, 0, false);
  return detail::walk_rank(chunks, steps, model::StaticMemory{}, setup);
}

}  // namespace peakcast::sim::test
