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

}  // namespace peakcast::calibration
