#include "graph_pool.hpp"

#include <algorithm>

namespace peakcast::sim::detail {

std::int64_t graph_sets(const std::vector<ScheduleStep>& steps, std::size_t chunks, std::int64_t pp) {
  int in_flight = 0, outstanding = 0;
  for (const auto& st : steps) {
    outstanding += st.forward ? 1 : -1;
    in_flight = std::max(in_flight, outstanding);
  }
  const std::int64_t per_chunk_in_flight = (in_flight + static_cast<int>(chunks) - 1) / static_cast<int>(chunks);
  return pp == 1 ? 1 : per_chunk_in_flight;
}

GraphPool layer_graph_pool(const std::vector<ChunkModel>& captured, std::int64_t graph_sets, Bytes rotary_table) {
  GraphPool g;
  g.sets = graph_sets;
  Bytes pool_excess{};
  for (const auto& cm : captured) {
    std::int64_t n_captured = 0;
    Bytes hidden{};
    for (const auto& s : cm.segments) {
      if (!s.graph_captured && s.captured_held.value == 0) continue;
      g.any_captured = true;
      ++n_captured;
      hidden = s.input_bytes;
      g.pool += (s.graph_captured ? s.held : s.captured_held) * graph_sets;
      pool_excess = max(pool_excess, s.forward_peak_excess);
      pool_excess = max(pool_excess, s.largest_backward_excess());
    }
    if (n_captured > 0) g.static_buffers += (hidden * (2 * n_captured + kCudaGraphChainEndBuffers) + rotary_table) * graph_sets;
  }
  if (g.any_captured) g.pool += pool_excess;
  return g;
}

PassPlan plan_passes(model::CudaGraphImpl impl, std::int64_t cuda_graph_warmup_steps, bool any_captured) {
  PassPlan p;
  const bool local_graphs = impl == model::CudaGraphImpl::local;
  const std::int64_t te_eager_iterations = std::max<std::int64_t>(0, cuda_graph_warmup_steps);
  p.full_graph = impl == model::CudaGraphImpl::full_iteration;
  any_captured = any_captured || p.full_graph;
  const bool first_graphed = any_captured && impl == model::CudaGraphImpl::transformer_engine && te_eager_iterations == 0;
  p.passes.push_back({1, true, first_graphed, p.full_graph && te_eager_iterations == 0});
  p.steady_eager = !any_captured || (!local_graphs && te_eager_iterations >= 2) || (p.full_graph && te_eager_iterations >= 1);
  if (p.steady_eager) p.passes.push_back({2, false, false, p.full_graph});
  if (any_captured) {
    const auto replaying = local_graphs ? 2 : std::max<std::int64_t>(2, te_eager_iterations + 1 + (p.full_graph ? 1 : 0));
    p.passes.push_back({static_cast<int>(replaying), false, true, false});
  }
  return p;
}

}  // namespace peakcast::sim::detail
