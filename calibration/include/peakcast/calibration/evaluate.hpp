#pragma once
// A record against the simulator: what peakcast predicts for the measured rank of that run.
#include <optional>
#include <string>
#include <vector>

#include "peakcast/calibration/record.hpp"
#include "peakcast/model/run_spec.hpp"
#include "peakcast/sim/prediction.hpp"
#include "peakcast/sim/verdict.hpp"

namespace peakcast::calibration {

struct Evaluation {
  const Record* record = nullptr;
  bool usable = false;
  std::string why_unusable;  // spec does not parse/validate, no measured peak, ...
  std::string stack;         // spec.model.transformer_impl: "transformer_engine" | "local"
  double measured_peak = 0;  // bytes; the whole-run peak, else the first-iteration peak
  bool measured_first_iteration_only = false;
  double predicted_peak = 0;    // bytes, with the shipped profile, at the measured rank
  double profile_fixed = 0;     // framework_fixed bytes of the shipped profile inside predicted_peak
  std::string predicted_phase;  // forward | backward | grad_sync | optimizer
  bool predicted_fits = true;   // the run's verdict is fits (Prediction::fits_with_allocator_reserve)
  // The run's verdict (sim/verdict.hpp), its cause and margin, and the capacity it was judged on.
  sim::FitKind verdict = sim::FitKind::fits;
  sim::FitCause verdict_cause = sim::FitCause::none;
  std::int64_t verdict_margin = 0;
  double capacity = 0;
  double predicted_step_time_s = 0;
  bool without_recompute = false;                // no recompute and no offloading: a policy study's control row
  sim::RankPrediction::StepTime predicted_time;  // the measured rank's step-time parts
  bool expandable_segments = false;              // the run's allocator grew segments (spec cluster.expandable_segments)
  double predicted_graph_pool = 0;               // bytes the graphs' private pool keeps reserved beside the cache
  // The simulator's reservation estimate at the compared rank (sim/reserved_estimate.hpp), median and
  // p90, and the ratios it scaled the allocated peaks by (0: the profile has none).
  double predicted_reserved = 0, predicted_reserved_p90 = 0;
  double reserved_ratio_median = 0, reserved_ratio_p90 = 0;
  // With evaluate_records(..., replay_allocator): the compared rank's caching-allocator replay.
  std::optional<sim::AllocatorReplay> replay;
  // The prediction with the profile's fixed term removed: the fit's regressor.
  double uncalibrated_peak() const { return predicted_peak - profile_fixed; }
  // Whether the record enters the fixed-term fit: a whole-run peak, not out of memory, and the
  // default allocator (the simulated allocator slack assumes it).
  bool fits_fixed_term() const {
    return usable && !measured_first_iteration_only && !record->measured.oom && !expandable_segments;
  }
};

// The record's spec as the simulator should see it: parsed, with the measured MoE routing (or, for a
// largest-rank record without it, the busiest expert-parallel rank of an untrained router), and
// validated. nullopt (and the reason) when it does not parse or validate.
std::optional<model::RunSpec> record_spec(const Record& r, std::string* why_not = nullptr);

// No recompute and no CPU offloading (selective with an empty list counts: the seed's control row).
bool runs_without_recompute(const model::RunSpec& s);

// Measured rank = record.pp_rank (largest over that stage's rank shapes), else the largest rank.
// replay_allocator: also replay each record's allocations through the caching-allocator model
// (sim::PredictOptions::replay_allocator); the fit/OOM verdict then uses that reservation.
std::vector<Evaluation> evaluate_records(const std::vector<Record>& records, bool replay_allocator = true);

// "forward_backward" (the harness cannot split them) agrees with forward and with backward;
// "setup" (model/DDP/optimizer build) with nothing the simulator reports.
std::optional<bool> phase_agrees(const std::optional<std::string>& measured, const std::string& predicted);

}  // namespace peakcast::calibration
