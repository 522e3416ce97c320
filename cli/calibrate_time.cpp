#include "calibrate_time.hpp"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "corpus_loading.hpp"
#include "peakcast/calibration/attention_fit.hpp"
#include "peakcast/calibration/evaluate.hpp"
#include "peakcast/calibration/movement_fit.hpp"
#include "peakcast/calibration/stack_host_fit.hpp"
#include "peakcast/calibration/step_fit.hpp"
#include "peakcast/calibration/time_fit.hpp"
#include "peakcast/model/embedded_configs.hpp"
#include "peakcast/sim/fitted_constants.hpp"

namespace peakcast::cli {

namespace {

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A measured ceiling the microbenchmark recorded in the profile (0 when absent).
double profile_ceiling(const std::string& profile, const char* key, double unit) {
  const auto j = nlohmann::json::parse(profile, nullptr, false);
  return j.is_object() && j.contains("source") ? j["source"].value(key, 0.0) * unit : 0.0;
}

// What this run fitted so far, for the fits that predict step times with it.
struct Fitted {
  std::optional<calibration::AttentionFit> attention;
  std::optional<calibration::MovementFit> movement;
  std::optional<calibration::StepFit> step;
};

void report_step_terms(const calibration::StepFit& sf) {
  std::cerr << "step terms: host " << sf.host_forward_s_per_call * 1e6 << " us/forward call, "
            << sf.host_backward_s_per_call * 1e6 << " us/backward call, " << sf.host_s_per_microbatch * 1e3
            << " ms/micro-batch, " << sf.host_s_per_checkpoint * 1e3 << " ms/checkpoint call (" << sf.host_records
            << " records); GPU time scale " << sf.gpu_time_scale << " (" << sf.gpu_records << "); comm efficiency "
            << sf.comm_efficiency << " (" << sf.comm_records << "); optimizer HBM efficiency "
            << sf.optimizer_memory_efficiency << " (" << sf.optimizer_records << ")\n";
  for (const auto& n : sf.notes) std::cerr << "  " << n << "\n";
}

void report_stack_host(const calibration::StackHostFit& hf) {
  for (const auto& n : hf.notes) std::cerr << "  " << n << "\n";
  std::cerr << hf.stack << " host terms: " << hf.host_scale << " x the local per-call costs, "
            << hf.host_s_per_checkpoint * 1e3 << " ms/checkpoint call (" << hf.records << " records, rms step error "
            << 100 * hf.rms_relative_error << " %)\n";
  for (const auto& p : hf.points) {
    char line[256];
    std::snprintf(line, sizeof line, "  %-44s %-8s step %7.1f / %7.1f ms", p.name.c_str(), p.fitted ? "fitted" : "held out",
                  p.measured_step_s * 1e3, p.predicted_step_s * 1e3);
    std::cerr << line;
    if (p.has_control) {
      std::snprintf(line, sizeof line, "   overhead %+6.2f / %+6.2f %% (leave-one-out %+6.2f %%)", 100 * p.measured_overhead,
                    100 * p.predicted_overhead, 100 * p.loo_predicted_overhead);
      std::cerr << line;
    }
    std::cerr << "\n";
  }
}

// The TE stack's fit starts from the local stack's host terms and every GPU term, as this run
// fitted them (else as shipped).
sim::FittedConstants stack_fit_base(const Fitted& f) {
  auto local = sim::load_fitted_constants("default", "local");
  if (f.step) {
    local.host_forward_s_per_call = f.step->host_forward_s_per_call;
    local.host_backward_s_per_call = f.step->host_backward_s_per_call;
    local.host_s_per_microbatch = f.step->host_s_per_microbatch;
    local.host_s_per_checkpoint = f.step->host_s_per_checkpoint;
  }
  auto base = calibration::with_local_host_terms(sim::load_fitted_constants("default", "transformer_engine"), local);
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

}  // namespace

bool has_time_inputs(const TimeInputs& in) {
  return !in.microbench.empty() || !in.attention.empty() || !in.movement.empty() || !in.timing.empty() ||
         !in.stack_timing.empty();
}

TimeProfileResult build_time_profile(const TimeInputs& in, const model::GpuSpec& g) {
  TimeProfileResult out;
  Fitted fitted;
  const auto read = [&](const std::string& path, const char* option) -> std::optional<std::string> {
    auto text = read_text(path);
    if (!text) {
      std::cerr << "error: " << option << ": cannot read " << path << "\n";
      out.input_error = true;
    }
    return text;
  };
  // Timed records of one corpus file; nothing (and an input error) when it does not read.
  const auto read_timed = [&](const std::string& path) -> std::optional<std::vector<calibration::Record>> {
    std::vector<calibration::Record> timed;
    if (!read_corpus({path}, timed)) {
      out.input_error = true;
      return std::nullopt;
    }
    return timed;
  };
  if (!in.microbench.empty()) {
    const auto text = read(in.microbench, "--microbench");
    if (!text) return out;
    const auto tf = calibration::fit_time_efficiencies(*text, g.bf16_dense_tflops * 1e12, g.hbm_bandwidth_gbps * 1e9);
    for (const auto& v : tf.violations) std::cerr << "error: " << v << "\n";
    out.violated = !tf.violations.empty();
    out.json = calibration::time_profile_json(tf, in.microbench, in.gpu_preset);
  } else {
    out.json = model::embedded_config("calibration/time.json").value_or("{}");
  }
  if (!in.attention.empty()) {
    const auto text = read(in.attention, "--attention");
    if (!text) return out;
    const auto af = calibration::fit_fused_attention(*text, g.bf16_dense_tflops * 1e12,
                                                     profile_ceiling(out.json, "measured_ceiling_gemm_bf16_tflops", 1e12));
    for (const auto& v : af.violations) std::cerr << "error: " << v << "\n";
    out.violated = out.violated || !af.violations.empty();
    std::cerr << "fused attention (" << af.backend << ", " << af.cases << " cases): forward " << af.forward.s_per_call * 1e6
              << " us/call + FLOPs at " << af.forward.rate / 1e12 << " TFLOP/s (worst " << 100 * af.forward.worst_relative_error
              << " %), backward " << af.backward.s_per_call * 1e6 << " us/call + forward FLOPs at " << af.backward.rate / 1e12
              << " TFLOP/s (worst " << 100 * af.backward.worst_relative_error << " %)\n";
    if (af.violations.empty()) {
      out.json = calibration::with_fused_attention(out.json, af, in.attention);
      fitted.attention = af;
    }
  }
  if (!in.movement.empty()) {
    const auto text = read(in.movement, "--movement");
    if (!text) return out;
    const auto mf = calibration::fit_movement(*text, g.hbm_bandwidth_gbps * 1e9,
                                              profile_ceiling(out.json, "measured_ceiling_copy_gbps", 1e9));
    for (const auto& v : mf.violations) std::cerr << "error: " << v << "\n";
    out.violated = out.violated || !mf.violations.empty();
    std::cerr << "data movement (" << mf.cases << " gather / copy / cat cases): " << mf.rate / 1e9 << " GB/s, "
              << mf.efficiency << " of HBM (worst " << 100 * mf.worst_relative_error << " %)\n";
    if (mf.violations.empty()) {
      out.json = calibration::with_movement(out.json, mf, in.movement);
      fitted.movement = mf;
    }
  }
  if (!in.timing.empty()) {
    const auto timed = read_timed(in.timing);
    if (!timed) return out;
    const auto sf = calibration::fit_step_terms(calibration::evaluate_records(*timed), g.hbm_bandwidth_gbps * 1e9,
                                                g.nvlink_bandwidth_gbps * 1e9 / 2.0);
    report_step_terms(sf);
    out.json = calibration::with_step_terms(out.json, sf, in.timing);
    fitted.step = sf;
  }
  if (!in.stack_timing.empty()) {
    const auto timed = read_timed(in.stack_timing);
    if (!timed) return out;
    const auto base = stack_fit_base(fitted);
    const auto hf = calibration::fit_stack_host_terms(*timed, in.stack_timing_groups, base);
    report_stack_host(hf);
    if (hf.records >= 3) out.json = calibration::with_stack_host_terms_json(out.json, hf, base, in.stack_timing);
  }
  return out;
}

}  // namespace peakcast::cli
