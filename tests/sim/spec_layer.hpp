#pragma once
// One decoder layer of a test's run spec: the spec text (with --set overrides) parsed, required valid
// and built into the layer graph the simulator builds for `layer`.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "peakcast/model/layer_plan.hpp"
#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/validate.hpp"
#include "peakcast/sim/layer_graph.hpp"
#include "peakcast/sim/module_graphs.hpp"

namespace peakcast::test {

inline sim::LayerGraph spec_layer(const char* text, const std::vector<std::string>& sets, const model::LayerSpec& layer) {
  auto r = model::parse_run_spec(text, sets);
  for (const auto& d : r.diagnostics) INFO(model::format(d));
  REQUIRE(r.spec);
  const auto problems = model::validate(*r.spec);
  for (const auto& d : problems) INFO(model::format(d));
  REQUIRE_FALSE(model::has_errors(problems));
  const auto d = model::derive(*r.spec);
  return sim::build_layer_graph(*r.spec, d, sim::make_shape_context(*r.spec, d), layer, false);
}

inline bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The first of a layer graph's ops or tensors (LayerGraph::ops, ::tensors) whose name ends with `tail`; nullptr if none.
template <class Node>
const Node* named(const std::vector<Node>& nodes, const std::string& tail) {
  for (const auto& n : nodes)
    if (ends_with(n.name, tail)) return &n;
  return nullptr;
}

// The index of the first tensor of `g` whose name ends with `tail` (a module script's slot for it); required to exist.
inline std::int32_t tensor_index(const sim::LayerGraph& g, const std::string& tail) {
  const auto* t = named(g.tensors, tail);
  INFO(tail);
  REQUIRE(t);
  return static_cast<std::int32_t>(t - g.tensors.data());
}

}  // namespace peakcast::test
