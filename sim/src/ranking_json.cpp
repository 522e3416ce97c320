// The ranking object of `peakcast rank --json` (docs/interface.md, schema_version 1) plus extra fields.
#include <nlohmann/json.hpp>

#include "peakcast/sim/ranking.hpp"
#include "peakcast/sim/verdict.hpp"
#include "verdict_json.hpp"

namespace peakcast::sim {

nlohmann::json detail::recompute_choice_json(const RecomputeChoice& c) {
  nlohmann::json j;
  using G = model::RecomputeGranularity;
  j["recompute_granularity"] = c.granularity == G::full        ? nlohmann::json("full")
                               : c.granularity == G::selective ? nlohmann::json("selective")
                                                               : nlohmann::json(nullptr);
  nlohmann::json mods = nlohmann::json::array();
  for (const auto t : c.modules) mods.push_back(model::to_string(t));
  j["recompute_modules"] = std::move(mods);
  j["recompute_method"] = c.method == model::RecomputeMethod::uniform ? nlohmann::json("uniform")
                          : c.method == model::RecomputeMethod::block ? nlohmann::json("block")
                                                                      : nlohmann::json(nullptr);
  j["recompute_num_layers"] = c.num_layers ? nlohmann::json(*c.num_layers) : nlohmann::json(nullptr);
  j["cpu_offloading"] = c.cpu_offloading;
  j["cpu_offloading_num_layers"] = c.cpu_offloading_num_layers;
  return j;
}

namespace {

nlohmann::json candidate_json(const RankedCandidate& c) {
  nlohmann::json j = detail::recompute_choice_json(c.choice);
  j["label"] = c.label;
  j["viable"] = c.viable;
  j["verdict"] = to_string(c.verdict);
  j["verdict_cause"] = to_string(c.cause);
  j["margin_bytes"] = c.margin;
  j["max_peak_allocated_bytes"] = c.max_peak.value;
  j["estimated_peak_reserved_p90_bytes"] = c.reserved_p90.value;
  j["replay_flops"] = c.replay_flops;
  j["replay_time_s"] = c.replay_time_s;
  j["step_time_s"] = c.step_time_s;
  j["reason"] = c.reason;
  j["boundary_tier"] = boundary_tier(c.choice);
  if (!c.viable) {
    j["breaking_pp_rank"] = c.breaking_pp_rank;
    j["breaking_phase"] = to_string(c.breaking_phase);
    j["breaking_op"] = c.breaking_op;
    j["over_budget_bytes"] = c.over_budget.value;
  }
  nlohmann::json tags = nlohmann::json::array();
  for (const auto t : c.ineffective_tags) tags.push_back(model::to_string(t));
  j["ineffective_tags"] = std::move(tags);
  return j;
}

}  // namespace

std::string to_json(const Ranking& r) {
  nlohmann::json j;
  j["schema_version"] = 1;
  j["budget_bytes"] = r.budget.value;
  j["headroom_sigma"] = r.headroom_sigma;
  j["order"] = to_string(r.order);
  j["moe_routing_imbalance"] = r.moe_routing_imbalance;
  j["narrowest_viable"] = r.narrowest_viable ? candidate_json(r.candidates[*r.narrowest_viable]) : nlohmann::json(nullptr);
  j["cheapest_viable"] = r.cheapest_viable ? candidate_json(r.candidates[*r.cheapest_viable]) : nlohmann::json(nullptr);
  nlohmann::json cands = nlohmann::json::array();
  for (const auto& c : r.candidates) cands.push_back(candidate_json(c));
  j["candidates"] = std::move(cands);
  nlohmann::json rejected = nlohmann::json::array();
  for (const auto& x : r.rejected) {
    nlohmann::json e = detail::recompute_choice_json(x.choice);
    e["label"] = describe(x.choice);
    e["rejected_by_megatron"] = x.reason;
    rejected.push_back(std::move(e));
  }
  j["rejected_by_megatron"] = std::move(rejected);
  return j.dump(2);
}

}  // namespace peakcast::sim
