// overlap_moe_expert_parallel_comm's combined 1F1B schedule: which steps pair up, the order of a
// combined step's modules, and what a rank holds in one, from hand-sized chunks.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "combined_step.hpp"
#include "hand_chunks.hpp"
#include "peakcast/sim/schedule.hpp"

using namespace peakcast::sim;
using peakcast::Bytes;
using peakcast::sim::detail::ChunkModel;
using peakcast::sim::detail::CombinedOp;
using peakcast::sim::detail::Segment;

namespace {

// One stage's whole model: the embedding (token ids of I bytes in, the hidden state of X out, nothing
// saved), two layers saving H each, the loss head saving O.
constexpr std::int64_t I = 1, X = 10, H = 100, O = 50;

ChunkModel whole_model() {
  ChunkModel cm;
  cm.segments.push_back(test::hand_module("embedding", I, 0, X));
  cm.segments.back().is_embedding = true;
  cm.segments.back().parts.back().input_requires_grad = false;
  cm.segments.push_back(test::hand_module("L0", X, H, X));
  cm.segments.push_back(test::hand_module("L1", X, H, X));
  cm.segments.push_back(test::hand_module("output", X, O, 0));
  cm.segments.back().is_output = true;
  return cm;
}

Bytes first_iteration_peak(const std::vector<ScheduleStep>& steps, int microbatches) {
  return test::walk_hand_chunks({whole_model()}, steps, microbatches).first.peak;
}

}  // namespace

TEST_CASE("combined 1F1B without pipelining: each forward after the first pairs with the previous backward", "[sim][schedule][combined_1f1b]") {
  // combined_1f1b_schedule_for_no_pipelining: F0, then (F1 + B0), (F2 + B1), (F3 + B2), then B3.
  const auto steps = pipeline_schedule({1, 1, 4, 0, true}, 0);
  REQUIRE(steps.size() == 8);
  const std::vector<std::pair<bool, int>> order{{true, 0}, {true, 1}, {false, 0}, {true, 2}, {false, 1}, {true, 3}, {false, 2}, {false, 3}};
  for (std::size_t k = 0; k < steps.size(); ++k) {
    INFO("step " << k);
    CHECK(steps[k].forward == order[k].first);
    CHECK(steps[k].microbatch == order[k].second);
    CHECK(steps[k].combined == (k == 2 || k == 4 || k == 6));
  }
}

TEST_CASE("combined 1F1B interleaved: one more warm-up micro-batch, every steady backward combined", "[sim][schedule][combined_1f1b]") {
  // pp 2, vp 4, 8 micro-batches on the last rank: (2-1-1)*2 + (4-1)*2 warm-ups, plus one (schedules.py:948-952).
  const ScheduleParams p{2, 4, 8, 0, true};
  CHECK(warmup_steps(p, 1) == 0 * 2 + 3 * 2 + 1);
  CHECK(warmup_steps({2, 4, 8, 0, false}, 1) == 6);
  const auto steps = pipeline_schedule(p, 1);
  const int total = 8 * 4, warmup = 7;
  REQUIRE(static_cast<int>(steps.size()) == 2 * total);
  for (int k = 0; k < warmup; ++k) CHECK(steps[static_cast<std::size_t>(k)].forward);
  for (int k = 0; k < total - warmup; ++k) {  // steady: forward warmup + k, then the combined backward k
    INFO("steady step " << k);
    CHECK(steps[static_cast<std::size_t>(warmup + 2 * k)].forward);
    CHECK(!steps[static_cast<std::size_t>(warmup + 2 * k + 1)].forward);
    CHECK(steps[static_cast<std::size_t>(warmup + 2 * k + 1)].combined);
  }
  for (std::size_t k = static_cast<std::size_t>(warmup + 2 * (total - warmup)); k < steps.size(); ++k) CHECK_FALSE(steps[k].combined);
}

TEST_CASE("a combined step's modules: pre-process, the loss backward, layer pairs, the loss forward, the embedding backward", "[sim][combined_1f1b]") {
  const ChunkModel cm = whole_model();
  const auto ops = detail::combined_order(cm, cm, false, false);
  // model_chunk_schedule_plan.py:536-621: f.embedding, b.output, (f.L0, b.L1), (f.L1, b.L0), f.output, b.embedding.
  const std::vector<std::pair<CombinedOp::Kind, std::size_t>> expected{
      {CombinedOp::forward, 0}, {CombinedOp::backward, 3}, {CombinedOp::forward, 1}, {CombinedOp::backward, 2}, {CombinedOp::forward, 2}, {CombinedOp::backward, 1}, {CombinedOp::forward, 3}, {CombinedOp::backward, 0}, {CombinedOp::backward_done, 0}};
  REQUIRE(ops.size() == expected.size());
  for (std::size_t k = 0; k < ops.size(); ++k) {
    INFO("op " << k);
    CHECK(ops[k].kind == expected[k].first);
    CHECK(ops[k].module == expected[k].second);
  }
  // A middle stage's chunk (no embedding, no loss): pairs, then its gradient sent.
  ChunkModel middle;
  middle.segments = {cm.segments[1], cm.segments[2]};
  const auto mid = detail::combined_order(middle, middle, false, false);
  REQUIRE(mid.size() == 5);
  CHECK(mid[0].kind == CombinedOp::forward);
  CHECK(mid[1].module == 1);
  CHECK(mid[4].kind == CombinedOp::backward_done);
}

TEST_CASE("a combined step holds the backward's micro-batch beside the forward's first layer", "[sim][combined_1f1b]") {
  // One micro-batch at a time: the forward's end holds both layers and the loss head, 2H + O.
  CHECK(first_iteration_peak(pipeline_schedule({1, 1, 2, 0, false}, 0), 2) == Bytes{2 * H + O});
  // Combined (F0, then F1 + B0, then B1): once B0's loss backward has freed O and handed the layers
  // a gradient of X, F1's first layer saves H beside B0's two while F1's hidden state (X) flows:
  // 3H + 2X, before B0's last layer frees its H.
  CHECK(first_iteration_peak(pipeline_schedule({1, 1, 2, 0, true}, 0), 2) == Bytes{3 * H + 2 * X});
}
