// Runs the simulator on each record's spec and picks the rank the record measured.
#include "peakcast/calibration/evaluate.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/validate.hpp"
#include "peakcast/sim/fitted_constants.hpp"
#include "peakcast/sim/moe_routing.hpp"
#include "peakcast/sim/prediction.hpp"
#include "peakcast/sim/reserved_estimate.hpp"

namespace peakcast::calibration {

namespace {

bool spec_sets_routing(const std::string& spec_json) {
  const auto j = nlohmann::json::parse(spec_json, nullptr, false);
  return j.is_object() && j.contains("model") && j.at("model").is_object() && j.at("model").contains("moe_routing_imbalance");
}

}  // namespace

bool runs_without_recompute(const model::RunSpec& s) {
  const auto& m = s.model;
  if (m.cpu_offloading) return false;
  return m.recompute_granularity == model::RecomputeGranularity::none ||
         (m.recompute_granularity == model::RecomputeGranularity::selective && m.recompute_modules && m.recompute_modules->empty());
}

std::optional<model::RunSpec> record_spec(const Record& r, std::string* why_not) {
  const auto& m = r.measured;
  const auto parsed = model::parse_run_spec(r.spec_json);
  if (!parsed.spec) {
    if (why_not) {
      *why_not = "spec does not parse";
      for (const auto& d : parsed.diagnostics)
        if (d.severity == model::Severity::error) {
          *why_not += ": " + model::format(d);
          break;
        }
    }
    return std::nullopt;
  }
  model::RunSpec spec = *parsed.spec;
  // The routing the measured peak came from (dropless MoE), unless the spec fixes one itself.
  // The harness counts received rows after the dispatcher's ETP all-gather, which the model
  // applies itself: the imbalance is the expert-parallel part, received / (routed x ETP).
  if (m.moe_routing_imbalance && !spec_sets_routing(r.spec_json)) {
    const auto etp = static_cast<double>(model::derive(spec).etp);
    spec.model.moe_routing_imbalance = std::min(*m.moe_routing_imbalance / etp,
                                                static_cast<double>(std::max<std::int64_t>(1, spec.model.expert_model_parallel_size)));
  }
  // A record of the largest rank (rank: null, e.g. the seed's Moonlight table, the maximum of every
  // rank's report) without measured routing: under expert parallelism that is the busiest
  // expert-parallel rank, at an untrained router's expected load (sim/moe_routing.hpp, the spread
  // measured on our own runs).
  if (!r.pp_rank && !m.moe_routing_imbalance && !spec_sets_routing(r.spec_json))
    if (const auto load = sim::untrained_busiest_rank_load(spec)) spec.model.moe_routing_imbalance = *load;
  const auto diags = model::validate(spec);
  if (model::has_errors(diags)) {
    if (why_not) {
      *why_not = "spec does not validate";
      for (const auto& d : diags)
        if (d.severity == model::Severity::error) {
          *why_not += ": " + model::format(d);
          break;
        }
    }
    return std::nullopt;
  }
  return spec;
}

namespace {

Evaluation evaluate_one(const Record& r, bool replay_allocator) {
  Evaluation e;
  e.record = &r;
  const auto& m = r.measured;
  if (m.peak_allocated_bytes) e.measured_peak = static_cast<double>(*m.peak_allocated_bytes);
  else if (m.first_iteration_peak_bytes) {
    e.measured_peak = static_cast<double>(*m.first_iteration_peak_bytes);
    e.measured_first_iteration_only = true;
  }
  std::string why;
  const auto prepared = record_spec(r, &why);
  if (!prepared) {
    e.why_unusable = why;
    return e;
  }
  const model::RunSpec& spec = *prepared;
  e.expandable_segments = spec.cluster.expandable_segments;
  e.stack = spec.model.transformer_impl == model::TransformerImpl::local ? "local" : "transformer_engine";
  sim::PredictOptions options;
  options.replay_allocator = replay_allocator;
  const sim::Prediction p = sim::predict(spec, options);
  // Out of memory is the reservation's failure: the verdict counts the allocator's p90 reserve
  // (or, replayed, the allocator model's reservation).
  e.predicted_fits = p.fits_with_allocator_reserve;
  const sim::Verdict verdict = sim::run_verdict(p);
  e.verdict = verdict.kind;
  e.verdict_cause = verdict.cause;
  e.verdict_margin = verdict.margin;
  e.capacity = static_cast<double>(p.capacity.value);
  e.predicted_step_time_s = p.step_time_s;
  e.without_recompute = runs_without_recompute(spec);
  // predict() already adds the shipped profile's fixed term for this record's stack.
  e.profile_fixed = static_cast<double>(sim::load_fitted_constants("default", e.stack).framework_fixed.value);
  // The measured rank (or the largest one) by the quantity measured: a report printed after
  // iteration 1 is the largest rank's iteration-1 peak.
  const auto compared = [&](const sim::RankPrediction& rp) {
    return e.measured_first_iteration_only ? rp.first_iteration_peak_allocated.value : rp.peak_allocated.value;
  };
  const sim::RankPrediction* best = nullptr;
  for (const auto& rp : p.ranks) {
    if (r.pp_rank && rp.rank.pp_rank != *r.pp_rank) continue;
    if (!best || compared(rp) > compared(*best)) best = &rp;
  }
  if (!best) {
    e.why_unusable = "no predicted rank with pp_rank " + std::to_string(r.pp_rank.value_or(-1));
    return e;
  }
  // A measurement of the first iteration only is compared with the predicted first iteration.
  e.predicted_peak = static_cast<double>(compared(*best));
  e.predicted_phase = sim::to_string(e.measured_first_iteration_only ? best->first_iteration_peak_phase : best->peak_phase);
  e.predicted_graph_pool = static_cast<double>(best->reserved_outside_allocated.value);
  e.predicted_reserved = static_cast<double>(best->estimated_peak_reserved.value);
  e.predicted_reserved_p90 = static_cast<double>(best->estimated_peak_reserved_p90.value);
  const auto ratios = sim::reserved_ratios(sim::load_fitted_constants("default", e.stack), e.expandable_segments);
  e.reserved_ratio_median = ratios.median;
  e.reserved_ratio_p90 = ratios.p90;
  e.predicted_time = best->time;
  e.replay = best->allocator;
  // A run that printed its memory after iteration 1 and ran out later (the seed's Nemotron rows
  // out of memory in iteration 2) measured a whole first iteration: that peak is compared. Any
  // other out-of-memory peak is a lower bound.
  const bool first_iteration_completed =
      e.measured_first_iteration_only && (!m.oom_iteration || *m.oom_iteration >= 2);
  if (m.oom && !first_iteration_completed) {
    e.why_unusable = "out of memory: the measured peak is a lower bound (fit/OOM agreement only)";
    return e;
  }
  if (e.measured_peak <= 0) {
    e.why_unusable = m.oom ? "out of memory with no measured peak (fit/OOM agreement only)" : "no measured peak";
    return e;
  }
  e.usable = true;
  return e;
}

}  // namespace

std::vector<Evaluation> evaluate_records(const std::vector<Record>& records, bool replay_allocator) {
  std::vector<Evaluation> out;
  out.reserve(records.size());
  for (const auto& r : records) out.push_back(evaluate_one(r, replay_allocator));
  return out;
}

std::optional<bool> phase_agrees(const std::optional<std::string>& measured, const std::string& predicted) {
  if (!measured || predicted.empty()) return std::nullopt;
  if (*measured == "forward_backward") return predicted == "forward" || predicted == "backward";
  return *measured == predicted;
}

}  // namespace peakcast::calibration
