#pragma once
// The verdict object of the JSON outputs (docs/interface.md, "verdict"): predict's run and rank
// verdicts and plan's entries print the same fields. Private to peakcast_sim.
#include <nlohmann/json.hpp>

#include "peakcast/sim/verdict.hpp"

namespace peakcast::sim::detail {

nlohmann::json verdict_json(const Verdict& v);

}  // namespace peakcast::sim::detail
