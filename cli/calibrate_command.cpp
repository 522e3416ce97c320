// peakcast calibrate [--corpus FILE]... [--out FILE] [--microbench FILE] [--attention FILE] [--movement FILE]
//                    [--timing FILE] [--stack-timing FILE --stack-timing-group G]... [--time-out FILE]
// Fits framework_fixed per transformer_impl on measured records; optionally the time profile (calibrate_time.hpp).
#include <cstdio>
#include <fstream>
#include <optional>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "calibrate_time.hpp"
#include "commands.hpp"
#include "corpus_loading.hpp"
#include "peakcast/calibration/evaluate.hpp"
#include "peakcast/calibration/fit.hpp"
#include "peakcast/sim/fitted_constants.hpp"

namespace peakcast::cli {

namespace {
struct CalibrateArgs {
  std::vector<std::string> corpus{"calibration/data/h200_corpus.jsonl", "calibration/data/h200_multi_gpu.jsonl",
                                  "calibration/data/h200_seedlike.jsonl", "calibration/data/h200_routing.jsonl",
                                  "calibration/data/h200_seedllama.jsonl", "calibration/data/h200_variants.jsonl",
                                  "calibration/data/h200_distribute.jsonl", "calibration/data/h200_cross_entropy.jsonl",
                                  "calibration/data/h200_etp.jsonl", "calibration/data/h200_fp8_store.jsonl",
                                  "calibration/data/h200_expandable.jsonl",
                                  "calibration/data/h200_cuda_graphs.jsonl", "calibration/data/h200_defer.jsonl"};
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
      if (!e.fits_fixed_term()) {
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
    const auto reserved = calibration::fit_reserved(records);
    const auto reserved_expandable = calibration::fit_reserved(records, true);
    for (const auto& [label, f] : {std::pair{"default allocator", reserved}, std::pair{"expandable_segments", reserved_expandable}})
      if (f.records > 0)
        std::cerr << "reserved / allocated peak, " << label << ", over " << f.records << " records: median " << f.median
                  << ", p90 " << f.p90 << ", max " << f.max << "\n";
    const std::string profile = calibration::profile_json(fits, "transformer_engine", args->corpus,
                                                          static_cast<double>(shipped.cublas_workspace.value), routing,
                                                          reserved, reserved_expandable);
    if (args->out.empty()) std::cout << profile;
    else std::ofstream(args->out) << profile;
    const TimeInputs time_inputs{args->microbench, args->attention, args->movement, args->timing, args->stack_timing,
                                 args->stack_timing_groups, args->gpu};
    if (!has_time_inputs(time_inputs)) return kExitOk;
    std::vector<std::string> ignored;
    const auto gspec = load_spec("", {"cluster.gpu=\"" + args->gpu + "\""}, &ignored);
    if (!gspec) return kExitInvalidInput;
    const TimeProfileResult time = build_time_profile(time_inputs, gspec->cluster.gpu);
    if (time.input_error) return kExitInvalidInput;
    if (args->time_out.empty()) std::cout << time.json;
    else std::ofstream(args->time_out) << time.json;
    return time.violated ? 1 : kExitOk;
  };
}

}  // namespace peakcast::cli
