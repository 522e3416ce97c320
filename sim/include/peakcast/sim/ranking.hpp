#pragma once
// `peakcast rank`: every recompute policy Megatron accepts for one run, evaluated with one shared
// Predictor, split into viable (every rank's whole-run peak within the budget) and not, and ordered
// so the cheapest viable policy (the narrowest viable boundary) comes first.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "peakcast/model/run_spec.hpp"
#include "peakcast/sim/prediction.hpp"
#include "peakcast/sim/verdict.hpp"

namespace peakcast::sim {

// "[]", "[core_attn, moe_act]", "full uniform N=2", "full block N=3", "cpu_offloading N=4".
std::string describe(const RecomputeChoice& c);

// The spec with only its recompute / offloading fields replaced by `c`.
model::RunSpec with_choice(model::RunSpec spec, const RecomputeChoice& c);

// Selective tags whose module exists in this model (core_attn needs attention layers, moe_act a
// grouped-GEMM MoE, ...). Megatron's own rules are applied later by validate().
std::vector<model::RecomputeTag> applicable_tags(const model::RunSpec& spec);

// Full-recompute N values tried per model chunk (L = most layers in one chunk):
// block: every N in 1..L; uniform: the divisors of L and the powers of two below L.
std::vector<std::int64_t> uniform_layer_counts(std::int64_t layers_per_chunk);
std::vector<std::int64_t> block_layer_counts(std::int64_t layers_per_chunk);

// What `rank` evaluates of the block family before refining: every N while L <= this; above it
// the powers of two and the divisors of L (L among them), and rank_candidates() then bisects
// between the largest sampled N that does not fit and the smallest that does. Block recompute's
// peak only falls as N grows (more of each chunk keeps its input alone), so the bisection finds
// the same smallest fitting N as evaluating all L of them (tests/sim/test_ranking.cpp checks it
// against every N), at about 2 log2(L) simulations instead of L (a 4,096-layer chunk: 24, not 4,096).
// 32 is a chosen threshold, not a measured one: up to it the table shows every N (at most 32
// simulations); above it sampling bounds the work.
inline constexpr std::int64_t kBlockCountsInFull = 32;
std::vector<std::int64_t> block_layer_samples(std::int64_t layers_per_chunk);
std::int64_t max_layers_per_chunk(const model::RunSpec& spec);

struct RejectedChoice {
  RecomputeChoice choice;
  std::string reason;  // Megatron's rule, as validate() words it
};

struct CandidateSet {
  std::vector<RecomputeChoice> accepted;
  std::vector<RejectedChoice> rejected;  // structurally sensible, but Megatron refuses them
  // Full block recompute listed by block_layer_samples() rather than every N: rank_candidates()
  // bisects for the smallest N that fits (0: every N is listed).
  std::int64_t block_layers_per_chunk_sampled = 0;
};

// Every candidate: all subsets of the applicable tags (the empty list included), full uniform and
// block with each N, CPU offloading with N layers where allowed. Each is checked with validate().
CandidateSet enumerate_candidates(const model::RunSpec& spec);

// Megatron's first refusal of the spec under `c` ("path: message [rule]"), empty when it accepts it.
std::string megatron_refusal(const model::RunSpec& spec, const RecomputeChoice& c);

struct RankedCandidate {
  RecomputeChoice choice;
  std::string label;
  bool viable = false;  // verdict == fits (verdict.hpp)
  FitKind verdict = FitKind::fits;
  FitCause cause = FitCause::none;  // what decided a verdict other than fits
  std::int64_t margin = 0;          // the verdict's margin, bytes
  Bytes max_peak;
  double replay_flops = 0, replay_time_s = 0, step_time_s = 0;
  // The rank that breaks the budget the most (non-viable only).
  std::int64_t breaking_pp_rank = -1;
  Phase breaking_phase = Phase::forward;
  std::string breaking_op;
  Bytes over_budget;
  int ranks_over_budget = 0;
  std::string reason;                                 // empty when viable
  std::vector<model::RecomputeTag> ineffective_tags;  // removing the tag changes the peak by <= 1 MB
  std::vector<Bytes> rank_peaks;                      // per RankPrediction, in prediction order
  // Largest rank's reserved-memory estimate at the p90 reserved / allocated ratio (RankPrediction);
  // a viable candidate above the budget by it is at risk of fragmentation.
  Bytes reserved_p90;
};

// How viable candidates are ordered.
// narrowest: the seed's escalation rule (decision guide, step 5: whole-layer recompute only when the
//   targeted selective boundaries cannot make the run fit): selective boundaries first, then full
//   recompute and CPU offloading; within each, cheapest replay first, then lower peak.
// replay_time: cheapest replay first whatever the boundary, then lower peak.
enum class RankOrder { narrowest,
                       replay_time };
std::string to_string(RankOrder o);

// 0 for a targeted selective boundary (including the empty list), 1 for whole-layer recompute or
// CPU offloading (the escalations).
int boundary_tier(const RecomputeChoice& c);

struct Ranking {
  Bytes budget;
  RankOrder order = RankOrder::narrowest;
  double moe_routing_imbalance = 1.0;       // the spec's MoE load on the ranked rank (1 = balanced)
  double headroom_sigma = 0;                // a rank fits when peak x (1 + k x sigma) + graph pools <= budget
  std::vector<RankedCandidate> candidates;  // viable first (in `order`); then the rest by peak
  std::vector<RejectedChoice> rejected;
  std::optional<std::size_t> narrowest_viable;  // index into candidates (the first viable one)
  std::optional<std::size_t> cheapest_viable;   // the viable one with the least replay time
};

// Two peaks count as equal for the "tag has no effect" note when they differ by at most 1 MB or
// 0.1 % of the larger one: the seed calls core_attn's -0.01 % (4 MB of 36.6 GB) under fused
// attention "no significant memory benefit".
inline constexpr Bytes kSamePeakTolerance{1'000'000};
inline constexpr double kSamePeakRelativeTolerance = 1e-3;

// headroom_sigma k: each rank's peak is raised by k times the calibration profile's relative
// residual sigma before the budget check (k = 2 is the OOM-safe bound of docs/calibration.md).
// budget 0: the device's capacity. options: e.g. the allocator replay for every candidate.
Ranking rank_candidates(const model::RunSpec& spec, Bytes budget, double headroom_sigma = 0,
                        RankOrder order = RankOrder::narrowest, const PredictOptions& options = {});

// The candidate a report shows (the narrowest viable one, else the first), predicted with its
// timelines; nullopt when there is no candidate.
std::optional<Prediction> shown_candidate_prediction(const model::RunSpec& spec, const Ranking& r);

// Why a tag can leave the peak unchanged, in a Megatron user's words.
std::string why_tag_has_no_effect(model::RecomputeTag t);

// schema_version 1 ranking object (docs/interface.md) plus extra fields.
std::string to_json(const Ranking& r);

}  // namespace peakcast::sim
