#pragma once
// Measured vs predicted forward-backward time: per record, and per pair of runs that differ only in
// their recompute policy (is the predicted overhead in the measured order?).
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
