// peakcast validate [--corpus FILE]... [--json] [--max-median-error X --max-worst-error Y] [--cross-validate K]
//                  [--time]
// Formats calibration::validate_corpus (memory) or calibration::validate_time (--time); exit 1 when a
// bound is broken or a resolved policy pair's order differs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "corpus_loading.hpp"
#include "peakcast/calibration/validation.hpp"
#include "peakcast/sim/verdict.hpp"

namespace peakcast::cli {

namespace {

struct ValidateArgs {
  std::vector<std::string> corpus = calibration::validation_corpus_files();
  bool json = false;
  calibration::ValidationOptions options;
  bool time = false;
  bool allocator_replay = true;  // --no-allocator-replay: the p90 reserved / allocated estimate instead
};

void print_time_text(const calibration::TimeReport& t) {
  std::printf("%-48s %12s %12s %12s %8s\n", "record", "measured ms", "spread ms", "predicted ms", "error");
  for (const auto& r : t.rows)
    std::printf("%-48s %12.1f %12.1f %12.1f %+7.1f%%\n", r.eval->record->name.c_str(), 1e3 * r.measured_s,
                1e3 * (r.max_s - r.min_s), 1e3 * r.predicted_s, 100 * r.rel_error);
  std::printf("\n%-36s %-36s %11s %11s %10s  %s\n", "policy pair (same run)", "", "measured ms", "predicted ms", "spread ms", "order");
  for (const auto& p : t.pairs)
    std::printf("%-36s %-36s %+11.1f %+11.1f %10.1f  %s\n", p.a->record->name.c_str(), p.b->record->name.c_str(),
                1e3 * p.measured_delta_s, 1e3 * p.predicted_delta_s, 1e3 * p.spread_s,
                !p.resolved() ? "within noise" : (p.order_agrees() ? "agrees" : "DIFFERS"));
  // Records that measured only the whole step (published tables): step time and the overhead over
  // their run's control row.
  if (!t.steps.empty())
    std::printf("\n%-48s %12s %12s %8s %24s\n", "record (whole step)", "measured ms", "predicted ms", "error", "overhead meas / pred");
  for (const auto& r : t.steps) {
    std::printf("%-48s %12.1f %12.1f %+7.1f%%", r.e->record->name.c_str(), 1e3 * r.measured_s, 1e3 * r.predicted_s,
                100 * (r.predicted_s / r.measured_s - 1.0));
    if (r.control) std::printf(" %+10.2f%% / %+7.2f%%", 100 * r.measured_overhead, 100 * r.predicted_overhead);
    else std::printf(" %24s", "(control)");
    std::printf("\n");
  }
  const auto& s = t.errors;
  std::printf(
      "\nforward-backward time: %d records, median |error| %.1f %%, p90 %.1f %%, worst %.1f %%; "
      "policy order agrees on %d of %d resolved pairs\n",
      s.n, 100 * s.median, 100 * s.p90, 100 * s.worst, t.order_agrees, t.resolved_pairs);
}

nlohmann::json time_json(const calibration::TimeReport& t) {
  nlohmann::json jr = nlohmann::json::array(), jp = nlohmann::json::array(), js = nlohmann::json::array();
  for (const auto& r : t.rows)
    jr.push_back({{"case", r.eval->record->name}, {"measured_s", r.measured_s}, {"min_s", r.min_s}, {"max_s", r.max_s}, {"predicted_s", r.predicted_s}, {"relative_error", r.rel_error}});
  for (const auto& p : t.pairs)
    jp.push_back({{"a", p.a->record->name}, {"b", p.b->record->name}, {"measured_delta_s", p.measured_delta_s}, {"predicted_delta_s", p.predicted_delta_s}, {"spread_s", p.spread_s}, {"resolved", p.resolved()}, {"order_agrees", p.order_agrees()}});
  for (const auto& r : t.steps) {
    nlohmann::json row{{"case", r.e->record->name}, {"measured_step_s", r.measured_s}, {"predicted_step_s", r.predicted_s}, {"relative_error", r.predicted_s / r.measured_s - 1.0}};
    if (r.control) {
      row["control"] = r.control->record->name;
      row["measured_overhead"] = r.measured_overhead;
      row["predicted_overhead"] = r.predicted_overhead;
    }
    js.push_back(row);
  }
  return {{"records", jr}, {"pairs", jp}, {"step_records", js}, {"median", t.errors.median}, {"p90", t.errors.p90}, {"worst", t.errors.worst}, {"resolved_pairs", t.resolved_pairs}, {"order_agrees", t.order_agrees}};
}

nlohmann::json row_json(const calibration::ValidationRow& row) {
  const auto& e = *row.eval;
  const auto& r = *e.record;
  nlohmann::json jr = {{"case", r.name}, {"group", r.group}, {"source", r.source + ":" + std::to_string(r.line)}};
  if (row.predicted) {
    jr["predicted_bytes"] = std::llround(*row.predicted);
    jr["predicted_phase"] = e.predicted_phase;
    jr["predicted_fits"] = e.predicted_fits;
    jr["fit_oom_agrees"] = *row.fit_ok;
    jr["fit_oom_edge"] = row.fit_edge;
    jr["verdict"] = sim::to_string(e.verdict);
    jr["verdict_cause"] = sim::to_string(e.verdict_cause);
    jr["verdict_margin_bytes"] = e.verdict_margin;
  }
  jr["measured_oom"] = r.measured.oom;
  if (!row.compared) {
    jr["not_compared"] = e.why_unusable;
    return jr;
  }
  if (row.reserved_estimate) {
    jr["measured_reserved_bytes"] = *r.measured.peak_reserved_bytes;
    jr["predicted_reserved_bytes"] = std::llround(*row.reserved_estimate);
    if (row.reserved_replayed) jr["replayed_reserved_bytes"] = std::llround(*row.reserved_replayed);
  }
  if (e.replay) {
    jr["replayed_peak_allocated_bytes"] = e.replay->peak_allocated.value;
    jr["replayed_largest_free_at_peak_bytes"] = e.replay->largest_free_at_peak.value;
    if (e.replay->first_failure) jr["replayed_first_failure"] = e.replay->first_failure->where;
  }
  jr["measured_bytes"] = std::llround(e.measured_peak);
  jr["measured_first_iteration_only"] = e.measured_first_iteration_only;
  jr["relative_error"] = row.rel_error;
  if (r.measured.peak_phase) jr["measured_phase"] = *r.measured.peak_phase;
  if (row.phase_ok) jr["phase_agrees"] = *row.phase_ok;
  return jr;
}

nlohmann::json stats_json(const calibration::ErrorStats& s) {
  return {{"n", s.n}, {"median", s.median}, {"p90", s.p90}, {"worst", s.worst}};
}

// The ratio estimate and the replay, default allocator and expandable segments apart.
nlohmann::json by_allocator_json(const calibration::ValidationReport& v) {
  nlohmann::json j = nlohmann::json::object();
  const char* names[2] = {"default", "expandable_segments"};
  for (int k = 0; k < 2; ++k) {
    j[names[k]] = {{"ratio_estimate", stats_json(v.reserved_by_allocator[k])}};
    if (v.reserved_replayed[k].n > 0) {
      j[names[k]]["replay"] = stats_json(v.reserved_replayed[k]);
      j[names[k]]["replay"]["median_signed"] = v.reserved_replayed_bias[k];
    }
  }
  return j;
}

nlohmann::json report_json(const calibration::ValidationReport& v) {
  nlohmann::json records = nlohmann::json::array(), groups = nlohmann::json::object();
  for (const auto& row : v.rows) records.push_back(row_json(row));
  for (const auto& [g, s] : v.groups)
    groups[g] = {{"n", s.errors.n}, {"median", s.errors.median}, {"p90", s.errors.p90}, {"worst", s.errors.worst}, {"within_10", s.errors.within_10}, {"phase_agree", s.phase_agree}, {"phase_compared", s.phase_compared}, {"fit_agree", s.fit_agree}, {"fit_compared", s.fit_compared}, {"fit_edge", s.fit_edge}, {"within_bounds", s.within_bounds}};
  return {{"records", records}, {"groups", groups}, {"within_bounds", v.within_bounds}, {"cross_validate", v.cross_validate}, {"reserved", {{"n", v.reserved.n}, {"median", v.reserved.median}, {"p90", v.reserved.p90}, {"worst", v.reserved.worst}, {"within_p90_estimate", v.reserved_within_p90}}}, {"reserved_by_allocator", by_allocator_json(v)}};
}

const char* fit_word(const calibration::ValidationRow& row) {
  if (!row.fit_ok) return "-";
  if (*row.fit_ok) return "ok";
  return row.fit_edge ? "edge" : "DIFFERS";
}

void print_report_text(const calibration::ValidationReport& v) {
  for (const auto& row : v.rows) {
    const auto& e = *row.eval;
    const auto& r = *e.record;
    if (!row.compared) {
      std::printf("%-60s  not compared: %s", r.name.c_str(), e.why_unusable.c_str());
      if (row.fit_ok)
        std::printf("; verdict %s (%s, margin %+.3f GB) fit/OOM %s", sim::to_string(e.verdict), sim::to_string(e.verdict_cause),
                    static_cast<double>(e.verdict_margin) / 1e9, fit_word(row));
      std::printf("\n");
      continue;
    }
    std::printf("%-60s  measured %8.3f GB  predicted %8.3f GB  error %+7.2f %%  phase %s/%s%s  fit/OOM %s\n", r.name.c_str(),
                e.measured_peak / 1e9, *row.predicted / 1e9, 100 * row.rel_error, r.measured.peak_phase.value_or("-").c_str(),
                e.predicted_phase.c_str(), row.phase_ok ? (*row.phase_ok ? " ok" : " DIFFERS") : "",
                fit_word(row));
  }
  if (v.reserved.n > 0)
    std::printf(
        "\nreserved memory, the simulator's estimate (allocated peaks x the measured reserved / allocated median, plus "
        "any CUDA-graph pool; in-sample ratios): %d records, median %.2f %%, p90 %.2f %%, worst %.2f %%; measured at "
        "most the p90 estimate on %d\n",
        v.reserved.n, 100 * v.reserved.median, 100 * v.reserved.p90, 100 * v.reserved.worst, v.reserved_within_p90);
  for (int k = 0; k < 2; ++k) {
    const auto& a = v.reserved_by_allocator[k];
    const auto& b = v.reserved_replayed[k];
    if (a.n == 0) continue;
    std::printf("  %s: ratio estimate %d records, median %.2f %%, p90 %.2f %%, worst %.2f %%", k ? "expandable segments" : "default allocator",
                a.n, 100 * a.median, 100 * a.p90, 100 * a.worst);
    if (b.n > 0)
      std::printf("; allocator replay %d records, median %.2f %%, p90 %.2f %%, worst %.2f %%, median signed %+.2f %%", b.n,
                  100 * b.median, 100 * b.p90, 100 * b.worst, 100 * v.reserved_replayed_bias[k]);
    std::printf("\n");
  }
  if (const auto all = v.groups.find("(all)"); all != v.groups.end())
    std::printf("fit / out of memory (the one verdict, %s): %d of %d agree, %d inside the reservation's interval (not counted)\n",
                std::any_of(v.rows.begin(), v.rows.end(), [](const auto& row) { return row.eval && row.eval->replay; })
                    ? "replayed allocator"
                    : "p90 ratio estimate",
                all->second.fit_agree, all->second.fit_compared, all->second.fit_edge);
  std::printf("\n%-34s %5s %9s %9s %9s %10s %11s %9s\n", "group", "n", "median%", "p90%", "worst%", "within10%", "phase ok", "fit ok");
  for (const auto& [g, s] : v.groups)
    std::printf("%-34s %5d %9.2f %9.2f %9.2f %10.1f %5d/%-5d %4d/%-4d%s\n", g.c_str(), s.errors.n, 100 * s.errors.median,
                100 * s.errors.p90, 100 * s.errors.worst, 100 * s.errors.within_10, s.phase_agree, s.phase_compared, s.fit_agree,
                s.fit_compared, s.within_bounds ? "" : "  BOUND BROKEN");
}

}  // namespace

Runner add_validate_command(CLI::App& app) {
  auto args = std::make_shared<ValidateArgs>();
  CLI::App* sub = app.add_subcommand("validate", "Compare predictions with measured records");
  sub->add_option("--corpus", args->corpus, "Measured records, JSON lines (repeatable; default: the H200 corpus)");
  sub->add_flag("--json", args->json, "Print the per-record and per-group results as JSON");
  sub->add_option("--max-median-error", args->options.max_median, "Fail (status 1) if a group's median |relative error| exceeds this");
  sub->add_option("--max-worst-error", args->options.max_worst, "Fail (status 1) if a group's worst |relative error| exceeds this");
  sub->add_option("--max-p90-error", args->options.max_p90, "Fail (status 1) if a group's 90th percentile |relative error| exceeds this");
  sub->add_option("--min-within-10", args->options.min_within_10, "Fail (status 1) if a group's share of records within 10 % is below this (0-1)");
  sub->add_flag("--pooled", args->options.pooled, "Apply the bounds to all compared records together, not to each group");
  sub->add_option("--exclude-group", args->options.exclude_groups, "Leave out records whose group contains this text (repeatable)");
  sub->add_option("--cross-validate", args->options.cross_validate, "K-fold: fit framework_fixed on K-1 folds, predict the held-out fold");
  sub->add_flag("--allocator-replay,!--no-allocator-replay", args->allocator_replay,
                "Judge the fit by the caching-allocator model's replay of every allocation and free (the default); --no-allocator-replay: by the p90 reserved / allocated ratio of our measured runs instead");
  sub->add_flag("--time", args->time, "Step time instead of memory: forward-backward time per timed record and the policy order per run");
  return [args] {
    std::vector<calibration::Record> records;
    if (!read_corpus(args->corpus, records)) return kExitInvalidInput;
    const auto evals = calibration::evaluate_records(records, args->allocator_replay);
    if (args->time) {
      const auto t = calibration::validate_time(evals);
      if (args->json) std::cout << time_json(t).dump(2) << "\n";
      else print_time_text(t);
      return t.all_orders_agree() ? kExitOk : 1;
    }
    const auto v = calibration::validate_corpus(evals, args->options);
    if (args->json) std::cout << report_json(v).dump(2) << "\n";
    else print_report_text(v);
    return v.within_bounds ? kExitOk : 1;
  };
}

}  // namespace peakcast::cli
