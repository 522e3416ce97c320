// The best-first walk of plan(): layouts in the order of their objective bound; each layout's
// policies validated, timed without the memory walk and simulated in time order while they can
// still reach the shown entries; then the result (top K, ties, near-ties).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <tuple>

#include "peakcast/model/validate.hpp"
#include "peakcast/sim/planner.hpp"
#include "peakcast/sim/ranking.hpp"
#include "planner_search.hpp"

namespace peakcast::sim::planning {

namespace {

bool better(const Kept& a, const Kept& b) {
  return std::tie(a.primary, a.secondary, a.layout, a.policy) < std::tie(b.primary, b.secondary, b.layout, b.policy);
}

// Ties to the printed precision: 0.01 % of the value.
constexpr double kTieRelative = 1e-4;
bool same_value(double a, double b) { return std::abs(a - b) <= kTieRelative * std::max(std::abs(a), std::abs(b)); }

StepSplit step_split(const RankPrediction& r) {
  StepSplit t;
  t.step_s = r.step_time_s;
  t.bubble_s = r.time.bubble_s;
  t.replay_s = r.replay_time_s;
  t.grad_sync_s = r.time.grad_sync_s;
  t.exposed_comm_s = r.time.module_comm_s + r.time.grad_sync_s;
  t.optimizer_s = r.time.optimizer_s;
  t.compute_s = t.step_s - t.bubble_s - t.replay_s - t.exposed_comm_s - t.optimizer_s;
  return t;
}

}  // namespace

PlanEntry make_entry(const model::RunSpec& base, const model::RunSpec& spec, const PlanLayout& l, const RecomputeChoice& c,
                     const Prediction& p) {
  PlanEntry e;
  e.layout = l;
  e.choice = c;
  e.policy = describe(c);
  e.verdict = plan_verdict(p);
  e.capacity = p.capacity;
  e.max_peak_allocated = p.max_peak_allocated;
  e.headroom = Bytes{e.verdict.run.margin};
  const RankPrediction* busiest = nullptr;  // the rank whose step time is the run's (summarize() in simulator.cpp)
  for (const auto& r : p.ranks) {
    const Verdict v = rank_verdict(r, p.capacity);
    e.ranks.push_back({r.rank, r.peak_allocated, r.peak_with_graph_pool, r.estimated_peak_reserved, r.estimated_peak_reserved_p90,
                       v.reservation, v.reservation_replayed, r.fits, r.fits_with_allocator_reserve});
    e.max_reserved_p90 = max(e.max_reserved_p90, r.estimated_peak_reserved_p90);
    e.max_reservation = max(e.max_reservation, v.reservation);
    if (!busiest || r.step_time_s >= busiest->step_time_s) busiest = &r;
  }
  if (busiest) e.time = step_split(*busiest);
  e.launch = launch_settings(base, l, c);
  (void)spec;
  return e;
}

double Search::threshold() const {
  if (options_.exhaustive || kept_.size() < options_.top || options_.top == 0) return std::numeric_limits<double>::infinity();
  const double k = kept_[options_.top - 1].primary;
  return k + std::max(options_.near_tie * std::abs(k), kTieRelative * std::abs(k));
}

void Search::keep(std::size_t layout, std::size_t policy, const RecomputeChoice& c, const Prediction& p) {
  Kept k;
  const double headroom = plan_headroom(p).gb();
  k.primary = options_.objective == PlanObjective::step_time ? p.step_time_s : -headroom;
  k.secondary = options_.objective == PlanObjective::step_time ? -headroom : p.step_time_s;
  k.layout = layout;
  k.policy = policy;
  if (k.primary > threshold()) return;
  k.entry = make_entry(base_, spec_at(layout), layouts_[layout], c, p);
  kept_.insert(std::upper_bound(kept_.begin(), kept_.end(), k, better), std::move(k));
  // Drop what can no longer be shown (beyond the K-th's near-tie range, and beyond the cap).
  const double t = threshold();
  while (kept_.size() > options_.top && (kept_.back().primary > t || kept_.size() > options_.top + kMaxNearTies) &&
         !options_.exhaustive)
    kept_.pop_back();
}

// One layout's policies: validated, timed without the walk, simulated in time order up to the bound
// (step_time); all of them simulated (memory_headroom: the memory is the objective).
void Search::search_layout(std::size_t i) {
  LayoutRecord& rec = records_[i];
  rec.state = LayoutState::searched;
  const model::RunSpec s = spec_at(i);
  Predictor p(s, *groups_[rec.group].anchor);
  const auto policies = layout_policies(s, layouts_[i]);
  rec.policies = policies.size();
  struct Timed {
    double t;
    std::size_t index;
  };
  std::vector<Timed> order;
  for (std::size_t k = 0; k < policies.size(); ++k) {
    if (model::has_errors(model::validate(with_choice(s, policies[k])))) {
      ++stats_.rejected_by_megatron;
      continue;
    }
    double t = 0;
    if (options_.objective == PlanObjective::step_time && !options_.exhaustive) {
      t = p.step_time(policies[k]).step_s;
      ++stats_.timed;
    }
    order.push_back({t, k});
  }
  std::stable_sort(order.begin(), order.end(), [](const Timed& a, const Timed& b) { return a.t < b.t; });
  for (std::size_t n = 0; n < order.size(); ++n) {
    if (options_.objective == PlanObjective::step_time && order[n].t > threshold()) {
      stats_.pruned_by_bound += order.size() - n;
      break;
    }
    ++stats_.simulated;
    // First without the caching-allocator replay, most of a simulation's cost (docs/planning.md): where
    // the allocated peak alone is over the GPU (Prediction::fits false, verdict.cpp's first test, which
    // the replay does not change), no reservation can make the configuration fit.
    PredictOptions allocated_only;
    allocated_only.replay_allocator = false;
    if (!p.run(policies[order[n].index], allocated_only).fits) continue;
    const Prediction pred = p.run(policies[order[n].index]);
    if (!plan_verdict(pred).accepted()) continue;
    ++stats_.fitting;
    keep(i, order[n].index, policies[order[n].index], pred);
  }
}

void Search::best_first() {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < records_.size(); ++i)
    if (records_[i].state == LayoutState::bounded) order.push_back(i);
  const bool time = options_.objective == PlanObjective::step_time;
  // The bound of a layout's best configuration: its policy-free step time, or minus its most headroom.
  const auto bound = [&](std::size_t i) {
    return time ? records_[i].time_bound : -(records_[i].capacity - records_[i].static_bound).gb();
  };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return bound(a) < bound(b); });
  for (const std::size_t i : order) {
    if (bound(i) > threshold()) {
      records_[i].state = LayoutState::cut_by_bound;
      continue;
    }
    search_layout(i);
  }
}

