// Lifetimes on small hand-made graphs: expectations are sums of the tensor sizes below.
#include <catch2/catch.hpp>

#include <algorithm>

#include "peakcast/sim/layer_graph.hpp"

using peakcast::Bytes;
using namespace peakcast::sim;

namespace {

// An op that reads `inputs`, writes `outputs` and saves `saves` for its backward, inside `regions`.
OpNode op(std::string name, std::vector<int> inputs, std::vector<int> outputs, std::vector<int> saves,
          std::uint32_t regions = kNoRegion) {
  OpNode n;
  n.name = std::move(name);
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.saves = std::move(saves);
  n.regions = regions;
  return n;
}

// x -> A -> a -> B -> b -> C -> y, each op saving its input; A and B form region kMlp.
struct Chain {
  LayerGraph g;
  int x, a, b, y, op_a, op_b, op_c;
  Chain() {
    x = g.add_input("x", Bytes{100});
    a = g.add_tensor("a", Bytes{200});
    b = g.add_tensor("b", Bytes{300});
    y = g.add_tensor("y", Bytes{100});
    op_a = g.add_op(op("A", {x}, {a}, {x}, kMlp));
    op_b = g.add_op(op("B", {a}, {b}, {a}, kMlp));
    op_c = g.add_op(op("C", {b}, {y}, {b}));
    g.output = y;
  }
};

}  // namespace

TEST_CASE("no checkpoint: every saved input is held until backward", "[sim][graph]") {
  Chain c;
  const ModuleProfile p = profile_module(c.g, CheckpointSet{});
  CHECK(p.held == Bytes{100 + 200 + 300});
  CHECK(p.input_held);
  CHECK(p.output_bytes == Bytes{100});
  // Forward: x is live at start; a, b, y are added and nothing is freed.
  CHECK(p.forward_peak_excess == Bytes{200 + 300 + 100});
  // Backward starts with held + dy; C's backward adds db (300) before dy and b are released.
  CHECK(p.backward_peak_excess == Bytes{300});
}

TEST_CASE("keep-inputs checkpoint drops what the region saved and replays it at its backward", "[sim][graph]") {
  Chain c;
  CheckpointSet ck;
  ck.keep_inputs = kMlp;
  const ModuleProfile p = profile_module(c.g, ck);
  // x is the region input (kept); a was saved inside the region (dropped); b is saved by C outside.
  CHECK(p.held == Bytes{100 + 300});
  CHECK(p.replay_bytes == Bytes{200 + 300});  // the replay re-creates a and the region output b

  const auto events = trace_module(c.g, ck);
  // Backward order is C, B, A. At C (outside the region) nothing is replayed yet.
  const auto at = [&](const std::string& name, bool backward) {
    return std::find_if(events.begin(), events.end(), [&](const OpEvent& e) { return e.op == name && e.backward == backward; });
  };
  const auto c_bwd = at("C", true), b_bwd = at("B", true);
  REQUIRE(c_bwd != events.end());
  REQUIRE(b_bwd != events.end());
  // After C's backward: held minus b (released by C) plus db; at B's backward the replay adds a and b.
  const std::int64_t after_c = c_bwd->live_delta.value;
  CHECK(after_c == -300 + 300 - 100);  // b freed, db created, dy freed: relative to backward start
  // At B the replay re-creates a (200) and b (300); B's backward adds da (200), then db (300), a and b
  // (B is their last user) are released.
  CHECK(b_bwd->live_delta.value == after_c + (200 + 300) + 200 - 300 - 200 - 300);
}

TEST_CASE("discard-output checkpoint frees the output after its consumer saved it", "[sim][graph]") {
  Chain c;
  c.g.discards.push_back({kMoeAct, {c.b}, c.op_c});
  CheckpointSet ck;
  ck.discard_output = kMoeAct;
  const ModuleProfile p = profile_module(c.g, ck);
  CHECK(p.held == Bytes{100 + 200});    // b is discarded
  CHECK(p.replay_bytes == Bytes{300});  // and comes back at C's backward
  CheckpointSet none;
  CHECK(profile_module(c.g, none).held - p.held == Bytes{300});
}

TEST_CASE("whole-module checkpoint keeps only the module input", "[sim][graph]") {
  Chain c;
  CheckpointSet ck;
  ck.whole_module = true;
  const ModuleProfile p = profile_module(c.g, ck);
  CHECK(p.held == Bytes{100});
  // No-grad forward: each intermediate dies after its last use; peak holds one producer and consumer.
  CHECK(p.forward_peak_excess == Bytes{200 + 300});
  CHECK(p.replay_bytes == Bytes{200 + 300 + 100});
}

TEST_CASE("a tensor freed at step k is absent at k and present at k-1", "[sim][graph]") {
  LayerGraph g;
  const int x = g.add_input("x", Bytes{10});
  const int t = g.add_tensor("t", Bytes{1000});
  const int u = g.add_tensor("u", Bytes{10});
  const int v = g.add_tensor("v", Bytes{10});
  g.add_op(op("make_t", {x}, {t}, {}));
  g.add_op(op("use_t", {t}, {u}, {}));  // last use of t: t is not saved
  g.add_op(op("after", {u}, {v}, {}));
  g.output = v;
  const auto ev = trace_module(g, CheckpointSet{});
  REQUIRE(ev.size() >= 3);
  // Relative to the forward start (x live): after make_t, t is live and x (last used, unsaved) is gone.
  CHECK(ev[0].live_delta.value == 1000 - 10);
  // After use_t (step k, t's last use): t is absent, u is live.
  CHECK(ev[1].live_delta.value == 1000 - 10 + 10 - 1000);
  CHECK(ev[2].live_delta.value == ev[1].live_delta.value + 10 - 10);
}

TEST_CASE("a keep-inputs checkpoint holds every tensor its region reads from outside, saved inside or not",
          "[sim][graph]") {
  // x -> P -> p (outside); region kCoreAttn: E reads p and makes e without saving p (like
  // repeat_interleave), F reads e and saves it; G outside saves F's output f.
  LayerGraph g;
  const int x = g.add_input("x", Bytes{10});
  const int p = g.add_tensor("p", Bytes{100});
  const int e = g.add_tensor("e", Bytes{400});
  const int f = g.add_tensor("f", Bytes{50});
  const int y = g.add_tensor("y", Bytes{10});
  g.add_op(op("P", {x}, {p}, {x}));
  g.add_op(op("E", {p}, {e}, {}, kCoreAttn));
  g.add_op(op("F", {e}, {f}, {e}, kCoreAttn));
  g.add_op(op("G", {f}, {y}, {f}));
  g.output = y;
  // Without the checkpoint: x (by P), e (by F) and f (by G); p dies after E.
  CHECK(profile_module(g, CheckpointSet{}).held == Bytes{10 + 400 + 50});
  CheckpointSet ck;
  ck.keep_inputs = kCoreAttn;
  const ModuleProfile held = profile_module(g, ck);
  // The checkpoint's argument p stays (ctx.save_for_backward(*args)); e is dropped and replayed.
  CHECK(held.held == Bytes{10 + 100 + 50});
  const auto names = [&] {
    std::vector<std::string> n;
    for (const auto& t : held.held_tensors) n.push_back(t.name);
    return n;
  }();
  CHECK(names == std::vector<std::string>{"x", "p", "f"});
}
