#pragma once
// The one fit verdict every output uses (predict text, JSON and HTML, sweep, rank, recipes
// --predict): an out-of-memory error comes from the caching allocator's reservation, so a rank
// fits when its allocated need is within the budget and what the allocator reserves for it is
// within the device; it fits only without the reservation margin when the allocated need is within
// the budget but the reservation is not within the device (fragmentation); else it does not fit.
// The reservation is the replayed allocator's (PredictOptions::replay_allocator) when there is one,
// else the p90 reserved / allocated estimate of our measured runs (reserved_estimate.hpp).
#include <string>

#include "peakcast/model/units.hpp"
#include "peakcast/sim/prediction.hpp"

namespace peakcast::sim {

enum class FitKind { fits, fits_without_reservation_margin, does_not_fit };
const char* to_string(FitKind k);        // "fits", "fits_without_reservation_margin", "does_not_fit"
const char* short_label(FitKind k);      // "fits", "at risk", "does not fit"

// The limits a verdict is judged against. budget 0: the device capacity. headroom: the allocated
// need is the peak (with any CUDA-graph pool) times (1 + headroom), rank's K x sigma.
struct VerdictLimits {
  Bytes budget;
  double headroom = 0;
};

struct Verdict {
  FitKind kind = FitKind::fits;
  // Bytes left (negative: missing) against what decided the verdict: the budget less the allocated
  // need when it does not fit; the capacity less the reservation when it fits only without the
  // margin; the smaller of the two when it fits.
  std::int64_t margin = 0;
  Bytes allocated_need, reservation, budget, capacity;
  bool reservation_replayed = false;   // from the allocator replay, not the measured-ratio estimate
  std::int64_t pp_rank = 0;            // the deciding rank (run_verdict)
  std::string reason;                  // one line, in a Megatron user's words
};

Verdict rank_verdict(const RankPrediction& r, Bytes capacity, const VerdictLimits& limits = {});
// The worst rank: does not fit before fits without the margin before fits, then the smallest margin.
Verdict run_verdict(const Prediction& p, const VerdictLimits& limits = {});

}  // namespace peakcast::sim
