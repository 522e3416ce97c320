// The memory walk on a hand-built two-module chunk: live bytes at each op derived by hand from the
// segments' saved sets, outputs and transient excesses (memory_walk.hpp).
#include <catch2/catch.hpp>

#include "memory_walk.hpp"

using namespace peakcast;
using namespace peakcast::sim::detail;

namespace {
Segment module(const char* name, std::int64_t input, std::int64_t held, std::int64_t output, std::int64_t fwd, std::int64_t bwd) {
  Segment s;
  s.name = name;
  s.input_bytes = Bytes{input};
  s.held = Bytes{held};
  s.output_bytes = Bytes{output};
  s.forward_peak_excess = Bytes{fwd};
  s.parts.push_back({Bytes{held}, Bytes{bwd}, Bytes{input}, Bytes{fwd}, true});
  return s;
}

// A, then B; neither keeps its input (both are plain, the chunk is the only one).
ChunkModel two_modules() {
  ChunkModel cm;
  cm.segments.push_back(module("A", 4, 8, 4, 2, 3));
  cm.segments.push_back(module("B", 4, 6, 2, 1, 5));
  return cm;
}

model::StaticMemory state() {
  model::StaticMemory sm;
  sm.parameters = Bytes{100};
  sm.gradients = Bytes{100};
  sm.optimizer_states = Bytes{40};
  sm.step_transient_first = Bytes{50};
  sm.step_transient_steady = Bytes{10};
  return sm;
}

WalkSetup setup_for(std::int64_t fixed) {
  WalkSetup s;
  s.fixed = Bytes{fixed};
  s.plan = plan_passes(model::CudaGraphImpl::none, 3, false);
  return s;
}
}  // namespace

TEST_CASE("walk: iteration 1 peaks in the step that creates Adam state, later ones in B's backward", "[sim][stages][walk]") {
  const std::vector<sim::ScheduleStep> steps = {{true, 0, 0}, {false, 0, 0}};
  const auto sm = state();
  const auto w = walk_rank({two_modules()}, steps, sm, setup_for(10));
  // Base: parameters + gradients + fixed = 210 (no Adam state before the first step).
  // Forward: A's input 4 + excess 2 -> 216; A keeps 8 and outputs 4, its input freed -> 12;
  // B: 12 + 1 -> 223, keeps 6, outputs 2, frees its input -> 16; the output is freed -> 14.
  // Backward: B at 14 + 5 -> 229; frees 6, its input gradient (4) appears -> 12; A at 12 + 3.
  // Step: the moments (40) are created, then the first step's transient (50): 210 + 40 + 50 = 300.
  CHECK(w.first.peak == Bytes{300});
  CHECK(w.first.phase == sim::Phase::optimizer);
  CHECK(w.first.op == "optimizer.step");
  // Later iterations hold the moments from the start: 250 + 14 + 5 = 269 at B's backward, above
  // the step's 250 + 10.
  CHECK(w.steady.peak == Bytes{269});
  CHECK(w.steady.phase == sim::Phase::backward);
  CHECK(w.steady.op == "B.backward");
  CHECK(w.steady.breakdown.activations == Bytes{14});
  CHECK(w.steady.breakdown.transient == Bytes{5});
  CHECK(w.steady.breakdown.optimizer_states == Bytes{40});
  CHECK(w.steady.breakdown.other == Bytes{10});
  CHECK(w.steady.breakdown.total() == w.steady.peak);
  CHECK(w.peak_with_graph_pool == Bytes{300});
}

TEST_CASE("walk: two micro-batches in flight keep two saved sets", "[sim][stages][walk]") {
  // F0 F1 B0 B1 on one chunk (the schedule a pipeline warm-up gives): at B0's backward both
  // micro-batches' saved sets (14 each after their forwards) are live.
  const std::vector<sim::ScheduleStep> steps = {{true, 0, 0}, {true, 0, 1}, {false, 0, 0}, {false, 0, 1}};
  auto s = setup_for(10);
  s.microbatches = 2;
  const auto sm = state();
  const auto w = walk_rank({two_modules()}, steps, sm, s);
  CHECK(w.steady.peak == Bytes{250 + 14 + 14 + 5});
  CHECK(w.steady.op == "B.backward");
}

TEST_CASE("walk: the first backward creates its workspaces and keeps them", "[sim][stages][walk]") {
  const std::vector<sim::ScheduleStep> steps = {{true, 0, 0}, {false, 0, 0}};
  auto s = setup_for(10 + 7);        // `fixed` includes the backward's workspaces...
  s.backward_workspaces = Bytes{7};  // ...which iteration 1's forward runs without
  const auto sm = state();
  const auto w = walk_rank({two_modules()}, steps, sm, s);
  // Iteration 1's forward peaks at 210 + 14 = 224 without them; its backward at 217 + 14 + 5 = 236.
  CHECK(w.first.peak == Bytes{217 + 40 + 50});
  CHECK(w.steady.peak == Bytes{257 + 14 + 5});
}

// T5: the encoder output's gradient, which every decoder layer's cross-attention adds to, is carried from the last
// decoder layer's backward (C's, first in backward) until the step between the stacks (Br) takes it over as its own
// tensor's gradient: it is live through D's backward and gone before Br's.
TEST_CASE("walk: a carried activation gradient lives from its start to the module that takes it over", "[sim][stages][walk][t5]") {
  const std::vector<sim::ScheduleStep> steps = {{true, 0, 0}, {false, 0, 0}};
  const auto sm = state();
  const auto chunk = [](std::int64_t bwd_d, std::int64_t bwd_br, bool carry) {
    ChunkModel cm;
    cm.segments.push_back(module("A", 4, 8, 4, 2, 3));
    cm.segments.push_back(module("Br", 4, 6, 4, 1, bwd_br));
    cm.segments.push_back(module("D", 4, 5, 4, 1, bwd_d));
    cm.segments.push_back(module("C", 4, 10, 2, 1, 2));
    if (carry) {
      cm.segments[3].carried_activation_grad = Bytes{7};
      cm.segments[1].takes_carried_activation_grad = true;
    }
    return cm;
  };
  SECTION("D's backward peaks with the carried 7 bytes") {
    const auto plain = walk_rank({chunk(100, 3, false)}, steps, sm, setup_for(10));
    const auto carried = walk_rank({chunk(100, 3, true)}, steps, sm, setup_for(10));
    CHECK(carried.steady.op == "D.backward");
    CHECK((carried.steady.peak - plain.steady.peak).value == 7);
  }
  SECTION("Br's backward peaks without them") {
    const auto plain = walk_rank({chunk(3, 100, false)}, steps, sm, setup_for(10));
    const auto carried = walk_rank({chunk(3, 100, true)}, steps, sm, setup_for(10));
    CHECK(carried.steady.op == "Br.backward");
    CHECK(carried.steady.peak == plain.steady.peak);
  }
}
