#pragma once
// The one fit verdict every output uses (predict text, JSON and HTML, sweep, rank, recipes
// --predict). An out-of-memory error is raised when the caching allocator cannot reserve a block,
// so a rank is judged on two things: its allocated need (the peak with any CUDA-graph pool, times
// 1 + headroom) against the budget, and what the allocator reserves for it against the device.
//   does_not_fit: the allocated need is over the budget (cause allocated), or the replayed
//     allocator (PredictOptions::replay_allocator) cannot serve a request within the device or
//     reserves more than it (cause reservation: fragmentation, reserved but unallocated memory).
//   fits_without_reservation_margin ("at risk"): the allocated need fits, and the reservation is
//     within reservation_edge() of the device (replayed), or, without a replay, the p90
//     reserved / allocated estimate of our measured runs (reserved_estimate.hpp) is over it.
//   fits: otherwise.
#include <string>

#include "peakcast/model/units.hpp"
#include "peakcast/sim/prediction.hpp"

namespace peakcast::sim {

enum class FitKind { fits,
                     fits_without_reservation_margin,
                     does_not_fit };
const char* to_string(FitKind k);    // "fits", "fits_without_reservation_margin", "does_not_fit"
const char* short_label(FitKind k);  // "fits", "at risk", "does not fit"
// What decided a verdict other than fits: the allocated bytes or the allocator's reservation.
enum class FitCause { none,
                      allocated,
                      reservation };
const char* to_string(FitCause c);  // "none", "allocated", "reservation"

// The interval below the device's capacity inside which a replayed reservation is "at risk"
// rather than "fits": the replay's stated uncertainty (verdict.cpp gives its basis).
Bytes reservation_edge(Bytes capacity);

// The limits a verdict is judged against. budget 0: the device capacity. headroom: the allocated
// need is the peak (with any CUDA-graph pool) times (1 + headroom), rank's K x sigma.
struct VerdictLimits {
  Bytes budget;
  double headroom = 0;
};

struct Verdict {
  FitKind kind = FitKind::fits;
  FitCause cause = FitCause::none;
  // Bytes left (negative: missing) against what decided the verdict: the budget less the allocated
  // need when it does not fit; the capacity less the reservation when it fits only without the
  // margin; the smaller of the two when it fits.
  std::int64_t margin = 0;
  Bytes allocated_need, reservation, budget, capacity;
  bool reservation_replayed = false;  // from the allocator replay, not the measured-ratio estimate
  std::int64_t pp_rank = 0;           // the deciding rank (run_verdict)
  std::string reason;                 // one line, in a Megatron user's words
};

Verdict rank_verdict(const RankPrediction& r, Bytes capacity, const VerdictLimits& limits = {});
// The worst rank: does not fit before fits without the margin before fits, then the smallest margin.
Verdict run_verdict(const Prediction& p, const VerdictLimits& limits = {});

}  // namespace peakcast::sim
