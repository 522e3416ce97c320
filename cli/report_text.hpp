#pragma once
#include <ostream>

#include "peakcast/model/run_spec.hpp"
#include "peakcast/sim/prediction.hpp"

namespace peakcast::cli {

// The human table of `peakcast predict`: one row per distinct rank, sizes in GB (10^9 bytes).
void print_prediction_table(std::ostream& os, const model::RunSpec& spec, const sim::Prediction& p);

// Per-module saved / forward-transient / backward-transient bytes of one micro-batch, per rank.
void print_module_table(std::ostream& os, const sim::Prediction& p);

}  // namespace peakcast::cli
