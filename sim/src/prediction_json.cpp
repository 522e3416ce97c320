#include <nlohmann/json.hpp>

#include "peakcast/sim/prediction.hpp"
#include "peakcast/sim/verdict.hpp"
#include "verdict_json.hpp"

namespace peakcast::sim {

nlohmann::json detail::verdict_json(const Verdict& v) {
  return {{"kind", to_string(v.kind)}, {"cause", to_string(v.cause)}, {"margin_bytes", v.margin}, {"allocated_need_bytes", v.allocated_need.value}, {"reservation_bytes", v.reservation.value}, {"reservation_replayed", v.reservation_replayed}, {"pp_rank", v.pp_rank}, {"reason", v.reason}};
}

namespace {

using detail::verdict_json;

nlohmann::json breakdown_json(const Breakdown& b) {
  return {{"parameters", b.parameters.value}, {"gradients", b.gradients.value}, {"optimizer_states", b.optimizer_states.value}, {"activations", b.activations.value}, {"transient", b.transient.value}, {"other", b.other.value}};
}

nlohmann::json replay_json(const AllocatorReplay& a) {
  nlohmann::json j{{"peak_reserved_bytes", a.peak_reserved.value}, {"peak_allocated_bytes", a.peak_allocated.value}, {"peak_requested_bytes", a.peak_requested.value}, {"largest_free_block_at_peak_bytes", a.largest_free_at_peak.value}, {"reserved_at_peak_bytes", a.reserved_at_peak.value}, {"requests", a.requests}, {"segments", a.segments}};
  if (a.graph_pool_replayed.value > 0) j["graph_pool_replayed_bytes"] = a.graph_pool_replayed.value;
  if (a.routing_band)
    j["routing_band"] = {{"samples", a.routing_band->samples}, {"expert_load_sigma", a.routing_band->sigma}, {"min_reserved_bytes", a.routing_band->min.value}, {"median_reserved_bytes", a.routing_band->median.value}, {"max_reserved_bytes", a.routing_band->max.value}};
  if (a.first_failure)
    j["first_failure"] = {{"request_bytes", a.first_failure->request.value}, {"allocated_bytes", a.first_failure->allocated.value}, {"reserved_bytes", a.first_failure->reserved.value}, {"where", a.first_failure->where}};
  return j;
}

}  // namespace

std::string to_json(const Prediction& p, bool with_timeline) {
  nlohmann::json j;
  j["schema_version"] = 1;
  j["capacity_bytes"] = p.capacity.value;
  j["userbuffers_bytes"] = p.userbuffers.value;
  j["fits"] = p.fits;
  j["fits_with_allocator_reserve"] = p.fits_with_allocator_reserve;
  j["verdict"] = verdict_json(run_verdict(p));
  j["max_peak_allocated_bytes"] = p.max_peak_allocated.value;
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& r : p.ranks) {
    nlohmann::json x;
    x["pp_rank"] = r.rank.pp_rank;
    x["vpp_chunks"] = r.vpp_chunks;
    x["tp_rank"] = r.rank.tp_rank;
    x["cp_rank"] = r.rank.cp_rank;
    x["ep_rank"] = r.rank.ep_rank;
    x["dp_rank"] = r.rank.dp_rank;
    x["peak_allocated_bytes"] = r.peak_allocated.value;
    x["steady_peak_allocated_bytes"] = r.steady_peak_allocated.value;
    x["peak_phase"] = to_string(r.peak_phase);
    x["peak_iteration"] = r.peak_in_first_iteration ? "first" : "steady";
    x["first_iteration_peak_allocated_bytes"] = r.first_iteration_peak_allocated.value;
    x["first_iteration_peak_phase"] = to_string(r.first_iteration_peak_phase);
    x["peak_op"] = r.peak_op;
    x["breakdown_bytes"] = breakdown_json(r.breakdown);
    x["reserved_outside_allocated_bytes"] = r.reserved_outside_allocated.value;
    x["peak_with_graph_pool_bytes"] = r.peak_with_graph_pool.value;
    x["estimated_peak_reserved_bytes"] = r.estimated_peak_reserved.value;
    x["estimated_peak_reserved_p90_bytes"] = r.estimated_peak_reserved_p90.value;
    x["fits"] = r.fits;
    x["fits_with_allocator_reserve"] = r.fits_with_allocator_reserve;
    x["verdict"] = verdict_json(rank_verdict(r, p.capacity));
    if (r.allocator) x["allocator_replay"] = replay_json(*r.allocator);
    x["replay_flops"] = r.replay_flops;
    x["step_time_s"] = r.step_time_s;
    x["replay_time_s"] = r.replay_time_s;
    x["time"] = {{"forward_backward_s", r.time.forward_backward_s}, {"grad_sync_s", r.time.grad_sync_s}, {"optimizer_s", r.time.optimizer_s}, {"compute_s", r.time.compute_s}, {"host_forward_calls", r.time.host_forward_calls}, {"host_backward_calls", r.time.host_backward_calls}, {"comm_wire_bytes", r.time.comm_wire_bytes}, {"checkpoint_regions", r.time.checkpoint_regions}, {"optimizer_touched_bytes", r.time.optimizer_touched_bytes}};
    if (with_timeline) {
      nlohmann::json events = nlohmann::json::array();
      for (const auto& e : r.timeline) {
        events.push_back({{"time_s", e.time_s}, {"live_bytes", e.live.value}, {"op", e.op}, {"layer", e.layer}, {"microbatch", e.microbatch}, {"chunk", e.chunk}, {"iteration", e.iteration}, {"phase", to_string(e.phase)}});
      }
      x["timeline"] = std::move(events);
      x["timeline_microbatches"] = r.timeline_microbatches;
    }
    ranks.push_back(std::move(x));
  }
  j["ranks"] = std::move(ranks);
  j["replay_flops"] = p.replay_flops;
  j["step_time_s"] = p.step_time_s;
  j["replay_time_s"] = p.replay_time_s;
  nlohmann::json warnings = nlohmann::json::array();
  for (const auto& w : p.warnings) warnings.push_back({{"path", w.path}, {"rule", w.rule}, {"message", w.message}});
  j["warnings"] = std::move(warnings);
  j["calibration_profile"] = p.calibration_profile;
  return j.dump(2);
}

}  // namespace peakcast::sim
