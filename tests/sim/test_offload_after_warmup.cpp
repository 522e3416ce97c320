// Fine-grained offloading after the warm-up: Megatron keeps the last group of each name on the GPU where the
// (chunk, micro-batch) is the next to run its backward, and in the first of the backward order
// (docs/research/fine-grained-offloading-memory-facts.md section 4). Walked on hand-sized chunks.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "hand_chunks.hpp"
#include "peakcast/sim/schedule.hpp"

using namespace peakcast::sim;
using peakcast::Bytes;
using peakcast::sim::detail::ChunkModel;
using peakcast::sim::detail::Segment;

namespace {

// A layer passing a hidden state of X bytes that saves H_off while its groups go to the host, H_on when they stay.
constexpr std::int64_t X = 10, H_off = 20, H_on = 100;

Segment offloading_layer(const std::string& name) {
  Segment s = test::hand_module(name, X, H_off, X);
  s.offload_kept = Segment::OnGpu{Bytes{H_on}, Bytes{}, Bytes{}, false};
  return s;
}

detail::RankWalk walk(const std::vector<ScheduleStep>& steps, int microbatches) {
  ChunkModel cm;
  cm.segments = {offloading_layer("L0"), offloading_layer("L1")};
  return test::walk_hand_chunks({cm}, steps, microbatches);
}

}  // namespace

TEST_CASE("offloading keeps the last layer's groups on the GPU after the warm-up", "[sim][offload]") {
  // One micro-batch at a time: each forward is followed by its own backward, so after the warm-up the
  // chunk's last offloading layer (L1) keeps its saves: H_off + H_on at the forward's end, 2 H_off in iteration 1.
  const auto w = walk(pipeline_schedule({1, 1, 2, 0, false}, 0), 2);
  CHECK(w.first.peak == Bytes{2 * H_off});
  CHECK(w.steady.peak == Bytes{H_off + H_on});
  // 1F1B on the first of two stages (F0, then F1 B0, F2 B1, F3 B2, then B3): F0 is the next to run its
  // backward and the first of the backward order, so it keeps L1's saves; F1 runs while B0 is pending and
  // offloads everything. The peak is F1's end: micro-batch 0 (H_off + H_on) beside micro-batch 1 (2 H_off).
  const auto w2 = walk(pipeline_schedule({2, 1, 4, 0, false}, 0), 4);
  CHECK(w2.first.peak == Bytes{4 * H_off});
  CHECK(w2.steady.peak == Bytes{3 * H_off + H_on});
}
