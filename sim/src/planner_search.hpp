#pragma once
// The plan search's state: layouts, their shape groups and bounds, and the configurations kept for
// the result. Private to peakcast_sim (planner.cpp: layouts and bounds; planner_best_first.cpp: the
// best-first walk and the result).
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "peakcast/sim/planner.hpp"

namespace peakcast::sim::planning {

enum class LayoutState { unseen,
                         rejected,
                         static_pruned,
                         bounded,
                         cut_by_bound,
                         searched };

struct LayoutRecord {
  std::size_t group = 0;
  LayoutState state = LayoutState::unseen;
  std::string reason;         // Megatron's rule, when rejected
  Bytes capacity;             // the GPU less TE's userbuffers
  Bytes static_bound;         // the largest rank's static_peak_lower_bound
  double time_bound = 0;      // Predictor::StepTimeEstimate::any_policy_lower_bound_s
  double routing_load = 1.0;  // model.moe_routing_imbalance the layout is checked at (Search::spec_of)
  std::size_t policies = 0;   // policies built for it (0: not built; counted from its dimensions)
};

// Layouts whose per-rank shapes agree: the first one bounded keeps the layer graphs and profiles the
// others reuse (Predictor(spec, shapes)).
struct Group {
  std::vector<std::size_t> layouts;
  std::unique_ptr<Predictor> anchor;
};

// A configuration that fits, with what the result shows of it.
struct Kept {
  double primary = 0, secondary = 0;  // smaller is better (step time; or minus the headroom)
  std::size_t layout = 0, policy = 0;
  PlanEntry entry;
};

class Search {
 public:
  Search(const model::RunSpec& base, const PlanOptions& options);
  PlanResult run();

  // Exposed for tests through plan(): the spec of a layout as the search evaluates it.
  model::RunSpec spec_of(const PlanLayout& l) const;

 private:
  // spec_of(layouts_[i]) with the routing load enumerate() computed once per (EP, pipeline split).
  model::RunSpec spec_at(std::size_t i) const;

 private:
  // tp, sp, cp, ep, etp, micro-batch, MoE load, TP-overlap: what the layer graphs' shapes depend on
  // besides the model (Predictor(spec, shapes) checks the shapes it can).
  using GroupKey = std::tuple<std::int64_t, bool, std::int64_t, std::int64_t, std::int64_t, std::int64_t, double, bool>;
  GroupKey group_key(const model::RunSpec& s) const;

  void enumerate();
  void bound_layout(std::size_t i, Group& g);
  Bytes static_bound_of(std::size_t i, const model::RunSpec& s);  // the largest rank's static_peak_lower_bound
  void bound_all();
  std::size_t policies_of(std::size_t i) const;
  std::vector<std::string> notes() const;

  // planner_best_first.cpp
  void best_first();
  void search_layout(std::size_t i);
  double threshold() const;  // a configuration whose primary key is above this cannot be shown
  void keep(std::size_t layout, std::size_t policy, const RecomputeChoice& c, const Prediction& p);
  PlanResult result() const;

  const model::RunSpec& base_;
  const PlanOptions& options_;
  std::vector<PlanLayout> layouts_;
  std::vector<LayoutRecord> records_;
  std::vector<Group> groups_;
  int tags_ = -1;  // selective tags of the model (policy counts); set by the first layout Megatron accepts
  std::mutex tags_mutex_;
  std::map<std::string, Bytes> static_bounds_;  // by the layout's describe() without its micro-batch size
  std::mutex static_mutex_;
  std::vector<Kept> kept_;  // sorted best first, trimmed to what can still be shown
  PlanStats stats_;
};

// The shown part of a sorted list: the first `top`, then everything within `near_tie` of the K-th
// (and exact ties), at most kMaxNearTies more.
inline constexpr std::size_t kMaxNearTies = 20;

PlanEntry make_entry(const model::RunSpec& base, const model::RunSpec& spec, const PlanLayout& l, const RecomputeChoice& c,
                     const Prediction& p);

}  // namespace peakcast::sim::planning
