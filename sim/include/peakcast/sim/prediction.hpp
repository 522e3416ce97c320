#pragma once
// What `peakcast predict` answers, per distinct rank: peak allocated bytes, where and when it lands,
// what it is made of, and what recompute replay costs.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "peakcast/model/diagnostics.hpp"
#include "peakcast/model/run_spec.hpp"
#include "peakcast/model/static_memory.hpp"
#include "peakcast/sim/allocator_replay.hpp"
#include "peakcast/sim/fitted_constants.hpp"
#include "peakcast/sim/layer_graph.hpp"

namespace peakcast::sim {

enum class Phase { forward,
                   backward,
                   grad_sync,
                   optimizer };
const char* to_string(Phase p);

struct Breakdown {
  Bytes parameters, gradients, optimizer_states, activations, transient, other;
  Bytes total() const { return parameters + gradients + optimizer_states + activations + transient + other; }
};

// One point of a rank's memory timeline (live allocated bytes right after the event).
struct TimelineEvent {
  double time_s = 0;  // simulated time since the start of iteration 1
  Bytes live;         // allocated bytes after this event
  std::string op;     // e.g. "L3.mlp.fc1", "optimizer.step", "grad_sync.reduce_scatter"
  int layer = -1;     // global decoder layer, -1 when not a layer op
  int microbatch = -1;
  int chunk = -1;  // virtual pipeline chunk
  int iteration = 1;
  Phase phase = Phase::forward;
};

// What one module of one micro-batch costs on a rank (the `--explain` table).
struct ModuleSummary {
  std::string name;
  int chunk = 0;
  Bytes held, forward_excess, backward_excess;
  double replay_flops = 0;
  // Per micro-batch, from the time model: forward, backward and what its checkpoints replay.
  double forward_s = 0, backward_s = 0, replay_s = 0;
  std::vector<ModuleProfile::HeldTensor> held_tensors;  // a plain module's saved tensors, when asked for (PredictOptions)
};

struct RankPrediction {
  model::RankId rank;
  model::ParamCounts params;  // parameters this rank holds (after TP / PP / EP / ETP sharding)
  std::vector<std::int64_t> vpp_chunks;
  Bytes peak_allocated;                  // whole run, iteration 1 included
  Bytes steady_peak_allocated;           // iteration 2 on
  Bytes first_iteration_peak_allocated;  // iteration 1 (Adam state appears at its optimizer step)
  // Where iteration 1's own peak lands: what a memory report printed after iteration 1 shows (Bridge
  // before its PR #3169 printed only that one).
  Phase first_iteration_peak_phase = Phase::forward;
  Phase peak_phase = Phase::forward;
  bool peak_in_first_iteration = false;
  std::string peak_op;  // the op at which the peak lands
  Breakdown breakdown;  // at the whole-run peak
  // Device memory held outside the allocator's "allocated" bytes that a fit must leave room for:
  // CUDA-graph private pools keep the addresses of every captured region's tensors reserved.
  Bytes reserved_outside_allocated;
  // The most device memory the run needs from allocated bytes and graph pools together: the largest
  // of the eager iterations' peaks and the replaying iterations' peak plus the pool beside it.
  Bytes peak_with_graph_pool;
  bool fits = true;  // peak_with_graph_pool <= capacity
  // Also what the caching allocator reserves at that peak in 90 % of our measured runs
  // (estimated_peak_reserved_p90) fits: out-of-memory errors come from the reservation.
  bool fits_with_allocator_reserve = true;
  // What the caching allocator would reserve at that peak, from the measured reserved / allocated
  // ratios (median and 90th percentile, FittedConstants), plus the graph pools; 0 without a profile.
  Bytes estimated_peak_reserved, estimated_peak_reserved_p90;
  // The rank's allocations and frees replayed through the caching-allocator model, when asked for
  // (PredictOptions::replay_allocator): then fits_with_allocator_reserve and the verdict
  // (verdict.hpp) use its reservation instead of the p90 estimate.
  std::optional<AllocatorReplay> allocator;
  // With PredictOptions::record_allocator_trace: the replayed requests in order, a request as its
  // bytes (> 0), a free as -(n + 1) for the n-th request (0-based): what the replay fed the model.
  std::vector<std::int64_t> allocator_trace;
  // Beside it, one per request: the module, phase, iteration and (inside a module's script) the tensor.
  std::vector<std::string> allocator_trace_where;
  double replay_flops = 0;  // per iteration
  double step_time_s = 0;
  double replay_time_s = 0;
  struct StepTime {
    double forward_backward_s = 0;  // all micro-batches with replays and pipeline bubble
    double grad_sync_s = 0;         // exposed (not overlapped) gradient reduction
    double optimizer_s = 0;
    // What the time is made of, per iteration (for fits and reports): host op calls forward
    // (replays included) and backward, GPU compute time without host or comm terms, collective
    // wire bytes, bytes the optimizer step touches.
    double host_forward_calls = 0, host_backward_calls = 0, compute_s = 0, comm_wire_bytes = 0;
    double optimizer_touched_bytes = 0;
    double microbatches = 0;
    double checkpoint_regions = 0;  // checkpoint calls replayed per iteration
    // Of forward_backward_s: the pipeline bubble's share, and the collectives inside the modules'
    // forward and backward (not their replays) over all micro-batches, none overlapped in this model.
    double bubble_s = 0, module_comm_s = 0;
  } time;
  std::vector<TimelineEvent> timeline;  // filled only when asked for
  // The micro-batches of each iteration the timeline shows: every one of a short step, else the
  // first ones up to at least 16 (the rest repeat the steady pattern; time.microbatches has the count).
  std::int64_t timeline_microbatches = 0;
  std::vector<ModuleSummary> modules;  // one entry per module of each chunk, per micro-batch
};

struct Prediction {
  Bytes capacity;     // the device's usable memory less the userbuffers: what the caching allocator can have
  Bytes userbuffers;  // Transformer Engine's tp_comm_overlap buffers, allocated outside the allocator
  bool fits = true;
  bool fits_with_allocator_reserve = true;  // every rank's RankPrediction::fits_with_allocator_reserve
  Bytes max_peak_allocated;
  std::vector<RankPrediction> ranks;
  double replay_flops = 0;   // busiest rank
  double step_time_s = 0;    // busiest rank
  double replay_time_s = 0;  // busiest rank
  model::Diagnostics warnings;
  std::string calibration_profile;  // which profile supplied fitted constants
  double peak_relative_sigma = 0;   // that profile's residual spread of the peak (one sigma, relative)
};

struct PredictOptions {
  bool record_timeline = false;
  bool record_held_tensors = false;  // fill ModuleSummary::held_tensors (predict --explain)
  // Walk every micro-batch of the step instead of the fewest that find the same peaks (which the
  // schedule tests check it does); slower, same answers.
  bool walk_every_microbatch = false;
  // Replay every rank's tensor allocations and frees through the caching-allocator model
  // (RankPrediction::allocator): O(requests) per rank. On by default: the one verdict
  // (verdict.hpp) then judges the reservation the allocator would make, in every command.
  bool replay_allocator = true;
  bool record_allocator_trace = false;  // with replay_allocator: fill RankPrediction::allocator_trace
  // With replay_allocator and routed MoE rows: also replay the stream under this many sampled routings
  // (AllocatorReplay::routing_band; `predict` and the Python module ask for kPredictRoutingBandSamples).
  // Reported beside the verdict, which stays balanced routing's in every command.
  int routing_band_samples = 0;
};
// A choice, not a fitted value: 8 draws show the modes on the traced fake-EP8 stream (docs/caching-allocator.md)
// at the cost of 8 replays (bench BM_predict_routing_band_deepseek_v3).
inline constexpr int kPredictRoutingBandSamples = 8;

// Assumes a spec that parsed and validated without errors.
Prediction predict(const model::RunSpec& spec, const PredictOptions& options = {});

// A recompute policy to try on an otherwise fixed run (what `peakcast rank` enumerates).
struct RecomputeChoice {
  model::RecomputeGranularity granularity = model::RecomputeGranularity::none;
  std::vector<model::RecomputeTag> modules;  // selective tags
  model::RecomputeMethod method = model::RecomputeMethod::none;
  std::optional<std::int64_t> num_layers;  // full: layers per group (uniform) or count (block)
  bool cpu_offloading = false;
  std::int64_t cpu_offloading_num_layers = 0;
};

// Evaluates many recompute policies of one run, reusing the built lifetime graphs and the
// per-(module, checkpoint set) profiles between them.
class Predictor {
 public:
  explicit Predictor(model::RunSpec spec);
  // With other fitted constants than the shipped profile's (calibration fits trying candidates).
  Predictor(model::RunSpec spec, const FittedConstants& fitted);
  // Shares the layer graphs and module profiles of `shapes` (the planner's memo across layouts).
  // Layer graphs depend on the per-rank shapes (TP, SP, CP, EP, ETP, micro-batch) and the model, not
  // on the pipeline split, the GPU count or the optimizer and DDP settings: `spec` may differ from
  // shapes.spec() only in those and in the recompute fields (std::invalid_argument when the shapes
  // differ). The two share caches: use them from one thread at a time.
  Predictor(model::RunSpec spec, const Predictor& shapes);
  ~Predictor();
  Predictor(Predictor&&) noexcept;
  Predictor& operator=(Predictor&&) noexcept;

  Prediction run(const PredictOptions& options = {});  // the spec's own policy
  Prediction run(const RecomputeChoice& choice, const PredictOptions& options = {});
  const model::RunSpec& spec() const;
  // Static memory of every distinct rank (what run() walks; computed once).
  const std::vector<model::RankStatic>& static_memory();
  // The busiest rank's step time under `choice` without the memory walk (run(choice).step_time_s),
  // and a time no recompute policy of this run can beat: every rank's forward and backward GPU time
  // through the schedule (no replay, no host time beyond the per-micro-batch part) with its gradient
  // sync and optimizer step.
  struct StepTimeEstimate {
    double step_s = 0, any_policy_lower_bound_s = 0;
  };
  StepTimeEstimate step_time(const RecomputeChoice& choice);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// schema_version 1 JSON, as fixed in docs/interface.md.
std::string to_json(const Prediction& p, bool with_timeline = false);

}  // namespace peakcast::sim
