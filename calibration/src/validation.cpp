// validate_corpus: each record's prediction with its fixed term (the shipped profile's, or its
// fold's), the error, phase and fit verdicts, the reservation estimate, and the group statistics.
#include "peakcast/calibration/validation.hpp"

#include <algorithm>
#include <cmath>

namespace peakcast::calibration {

const std::vector<std::string>& fitted_corpus_files() {
  static const std::vector<std::string> files = {
      "calibration/data/h200_corpus.jsonl", "calibration/data/h200_multi_gpu.jsonl",
      "calibration/data/h200_seedlike.jsonl", "calibration/data/h200_routing.jsonl",
      "calibration/data/h200_seedllama.jsonl", "calibration/data/h200_variants.jsonl",
      "calibration/data/h200_distribute.jsonl", "calibration/data/h200_cross_entropy.jsonl",
      "calibration/data/h200_etp.jsonl", "calibration/data/h200_fp8_store.jsonl",
      "calibration/data/h200_expandable.jsonl", "calibration/data/h200_cuda_graphs.jsonl",
      "calibration/data/h200_defer.jsonl"};
  return files;
}

const std::vector<std::string>& validation_corpus_files() {
  static const std::vector<std::string> files = [] {
    std::vector<std::string> f = fitted_corpus_files();
    // Measured after the shipped profile was fitted: compared, never fitted on.
    for (const char* held_out : {"calibration/data/h200_output_gate.jsonl", "calibration/data/h200_probs_on_input.jsonl",
                                 "calibration/data/h200_mlp_chunks.jsonl", "calibration/data/h200_mtp_repeated.jsonl",
                                 "calibration/data/h200_families.jsonl", "calibration/data/h200_alloc.jsonl",
                                 "calibration/data/h200_plan.jsonl", "calibration/data/h200_plan_s15.jsonl",
                                 "calibration/data/h200_alloc_edge_s15.jsonl"})
      f.emplace_back(held_out);
    return f;
  }();
  return files;
}

namespace {

// The fixed term each record is predicted with: the shipped profile's for its stack, or, K-fold,
// the fit on the other folds' records of its stack.
std::vector<double> fixed_terms(const std::vector<Evaluation>& evals, int k) {
  const auto terms = stack_terms();
  std::vector<double> fixed(evals.size(), 0.0);
  for (std::size_t i = 0; i < evals.size(); ++i) fixed[i] = terms.for_stack(evals[i].stack);
  if (k <= 1) return fixed;
  for (int fold = 0; fold < k; ++fold) {
    std::map<std::string, std::vector<FitPoint>> train;
    for (std::size_t i = 0; i < evals.size(); ++i) {
      const auto& e = evals[i];
      if (static_cast<int>(i % k) == fold || !e.fits_fixed_term()) continue;
      train[e.stack].push_back({e.uncalibrated_peak(), e.measured_peak});
    }
    for (std::size_t i = 0; i < evals.size(); ++i)
      if (static_cast<int>(i % k) == fold && train.count(evals[i].stack))
        fixed[i] = fit_stack(evals[i].stack, train[evals[i].stack]).framework_fixed;
  }
  return fixed;
}

// The simulator's reservation estimate shifted by the record's fixed term: every pass's allocated
// peak holds the term, so the estimate moves by its change times the ratio.
void compare_reserved(const Evaluation& e, double fixed_shift, ValidationRow& row) {
  const auto& r = *e.record;
  if (e.measured_first_iteration_only || !r.measured.peak_reserved_bytes || e.reserved_ratio_median <= 0) return;
  const double measured = static_cast<double>(*r.measured.peak_reserved_bytes);
  row.reserved_estimate = e.predicted_reserved + fixed_shift * e.reserved_ratio_median;
  row.reserved_within_p90 = measured <= e.predicted_reserved_p90 + fixed_shift * e.reserved_ratio_p90;
  // The replay holds the fixed term as one block: it moves the reservation by the term's change.
  if (e.replay) row.reserved_replayed = static_cast<double>(e.replay->peak_reserved.value) + fixed_shift;
}

ValidationRow compare_one(const Evaluation& e, double fixed) {
  ValidationRow row;
  row.eval = &e;
  const auto& r = *e.record;
  if (e.predicted_peak > 0) {
    row.predicted = e.uncalibrated_peak() + fixed;
    row.fit_ok = (e.verdict == sim::FitKind::does_not_fit) == r.measured.oom;
    const double edge = static_cast<double>(sim::reservation_edge(Bytes{static_cast<std::int64_t>(e.capacity)}).value);
    row.fit_edge = e.verdict == sim::FitKind::fits_without_reservation_margin ||
                   (e.verdict == sim::FitKind::does_not_fit && e.verdict_cause == sim::FitCause::reservation &&
                    static_cast<double>(-e.verdict_margin) < edge);
  }
  if (!e.usable) return row;
  row.compared = true;
  row.rel_error = (*row.predicted - e.measured_peak) / e.measured_peak;
  row.phase_ok = phase_agrees(r.measured.peak_phase, e.predicted_phase);
  compare_reserved(e, fixed - e.profile_fixed, row);
  return row;
}

void count(GroupStats& g, const ValidationRow& row) {
  if (row.fit_ok && !*row.fit_ok && row.fit_edge) {
    ++g.fit_edge;
  } else if (row.fit_ok) {
    ++g.fit_compared;
    g.fit_agree += *row.fit_ok;
  }
  if (row.phase_ok) {
    ++g.phase_compared;
    g.phase_agree += *row.phase_ok;
  }
}

}  // namespace

ValidationReport validate_corpus(const std::vector<Evaluation>& evals, const ValidationOptions& options) {
  ValidationReport out;
  out.cross_validate = options.cross_validate;
  const std::vector<double> fixed = fixed_terms(evals, options.cross_validate);
  std::map<std::string, std::vector<double>> errors;
  std::vector<double> reserved_errors, by_allocator[2], replayed[2], signed_replayed[2];
  for (std::size_t i = 0; i < evals.size(); ++i) {
    const std::string& group = evals[i].record->group;
    if (std::any_of(options.exclude_groups.begin(), options.exclude_groups.end(),
                    [&](const std::string& x) { return group.find(x) != std::string::npos; }))
      continue;
    const ValidationRow row = compare_one(evals[i], fixed[i]);
    count(out.groups[group], row);
    count(out.groups["(all)"], row);
    if (row.compared) {
      errors[group].push_back(std::fabs(row.rel_error));
      errors["(all)"].push_back(std::fabs(row.rel_error));
    }
    if (row.reserved_estimate) {
      const double measured = static_cast<double>(*evals[i].record->measured.peak_reserved_bytes);
      reserved_errors.push_back(std::fabs(*row.reserved_estimate - measured) / measured);
      out.reserved_within_p90 += *row.reserved_within_p90;
      const int k = evals[i].expandable_segments ? 1 : 0;
      by_allocator[k].push_back(std::fabs(*row.reserved_estimate - measured) / measured);
      if (row.reserved_replayed) {
        replayed[k].push_back(std::fabs(*row.reserved_replayed - measured) / measured);
        signed_replayed[k].push_back((*row.reserved_replayed - measured) / measured);
      }
    }
    out.rows.push_back(row);
  }
  for (auto it = out.groups.begin(); it != out.groups.end();) {
    // A group with no compared record has no statistics (fit verdicts alone stay in its rows).
    if (!errors.count(it->first)) {
      it = out.groups.erase(it);
      continue;
    }
    GroupStats& g = it->second;
    g.errors = error_stats(errors[it->first]);
    const bool bounded = !options.pooled || it->first == "(all)";
    g.within_bounds = !bounded || !((options.max_median >= 0 && g.errors.median > options.max_median) ||
                                    (options.max_worst >= 0 && g.errors.worst > options.max_worst) ||
                                    (options.max_p90 >= 0 && g.errors.p90 > options.max_p90) ||
                                    (options.min_within_10 >= 0 && g.errors.within_10 < options.min_within_10));
    out.within_bounds = out.within_bounds && g.within_bounds;
    ++it;
  }
  out.reserved = error_stats(reserved_errors);
  for (int k = 0; k < 2; ++k) {
    out.reserved_by_allocator[k] = error_stats(by_allocator[k]);
    out.reserved_replayed[k] = error_stats(replayed[k]);
    auto& sr = signed_replayed[k];
    if (!sr.empty()) {
      std::nth_element(sr.begin(), sr.begin() + static_cast<std::ptrdiff_t>(sr.size() / 2), sr.end());
      out.reserved_replayed_bias[k] = sr[sr.size() / 2];
    }
  }
  return out;
}

TimeReport validate_time(const std::vector<Evaluation>& evals) {
  TimeReport out;
  std::vector<double> errs;
  for (const auto& e : evals) {
    const auto& m = e.record->measured;
    if (!m.fwd_bwd_time_s || e.predicted_time.microbatches <= 0) continue;
    TimeRow row{&e, *m.fwd_bwd_time_s, m.fwd_bwd_time_min_s.value_or(0), m.fwd_bwd_time_max_s.value_or(0),
                e.predicted_time.forward_backward_s, 0};
    row.rel_error = (row.predicted_s - row.measured_s) / row.measured_s;
    errs.push_back(std::fabs(row.rel_error));
    out.rows.push_back(row);
  }
  out.pairs = policy_pairs(evals);
  for (const auto& p : out.pairs) {
    out.resolved_pairs += p.resolved();
    out.order_agrees += p.resolved() && p.order_agrees();
  }
  out.steps = step_rows(evals);
  out.errors = error_stats(errs);
  return out;
}

}  // namespace peakcast::calibration
