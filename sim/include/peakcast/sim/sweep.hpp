#pragma once
// `peakcast sweep`: the cartesian product of spec-key values, each point parsed, validated and
// predicted like `peakcast predict --set KEY=VALUE`, spread over a thread pool. Invalid points
// (parse or Megatron-rule errors) are reported and skipped, never fatal.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "peakcast/model/units.hpp"
#include "peakcast/sim/prediction.hpp"
#include "peakcast/sim/verdict.hpp"

namespace peakcast::sim {

struct SweepAxis {
  std::string key;                  // dotted spec path, e.g. "model.seq_length"
  std::vector<std::string> values;  // JSON text (bare words are taken as strings, as --set does)
};

// Splits a value list. Commas inside [], {} or "..." do not split, so `[],["core_attn","mlp"]` gives
// two values; when the list contains a top-level ';' it is the separator instead of ','.
std::vector<std::string> split_sweep_values(std::string_view text);

// "KEY=V1,V2,..." -> axis; nullopt with `error` set when there is no key or no value.
std::optional<SweepAxis> parse_vary(std::string_view arg, std::string* error);

// The number of grid points, saturating at SIZE_MAX instead of wrapping (16 axes of 16 values is 2^64).
std::size_t sweep_size(const std::vector<SweepAxis>& axes);

// The largest grid a sweep runs: one point costs 1-30 ms, so 100,000 points are minutes to an hour on
// few cores; a bigger grid is refused before anything is allocated (docs/interface.md, limits).
inline constexpr std::size_t kMaxSweepPoints = 100'000;

// An axis whose key the spec does not have (a misspelt --vary) makes every point invalid: found once,
// before the sweep runs, as the unknown-key errors the base spec with that axis's first value gives.
model::Diagnostics sweep_axis_key_errors(std::string_view spec_text, std::string_view spec_name,
                                         const std::vector<std::string>& base_overrides,
                                         const std::vector<SweepAxis>& axes);

struct SweepPoint {
  std::vector<std::string> values;  // one per axis
  bool valid = false;
  std::string error;  // first parse / validation error of an invalid point
  bool fits = false;  // the verdict is not does_not_fit (verdict.hpp)
  FitKind verdict = FitKind::does_not_fit;
  FitCause cause = FitCause::none;  // what decided a verdict other than fits
  std::int64_t margin = 0;          // the verdict's margin, bytes
  Bytes max_peak;
  Bytes limit;  // the budget, or the GPU capacity when none is given
  std::int64_t peak_pp_rank = -1;
  Phase peak_phase = Phase::forward;
  std::string peak_op;
  double step_time_s = 0, replay_time_s = 0;
  // Largest rank's reserved estimate at the p90 reserved / allocated ratio (RankPrediction); a point
  // that fits by allocated bytes but not by this is at risk of fragmentation.
  Bytes reserved_p90;
  bool fragmentation_risk = false;  // the verdict's cause is the reservation (at risk or does not fit)
  // CUDA graphs: the largest rank's graph pool and allocated peak with the pool beside the replaying
  // iterations (RankPrediction::peak_with_graph_pool, what `fits` checks); 0 / max_peak without graphs.
  Bytes graph_pool, peak_with_graph_pool;
  Bytes headroom() const { return limit - max_peak; }
};

struct SweepOptions {
  std::optional<Bytes> budget;  // compare against this instead of each point's GPU capacity
  unsigned threads = 0;         // 0: every hardware thread
  // Called on the calling thread about every 100 ms with (points done, total).
  std::function<void(std::size_t, std::size_t)> progress;
  std::string spec_name;         // the input's name: a Bridge recipe ("bridge:...") or file, for its format
  bool replay_allocator = true;  // PredictOptions::replay_allocator for every point
};

struct SweepResult {
  std::vector<SweepAxis> axes;
  std::vector<SweepPoint> points;  // in input order: the last axis varies fastest
  std::size_t invalid_count() const;
};

SweepResult run_sweep(std::string_view spec_text, const std::vector<std::string>& base_overrides,
                      const std::vector<SweepAxis>& axes, const SweepOptions& options = {});

// One row per point; columns: the axis keys, then valid, fits, max_peak_bytes, max_peak_gb,
// limit_bytes, headroom_gb, peak_pp_rank, peak_phase, peak_op, step_time_s, replay_time_s,
// reserved_p90_gb, fragmentation_risk, graph_pool_gb, error.
std::string sweep_csv(const SweepResult& r);
std::string to_json(const SweepResult& r);

}  // namespace peakcast::sim
