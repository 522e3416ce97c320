#pragma once
// TopKRouter (router.py) as one MoE layer's graph runs it: the gating GEMM, the routing its settings
// select, and the tensors autograd keeps for each. Private to peakcast_sim (moe_graphs.cpp calls it).
#include <cstdint>

#include "graph_builder.hpp"
#include "peakcast/model/run_spec.hpp"

namespace peakcast::sim::detail {

// The router's two outputs the dispatcher takes: the [tokens, experts] routing probabilities (in the
// router dtype) and the boolean routing map.
struct RouterOutput {
  int probs = -1, routing_map = -1;
};

// Appends the router's ops for the rank's [local_tokens, hidden] input `ln`, all in `moe_region`.
RouterOutput router(GraphBuilder& b, const model::ModelSpec& m, int ln, std::uint32_t moe_region);

}  // namespace peakcast::sim::detail
