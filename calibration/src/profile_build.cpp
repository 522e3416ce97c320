// build_memory_profile / build_time_profile: the fits of `peakcast calibrate`, in dependency order.
#include "peakcast/calibration/profile_build.hpp"

#include <map>

#include <nlohmann/json.hpp>

#include "peakcast/calibration/time_fit.hpp"
#include "peakcast/model/embedded_configs.hpp"
#include "peakcast/sim/fitted_constants.hpp"

namespace peakcast::calibration {

MemoryProfileBuild build_memory_profile(const std::vector<Record>& records, const std::vector<Evaluation>& evals,
                                        const std::vector<std::string>& corpus_files) {
  MemoryProfileBuild out;
  std::map<std::string, std::vector<FitPoint>> points;
  std::map<std::string, std::vector<const Evaluation*>> used;
  for (const auto& e : evals) {
    if (!e.fits_fixed_term()) {
      if (!e.usable) out.not_usable.push_back(&e);
      continue;
    }
    points[e.stack].push_back({e.uncalibrated_peak(), e.measured_peak});
    used[e.stack].push_back(&e);
  }
  std::vector<StackFit> fits;
  for (const auto& [stack, pts] : points) {
    fits.push_back(fit_stack(stack, pts));
    out.stacks.push_back({fits.back(), used[stack]});
  }
  out.routing = fit_routing(records);
  out.reserved = fit_reserved(records);
  out.reserved_expandable = fit_reserved(records, true);
  out.json = profile_json(fits, "transformer_engine", corpus_files, out.routing, out.reserved, out.reserved_expandable);
  return out;
}

namespace {

// A measured ceiling the microbenchmark recorded in the profile (0 when absent).
double profile_ceiling(const std::string& profile, const char* key, double unit) {
  const auto j = nlohmann::json::parse(profile, nullptr, false);
  return j.is_object() && j.contains("source") ? j["source"].value(key, 0.0) * unit : 0.0;
}

// The TE stack's fit starts from the local stack's host terms and every GPU term, as this run
// fitted them (else as shipped).
sim::FittedConstants stack_fit_base(const TimeProfileBuild& f) {
  auto local = sim::load_fitted_constants("default", "local");
  if (f.step) {
    local.host_forward_s_per_call = f.step->host_forward_s_per_call;
    local.host_backward_s_per_call = f.step->host_backward_s_per_call;
    local.host_s_per_microbatch = f.step->host_s_per_microbatch;
    local.host_s_per_checkpoint = f.step->host_s_per_checkpoint;
  }
  auto base = with_local_host_terms(sim::load_fitted_constants("default", "transformer_engine"), local);
  if (f.step) {
    base.gpu_time_scale = f.step->gpu_time_scale;
    base.comm_efficiency = f.step->comm_efficiency;
    base.optimizer_memory_efficiency = f.step->optimizer_memory_efficiency;
  }
  if (f.movement) base.movement_efficiency = f.movement->efficiency;
  if (f.attention) {
    base.fused_attention_efficiency = f.attention->forward.efficiency;
    base.fused_attention_s_per_call = f.attention->forward.s_per_call;
    base.fused_attention_backward_efficiency = f.attention->backward.efficiency;
    base.fused_attention_backward_s_per_call = f.attention->backward.s_per_call;
  }
  return base;
}

void add_violations(TimeProfileBuild& out, const std::vector<std::string>& v) { out.violations.insert(out.violations.end(), v.begin(), v.end()); }

}  // namespace

TimeProfileBuild build_time_profile(const TimeInputs& in, const model::GpuSpec& g) {
  TimeProfileBuild out;
  if (in.microbench) {
    const auto tf = fit_time_efficiencies(in.microbench->content, g.bf16_dense_tflops * 1e12, g.hbm_bandwidth_gbps * 1e9);
    add_violations(out, tf.violations);
    out.json = time_profile_json(tf, in.microbench->path, in.gpu_preset);
  } else {
    out.json = model::embedded_config("calibration/time.json").value_or("{}");
  }
  if (in.attention) {
    const auto af = fit_fused_attention(in.attention->content, g.bf16_dense_tflops * 1e12,
                                        profile_ceiling(out.json, "measured_ceiling_gemm_bf16_tflops", 1e12));
    add_violations(out, af.violations);
    if (af.violations.empty()) out.json = with_fused_attention(out.json, af, in.attention->path);
    out.attention = af;
  }
  if (in.movement) {
    const auto mf = fit_movement(in.movement->content, g.hbm_bandwidth_gbps * 1e9, profile_ceiling(out.json, "measured_ceiling_copy_gbps", 1e9));
    add_violations(out, mf.violations);
    if (mf.violations.empty()) out.json = with_movement(out.json, mf, in.movement->path);
    out.movement = mf;
  }
  if (in.timing) {
    const auto sf = fit_step_terms(evaluate_records(in.timing->content, false), g.hbm_bandwidth_gbps * 1e9, g.nvlink_bandwidth_gbps * 1e9 / 2.0);
    out.json = with_step_terms(out.json, sf, in.timing->path);
    out.step = sf;
  }
  if (in.stack_timing) {
    // Built before this fit is stored, from what the earlier fits of this run left in `out`.
    TimeProfileBuild earlier = out;
    if (earlier.attention && !earlier.attention->violations.empty()) earlier.attention.reset();
    if (earlier.movement && !earlier.movement->violations.empty()) earlier.movement.reset();
    const auto base = stack_fit_base(earlier);
    const auto hf = fit_stack_host_terms(in.stack_timing->content, in.stack_timing_groups, base);
    if (hf.records >= 3) out.json = with_stack_host_terms_json(out.json, hf, base, in.stack_timing->path);
    out.stack_host = hf;
  }
  return out;
}

}  // namespace peakcast::calibration
