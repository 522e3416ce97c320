#pragma once
// The verdict object of the JSON outputs (docs/interface.md, "verdict"): predict's run and rank
// verdicts and plan's entries print the same fields; so do rank's and plan's recompute choices.
// Private to peakcast_sim.
#include <nlohmann/json.hpp>

#include "peakcast/sim/ranking.hpp"
#include "peakcast/sim/verdict.hpp"

namespace peakcast::sim::detail {

nlohmann::json verdict_json(const Verdict& v);
// A recompute choice as run-spec keys (recompute_granularity, _modules, _method, _num_layers, cpu_offloading[_num_layers]).
nlohmann::json recompute_choice_json(const RecomputeChoice& c);

}  // namespace peakcast::sim::detail
