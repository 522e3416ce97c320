#pragma once
// The memory fit: per stack, the fixed per-rank bytes the lifetime graph does not see
// (framework_fixed), by least squares on measured - simulated peaks; its residual spread gives the
// prediction interval and the out-of-memory-safe upper bound.
#include <string>
#include <utility>
#include <vector>

namespace peakcast::calibration {

struct FitPoint {
  double simulated = 0;  // predicted peak without any framework_fixed term, bytes
  double measured = 0;   // bytes
};

struct StackFit {
  std::string stack;  // transformer_impl
  int n = 0;
  double framework_fixed = 0;     // bytes, fitted
  double sigma = 0;               // residual standard deviation, bytes (n - 1 degrees of freedom)
  double relative_sigma = 0;      // of residual / measured
  std::vector<double> residuals;  // measured - (simulated + framework_fixed), per point
};

StackFit fit_stack(const std::string& stack, const std::vector<FitPoint>& points);

// Upper bound that a run stays under with ~97.7 % confidence for k = 2 (one-sided normal).
inline double safe_upper_bound(double prediction, double sigma, double k = 2.0) { return prediction + k * sigma; }

struct ErrorStats {
  int n = 0;
  double median = 0, p90 = 0, worst = 0;  // of |relative error|
  double within_10 = 0;                   // share of records with |relative error| <= 10 %
};

ErrorStats error_stats(std::vector<double> abs_relative_errors);

// Dropless MoE routing of untrained routers. A layer's load on a rank (received / balanced rows) is
// the sum of its g = experts / EP local experts' loads, so its deviation from 1 shrinks as 1/sqrt(g)
// when experts deviate independently. The fit keeps the per-expert spread: the root mean square of
// (layer load - 1) x sqrt(g) over every MoE layer of the first iterations measured with expert
// parallelism, per router score function (sigmoid and softmax routers spread very differently).
struct RoutingFit {
  struct Spread {
    double expert_load_sigma = 0;
    int layers = 0;
    int records = 0;
  };
  std::vector<std::pair<std::string, Spread>> by_score_function;
};
struct Record;
// Over the records whose spec has expert_model_parallel_size > 1 (with EP 1 every load is 1).
RoutingFit fit_routing(const std::vector<Record>& records);

// The caching allocator's reserved memory over its allocated peak (max_memory_reserved() /
// max_memory_allocated()) in whole measured runs: segments it keeps cached and free blocks it cannot
// hand out for a larger request (fragmentation). Quantiles over the records that measured both.
struct ReservedFit {
  int records = 0;
  double median = 0, p90 = 0, max = 0;
};
// Records with a whole-run peak_allocated_bytes and peak_reserved_bytes (not first-iteration-only,
// not out of memory) whose spec's cluster.expandable_segments equals `expandable_segments`, without
// CUDA graphs (their pool is reserved beside the cache; predict adds it).
ReservedFit fit_reserved(const std::vector<Record>& records, bool expandable_segments = false);

// The profile JSON `sim::load_fitted_constants` reads. The top-level memory terms are the
// `default_stack` fit (used by predict); every stack's fit is kept under memory.by_transformer_impl.
std::string profile_json(const std::vector<StackFit>& fits, const std::string& default_stack,
                         const std::vector<std::string>& corpus_files,
                         const RoutingFit& routing = {}, const ReservedFit& reserved = {},
                         const ReservedFit& reserved_expandable = {});

}  // namespace peakcast::calibration

namespace peakcast::calibration {

// framework_fixed_bytes per transformer_impl from a profile's memory.by_transformer_impl (the
// shipped one when `profile_text` is empty); a stack missing there gets the top-level value.
struct StackTerms {
  double top_level = 0;
  std::vector<std::pair<std::string, double>> by_stack;
  double for_stack(const std::string& stack) const;
};
StackTerms stack_terms(const std::string& profile_text = "");

}  // namespace peakcast::calibration
