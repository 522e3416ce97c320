// peakcast calibrate [--corpus FILE]... [--out FILE] [--microbench FILE] [--timing FILE] [--time-out FILE]
// Fits framework_fixed per transformer_impl on measured records; optionally the time efficiencies.
#include <cstdio>
#include <fstream>
#include <optional>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "corpus_loading.hpp"
#include "peakcast/calibration/evaluate.hpp"
#include "peakcast/calibration/fit.hpp"
#include "peakcast/calibration/attention_fit.hpp"
#include "peakcast/calibration/movement_fit.hpp"
#include "peakcast/calibration/stack_host_fit.hpp"
#include "peakcast/calibration/step_fit.hpp"
#include "peakcast/calibration/time_fit.hpp"
#include "peakcast/model/embedded_configs.hpp"
#include "peakcast/sim/fitted_constants.hpp"

namespace peakcast::cli {

namespace {
struct CalibrateArgs {
  std::vector<std::string> corpus{"calibration/data/h200_corpus.jsonl", "calibration/data/h200_multi_gpu.jsonl",
                                  "calibration/data/h200_seedlike.jsonl", "calibration/data/h200_routing.jsonl",
                                  "calibration/data/h200_seedllama.jsonl", "calibration/data/h200_variants.jsonl"};
  std::string out;
  std::string microbench;
  std::string timing;
  std::string time_out;
  std::string attention;
  std::string movement;
  std::string stack_timing;
  std::vector<std::string> stack_timing_groups;
  std::string gpu = "h200-141gb";
};

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

Runner add_calibrate_command(CLI::App& app) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* sub = app.add_subcommand("calibrate", "Fit the calibration profile on measured records (and the microbenchmark)");
  sub->add_option("--corpus", args->corpus, "Measured records, JSON lines (repeatable; default: the H200 corpus)");
  sub->add_option("--out", args->out, "Write the memory profile JSON here (default: print it)");
  sub->add_option("--microbench", args->microbench, "CUDA replay microbenchmark JSON to fit time efficiencies from");
  sub->add_option("--timing", args->timing,
                  "Timed records (calibration/data/h200_timing.jsonl) to fit the host, comm and optimizer step terms from");
  sub->add_option("--attention", args->attention,
                  "Fused-attention timings (calibration/data/attention_h200.json) to fit its per-call time from");
  sub->add_option("--movement", args->movement,
                  "Data-movement timings (calibration/data/movement_h200.json) to fit the gather / copy rate from");
  sub->add_option("--stack-timing", args->stack_timing,
                  "Published step times of the Transformer Engine stack (calibration/data/seed_h100.jsonl) to fit its host terms from");
  sub->add_option("--stack-timing-group", args->stack_timing_groups,
                  "Record group of --stack-timing to fit on (repeatable); the stack's other timed records are held out");
  sub->add_option("--time-out", args->time_out, "Write the time profile JSON here (default: print it)");
  sub->add_option("--gpu", args->gpu, "GPU preset the microbenchmark ran on (default h200-141gb)");
  return [args] {
    std::vector<calibration::Record> records;
    if (!read_corpus(args->corpus, records)) return kExitInvalidInput;
    const auto evals = calibration::evaluate_records(records);
    std::map<std::string, std::vector<calibration::FitPoint>> by_stack;
    std::map<std::string, std::vector<const calibration::Evaluation*>> used;
    for (const auto& e : evals) {
      if (!e.usable || e.measured_first_iteration_only || e.record->measured.oom) {
        if (!e.usable) std::cerr << "not fitted: " << e.record->name << ": " << e.why_unusable << "\n";
        continue;
      }
      by_stack[e.stack].push_back({e.uncalibrated_peak(), e.measured_peak});
      used[e.stack].push_back(&e);
    }
    std::vector<calibration::StackFit> fits;
    for (const auto& [stack, pts] : by_stack) {
      fits.push_back(calibration::fit_stack(stack, pts));
      const auto& f = fits.back();
      std::cerr << stack << ": " << f.n << " records, framework_fixed " << f.framework_fixed / 1e6 << " MB, sigma "
                << f.sigma / 1e6 << " MB (" << 100 * f.relative_sigma << " %)\n";
      for (std::size_t i = 0; i < pts.size(); ++i)
        std::cerr << "  " << used[stack][i]->record->name << ": measured " << pts[i].measured / 1e9 << " GB, residual "
                  << f.residuals[i] / 1e6 << " MB\n";
    }
    const auto shipped = sim::load_fitted_constants();
    const auto routing = calibration::fit_routing(records);
    for (const auto& [score, sp] : routing.by_score_function)
      std::cerr << "MoE routing of untrained " << score << " routers: expert load sigma " << sp.expert_load_sigma
                << " over " << sp.layers << " layers of " << sp.records << " records\n";
    const std::string profile = calibration::profile_json(fits, "transformer_engine", args->corpus,
                                                          static_cast<double>(shipped.cublas_workspace.value), routing);
    if (args->out.empty()) std::cout << profile;
    else std::ofstream(args->out) << profile;
    if (args->microbench.empty() && args->timing.empty() && args->stack_timing.empty() && args->attention.empty() &&
        args->movement.empty())
      return kExitOk;
    std::vector<std::string> ignored;
    const auto gspec = load_spec("", {"cluster.gpu=\"" + args->gpu + "\""}, &ignored);
    if (!gspec) return kExitInvalidInput;
    const auto& g = gspec->cluster.gpu;
    std::string tp;
    bool violated = false;
    std::optional<calibration::StepFit> local_host;
    std::optional<calibration::AttentionFit> attention_fit;
    if (!args->microbench.empty()) {
      const auto text = read_text(args->microbench);
      if (!text) {
        std::cerr << "error: --microbench: cannot read " << args->microbench << "\n";
        return kExitInvalidInput;
      }
      const auto tf = calibration::fit_time_efficiencies(*text, g.bf16_dense_tflops * 1e12, g.hbm_bandwidth_gbps * 1e9);
      for (const auto& v : tf.violations) std::cerr << "error: " << v << "\n";
      violated = !tf.violations.empty();
      tp = calibration::time_profile_json(tf, args->microbench, args->gpu);
    } else {
      tp = model::embedded_config("calibration/time.json").value_or("{}");
    }
    if (!args->attention.empty()) {
      const auto text = read_text(args->attention);
      if (!text) {
        std::cerr << "error: --attention: cannot read " << args->attention << "\n";
        return kExitInvalidInput;
      }
      const auto tj = nlohmann::json::parse(tp, nullptr, false);
      const double ceiling = tj.is_object() && tj.contains("source")
                                 ? tj["source"].value("measured_ceiling_gemm_bf16_tflops", 0.0) * 1e12 : 0.0;
      const auto af = calibration::fit_fused_attention(*text, g.bf16_dense_tflops * 1e12, ceiling);
      for (const auto& v : af.violations) std::cerr << "error: " << v << "\n";
      violated = violated || !af.violations.empty();
      std::cerr << "fused attention (" << af.backend << ", " << af.cases << " cases): forward " << af.forward.s_per_call * 1e6
                << " us/call + FLOPs at " << af.forward.rate / 1e12 << " TFLOP/s (worst " << 100 * af.forward.worst_relative_error
                << " %), backward " << af.backward.s_per_call * 1e6 << " us/call + forward FLOPs at " << af.backward.rate / 1e12
                << " TFLOP/s (worst " << 100 * af.backward.worst_relative_error << " %)\n";
      if (af.violations.empty()) {
        tp = calibration::with_fused_attention(tp, af, args->attention);
        attention_fit = af;
      }
    }
    std::optional<calibration::MovementFit> movement_fit;
    if (!args->movement.empty()) {
      const auto text = read_text(args->movement);
      if (!text) {
        std::cerr << "error: --movement: cannot read " << args->movement << "\n";
        return kExitInvalidInput;
      }
      const auto tj = nlohmann::json::parse(tp, nullptr, false);
      const double ceiling = tj.is_object() && tj.contains("source") ? tj["source"].value("measured_ceiling_copy_gbps", 0.0) * 1e9 : 0.0;
      const auto mf = calibration::fit_movement(*text, g.hbm_bandwidth_gbps * 1e9, ceiling);
      for (const auto& v : mf.violations) std::cerr << "error: " << v << "\n";
      violated = violated || !mf.violations.empty();
      std::cerr << "data movement (" << mf.cases << " gather / copy / cat cases): " << mf.rate / 1e9 << " GB/s, "
                << mf.efficiency << " of HBM (worst " << 100 * mf.worst_relative_error << " %)\n";
      if (mf.violations.empty()) {
        tp = calibration::with_movement(tp, mf, args->movement);
        movement_fit = mf;
      }
    }
    if (!args->timing.empty()) {
      std::vector<calibration::Record> timed;
      if (!read_corpus({args->timing}, timed)) return kExitInvalidInput;
      const auto tev = calibration::evaluate_records(timed);
      const auto sf = calibration::fit_step_terms(tev, g.hbm_bandwidth_gbps * 1e9, g.nvlink_bandwidth_gbps * 1e9 / 2.0);
      std::cerr << "step terms: host " << sf.host_forward_s_per_call * 1e6 << " us/forward call, "
                << sf.host_backward_s_per_call * 1e6 << " us/backward call, " << sf.host_s_per_microbatch * 1e3
                << " ms/micro-batch, " << sf.host_s_per_checkpoint * 1e3 << " ms/checkpoint call (" << sf.host_records << " records); GPU time scale " << sf.gpu_time_scale << " (" << sf.gpu_records
                << "); comm efficiency " << sf.comm_efficiency << " ("
                << sf.comm_records << "); optimizer HBM efficiency " << sf.optimizer_memory_efficiency << " ("
                << sf.optimizer_records << ")\n";
      for (const auto& n : sf.notes) std::cerr << "  " << n << "\n";
      tp = calibration::with_step_terms(tp, sf, args->timing);
      local_host = sf;
    }
    if (!args->stack_timing.empty()) {
      std::vector<calibration::Record> timed;
      if (!read_corpus({args->stack_timing}, timed)) return kExitInvalidInput;
      // Start from the local stack's host terms (just fitted, else the shipped ones).
      auto base = sim::load_fitted_constants("default", "transformer_engine");
      const auto loc = sim::load_fitted_constants("default", "local");
      base.host_forward_s_per_call = local_host ? local_host->host_forward_s_per_call : loc.host_forward_s_per_call;
      base.host_backward_s_per_call = local_host ? local_host->host_backward_s_per_call : loc.host_backward_s_per_call;
      base.host_s_per_microbatch = local_host ? local_host->host_s_per_microbatch : loc.host_s_per_microbatch;
      base.host_s_per_checkpoint = local_host ? local_host->host_s_per_checkpoint : loc.host_s_per_checkpoint;
      if (movement_fit) base.movement_efficiency = movement_fit->efficiency;
      if (attention_fit) {  // this run's fused-attention terms, not the shipped ones
        base.fused_attention_efficiency = attention_fit->forward.efficiency;
        base.fused_attention_s_per_call = attention_fit->forward.s_per_call;
        base.fused_attention_backward_efficiency = attention_fit->backward.efficiency;
        base.fused_attention_backward_s_per_call = attention_fit->backward.s_per_call;
      }
      if (local_host) {
        base.gpu_time_scale = local_host->gpu_time_scale;
        base.comm_efficiency = local_host->comm_efficiency;
        base.optimizer_memory_efficiency = local_host->optimizer_memory_efficiency;
      }
      const auto hf = calibration::fit_stack_host_terms(timed, args->stack_timing_groups, base);
      for (const auto& n : hf.notes) std::cerr << "  " << n << "\n";
      std::cerr << "transformer_engine host terms: " << hf.host_scale << " x the local per-call costs, "
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
      if (hf.records >= 3) tp = calibration::with_stack_host_terms_json(tp, hf, base, args->stack_timing);
    }
    if (args->time_out.empty()) std::cout << tp;
    else std::ofstream(args->time_out) << tp;
    if (violated) return 1;
    return kExitOk;
  };
}

}  // namespace peakcast::cli
