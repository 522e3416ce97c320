#pragma once
// Validation of the memory model against measured records: per record and per group, in-sample or
// K-fold cross-validated (the fixed term fitted on the other folds), with the error bounds CI
// enforces. What `peakcast validate` prints and what .ci/validate_bounds.sh checks.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "peakcast/calibration/evaluate.hpp"
#include "peakcast/calibration/fit.hpp"
#include "peakcast/calibration/time_validation.hpp"

namespace peakcast::calibration {

// The committed measurement files: the ones the shipped profile's fixed term was fitted on, and the
// ones `validate` compares by default (the fitted ones and every later, held-out group).
const std::vector<std::string>& fitted_corpus_files();
const std::vector<std::string>& validation_corpus_files();

struct ValidationOptions {
  int cross_validate = 0;     // K > 1: K-fold (record i in fold i % K)
  double max_median = -1;     // a group's median |relative error| above it breaks the bounds (< 0: none)
  double max_worst = -1;      // a group's worst |relative error| above it breaks the bounds (< 0: none)
  double max_p90 = -1;        // a group's 90th percentile |relative error| above it breaks the bounds (< 0: none)
  double min_within_10 = -1;  // a group's share within 10 % below it breaks the bounds (< 0: none)
  bool pooled = false;        // the bounds apply to "(all)" only, not to each group
  // Records whose group contains one of these are left out (e.g. "-resume").
  std::vector<std::string> exclude_groups;
};

struct ValidationRow {
  const Evaluation* eval = nullptr;
  std::optional<double> predicted;  // bytes, with the record's fixed term (its fold's when cross-validated)
  // Measured out of memory and the verdict does_not_fit, or ran and the verdict is not does_not_fit.
  std::optional<bool> fit_ok;
  // The verdict is inside the reservation's stated interval (sim::reservation_edge): at risk, or does
  // not fit by the reservation by less than the interval. A wrong fit_ok there is not counted wrong.
  bool fit_edge = false;
  bool compared = false;  // usable: the peak is compared
  double rel_error = 0;   // (predicted - measured) / measured, when compared
  std::optional<bool> phase_ok;
  std::optional<double> reserved_estimate;  // bytes, median ratio, when the record measured its reservation
  std::optional<bool> reserved_within_p90;  // measured reservation at most the p90 estimate
  std::optional<double> reserved_replayed;  // bytes, the allocator replay's reservation (with the record's fixed term)
};

struct GroupStats {
  ErrorStats errors;
  int phase_agree = 0, phase_compared = 0;
  int fit_agree = 0, fit_compared = 0, fit_edge = 0;  // fit_edge: disagreeing inside the interval, not counted
  bool within_bounds = true;
};

struct ValidationReport {
  std::vector<ValidationRow> rows;           // one per evaluation, in order
  std::map<std::string, GroupStats> groups;  // by record group, and "(all)"
  ErrorStats reserved;                       // |estimate - measured| / measured reservation
  int reserved_within_p90 = 0;
  // By allocator, [0] default, [1] expandable_segments: the ratio estimate's and (with a replay)
  // the replayed reservation's |error| over the records that measured a reservation, and the
  // replay's median signed error (bias).
  ErrorStats reserved_by_allocator[2], reserved_replayed[2];
  double reserved_replayed_bias[2] = {0, 0};
  bool within_bounds = true;
  int cross_validate = 0;
};

ValidationReport validate_corpus(const std::vector<Evaluation>& evals, const ValidationOptions& options);

// Step time against the timed records: forward-backward time per record, the order of each resolved
// pair of policies on one run, and whole-step records against their control.
struct TimeRow {
  const Evaluation* eval = nullptr;
  double measured_s = 0, min_s = 0, max_s = 0, predicted_s = 0, rel_error = 0;
};
struct TimeReport {
  std::vector<TimeRow> rows;
  std::vector<PolicyPair> pairs;
  std::vector<StepRow> steps;
  ErrorStats errors;
  int resolved_pairs = 0, order_agrees = 0;
  bool all_orders_agree() const { return order_agrees == resolved_pairs; }
};
TimeReport validate_time(const std::vector<Evaluation>& evals);

}  // namespace peakcast::calibration
