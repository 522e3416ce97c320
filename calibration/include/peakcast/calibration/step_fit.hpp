#pragma once
// Step-time terms that have no datasheet value, fitted on measured Megatron Core runs
// (calibration/data/h200_timing.jsonl): the host's cost per op call forward and backward and per
// micro-batch, the fraction of NVLink a collective reaches, and the optimizer step's fraction of
// HBM bandwidth. GPU op-class efficiencies stay the microbenchmark's (time_fit.hpp).
#include <string>
#include <vector>

#include "peakcast/calibration/evaluate.hpp"

namespace peakcast::calibration {

struct StepFit {
  double host_forward_s_per_call = 0, host_backward_s_per_call = 0, host_s_per_microbatch = 0;
  double host_s_per_checkpoint = 0;
  int host_records = 0;
  double gpu_time_scale = 1;  // Megatron's kernels against the microbenchmark's, GPU-bound runs
  int gpu_records = 0;
  double comm_efficiency = 0;
  int comm_records = 0;
  double optimizer_memory_efficiency = 0;
  int optimizer_records = 0;
  std::vector<std::string> notes;  // records left out and why
};

// Host terms: relative least squares of measured forward-backward time = calls_fwd x a +
// calls_bwd x b + micro-batches x c + checkpoint calls x d over the host-bound records (predicted GPU compute under 5 %
// of the measured time, no collectives). Comm: records with collectives whose predicted GPU
// compute exceeds their host time, solving measured - compute - host = wire / (link x eff).
// Optimizer: least squares of measured step time = touched bytes / (eff x HBM).
StepFit fit_step_terms(const std::vector<Evaluation>& evals, double hbm_bytes_per_s, double link_bytes_per_s);

// Writes `step` into the time profile JSON text (keeps everything else in it).
std::string with_step_terms(const std::string& time_profile_json, const StepFit& fit, const std::string& source);

}  // namespace peakcast::calibration
