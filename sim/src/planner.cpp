// plan(): the layouts of the space in shape groups (layouts whose per-rank shapes agree share one
// set of layer graphs and module profiles), each layout checked by Megatron's rules and bounded by its
// static memory and its policy-free step-time (or headroom) bound; then best-first: layouts in bound
// order, their policies validated and timed without the memory walk, and simulated in time order
// until nothing left can reach the top K (docs/interface.md, the plan object).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "peakcast/model/layer_plan.hpp"
#include "peakcast/model/userbuffers.hpp"
#include "peakcast/model/validate.hpp"
#include "peakcast/sim/moe_routing.hpp"
#include "peakcast/sim/planner.hpp"
#include "peakcast/sim/ranking.hpp"
#include "planner_search.hpp"
#include "worker_pool.hpp"

namespace peakcast::sim {

PlanVerdict plan_verdict(const Prediction& p) { return {p.fits, p.fits_with_allocator_reserve, run_verdict(p)}; }

Bytes plan_headroom(const Prediction& p) { return Bytes{run_verdict(p).margin}; }

namespace planning {

namespace {

bool is_policy_rule(const model::Diagnostic& d) {
  // Rules about the recompute / offloading fields themselves (validate_recompute.cpp): a layout that
  // breaks only these may be accepted under another policy, so its policies are checked one by one.
  return d.path.rfind("model.recompute", 0) == 0 || d.path.rfind("model.cpu_offloading", 0) == 0 ||
         d.path.rfind("model.distribute_saved_activations", 0) == 0 || d.path.rfind("model.moe_layer_recompute", 0) == 0;
}

std::string first_error(const model::Diagnostics& diags, bool* policy_only) {
  std::string first;
  bool only_policy = true;
  for (const auto& d : diags) {
    if (d.severity != model::Severity::error) continue;
    if (first.empty()) first = d.path + ": " + d.message + " [" + d.rule + "]";
    only_policy = only_policy && is_policy_rule(d);
  }
  if (policy_only) *policy_only = !first.empty() && only_policy;
  return first;
}

// The number of policies `rank` would enumerate for a layout, from its dimensions (for the counts of
// layouts that are refused or pruned before their policies are built).
std::size_t policy_count(const model::RunSpec& base, const PlanLayout& l, std::size_t tags) {
  const std::int64_t layers = base.model.num_layers;
  std::int64_t stage = layers / l.pp;
  if (l.first_stage_layers) {
    const std::int64_t mid = l.pp > 2 ? (layers - *l.first_stage_layers - *l.last_stage_layers) / (l.pp - 2) : 0;
    stage = std::max({*l.first_stage_layers, *l.last_stage_layers, mid});
  }
  const std::int64_t per_chunk = std::max<std::int64_t>(1, stage / std::max<std::int64_t>(1, l.vpp));
  const std::size_t full = uniform_layer_counts(per_chunk).size() + block_layer_counts(per_chunk).size();
  if (l.distribute_saved_activations) return full;
  std::size_t n = (std::size_t{1} << tags) + full;
  if (l.pp == 1) {
    std::size_t offload = 0;
    for (std::int64_t k = 1; k <= layers - 1; k *= 2) ++offload;
    if (layers - 1 >= 1 && (layers - 1) != (std::int64_t{1} << (offload - 1))) ++offload;
    n += offload;
  }
  return n;
}

}  // namespace

Search::Search(const model::RunSpec& base, const PlanOptions& options) : base_(base), options_(options) {}

model::RunSpec Search::spec_of(const PlanLayout& l) const {
  model::RunSpec s = layout_spec(base_, l);
  // Every rank must fit, the busiest expert-parallel rank of an untrained router included (as
  // `rank` checks by default), unless the input fixes the routing load.
  if (options_.moe_busiest_rank && base_.model.moe_routing_imbalance == 1.0 && l.ep > 1)
    if (const auto load = untrained_busiest_rank_load(s)) s.model.moe_routing_imbalance = *load;
  return s;
}

model::RunSpec Search::spec_at(std::size_t i) const {
  model::RunSpec s = layout_spec(base_, layouts_[i]);
  s.model.moe_routing_imbalance = records_[i].routing_load;
  return s;
}

Search::GroupKey Search::group_key(const model::RunSpec& s) const {
  const auto& m = s.model;
  return {m.tensor_model_parallel_size, m.sequence_parallel && m.tensor_model_parallel_size > 1, m.context_parallel_size,
          m.expert_model_parallel_size, m.expert_tensor_parallel_size.value_or(m.tensor_model_parallel_size),
          s.train.micro_batch_size, m.moe_routing_imbalance, m.tp_comm_overlap};
}

void Search::enumerate() {
  layouts_ = enumerate_layouts(base_, options_);
  std::map<GroupKey, std::size_t> index;
  // The busiest-rank routing load depends on EP and the MoE layers per stage only (moe_routing.cpp).
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t>, double> loads;
  records_.resize(layouts_.size());
  for (std::size_t i = 0; i < layouts_.size(); ++i) {
    const PlanLayout& l = layouts_[i];
    const auto load_key = std::make_tuple(l.ep, l.pp, l.vpp, l.first_stage_layers.value_or(0), l.last_stage_layers.value_or(0));
    auto load = loads.find(load_key);
    if (load == loads.end()) load = loads.emplace(load_key, spec_of(l).model.moe_routing_imbalance).first;
    records_[i].routing_load = load->second;
    const GroupKey k = group_key(spec_at(i));
    auto it = index.find(k);
    if (it == index.end()) {
      it = index.emplace(k, groups_.size()).first;
      groups_.emplace_back();
    }
    groups_[it->second].layouts.push_back(i);
    records_[i].group = it->second;
  }
}

// Static memory (model/src/static_memory*.cpp) reads neither the micro-batch size nor SP nor
// distribute_saved_activations, and without the distributed optimizer and overlap_grad_reduce neither
// DP nor CP (shard counts and bucket sizes are what depend on them): layouts that differ only in these
// share one static_memory_per_rank, computed by the first of them.
Bytes Search::static_bound_of(std::size_t i, const model::RunSpec& s) {
  PlanLayout k = layouts_[i];
  k.mbs = 0;
  k.sequence_parallel = false;
  k.distribute_saved_activations = false;
  if (!k.distributed_optimizer && !k.overlap_grad_reduce) k.cp = k.dp = 0;
  const std::string key = describe(k);
  {
    const std::lock_guard<std::mutex> lock(static_mutex_);
    if (const auto it = static_bounds_.find(key); it != static_bounds_.end()) return it->second;
  }
  const model::Derived d = model::derive(s);
  Bytes bound{};
  for (const auto& rs : model::static_memory_per_rank(s, d, model::build_layer_plan(s, d)))
    bound = max(bound, static_peak_lower_bound(rs.memory));
  const std::lock_guard<std::mutex> lock(static_mutex_);
  static_bounds_.emplace(key, bound);
  return bound;
}

// One layout: Megatron's layout rules, its static memory against the GPU, its objective bound.
void Search::bound_layout(std::size_t i, Group& g) {
  LayoutRecord& rec = records_[i];
  if (layouts_[i].distribute_saved_activations && i > 0) {
    // Its twin without distribute_saved_activations comes just before it (enumerate_layouts), in the
    // same group: the same layout rules, static memory and policy-free bound (the distributed input
    // changes only what full recompute keeps and replays).
    const LayoutRecord& twin = records_[i - 1];
    rec.state = twin.state;
    rec.reason = twin.reason;
    rec.capacity = twin.capacity;
    rec.static_bound = twin.static_bound;
    rec.time_bound = twin.time_bound;
    return;
  }
  const model::RunSpec s = spec_at(i);
  bool policy_only = false;
  rec.reason = first_error(model::validate(with_choice(s, RecomputeChoice{})), &policy_only);
  if (!rec.reason.empty() && !policy_only) {
    rec.state = LayoutState::rejected;
    return;
  }
  {
    const std::lock_guard<std::mutex> lock(tags_mutex_);
    if (tags_ < 0) tags_ = static_cast<int>(applicable_tags(s).size());
  }
  rec.capacity = s.cluster.gpu.memory_bytes - model::total_bytes(model::te_userbuffers(s));
  rec.static_bound = static_bound_of(i, s);
  if (!options_.exhaustive && rec.static_bound > rec.capacity) {
    rec.state = LayoutState::static_pruned;
    return;
  }
  // The group's first layout builds the layer graphs; the rest share them.
  std::unique_ptr<Predictor> own;
  if (!g.anchor) g.anchor = std::make_unique<Predictor>(s);
  else own = std::make_unique<Predictor>(s, *g.anchor);
  Predictor& p = own ? *own : *g.anchor;
  double bound = p.step_time(RecomputeChoice{}).any_policy_lower_bound_s;
  if (s.model.mlp_chunks_for_training > 1) {
    // A selective `mlp` checkpoint builds the MLP unchunked (a different graph): bound both.
    RecomputeChoice mlp;
    mlp.granularity = model::RecomputeGranularity::selective;
    mlp.modules = {model::RecomputeTag::mlp};
    bound = std::min(bound, p.step_time(mlp).any_policy_lower_bound_s);
  }
  rec.time_bound = bound;
  rec.state = LayoutState::bounded;
}

void Search::bound_all() {
  std::atomic<std::size_t> next{0};
  const auto worker = [&] {
    for (std::size_t gi = next++; gi < groups_.size(); gi = next++)
      for (const std::size_t i : groups_[gi].layouts) bound_layout(i, groups_[gi]);
  };
  detail::run_on_workers(detail::worker_count(options_.threads, groups_.size()), worker);  // fewer when a thread cannot start (worker_pool.hpp)
}

std::size_t Search::policies_of(std::size_t i) const {
  return policy_count(base_, layouts_[i], static_cast<std::size_t>(std::max(0, tags_)));
}

std::vector<std::string> Search::notes() const {
  std::vector<std::string> n;
  n.push_back(options_.max_tensor_parallel > 0
                  ? "TP and ETP at most " + std::to_string(options_.max_tensor_parallel) +
                        " (one NVLink domain); the time model prices every collective at the GPU preset's NVLink rate"
                  : "TP and ETP not limited; the time model prices every collective at the GPU preset's NVLink rate, also across nodes");
  n.push_back(
      "data-parallel gradient reduction is priced at the NVLink rate too (exposed only without overlap_grad_reduce); "
      "rings that span nodes are not modelled");
  n.push_back(options_.uneven_pipeline_window > 0
                  ? "pipeline splits: even, and uneven with end stages up to " + std::to_string(options_.uneven_pipeline_window) +
                        " layers lighter than a middle stage; pipeline_model_parallel_layout strings and account_for_* are not enumerated"
                  : "pipeline splits: even only");
  if (base_.model.num_moe_experts && options_.moe_busiest_rank && base_.model.moe_routing_imbalance == 1.0)
    n.push_back("MoE: every layout with EP > 1 checked at the busiest EP rank's load under an untrained router");
  n.push_back(
      "verdict: predict's, fits on every rank (the allocated peak with CUDA-graph pools within the GPU, and the replayed "
      "caching allocator's reservation more than reservation_edge, 1.5 % of the GPU, below it); at risk is left out; "
      "margin: the bytes left on the tightest rank");
  return n;
}

}  // namespace planning

PlanResult plan(const model::RunSpec& base, const PlanOptions& options) {
  planning::Search search(base, options);
  return search.run();
}

}  // namespace peakcast::sim
