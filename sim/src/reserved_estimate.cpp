#include "peakcast/sim/reserved_estimate.hpp"

#include <cmath>

namespace peakcast::sim {

Bytes estimate_reserved(const ReservedInputs& in, double ratio) {
  if (ratio <= 0) return Bytes{};
  const auto times = [ratio](Bytes b) { return Bytes{std::llround(static_cast<double>(b.value) * ratio)}; };
  Bytes eager = times(in.first_peak), graphed{};
  if (in.steady_eager) eager = max(eager, times(in.steady_peak));
  if (in.graphs_replay) graphed = times(in.graphed_peak) + in.graph_pool;
  return max(eager, graphed);
}

ReservedRatios reserved_ratios(const FittedConstants& fitted, bool expandable_segments) {
  if (expandable_segments) return {fitted.reserved_ratio_median_expandable, fitted.reserved_ratio_p90_expandable};
  return {fitted.reserved_ratio_median, fitted.reserved_ratio_p90};
}

}  // namespace peakcast::sim
