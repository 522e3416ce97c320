#pragma once
// Measured vs predicted forward-backward time: per record, and per pair of runs that differ only in
// their recompute policy (is the predicted overhead in the measured order?).
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "peakcast/calibration/evaluate.hpp"

namespace peakcast::calibration {

struct PolicyPair {
  const Evaluation* a = nullptr;
  const Evaluation* b = nullptr;
  double measured_delta_s = 0;   // b - a, medians of the steady iterations
  double predicted_delta_s = 0;  // b - a
  double spread_s = 0;           // the larger of the two runs' (slowest - fastest) steady iteration
  bool resolved() const { return measured_delta_s > spread_s || -measured_delta_s > spread_s; }
  bool order_agrees() const { return (measured_delta_s > 0) == (predicted_delta_s > 0); }
};

// Timed records with a prediction, grouped by run (spec without recompute keys, measured rank).
// Pairs within a run, in record order.
std::vector<PolicyPair> policy_pairs(const std::vector<Evaluation>& evals);

// A policy study's control for row i of n: the first row of the same run that runs without
// recompute, else that run's first row (nullopt only when no row shares the run, never for i itself).
template <class SameRun, class WithoutRecompute>
std::optional<std::size_t> control_row(std::size_t n, std::size_t i, SameRun same_run, WithoutRecompute without_recompute) {
  for (std::size_t j = 0; j < n; ++j)
    if (same_run(i, j) && without_recompute(j)) return j;
  for (std::size_t j = 0; j < n; ++j)
    if (same_run(i, j)) return j;
  return std::nullopt;
}

// Whole-step time of records that measured only that (published tables, e.g. the seed's), with the
// overhead over their group's control: the row without recompute, else the group's first timed row.
struct StepRow {
  const Evaluation* e = nullptr;
  double measured_s = 0, predicted_s = 0;
  const Evaluation* control = nullptr;  // null for the control itself
  double measured_overhead = 0, predicted_overhead = 0;
};
std::vector<StepRow> step_rows(const std::vector<Evaluation>& evals);

}  // namespace peakcast::calibration
