#pragma once
// `--show-spec`: the resolved spec as simulated, every memory-relevant key with its value and where it
// came from, the parameter counts, and what the input held without a memory effect.
#include <ostream>
#include <string>

#include "commands.hpp"
#include "peakcast/sim/prediction.hpp"

namespace peakcast::cli {

void print_resolved_spec(std::ostream& os, const std::string& input, const LoadedSpec& loaded, const sim::Prediction& p);

// The same as a JSON object (the "resolved_spec" member of predict --json --show-spec).
std::string resolved_spec_json(const std::string& input, const LoadedSpec& loaded, const sim::Prediction& p);

}  // namespace peakcast::cli
