// peakcast calibrate [--corpus FILE]... [--out FILE] [--microbench FILE] [--attention FILE] [--movement FILE]
//                    [--timing FILE] [--stack-timing FILE --stack-timing-group G]... [--time-out FILE]
// Reads the inputs, runs calibration::build_memory_profile (and build_time_profile when a time input
// is given), reports each fit on stderr and writes the profiles.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "commands.hpp"
#include "corpus_loading.hpp"
#include "input_file.hpp"
#include "peakcast/calibration/profile_build.hpp"
#include "peakcast/calibration/validation.hpp"
#include "peakcast/model/spec_parser.hpp"

namespace peakcast::cli {

namespace {

struct CalibrateArgs {
  std::vector<std::string> corpus = calibration::fitted_corpus_files();
  std::string out, microbench, timing, time_out, attention, movement, stack_timing;
  std::vector<std::string> stack_timing_groups;
  std::string gpu = "h200-141gb";
};

void report_memory(const calibration::MemoryProfileBuild& m) {
  for (const auto* e : m.not_usable) std::cerr << "not fitted: " << e->record->name << ": " << e->why_unusable << "\n";
  for (const auto& [f, records] : m.stacks) {
    std::cerr << f.stack << ": " << f.n << " records, framework_fixed " << f.framework_fixed / 1e6 << " MB, sigma " << f.sigma / 1e6
              << " MB (" << 100 * f.relative_sigma << " %)\n";
    for (std::size_t i = 0; i < records.size(); ++i)
      std::cerr << "  " << records[i]->record->name << ": measured " << records[i]->measured_peak / 1e9 << " GB, residual "
                << f.residuals[i] / 1e6 << " MB\n";
  }
  for (const auto& [score, sp] : m.routing.by_score_function)
    std::cerr << "MoE routing of untrained " << score << " routers: expert load sigma " << sp.expert_load_sigma << " over "
              << sp.layers << " layers of " << sp.records << " records\n";
  for (const auto& [label, f] : {std::pair{"default allocator", m.reserved}, std::pair{"expandable_segments", m.reserved_expandable}})
    if (f.records > 0)
      std::cerr << "reserved / allocated peak, " << label << ", over " << f.records << " records: median " << f.median << ", p90 "
                << f.p90 << ", max " << f.max << "\n";
}

void report_time(const calibration::TimeProfileBuild& t) {
  for (const auto& v : t.violations) std::cerr << "error: " << v << "\n";
  if (const auto& af = t.attention)
    std::cerr << "fused attention (" << af->backend << ", " << af->cases << " cases): forward " << af->forward.s_per_call * 1e6
              << " us/call + FLOPs at " << af->forward.rate / 1e12 << " TFLOP/s (worst " << 100 * af->forward.worst_relative_error
              << " %), backward " << af->backward.s_per_call * 1e6 << " us/call + forward FLOPs at " << af->backward.rate / 1e12
              << " TFLOP/s (worst " << 100 * af->backward.worst_relative_error << " %)\n";
  if (const auto& mf = t.movement)
    std::cerr << "data movement (" << mf->cases << " gather / copy / cat cases): " << mf->rate / 1e9 << " GB/s, " << mf->efficiency
              << " of HBM (worst " << 100 * mf->worst_relative_error << " %)\n";
  if (const auto& sf = t.step) {
    std::cerr << "step terms: host " << sf->host_forward_s_per_call * 1e6 << " us/forward call, " << sf->host_backward_s_per_call * 1e6
              << " us/backward call, " << sf->host_s_per_microbatch * 1e3 << " ms/micro-batch, " << sf->host_s_per_checkpoint * 1e3
              << " ms/checkpoint call (" << sf->host_records << " records); GPU time scale " << sf->gpu_time_scale << " ("
              << sf->gpu_records << "); comm efficiency " << sf->comm_efficiency << " (" << sf->comm_records
              << "); optimizer HBM efficiency " << sf->optimizer_memory_efficiency << " (" << sf->optimizer_records << ")\n";
    for (const auto& n : sf->notes) std::cerr << "  " << n << "\n";
  }
  if (const auto& hf = t.stack_host) {
    for (const auto& n : hf->notes) std::cerr << "  " << n << "\n";
    std::cerr << hf->stack << " host terms: " << hf->host_scale << " x the local per-call costs, " << hf->host_s_per_checkpoint * 1e3
              << " ms/checkpoint call (" << hf->records << " records, rms step error " << 100 * hf->rms_relative_error << " %)\n";
    for (const auto& p : hf->points) {
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
}

std::optional<std::string> read_text(const std::string& path, const char* option) {
  return read_input(option, path, kMaxDataBytes);
}

// The time inputs the options name, read; nullopt when one cannot be read.
std::optional<calibration::TimeInputs> read_time_inputs(const CalibrateArgs& a) {
  calibration::TimeInputs in;
  in.stack_timing_groups = a.stack_timing_groups;
  in.gpu_preset = a.gpu;
  const auto text = [](const std::string& path, const char* option, std::optional<calibration::Input<std::string>>& dst) {
    if (path.empty()) return true;
    auto t = read_text(path, option);
    if (t) dst = calibration::Input<std::string>{path, std::move(*t)};
    return t.has_value();
  };
  const auto records = [](const std::string& path, std::optional<calibration::Input<std::vector<calibration::Record>>>& dst) {
    if (path.empty()) return true;
    std::vector<calibration::Record> r;
    if (!read_corpus({path}, r)) return false;
    dst = calibration::Input<std::vector<calibration::Record>>{path, std::move(r)};
    return true;
  };
  if (!text(a.microbench, "--microbench", in.microbench) || !text(a.attention, "--attention", in.attention) ||
      !text(a.movement, "--movement", in.movement) || !records(a.timing, in.timing) || !records(a.stack_timing, in.stack_timing))
    return std::nullopt;
  return in;
}

bool write_or_print(const std::string& flag, const std::string& path, const std::string& text) {
  if (path.empty()) {
    std::cout << text;
    return true;
  }
  return write_output(flag, path, text);
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
  sub->add_option("--attention", args->attention, "Fused-attention timings (calibration/data/attention_h200.json) to fit its per-call time from");
  sub->add_option("--movement", args->movement, "Data-movement timings (calibration/data/movement_h200.json) to fit the gather / copy rate from");
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
    const auto memory = calibration::build_memory_profile(records, evals, args->corpus);
    report_memory(memory);
    if (!write_or_print("--out", args->out, memory.json)) return kExitInvalidInput;
    const bool any_time = !args->microbench.empty() || !args->attention.empty() || !args->movement.empty() ||
                          !args->timing.empty() || !args->stack_timing.empty();
    if (!any_time) return kExitOk;
    const auto inputs = read_time_inputs(*args);
    if (!inputs) return kExitInvalidInput;
    model::Diagnostics gpu_errors;
    const auto gpu = model::gpu_preset(args->gpu, gpu_errors);
    for (const auto& d : gpu_errors) std::cerr << "error: --gpu: " << d.message << "\n";
    if (!gpu) return kExitInvalidInput;
    const auto time = calibration::build_time_profile(*inputs, *gpu);
    report_time(time);
    if (!write_or_print("--time-out", args->time_out, time.json)) return kExitInvalidInput;
    return time.violations.empty() ? kExitOk : 1;
  };
}

}  // namespace peakcast::cli
