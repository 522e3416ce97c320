#include "peakcast/sim/verdict.hpp"

#include <algorithm>
#include <cmath>

#include "text_format.hpp"

namespace peakcast::sim {

const char* to_string(FitKind k) {
  switch (k) {
    case FitKind::fits: return "fits";
    case FitKind::fits_without_reservation_margin: return "fits_without_reservation_margin";
    case FitKind::does_not_fit: return "does_not_fit";
  }
  return "?";
}

const char* short_label(FitKind k) {
  switch (k) {
    case FitKind::fits: return "fits";
    case FitKind::fits_without_reservation_margin: return "at risk";
    case FitKind::does_not_fit: return "does not fit";
  }
  return "?";
}

const char* to_string(FitCause c) {
  switch (c) {
    case FitCause::none: return "none";
    case FitCause::allocated: return "allocated";
    case FitCause::reservation: return "reservation";
  }
  return "?";
}

// 1.5 % of the capacity: the replayed reservation's p90 |error| over the 245 measured corpus records
// that carry a reserved peak is 2.0 GB, 1.35 % of the H200's 149.6 GB (peakcast validate --json;
// docs/caching-allocator.md). Within it below the device a replayed reservation is only "at risk", and
// a fragmentation failure by less than it is reported as inside the interval by validate.
Bytes reservation_edge(Bytes capacity) { return Bytes{capacity.value / 200 * 3}; }

namespace {
std::string gb_signed(std::int64_t b) {
  return (b < 0 ? "-" : "") + detail::gb_text(Bytes{b < 0 ? -b : b});
}

// The replayed allocator could not serve a request within the device, or reserved more than it.
bool reservation_fails(const RankPrediction& r, Bytes capacity) {
  return r.allocator && (r.allocator->first_failure.has_value() || r.allocator->peak_reserved > capacity);
}

std::string failure_text(const RankPrediction& r) {
  const auto& f = *r.allocator->first_failure;
  return "; the first request it cannot serve: " + detail::gb_text(f.request) + " GB at " + f.where + " (" +
         detail::gb_text(f.allocated) + " GB allocated, " + detail::gb_text(f.reserved) + " GB reserved)";
}
}  // namespace

Verdict rank_verdict(const RankPrediction& r, Bytes capacity, const VerdictLimits& limits) {
  Verdict v;
  v.pp_rank = r.rank.pp_rank;
  v.capacity = capacity;
  v.budget = limits.budget.value > 0 ? limits.budget : capacity;
  v.allocated_need = Bytes{std::llround(static_cast<double>(r.peak_with_graph_pool.value) * (1.0 + limits.headroom))};
  const bool replayed = r.allocator.has_value();
  v.reservation_replayed = replayed;
  // Without a replay or a profile's ratios, the reservation is taken as the allocated need.
  v.reservation = replayed ? r.allocator->peak_reserved : max(r.estimated_peak_reserved_p90, r.peak_with_graph_pool);
  const std::int64_t left = capacity.value - v.reservation.value;
  const std::string how = replayed ? "the replayed caching allocator reserves " : "the caching allocator reserves up to ";
  const std::string est = replayed ? "" : " (90 % of our measured runs)";
  const std::string of_gpu = " of the GPU's " + detail::gb_text(capacity) + " GB";
  const std::string alloc = "allocated " + detail::gb_text(v.allocated_need) + " GB";
  if (v.allocated_need > v.budget) {
    v.kind = FitKind::does_not_fit;
    v.cause = FitCause::allocated;
    v.margin = v.budget.value - v.allocated_need.value;
    v.reason = alloc + ", " + gb_signed(-v.margin) + " GB over the " + (limits.budget.value > 0 ? "budget" : "GPU's") + " " +
               detail::gb_text(v.budget) + " GB";
  } else if (reservation_fails(r, capacity)) {
    v.kind = FitKind::does_not_fit;
    v.cause = FitCause::reservation;
    v.margin = left;
    v.reason = alloc + " fits, but " + how + detail::gb_text(v.reservation) + " GB, " + gb_signed(-left) + " GB over the GPU's " + detail::gb_text(capacity) +
               " GB (fragmentation: reserved but unallocated)";
    if (r.allocator->first_failure) v.reason += failure_text(r);
  } else if ((replayed && left < reservation_edge(capacity).value) || (!replayed && left < 0)) {
    v.kind = FitKind::fits_without_reservation_margin;
    v.cause = FitCause::reservation;
    v.margin = left;
    v.reason = alloc + " fits, but " + how + detail::gb_text(v.reservation) + " GB" + est + ", " +
               (left < 0 ? gb_signed(-left) + " GB over the GPU's " + detail::gb_text(capacity) + " GB" : gb_signed(left) + " GB left" + of_gpu) +
               (replayed ? " (inside the replay's " + detail::gb_text(reservation_edge(capacity)) + " GB uncertainty)" : "");
  } else {
    v.kind = FitKind::fits;
    v.margin = std::min(v.budget.value - v.allocated_need.value, left);
    v.reason = "fits: " + how + detail::gb_text(v.reservation) + " GB" + est + ", " + gb_signed(left) + " GB left" + of_gpu;
  }
  return v;
}

Verdict run_verdict(const Prediction& p, const VerdictLimits& limits) {
  Verdict worst;
  bool any = false;
  for (const auto& r : p.ranks) {
    Verdict v = rank_verdict(r, p.capacity, limits);
    const bool worse = !any || static_cast<int>(v.kind) > static_cast<int>(worst.kind) ||
                       (v.kind == worst.kind && v.margin < worst.margin);
    if (worse) worst = std::move(v);
    any = true;
  }
  if (!any) {
    worst.capacity = p.capacity;
    worst.budget = limits.budget.value > 0 ? limits.budget : p.capacity;
    worst.reason = "no rank";
  }
  return worst;
}

}  // namespace peakcast::sim
