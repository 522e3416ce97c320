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

namespace {
std::string gb_signed(std::int64_t b) {
  return (b < 0 ? "-" : "") + detail::gb_text(Bytes{b < 0 ? -b : b});
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
  const bool fails_in_replay = replayed && r.allocator->first_failure.has_value();
  const std::string how = replayed ? "the replayed caching allocator reserves " : "the caching allocator reserves up to ";
  const std::string est = replayed ? "" : " (90 % of our measured runs)";
  if (v.allocated_need > v.budget) {
    v.kind = FitKind::does_not_fit;
    v.margin = v.budget.value - v.allocated_need.value;
    v.reason = "allocated " + detail::gb_text(v.allocated_need) + " GB, " + gb_signed(-v.margin) + " GB over the " +
               (limits.budget.value > 0 ? "budget" : "GPU's") + " " + detail::gb_text(v.budget) + " GB";
  } else if (fails_in_replay || v.reservation > capacity) {
    v.kind = FitKind::fits_without_reservation_margin;
    v.margin = capacity.value - v.reservation.value;
    v.reason = "allocated " + detail::gb_text(v.allocated_need) + " GB fits, but " + how + detail::gb_text(v.reservation) +
               " GB" + est + ", " + gb_signed(-v.margin) + " GB over the GPU's " + detail::gb_text(capacity) + " GB";
    if (fails_in_replay)
      v.reason += "; the first request it cannot serve: " + detail::gb_text(r.allocator->first_failure->request) + " GB at " +
                  r.allocator->first_failure->where;
  } else {
    v.kind = FitKind::fits;
    v.margin = std::min(v.budget.value - v.allocated_need.value, capacity.value - v.reservation.value);
    v.reason = "fits: " + how + detail::gb_text(v.reservation) + " GB" + est + ", " + gb_signed(capacity.value - v.reservation.value) +
               " GB left of the GPU's " + detail::gb_text(capacity) + " GB";
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
