#pragma once
// `peakcast plan`: capacity planning as a search. For a model, a GPU count and kind, a global batch
// and a sequence length: every layout Megatron accepts (TP, SP, PP with its splits, VPP, CP, EP,
// ETP, micro-batch, distributed optimizer, gradient-reduce overlap) times every recompute policy
// `rank` knows (and CPU offloading), pruned by Megatron's own rules (validate()) and by bounds that
// cannot fit or cannot reach the top K, the survivors simulated; the top K by the objective with their
// per-rank peaks, reservation estimates, verdict, step-time split and launch settings.
// docs/interface.md, the plan object describes the search and why each pruning rule is safe.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "peakcast/model/run_spec.hpp"
#include "peakcast/model/static_memory.hpp"
#include "peakcast/sim/prediction.hpp"
#include "peakcast/sim/verdict.hpp"

namespace peakcast::sim {

enum class PlanObjective { step_time,
                           memory_headroom };
const char* to_string(PlanObjective o);

// One parallel layout: everything but the recompute policy.
struct PlanLayout {
  std::int64_t tp = 1, pp = 1, vpp = 1, cp = 1, ep = 1, etp = 1, dp = 1, mbs = 1;
  bool sequence_parallel = false;
  bool distributed_optimizer = false;
  bool overlap_grad_reduce = false;
  // Full recompute keeps this rank's 1/TP slice of each group input (TP > 1 without SP; only the
  // full-recompute policies of such a layout are searched, the others equal its twin's without it).
  bool distribute_saved_activations = false;
  // Uneven pipeline split (num_layers_in_first/last_pipeline_stage); unset: the even split.
  std::optional<std::int64_t> first_stage_layers, last_stage_layers;
};

std::string describe(const PlanLayout& l);  // "TP4 SP PP4 VPP5 CP1 DP2 MBS1 distopt overlap"

// The verdict a plan accepts a configuration by: predict's (sim::run_verdict, verdict.hpp), so plan,
// predict, rank and sweep agree. A configuration is accepted when it fits on every rank: the allocated
// need within the GPU and the replayed caching allocator's reservation more than reservation_edge()
// below it; "at risk" (fits without the reservation margin) is not accepted.
struct PlanVerdict {
  bool fits = false;                         // Prediction::fits: the allocated peaks alone
  bool fits_with_allocator_reserve = false;  // Prediction::fits_with_allocator_reserve: run_verdict is fits
  Verdict run;                               // run_verdict(p): kind, cause, margin, reservation, reason
  bool accepted() const { return fits_with_allocator_reserve; }
};
PlanVerdict plan_verdict(const Prediction& p);
// What the objective memory_headroom maximises: the verdict's margin (run_verdict(p).margin), the
// bytes left on the tightest rank against its allocated need or its reservation, whichever is closer.
Bytes plan_headroom(const Prediction& p);

struct PlanOptions {
  PlanObjective objective = PlanObjective::step_time;
  std::size_t top = 5;
  // Entries within this fraction of the K-th one's objective are shown too (near-ties); exact ties
  // always are.
  double near_tie = 0.01;
  // TP and ETP at most this (one NVLink domain: 8 GPUs on DGX H100/H200/B200); the time model prices
  // every collective at the preset's NVLink rate, so wider TP would be priced wrongly. 0: no limit.
  std::int64_t max_tensor_parallel = 8;
  // Uneven pipeline splits: the first and last stage may each hold up to this many fewer layers than
  // a middle stage (Megatron's num_layers_in_first/last_pipeline_stage). 0: even splits only.
  std::int64_t uneven_pipeline_window = 4;
  bool vary_overlap_grad_reduce = true;  // off and on when DP > 1; false: the spec's value
  // MoE under expert parallelism: every rank checked at the busiest EP rank's load under an untrained
  // router (what `rank` checks by default), unless the spec fixes model.moe_routing_imbalance.
  bool moe_busiest_rank = true;
  unsigned threads = 0;  // 0: every hardware thread
  // Brute force: simulate every configuration Megatron accepts (no bound pruning); for tests.
  bool exhaustive = false;
};

// Where the busiest rank's step goes (seconds per iteration); the parts add up to step_s.
struct StepSplit {
  double step_s = 0;
  double compute_s = 0;       // forward and backward of every micro-batch (GPU and host), less the parts below
  double exposed_comm_s = 0;  // TP/CP/EP collectives inside the modules (none overlapped) and the exposed gradient sync
  double grad_sync_s = 0;     // of which the gradient reduction after the backward
  double replay_s = 0;        // recompute replay (or CPU offloading's copies)
  double bubble_s = 0;        // pipeline bubble
  double optimizer_s = 0;
};

struct PlanRank {
  model::RankId rank;
  Bytes peak_allocated, peak_with_graph_pool, estimated_reserved, estimated_reserved_p90;
  Bytes reservation;                  // what the verdict judged: the replay's reserved peak, or the p90 estimate
  bool reservation_replayed = false;  // without a replay (PredictOptions::replay_allocator off): the estimate
  bool fits = false, fits_with_allocator_reserve = false;
};

struct LaunchSettings {
  std::vector<std::string> megatron_lm;       // Megatron-LM pretrain_gpt.py flags
  std::vector<std::string> bridge_overrides;  // Megatron-Bridge run_recipe.py Hydra overrides
  std::vector<std::string> peakcast_sets;     // `--set KEY=VALUE` lines that turn the input spec into this configuration
};

struct PlanEntry {
  PlanLayout layout;
  RecomputeChoice choice;
  std::string policy;  // describe(choice)
  PlanVerdict verdict;
  Bytes capacity, max_peak_allocated, max_reserved_p90, headroom;  // headroom: plan_headroom()
  Bytes max_reservation;                                           // the largest rank's PlanRank::reservation
  StepSplit time;
  std::vector<PlanRank> ranks;
  LaunchSettings launch;
  int tie_group = 0;      // entries with equal objective (to the printed precision) share a group
  bool near_tie = false;  // shown because it is within near_tie of the K-th entry
};

struct PlanStats {
  std::size_t configurations = 0;  // layouts x policies enumerated (structural)
  std::size_t layouts = 0;         // layouts enumerated
  std::size_t layouts_rejected = 0, layouts_pruned_static = 0, layouts_pruned_by_bound = 0, layouts_searched = 0;
  // Every configuration lands in exactly one of: rejected, pruned_static_memory, pruned_by_bound, simulated.
  std::size_t rejected_by_megatron = 0;  // configurations validate() refuses (a layout refused: all its policies)
  std::size_t pruned_static_memory = 0;  // of layouts whose static memory alone exceeds the GPU (policies not validated)
  std::size_t pruned_by_bound = 0;       // that cannot reach the shown entries (layout or exact time bound)
  std::size_t timed = 0;                 // configurations whose step time was evaluated (no memory walk)
  std::size_t simulated = 0;             // configurations whose memory was simulated
  std::size_t fitting = 0;               // of those, accepted by the verdict
  std::size_t shape_groups = 0;          // distinct per-rank shapes (layer graphs built once each)
  double seconds = 0;
};

struct PlanResult {
  PlanObjective objective = PlanObjective::step_time;
  std::int64_t gpus = 0;
  std::string gpu;
  std::int64_t global_batch = 0, seq_length = 0;
  std::vector<PlanEntry> entries;  // best first: the top K and their ties and near-ties
  PlanStats stats;
  std::vector<std::string> notes;  // what the search assumed or left out
};

// `base` is the parsed spec with the GPU count and kind already set (cluster.num_gpus, cluster.gpu)
// and a global batch (train.global_batch_size); its layout and recompute fields are replaced.
PlanResult plan(const model::RunSpec& base, const PlanOptions& options = {});

// The JSON object of `peakcast plan --json` (docs/interface.md, the plan object).
std::string to_json(const PlanResult& r);

// Pieces the search is made of, exposed for tests.
namespace planning {

// The spec of one layout: base with its parallel layout, micro-batch and optimizer sharding
// replaced (settings that need a layout property, such as tp_comm_overlap, kept where it holds).
model::RunSpec layout_spec(const model::RunSpec& base, const PlanLayout& l);

// Every layout the axes give for base's model and GPU count, before Megatron's rules.
std::vector<PlanLayout> enumerate_layouts(const model::RunSpec& base, const PlanOptions& options);

// Every recompute policy `rank` would try on this layout, before Megatron's rules.
std::vector<RecomputeChoice> structural_policies(const model::RunSpec& layout);
// The policies the plan searches on a layout: structural_policies, only the full-recompute ones
// under distribute_saved_activations (it changes nothing else).
std::vector<RecomputeChoice> layout_policies(const model::RunSpec& layout, const PlanLayout& l);

// The lower bound a rank's whole-run allocated peak cannot go under whatever the recompute policy:
// model state (parameters, gradients, master weights, FP8 weight cache) plus the Adam state and the
// step's transient, all live at iteration 1's optimizer step.
Bytes static_peak_lower_bound(const model::StaticMemory& sm);

LaunchSettings launch_settings(const model::RunSpec& base, const PlanLayout& l, const RecomputeChoice& c);

}  // namespace planning

}  // namespace peakcast::sim
