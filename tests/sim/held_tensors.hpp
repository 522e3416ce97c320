#pragma once
// What each module of pipeline rank 0 keeps for its backward, for tests that derive those bytes from
// shapes: parse a spec text, require it valid, predict with the held tensors recorded.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/validate.hpp"
#include "peakcast/sim/prediction.hpp"

namespace peakcast::test {

using HeldTensors = std::vector<sim::ModuleProfile::HeldTensor>;

inline model::RunSpec valid_spec(const std::string& text) {
  auto r = model::parse_run_spec(text);
  REQUIRE(r.spec);
  REQUIRE_FALSE(model::has_errors(model::validate(*r.spec)));
  return *r.spec;
}

// Module name -> held tensors, on pipeline rank 0.
inline std::map<std::string, HeldTensors> held_by_module(const model::RunSpec& spec) {
  sim::PredictOptions o;
  o.record_held_tensors = true;
  const auto p = sim::predict(spec, o);
  std::map<std::string, HeldTensors> out;
  for (const auto& m : p.ranks.at(0).modules) out[m.name] = m.held_tensors;
  return out;
}

inline Bytes total_bytes(const HeldTensors& held) {
  Bytes b{};
  for (const auto& t : held) b += t.bytes;
  return b;
}

inline bool holds_suffix(const HeldTensors& held, const std::string& suffix) {
  for (const auto& t : held)
    if (t.name.size() >= suffix.size() && t.name.compare(t.name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return true;
  return false;
}

}  // namespace peakcast::test
