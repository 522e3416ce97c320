#pragma once
// Host costs of a software stack we cannot run here (Transformer Engine), fitted on its published
// step times (the seed's H100 tables): the local stack's per-call host costs (step_fit.hpp) scaled
// by one factor, and one cost per checkpoint call. GPU, collective and optimizer terms stay those
// measured on our own runs; only the two host terms move.
#include <string>
#include <vector>

#include "peakcast/calibration/record.hpp"
#include "peakcast/sim/fitted_constants.hpp"

namespace peakcast::calibration {

struct StackHostPoint {
  std::string name, group;
  double measured_step_s = 0, predicted_step_s = 0;
  bool fitted = false;  // in the fitted groups (else held out)
  // Overhead over the same group's no-recompute control ([] or the first row), when there is one.
  double measured_overhead = 0, predicted_overhead = 0;
  bool has_control = false;
  // Leave-one-out: the overhead predicted with this record left out of the fit (fitted rows only).
  double loo_predicted_overhead = 0;
};

struct StackHostFit {
  std::string stack;
  double host_scale = 1;  // on the local stack's per-call forward, backward and micro-batch costs
  double host_s_per_checkpoint = 0;
  double rms_relative_error = 0;  // of the fitted step times
  int records = 0;
  std::vector<StackHostPoint> points;  // fitted and held-out records
  std::vector<std::string> notes;
};

// Minimises the relative squared error of predicted step time over the records of `stack` in
// `fit_groups` that measured one (coarse-to-fine grid: the time model is piecewise, max(GPU, host)).
// Other timed records of the stack are reported as held out.
StackHostFit fit_stack_host_terms(const std::vector<Record>& records, const std::vector<std::string>& fit_groups,
                                  const sim::FittedConstants& local_terms, const std::string& stack = "transformer_engine");

// The fit's starting point: `stack`'s constants with the local stack's four host terms.
sim::FittedConstants with_local_host_terms(sim::FittedConstants stack, const sim::FittedConstants& local);

// Applies a fit to constants (what load_fitted_constants does with the profile's by_transformer_impl entry).
sim::FittedConstants with_stack_host_terms(sim::FittedConstants c, double host_scale, double host_s_per_checkpoint);

// Writes step.by_transformer_impl.<stack> into the time profile JSON text (keeps everything else).
std::string with_stack_host_terms_json(const std::string& time_profile_json, const StackHostFit& fit,
                                       const sim::FittedConstants& local_terms, const std::string& source);

}  // namespace peakcast::calibration
