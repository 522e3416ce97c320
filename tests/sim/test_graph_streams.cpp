// Megatron's local CUDA graphs and the caching allocator's streams (alloc_recorder.cpp
// capture_at_schedule_end): the model state is built on the manager's side stream
// (cuda_graphs.py:1857-1859); the captures at the end of iteration 1's schedule first empty the
// cache (torch.cuda.graph.__enter__), then the optimizer step runs on the default stream
// (cuda_graphs.py:674), whose requests the side stream's cached blocks do not serve.
// Expectations from the allocator's rules: blocks of 10 MiB or more get a segment of their own size
// rounded to 2 MiB, a cached block is split when what remains is over 1 MiB.
#include <catch2/catch.hpp>

#include <vector>

#include "alloc_recorder.hpp"

using namespace peakcast;

namespace {

constexpr std::int64_t kMiB = 1 << 20;

// One optimizer tensor: the build clones the parameter (100 MiB) into its fp32 main (100 MiB) and
// frees the clone; the first step creates two 60 MiB moments.
struct Run {
  model::StaticMemory sm;
  model::StaticAllocations statics;
  std::vector<sim::detail::ChunkModel> chunks, captured;
  sim::detail::ReplaySetup setup;
  explicit Run(bool local_graphs) {
    model::StaticAllocations::OptimizerTensor t;
    t.clone = Bytes{100 * kMiB};
    t.main = Bytes{100 * kMiB};
    t.states = {Bytes{60 * kMiB}, Bytes{60 * kMiB}};
    statics.optimizer.push_back(t);
    captured.resize(1);
    captured[0].segments.resize(1);
    captured[0].segments[0].graph_captured = true;  // a recorded graph (no script: the pool is not replayed)
    setup.sm = &sm;
    setup.statics = &statics;
    setup.local_graphs = local_graphs;
    setup.captured = &captured;
  }
  Bytes peak_reserved() {
    sim::detail::AllocRecorder rec(chunks, setup);
    rec.begin_pass(1, true, false, false);
    rec.optimizer(true);
    return rec.result().peak_reserved;
  }
};

}  // namespace

TEST_CASE("local CUDA graphs: the captures empty the side stream's cache and the step starts the default stream's",
          "[sim][cuda_graph][allocator]") {
  // One stream, no capture: the first moment splits the freed clone's 100 MiB segment (40 MiB left),
  // the second takes a segment of its own: 100 + 100 + 60 MiB.
  CHECK(Run(false).peak_reserved() == Bytes{260 * kMiB});
  // Local graphs: empty_cache() returns the clone's segment before the step, whose moments are
  // requested on the default stream: two new segments beside the main one, 100 + 60 + 60 MiB
  // (above the build's 200).
  CHECK(Run(true).peak_reserved() == Bytes{220 * kMiB});
}
