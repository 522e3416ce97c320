// The CUDA-graph pool of per-layer graphs from hand-built segments: every captured saved set per
// graph set, the largest working memory beside them, and the static buffers (graph_pool.hpp).
#include <catch2/catch.hpp>

#include "graph_pool.hpp"

using namespace peakcast;
using namespace peakcast::sim::detail;

namespace {
Segment captured(std::int64_t held, std::int64_t input, std::int64_t fwd_excess, std::int64_t bwd_excess) {
  Segment s;
  s.graph_captured = true;
  s.held = Bytes{held};
  s.input_bytes = Bytes{input};
  s.forward_peak_excess = Bytes{fwd_excess};
  s.parts.push_back({Bytes{held}, Bytes{bwd_excess}, Bytes{input}, Bytes{fwd_excess}, true});
  return s;
}
}  // namespace

TEST_CASE("graph sets: one without pipelining, else the micro-batches in flight per chunk", "[sim][stages][graph_pool]") {
  using sim::ScheduleStep;
  const std::vector<ScheduleStep> one_at_a_time = {{true, 0, 0}, {false, 0, 0}, {true, 0, 1}, {false, 0, 1}};
  CHECK(graph_sets(one_at_a_time, 1, 1) == 1);
  // 1F1B warm-up of two forwards: two micro-batches in flight on one chunk.
  const std::vector<ScheduleStep> two_in_flight = {{true, 0, 0}, {true, 0, 1}, {false, 0, 0}, {false, 0, 1}};
  CHECK(graph_sets(two_in_flight, 1, 2) == 2);
  // Interleaved: three in flight over two chunks -> ceil(3 / 2) sets per chunk.
  const std::vector<ScheduleStep> interleaved = {{true, 0, 0}, {true, 1, 0}, {true, 0, 1}, {false, 1, 0}, {false, 0, 0}, {false, 0, 1}};
  CHECK(graph_sets(interleaved, 2, 2) == 2);
  // PP 1 reuses one set whatever the schedule holds.
  CHECK(graph_sets(two_in_flight, 1, 1) == 1);
}

TEST_CASE("pool: saved sets per graph set plus the largest working memory; static buffers per chunk", "[sim][stages][graph_pool]") {
  ChunkModel cm;
  Segment embedding;  // not captured: adds nothing
  embedding.held = Bytes{1000};
  cm.segments.push_back(embedding);
  cm.segments.push_back(captured(10, 4, 3, 5));
  cm.segments.push_back(captured(20, 4, 7, 2));
  const std::int64_t sets = 2;
  const Bytes rotary{9};
  const GraphPool g = layer_graph_pool({cm}, sets, rotary);
  CHECK(g.any_captured);
  // (10 + 20) per set, and the largest of the forward (3, 7) and backward (5, 2) excesses once.
  CHECK(g.pool == Bytes{(10 + 20) * sets + 7});
  // Two hidden states per captured layer and the chain's end buffers, plus the rotary table, per set.
  CHECK(g.static_buffers == Bytes{(4 * (2 * 2 + kCudaGraphChainEndBuffers) + 9) * sets});
}

TEST_CASE("pool: a half-captured layer (TE scope) contributes its captured half", "[sim][stages][graph_pool]") {
  ChunkModel cm;
  Segment half;
  half.captured_held = Bytes{6};
  half.held = Bytes{50};
  half.input_bytes = Bytes{4};
  half.parts.push_back({Bytes{50}, Bytes{1}, Bytes{4}, Bytes{0}, true});
  cm.segments.push_back(half);
  const GraphPool g = layer_graph_pool({cm}, 1, Bytes{0});
  CHECK(g.pool == Bytes{6 + 1});
  CHECK(g.static_buffers == Bytes{4 * (2 + kCudaGraphChainEndBuffers)});
}

TEST_CASE("pool: nothing captured, nothing reserved", "[sim][stages][graph_pool]") {
  ChunkModel cm;
  Segment s;
  s.held = Bytes{100};
  cm.segments.push_back(s);
  const GraphPool g = layer_graph_pool({cm}, 3, Bytes{5});
  CHECK_FALSE(g.any_captured);
  CHECK(g.pool == Bytes{});
  CHECK(g.static_buffers == Bytes{});
}
