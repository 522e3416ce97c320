// The object `peakcast plan --json` prints (docs/interface.md, the plan object).
#include <nlohmann/json.hpp>

#include "peakcast/sim/planner.hpp"
#include "verdict_json.hpp"

namespace peakcast::sim {

namespace {

using nlohmann::json;

json optional_json(const std::optional<std::int64_t>& v) { return v ? json(*v) : json(nullptr); }

json layout_json(const PlanLayout& l) {
  return {{"tensor_model_parallel_size", l.tp},
          {"sequence_parallel", l.sequence_parallel},
          {"pipeline_model_parallel_size", l.pp},
          {"virtual_pipeline_model_parallel_size", l.vpp > 1 ? json(l.vpp) : json(nullptr)},
          {"num_layers_in_first_pipeline_stage", optional_json(l.first_stage_layers)},
          {"num_layers_in_last_pipeline_stage", optional_json(l.last_stage_layers)},
          {"context_parallel_size", l.cp},
          {"expert_model_parallel_size", l.ep},
          {"expert_tensor_parallel_size", l.etp},
          {"data_parallel_size", l.dp},
          {"micro_batch_size", l.mbs},
          {"use_distributed_optimizer", l.distributed_optimizer},
          {"overlap_grad_reduce", l.overlap_grad_reduce},
          {"distribute_saved_activations", l.distribute_saved_activations},
          {"label", describe(l)}};
}

json entry_json(const PlanEntry& e, std::size_t index) {
  json ranks = json::array();
  for (const auto& r : e.ranks)
    ranks.push_back({{"pp_rank", r.rank.pp_rank}, {"tp_rank", r.rank.tp_rank}, {"cp_rank", r.rank.cp_rank}, {"ep_rank", r.rank.ep_rank}, {"dp_rank", r.rank.dp_rank}, {"peak_allocated_bytes", r.peak_allocated.value}, {"peak_with_graph_pool_bytes", r.peak_with_graph_pool.value}, {"estimated_peak_reserved_bytes", r.estimated_reserved.value}, {"estimated_peak_reserved_p90_bytes", r.estimated_reserved_p90.value}, {"reservation_bytes", r.reservation.value}, {"reservation_replayed", r.reservation_replayed}, {"fits", r.fits}, {"fits_with_allocator_reserve", r.fits_with_allocator_reserve}});
  const StepSplit& t = e.time;
  // predict's run verdict object (kind, cause, margin, reservation, reason) with the two booleans.
  json verdict = detail::verdict_json(e.verdict.run);
  verdict["fits"] = e.verdict.fits;
  verdict["fits_with_allocator_reserve"] = e.verdict.fits_with_allocator_reserve;
  return {{"position", index + 1},
          {"tie_group", e.tie_group},
          {"near_tie", e.near_tie},
          {"layout", layout_json(e.layout)},
          {"policy", e.policy},
          {"recompute", detail::recompute_choice_json(e.choice)},
          {"verdict", std::move(verdict)},
          {"capacity_bytes", e.capacity.value},
          {"max_peak_allocated_bytes", e.max_peak_allocated.value},
          {"max_estimated_peak_reserved_p90_bytes", e.max_reserved_p90.value},
          {"max_reservation_bytes", e.max_reservation.value},
          {"headroom_bytes", e.headroom.value},
          {"step_time", {{"step_s", t.step_s}, {"compute_s", t.compute_s}, {"exposed_comm_s", t.exposed_comm_s}, {"grad_sync_s", t.grad_sync_s}, {"replay_s", t.replay_s}, {"bubble_s", t.bubble_s}, {"optimizer_s", t.optimizer_s}}},
          {"ranks", std::move(ranks)},
          {"launch", {{"megatron_lm", e.launch.megatron_lm}, {"bridge_overrides", e.launch.bridge_overrides}, {"peakcast_set", e.launch.peakcast_sets}}}};
}

}  // namespace

std::string to_json(const PlanResult& r) {
  const PlanStats& s = r.stats;
  json entries = json::array();
  for (std::size_t i = 0; i < r.entries.size(); ++i) entries.push_back(entry_json(r.entries[i], i));
  const json j = {{"schema_version", 1},
                  {"command", "plan"},
                  {"objective", to_string(r.objective)},
                  {"num_gpus", r.gpus},
                  {"gpu", r.gpu},
                  {"global_batch_size", r.global_batch},
                  {"seq_length", r.seq_length},
                  {"stats", {{"configurations", s.configurations}, {"layouts", s.layouts}, {"layouts_rejected", s.layouts_rejected}, {"layouts_pruned_static", s.layouts_pruned_static}, {"layouts_pruned_by_bound", s.layouts_pruned_by_bound}, {"layouts_searched", s.layouts_searched}, {"rejected_by_megatron", s.rejected_by_megatron}, {"pruned_static_memory", s.pruned_static_memory}, {"pruned_by_bound", s.pruned_by_bound}, {"timed", s.timed}, {"simulated", s.simulated}, {"fitting", s.fitting}, {"shape_groups", s.shape_groups}, {"seconds", s.seconds}}},
                  {"notes", r.notes},
                  {"entries", std::move(entries)}};
  return j.dump(2);
}

}  // namespace peakcast::sim