PlanResult Search::result() const {
  PlanResult r;
  r.objective = options_.objective;
  r.gpus = base_.cluster.num_gpus;
  r.gpu = base_.cluster.gpu.name;
  r.global_batch = base_.train.global_batch_size.value_or(0);
  r.seq_length = base_.model.seq_length;
  r.stats = stats_;
  // Shown: the top K, then ties and near-ties of the K-th, at most kMaxNearTies more.
  const double t = options_.top == 0 || kept_.size() < options_.top ? std::numeric_limits<double>::infinity()
                                                                    : kept_[options_.top - 1].primary * 1.0;
  const double limit = t + std::max(options_.near_tie * std::abs(t), kTieRelative * std::abs(t));
  int group = 0;
  for (std::size_t k = 0; k < kept_.size(); ++k) {
    if (k >= options_.top && (kept_[k].primary > limit || k >= options_.top + kMaxNearTies)) break;
    PlanEntry e = kept_[k].entry;
    if (k > 0 && !same_value(kept_[k].primary, kept_[k - 1].primary)) ++group;
    e.tie_group = group;
    e.near_tie = k >= options_.top;
    r.entries.push_back(std::move(e));
  }
  return r;
}

PlanResult Search::run() {
  const auto start = std::chrono::steady_clock::now();
  enumerate();
  bound_all();
  best_first();
  for (std::size_t i = 0; i < records_.size(); ++i) {
    const LayoutRecord& rec = records_[i];
    const std::size_t n = rec.policies ? rec.policies : policies_of(i);
    stats_.configurations += n;
    switch (rec.state) {
      case LayoutState::rejected:
        stats_.rejected_by_megatron += n;
        ++stats_.layouts_rejected;
        break;
      case LayoutState::static_pruned:
        stats_.pruned_static_memory += n;
        ++stats_.layouts_pruned_static;
        break;
      case LayoutState::cut_by_bound:
        stats_.pruned_by_bound += n;
        ++stats_.layouts_pruned_by_bound;
        break;
      case LayoutState::searched: ++stats_.layouts_searched; break;
      default: break;
    }
  }
  stats_.layouts = layouts_.size();
  stats_.shape_groups = groups_.size();
  stats_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  PlanResult r = result();
  r.notes = notes();
  return r;
}

}  // namespace peakcast::sim::planning
