#pragma once
// What the caching allocator reserves at a rank's peak, estimated from the measured reserved /
// allocated ratios of a calibration profile, plus the CUDA-graph pool reserved beside the cache.
// One formula for predict, rank, sweep and validate.
#include "peakcast/model/units.hpp"
#include "peakcast/sim/fitted_constants.hpp"

namespace peakcast::sim {

// The allocated peaks of a rank's passes that the cache can have grown to.
struct ReservedInputs {
  Bytes first_peak;          // iteration 1 (always eager)
  Bytes steady_peak;         // the later iterations' peak
  bool steady_eager = true;  // a later iteration runs eagerly (its peak is steady_peak)
  bool graphs_replay = false;
  Bytes graphed_peak;  // allocated peak of the replaying pass, when graphs replay
  Bytes graph_pool;    // the graphs' private pool, reserved beside the cache
};

// The largest of each eager pass's peak x `ratio` and the replaying pass's peak x `ratio` plus the
// pool; 0 when `ratio` is not positive (no profile).
Bytes estimate_reserved(const ReservedInputs& in, double ratio);

struct ReservedRatios {
  double median = 0, p90 = 0;
};
// The profile's ratios for the run's allocator (expandable_segments or not).
ReservedRatios reserved_ratios(const FittedConstants& fitted, bool expandable_segments);

}  // namespace peakcast::sim
