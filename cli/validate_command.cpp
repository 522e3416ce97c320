// peakcast validate [--corpus FILE]... [--json] [--max-median-error X --max-worst-error Y] [--cross-validate K]
//                  [--time]
// Measured vs predicted whole-run peak per record and per group; exit 1 when a bound is broken.
// --time: forward-backward time per timed record, and whether each resolved pair of policies of
// the same run has its predicted overhead in the measured order (exit 1 when one does not).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "corpus_loading.hpp"
#include "peakcast/calibration/evaluate.hpp"
#include "peakcast/calibration/fit.hpp"
#include "peakcast/calibration/time_validation.hpp"
#include "peakcast/sim/fitted_constants.hpp"

namespace peakcast::cli {

namespace {
struct ValidateArgs {
  std::vector<std::string> corpus{"calibration/data/h200_corpus.jsonl", "calibration/data/h200_multi_gpu.jsonl",
                                  "calibration/data/h200_seedlike.jsonl", "calibration/data/h200_routing.jsonl",
                                  "calibration/data/h200_seedllama.jsonl", "calibration/data/h200_variants.jsonl",
                                  "calibration/data/h200_distribute.jsonl", "calibration/data/h200_cross_entropy.jsonl",
                                  "calibration/data/h200_etp.jsonl", "calibration/data/h200_fp8_store.jsonl",
                                  "calibration/data/h200_expandable.jsonl",
                                  "calibration/data/h200_cuda_graphs.jsonl", "calibration/data/h200_defer.jsonl",
                                  "calibration/data/h200_output_gate.jsonl", "calibration/data/h200_probs_on_input.jsonl",
                                  "calibration/data/h200_mlp_chunks.jsonl", "calibration/data/h200_mtp_repeated.jsonl"};
  bool json = false;
  double max_median = -1, max_worst = -1;
  int cross_validate = 0;
  bool time = false;
};

// --time: the step-time report.
int report_time(const std::vector<calibration::Evaluation>& evals, bool json) {
  nlohmann::json jr = nlohmann::json::array(), jp = nlohmann::json::array();
  std::vector<double> errs;
  if (!json) std::printf("%-48s %12s %12s %12s %8s\n", "record", "measured ms", "spread ms", "predicted ms", "error");
  for (const auto& e : evals) {
    const auto& m = e.record->measured;
    if (!m.fwd_bwd_time_s || e.predicted_time.microbatches <= 0) continue;
    const double pred = e.predicted_time.forward_backward_s, meas = *m.fwd_bwd_time_s;
    const double err = (pred - meas) / meas;
    errs.push_back(std::fabs(err));
    jr.push_back({{"case", e.record->name}, {"measured_s", meas}, {"min_s", *m.fwd_bwd_time_min_s},
                  {"max_s", *m.fwd_bwd_time_max_s}, {"predicted_s", pred}, {"relative_error", err}});
    if (!json)
      std::printf("%-48s %12.1f %12.1f %12.1f %+7.1f%%\n", e.record->name.c_str(), 1e3 * meas,
                  1e3 * (*m.fwd_bwd_time_max_s - *m.fwd_bwd_time_min_s), 1e3 * pred, 100 * err);
  }
  int resolved = 0, agree = 0;
  if (!json) std::printf("\n%-36s %-36s %11s %11s %10s  %s\n", "policy pair (same run)", "", "measured ms", "predicted ms", "spread ms", "order");
  for (const auto& p : calibration::policy_pairs(evals)) {
    const bool res = p.resolved();
    resolved += res;
    agree += res && p.order_agrees();
    jp.push_back({{"a", p.a->record->name}, {"b", p.b->record->name}, {"measured_delta_s", p.measured_delta_s},
                  {"predicted_delta_s", p.predicted_delta_s}, {"spread_s", p.spread_s}, {"resolved", res},
                  {"order_agrees", p.order_agrees()}});
    if (!json)
      std::printf("%-36s %-36s %+11.1f %+11.1f %10.1f  %s\n", p.a->record->name.c_str(), p.b->record->name.c_str(),
                  1e3 * p.measured_delta_s, 1e3 * p.predicted_delta_s, 1e3 * p.spread_s,
                  !res ? "within noise" : (p.order_agrees() ? "agrees" : "DIFFERS"));
  }
  // Records that measured only the whole step (published tables): step time and the overhead over
  // their run's control row.
  nlohmann::json js = nlohmann::json::array();
  const auto steps = calibration::step_rows(evals);
  if (!json && !steps.empty())
    std::printf("\n%-48s %12s %12s %8s %24s\n", "record (whole step)", "measured ms", "predicted ms", "error",
                "overhead meas / pred");
  for (const auto& r : steps) {
    const double err = r.predicted_s / r.measured_s - 1.0;
    nlohmann::json row{{"case", r.e->record->name}, {"measured_step_s", r.measured_s}, {"predicted_step_s", r.predicted_s},
                       {"relative_error", err}};
    if (r.control) {
      row["control"] = r.control->record->name;
      row["measured_overhead"] = r.measured_overhead;
      row["predicted_overhead"] = r.predicted_overhead;
    }
    js.push_back(row);
    if (json) continue;
    std::printf("%-48s %12.1f %12.1f %+7.1f%%", r.e->record->name.c_str(), 1e3 * r.measured_s, 1e3 * r.predicted_s, 100 * err);
    if (r.control) std::printf(" %+10.2f%% / %+7.2f%%", 100 * r.measured_overhead, 100 * r.predicted_overhead);
    else std::printf(" %24s", "(control)");
    std::printf("\n");
  }
  const auto s = calibration::error_stats(errs);
  if (json)
    std::cout << nlohmann::json{{"records", jr}, {"pairs", jp}, {"step_records", js}, {"median", s.median}, {"p90", s.p90},
                                {"worst", s.worst}, {"resolved_pairs", resolved}, {"order_agrees", agree}}.dump(2) << "\n";
  else
    std::printf("\nforward-backward time: %d records, median |error| %.1f %%, p90 %.1f %%, worst %.1f %%; "
                "policy order agrees on %d of %d resolved pairs\n", s.n, 100 * s.median, 100 * s.p90, 100 * s.worst, agree, resolved);
  return agree == resolved ? kExitOk : 1;
}

struct Row {
  const calibration::Evaluation* e;
  double predicted = 0;  // calibrated, bytes
  double rel_error = 0;  // (predicted - measured) / measured
  std::optional<bool> phase_ok{}, fit_ok{};
};
}  // namespace

Runner add_validate_command(CLI::App& app) {
  auto args = std::make_shared<ValidateArgs>();
  CLI::App* sub = app.add_subcommand("validate", "Compare predictions with measured records");
  sub->add_option("--corpus", args->corpus, "Measured records, JSON lines (repeatable; default: the H200 corpus)");
  sub->add_flag("--json", args->json, "Print the per-record and per-group results as JSON");
  sub->add_option("--max-median-error", args->max_median, "Fail (status 1) if a group's median |relative error| exceeds this");
  sub->add_option("--max-worst-error", args->max_worst, "Fail (status 1) if a group's worst |relative error| exceeds this");
  sub->add_option("--cross-validate", args->cross_validate, "K-fold: fit framework_fixed on K-1 folds, predict the held-out fold");
  sub->add_flag("--time", args->time,
                "Step time instead of memory: forward-backward time per timed record and the policy order per run");
  return [args] {
    std::vector<calibration::Record> records;
    if (!read_corpus(args->corpus, records)) return kExitInvalidInput;
    const auto evals = calibration::evaluate_records(records);
    if (args->time) return report_time(evals, args->json);
    const auto terms = calibration::stack_terms();
    // Fixed term per record: the shipped profile's for its stack, or the fold's own fit.
    std::vector<double> fixed(evals.size(), 0.0);
    for (std::size_t i = 0; i < evals.size(); ++i) fixed[i] = terms.for_stack(evals[i].stack);
    if (args->cross_validate > 1) {
      const int k = args->cross_validate;
      for (int fold = 0; fold < k; ++fold) {
        std::map<std::string, std::vector<calibration::FitPoint>> train;
        for (std::size_t i = 0; i < evals.size(); ++i) {
          const auto& e = evals[i];
          if (static_cast<int>(i % k) == fold || !e.fits_fixed_term()) continue;
          train[e.stack].push_back({e.uncalibrated_peak(), e.measured_peak});
        }
        for (std::size_t i = 0; i < evals.size(); ++i)
          if (static_cast<int>(i % k) == fold && train.count(evals[i].stack))
            fixed[i] = calibration::fit_stack(evals[i].stack, train[evals[i].stack]).framework_fixed;
      }
    }
    std::vector<Row> rows;
    std::map<std::string, std::vector<double>> group_errors;
    std::vector<double> reserved_errors;  // |estimated - measured| / measured reserved peak
    int reserved_within_p90 = 0;
    std::map<std::string, std::pair<int, int>> group_phase, group_fit;  // agree, compared
    nlohmann::json out_records = nlohmann::json::array();
    for (std::size_t i = 0; i < evals.size(); ++i) {
      const auto& e = evals[i];
      const auto& r = *e.record;
      Row row{&e};
      nlohmann::json jr = {{"case", r.name}, {"group", r.group}, {"source", r.source + ":" + std::to_string(r.line)}};
      if (e.predicted_peak > 0) {
        row.predicted = e.uncalibrated_peak() + fixed[i];
        row.fit_ok = e.predicted_fits == !r.measured.oom;
        auto& gf = group_fit[r.group];
        gf.second++;
        gf.first += *row.fit_ok;
        jr["predicted_bytes"] = std::llround(row.predicted);
        jr["predicted_phase"] = e.predicted_phase;
        jr["predicted_fits"] = e.predicted_fits;
        jr["fit_oom_agrees"] = *row.fit_ok;
      }
      jr["measured_oom"] = r.measured.oom;
      if (!e.usable) {
        jr["not_compared"] = e.why_unusable;
        out_records.push_back(jr);
        if (!args->json) std::printf("%-60s  not compared: %s\n", r.name.c_str(), e.why_unusable.c_str());
        continue;
      }
      row.rel_error = (row.predicted - e.measured_peak) / e.measured_peak;
      row.phase_ok = calibration::phase_agrees(r.measured.peak_phase, e.predicted_phase);
      if (row.phase_ok) {
        auto& gp = group_phase[r.group];
        gp.second++;
        gp.first += *row.phase_ok;
      }
      group_errors[r.group].push_back(std::fabs(row.rel_error));
      group_errors["(all)"].push_back(std::fabs(row.rel_error));
      // Reserved memory: the predicted peak times the profile's measured reserved / allocated ratios,
      // plus the CUDA-graph pool reserved beside the cache.
      if (!e.measured_first_iteration_only && r.measured.peak_reserved_bytes) {
        const auto fc = sim::load_fitted_constants("default", e.stack);
        const double median = e.expandable_segments ? fc.reserved_ratio_median_expandable : fc.reserved_ratio_median;
        const double p90 = e.expandable_segments ? fc.reserved_ratio_p90_expandable : fc.reserved_ratio_p90;
        if (median > 0) {
          const double measured = static_cast<double>(*r.measured.peak_reserved_bytes);
          const double estimate = row.predicted * median + e.predicted_graph_pool;
          reserved_errors.push_back(std::fabs(estimate - measured) / measured);
          reserved_within_p90 += measured <= row.predicted * p90 + e.predicted_graph_pool;
          jr["measured_reserved_bytes"] = *r.measured.peak_reserved_bytes;
          jr["predicted_reserved_bytes"] = std::llround(estimate);
        }
      }
      jr["measured_bytes"] = std::llround(e.measured_peak);
      jr["measured_first_iteration_only"] = e.measured_first_iteration_only;
      jr["relative_error"] = row.rel_error;
      if (r.measured.peak_phase) jr["measured_phase"] = *r.measured.peak_phase;
      if (row.phase_ok) jr["phase_agrees"] = *row.phase_ok;
      out_records.push_back(jr);
      if (!args->json)
        std::printf("%-60s  measured %8.3f GB  predicted %8.3f GB  error %+7.2f %%  phase %s/%s%s  fit/OOM %s\n",
                    r.name.c_str(), e.measured_peak / 1e9, row.predicted / 1e9, 100 * row.rel_error,
                    r.measured.peak_phase.value_or("-").c_str(), e.predicted_phase.c_str(),
                    row.phase_ok ? (*row.phase_ok ? " ok" : " DIFFERS") : "", row.fit_ok ? (*row.fit_ok ? "ok" : "DIFFERS") : "-");
    }
    bool broken = false;
    const auto rs = calibration::error_stats(reserved_errors);
    if (!args->json && rs.n > 0)
      std::printf("\nreserved memory, estimated as the predicted peak x the measured reserved / allocated median, plus any "
                  "CUDA-graph pool (in-sample): "
                  "%d records, median %.2f %%, p90 %.2f %%, worst %.2f %%; measured at most the p90 estimate on %d\n",
                  rs.n, 100 * rs.median, 100 * rs.p90, 100 * rs.worst, reserved_within_p90);
    nlohmann::json out_groups = nlohmann::json::object();
    if (!args->json) std::printf("\n%-34s %5s %9s %9s %9s %11s %9s\n", "group", "n", "median%", "p90%", "worst%", "phase ok", "fit ok");
    for (const auto& [g, errs] : group_errors) {
      const auto s = calibration::error_stats(errs);
      const auto ph = group_phase[g];
      const auto ft = group_fit[g];
      const bool bad = (args->max_median >= 0 && s.median > args->max_median) || (args->max_worst >= 0 && s.worst > args->max_worst);
      broken = broken || bad;
      out_groups[g] = {{"n", s.n}, {"median", s.median}, {"p90", s.p90}, {"worst", s.worst},
                       {"phase_agree", ph.first}, {"phase_compared", ph.second},
                       {"fit_agree", ft.first}, {"fit_compared", ft.second}, {"within_bounds", !bad}};
      if (!args->json)
        std::printf("%-34s %5d %9.2f %9.2f %9.2f %5d/%-5d %4d/%-4d%s\n", g.c_str(), s.n, 100 * s.median, 100 * s.p90,
                    100 * s.worst, ph.first, ph.second, ft.first, ft.second, bad ? "  BOUND BROKEN" : "");
    }
    if (args->json)
      std::cout << nlohmann::json{{"records", out_records}, {"groups", out_groups}, {"within_bounds", !broken},
                                  {"cross_validate", args->cross_validate},
                                  {"reserved", {{"n", rs.n}, {"median", rs.median}, {"p90", rs.p90}, {"worst", rs.worst},
                                                {"within_p90_estimate", reserved_within_p90}}}}.dump(2) << "\n";
    return broken ? 1 : kExitOk;
  };
}

}  // namespace peakcast::cli
