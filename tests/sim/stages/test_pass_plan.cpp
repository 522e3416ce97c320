// Which iterations the walk takes for each CUDA-graph implementation: iteration 1 is always eager
// (Adam state appears at its step), later ones eager until the graphs are captured, then replaying.
// Expected passes follow the implementations' warm-up rules (graph_pool.hpp), not the code.
#include <catch2/catch.hpp>

#include "graph_pool.hpp"

using namespace peakcast;
using sim::detail::PassPlan;
using sim::detail::plan_passes;

namespace {
struct Expected {
  int iteration;
  bool first, graphed, capture;
};
void check(const PassPlan& p, const std::vector<Expected>& want) {
  REQUIRE(p.passes.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO("pass " << i);
    CHECK(p.passes[i].iteration == want[i].iteration);
    CHECK(p.passes[i].first == want[i].first);
    CHECK(p.passes[i].graphed == want[i].graphed);
    CHECK(p.passes[i].capture == want[i].capture);
  }
}
}  // namespace

TEST_CASE("no graphs: iteration 1 and one eager steady iteration", "[sim][stages][passes]") {
  const auto p = plan_passes(model::CudaGraphImpl::none, 3, false);
  check(p, {{1, true, false, false}, {2, false, false, false}});
  CHECK(p.steady_eager);
  CHECK_FALSE(p.full_graph);
}

TEST_CASE("per-layer graphs that capture nothing walk as without graphs", "[sim][stages][passes]") {
  check(plan_passes(model::CudaGraphImpl::local, 3, false), {{1, true, false, false}, {2, false, false, false}});
  check(plan_passes(model::CudaGraphImpl::transformer_engine, 0, false), {{1, true, false, false}, {2, false, false, false}});
}

TEST_CASE("local graphs: iteration 1 eager (it ends in the capture), iteration 2 on replays", "[sim][stages][passes]") {
  const auto p = plan_passes(model::CudaGraphImpl::local, 3, true);  // warm-up steps are TE's, not read
  check(p, {{1, true, false, false}, {2, false, true, false}});
  CHECK_FALSE(p.steady_eager);
}

TEST_CASE("Transformer Engine graphs: cuda_graph_warmup_steps eager iterations, then replays", "[sim][stages][passes]") {
  // 3 eager iterations: 1 (first) and 2..3 (steady eager), replaying from iteration 4.
  const auto three = plan_passes(model::CudaGraphImpl::transformer_engine, 3, true);
  check(three, {{1, true, false, false}, {2, false, false, false}, {4, false, true, false}});
  CHECK(three.steady_eager);
  // 1 eager iteration: only the first; replaying from iteration 2.
  const auto one = plan_passes(model::CudaGraphImpl::transformer_engine, 1, true);
  check(one, {{1, true, false, false}, {2, false, true, false}});
  CHECK_FALSE(one.steady_eager);
  // None: iteration 1 already replays (its Adam state still appears at its step).
  const auto none = plan_passes(model::CudaGraphImpl::transformer_engine, 0, true);
  check(none, {{1, true, true, false}, {2, false, true, false}});
  // A negative count means none (training.py compares the iteration with it).
  check(plan_passes(model::CudaGraphImpl::transformer_engine, -2, true), {{1, true, true, false}, {2, false, true, false}});
}

TEST_CASE("full-iteration graphs: eager calls, the capture call, then replays", "[sim][stages][passes]") {
  // 3 eager calls (iterations 1..3), the capture in iteration 4 runs eagerly into the pool, replays
  // from iteration 5. The walk takes iteration 1, one eager steady pass that stands for the capture,
  // and the replaying pass.
  const auto three = plan_passes(model::CudaGraphImpl::full_iteration, 3, false);
  CHECK(three.full_graph);
  check(three, {{1, true, false, false}, {2, false, false, true}, {5, false, true, false}});
  // No eager call: iteration 1 is the capture.
  const auto zero = plan_passes(model::CudaGraphImpl::full_iteration, 0, false);
  check(zero, {{1, true, false, true}, {2, false, true, false}});
  CHECK_FALSE(zero.steady_eager);
}
