// rank_candidates(): evaluates every accepted candidate (one Predictor a thread, sharing graphs and
// profiles within it), refines the block-N boundary, decides viability against the budget and orders
// the list.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <thread>

#include "peakcast/sim/ranking.hpp"
#include "peakcast/sim/verdict.hpp"
#include "text_format.hpp"
#include "worker_pool.hpp"

namespace peakcast::sim {

namespace {

using detail::gb_text;

RankedCandidate evaluate(Predictor& predictor, const RecomputeChoice& choice, Bytes budget, double headroom_sigma,
                         const PredictOptions& options) {
  const Prediction p = predictor.run(choice, options);
  RankedCandidate rc;
  rc.choice = choice;
  rc.label = describe(choice);
  rc.max_peak = p.max_peak_allocated;
  rc.replay_flops = p.replay_flops;
  rc.replay_time_s = p.replay_time_s;
  rc.step_time_s = p.step_time_s;
  // The one verdict (verdict.hpp): a rank fits when its allocated peak (with any CUDA-graph pool),
  // raised by the headroom, is within the budget, and the device can hold what the caching
  // allocator reserves for it: out-of-memory errors come from the reservation (the seed's Nemotron
  // moe_act row failed at about 78 GB allocated on an 80 GB H100).
  const VerdictLimits limits{budget, headroom_sigma * p.peak_relative_sigma};
  for (const auto& r : p.ranks) {
    rc.rank_peaks.push_back(r.peak_allocated);
    rc.reserved_p90 = max(rc.reserved_p90, r.estimated_peak_reserved_p90);
    if (rank_verdict(r, p.capacity, limits).kind != FitKind::fits) ++rc.ranks_over_budget;
  }
  const Verdict v = run_verdict(p, limits);
  rc.verdict = v.kind;
  rc.cause = v.cause;
  rc.margin = v.margin;
  rc.viable = v.kind == FitKind::fits;
  if (!rc.viable) {
    const RankPrediction* worst = nullptr;
    for (const auto& r : p.ranks)
      if (r.rank.pp_rank == v.pp_rank && (!worst || r.peak_with_graph_pool > worst->peak_with_graph_pool)) worst = &r;
    rc.breaking_pp_rank = v.pp_rank;
    rc.over_budget = Bytes{-v.margin};
    rc.reason = "pp_rank " + std::to_string(v.pp_rank);
    if (worst) {
      rc.breaking_phase = worst->peak_phase;
      rc.breaking_op = worst->peak_op;
      rc.reason += " peaks at " + gb_text(worst->peak_allocated) + " GB in " + to_string(worst->peak_phase) + " (" + worst->peak_op + ")";
    }
    rc.reason += std::string(": ") + short_label(v.kind) + ", " + v.reason;
    if (limits.headroom > 0 && v.kind == FitKind::does_not_fit) rc.reason += " with the headroom";
    if (rc.ranks_over_budget > 1) rc.reason += "; " + std::to_string(rc.ranks_over_budget - 1) + " other rank(s) too";
  }
  return rc;
}

// A selective candidate's tag is ineffective when the same list without it has the same peak.
void note_ineffective_tags(std::vector<RankedCandidate>& cands) {
  std::map<std::vector<model::RecomputeTag>, Bytes> selective_peaks;
  for (const auto& c : cands)
    if (c.choice.granularity == model::RecomputeGranularity::selective) selective_peaks[c.choice.modules] = c.max_peak;
  for (auto& c : cands) {
    if (c.choice.granularity != model::RecomputeGranularity::selective) continue;
    for (std::size_t i = 0; i < c.choice.modules.size(); ++i) {
      auto without = c.choice.modules;
      without.erase(without.begin() + static_cast<std::ptrdiff_t>(i));
      const auto it = selective_peaks.find(without);
      if (it == selective_peaks.end()) continue;
      const Bytes diff = c.max_peak > it->second ? c.max_peak - it->second : it->second - c.max_peak;
      const double relative = kSamePeakRelativeTolerance * static_cast<double>(max(c.max_peak, it->second).value);
      if (diff <= kSamePeakTolerance || static_cast<double>(diff.value) <= relative) c.ineffective_tags.push_back(c.choice.modules[i]);
    }
  }
}

// Every candidate, each in its slot, on every hardware thread: one Predictor a thread (the calling
// thread's is `predictor`), the candidates taken from a shared counter (worker_pool.hpp). A 1,024-layer
// model has about 35 candidates of 0.13 s each.
std::vector<RankedCandidate> evaluate_all(const model::RunSpec& spec, Predictor& predictor, const std::vector<RecomputeChoice>& choices,
                                          Bytes budget, double headroom_sigma, const PredictOptions& options) {
  std::vector<RankedCandidate> out(choices.size());
  std::atomic<std::size_t> next{0};
  const auto take = [&](Predictor& p) {
    for (std::size_t i = next++; i < choices.size(); i = next++) out[i] = evaluate(p, choices[i], budget, headroom_sigma, options);
  };
  std::vector<std::thread> pool = detail::start_workers(detail::worker_count(0, choices.size()) - 1, [&] {
    Predictor own(spec);
    take(own);
  });
  take(predictor);
  for (auto& t : pool) t.join();
  return out;
}

// With block N sampled (block_layer_samples), bisect between the largest sampled N that does not fit
// and the smallest that does: the peak only falls as N grows, so the result is the smallest fitting
// N of all of them. Each N tried is added to the candidates.
void refine_block_boundary(const model::RunSpec& spec, Predictor& predictor, const CandidateSet& set, Bytes budget,
                           double headroom_sigma, const PredictOptions& options, Ranking& out) {
  if (set.block_layers_per_chunk_sampled == 0) return;
  const auto block_n = [](const RankedCandidate& c) -> std::int64_t {
    const bool block = c.choice.granularity == model::RecomputeGranularity::full && c.choice.method == model::RecomputeMethod::block;
    return block ? c.choice.num_layers.value_or(0) : 0;
  };
  std::int64_t lo = 0, hi = 0;  // lo does not fit (0: none), hi fits (0: none)
  for (const auto& c : out.candidates)
    if (block_n(c) > 0 && c.viable && (hi == 0 || block_n(c) < hi)) hi = block_n(c);
  if (hi == 0) return;
  for (const auto& c : out.candidates)
    if (block_n(c) > 0 && !c.viable && block_n(c) < hi) lo = std::max(lo, block_n(c));
  while (hi - lo > 1) {
    RecomputeChoice c;
    c.granularity = model::RecomputeGranularity::full;
    c.method = model::RecomputeMethod::block;
    c.num_layers = lo + (hi - lo) / 2;
    if (std::string why = megatron_refusal(spec, c); !why.empty()) {
      out.rejected.push_back({c, std::move(why)});
      return;
    }
    out.candidates.push_back(evaluate(predictor, c, budget, headroom_sigma, options));
    (out.candidates.back().viable ? hi : lo) = *c.num_layers;
  }
}

}  // namespace

std::string why_tag_has_no_effect(model::RecomputeTag t) {
  using model::RecomputeTag;
  switch (t) {
    case RecomputeTag::core_attn:
      return "core_attn under fused attention keeps Q, K, V and the output anyway, or the peak is not in attention";
    case RecomputeTag::layernorm:
      return "with the TE spec most layernorms are fused into the next linear (IdentityOp); only real TENorm modules "
             "(MoE pre-MLP, unfused MLA input) are wrapped";
    case RecomputeTag::mlp: return "mlp only wraps dense MLP layers, and the peak does not depend on them here";
    case RecomputeTag::moe_act: return "moe_act drops only the expert activation input, which is not on the peak path here";
    case RecomputeTag::moe: return "the peak does not land where MoE activations are held";
    case RecomputeTag::shared_experts: return "the shared expert's activations are not on the peak path here";
    case RecomputeTag::mla_up_proj: return "the MLA up-projection outputs are not on the peak path here";
    case RecomputeTag::gdn_norm_out: return "the GDN output norm is not on the peak path here";
  }
  return "the peak does not depend on it here";
}

std::string to_string(RankOrder o) { return o == RankOrder::narrowest ? "narrowest" : "replay_time"; }

int boundary_tier(const RecomputeChoice& c) {
  return c.cpu_offloading || c.granularity == model::RecomputeGranularity::full ? 1 : 0;
}

Ranking rank_candidates(const model::RunSpec& spec, Bytes budget, double headroom_sigma, RankOrder order,
                        const PredictOptions& options) {
  Ranking out;
  out.headroom_sigma = headroom_sigma;
  out.order = order;
  out.moe_routing_imbalance = spec.model.moe_routing_imbalance;
  CandidateSet set = enumerate_candidates(spec);
  out.rejected = std::move(set.rejected);
  Predictor predictor(spec);
  // No budget: the device's capacity (less any userbuffers), what predict compares with.
  if (budget.value <= 0) budget = predictor.run().capacity;
  out.budget = budget;
  out.candidates = evaluate_all(spec, predictor, set.accepted, budget, headroom_sigma, options);
  refine_block_boundary(spec, predictor, set, budget, headroom_sigma, options, out);
  note_ineffective_tags(out.candidates);
  std::stable_sort(out.candidates.begin(), out.candidates.end(), [order](const RankedCandidate& a, const RankedCandidate& b) {
    if (a.viable != b.viable) return a.viable;
    if (a.viable) {
      if (order == RankOrder::narrowest && boundary_tier(a.choice) != boundary_tier(b.choice))
        return boundary_tier(a.choice) < boundary_tier(b.choice);
      if (a.replay_time_s != b.replay_time_s) return a.replay_time_s < b.replay_time_s;
      return a.max_peak < b.max_peak;
    }
    return a.max_peak < b.max_peak;
  });
  if (!out.candidates.empty() && out.candidates.front().viable) out.narrowest_viable = 0;
  for (std::size_t i = 0; i < out.candidates.size() && out.candidates[i].viable; ++i)
    if (!out.cheapest_viable || out.candidates[i].replay_time_s < out.candidates[*out.cheapest_viable].replay_time_s)
      out.cheapest_viable = i;
  return out;
}

std::optional<Prediction> shown_candidate_prediction(const model::RunSpec& spec, const Ranking& r) {
  if (r.candidates.empty()) return std::nullopt;
  PredictOptions opt;
  opt.record_timeline = true;
  return Predictor(spec).run(r.candidates[r.narrowest_viable.value_or(0)].choice, opt);
}

}  // namespace peakcast::sim
