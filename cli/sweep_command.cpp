// peakcast sweep SPEC --vary KEY=V1,V2,... [--vary ...] [--set ...] [--csv FILE] [--json] [--html FILE]
//                [--budget-gb G] [--threads N]
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "commands.hpp"
#include "input_file.hpp"
#include "peakcast/model/spec_parser.hpp"
#include "peakcast/sim/sweep.hpp"
#include "report_html.hpp"

namespace peakcast::cli {

namespace {

struct SweepArgs {
  std::string spec;
  std::string megatron_line;
  std::vector<std::string> vary;
  std::vector<std::string> sets;
  std::string hf_config;
  std::string csv, html;
  bool json = false;
  std::optional<double> budget_gb;
  unsigned threads = 0;
  bool allocator_replay = true;  // --no-allocator-replay: the p90 reserved / allocated estimate instead
};

// A one-line bar redrawn in place; only when stderr is a terminal and the sweep is long.
void draw_progress(std::size_t done, std::size_t total) {
  const int width = 40;
  const int filled = total ? static_cast<int>(width * done / total) : width;
  std::fprintf(stderr, "\r[%.*s%*s] %zu/%zu", filled, "########################################", width - filled, "",
               done, total);
  if (done == total) std::fputc('\n', stderr);
  std::fflush(stderr);
}

void print_sweep_table(std::ostream& os, const sim::SweepResult& r) {
  char line[256];
  // Each axis column is as wide as its key or its longest value (at most 40 characters).
  std::vector<int> widths;
  for (const auto& a : r.axes) {
    std::size_t w = a.key.size();
    for (const auto& v : a.values) w = std::max(w, v.size());
    widths.push_back(static_cast<int>(std::min<std::size_t>(w, 40)));
  }
  for (std::size_t a = 0; a < r.axes.size(); ++a) {
    std::snprintf(line, sizeof line, "%-*.*s ", widths[a], widths[a], r.axes[a].key.c_str());
    os << line;
  }
  std::snprintf(line, sizeof line, "%-5s %-10s %-10s %-5s %-9s %-9s %s\n", "fits", "peak GB", "headroom", "pp", "phase",
                "step s", "replay s");
  os << line;
  for (const auto& p : r.points) {
    for (std::size_t a = 0; a < p.values.size(); ++a) {
      std::snprintf(line, sizeof line, "%-*.*s ", widths[a], widths[a], p.values[a].c_str());
      os << line;
    }
    if (!p.valid) {
      os << "invalid: " << p.error << "\n";
      continue;
    }
    std::snprintf(line, sizeof line, "%-5s %-10.3f %-+10.3f %-5lld %-9s %-9.3f %.4f\n",
                  p.verdict == sim::FitKind::fits ? "yes" : (p.verdict == sim::FitKind::does_not_fit ? "NO" : "RISK"),
                  p.max_peak.gb(), p.headroom().gb(), static_cast<long long>(p.peak_pp_rank),
                  sim::to_string(p.peak_phase), p.step_time_s, p.replay_time_s);
    os << line;
  }
  std::size_t fits = 0, risk = 0;
  for (const auto& p : r.points) {
    fits += p.valid && p.verdict == sim::FitKind::fits ? 1 : 0;
    risk += p.valid && p.verdict == sim::FitKind::fits_without_reservation_margin ? 1 : 0;
  }
  os << "\n"
     << r.points.size() << " points, " << r.invalid_count() << " invalid (skipped), " << fits << " fit, " << risk
     << " at risk (RISK: allocated fits, the caching allocator's reservation does not)\n";
}

}  // namespace

Runner add_sweep_command(CLI::App& app) {
  auto args = std::make_shared<SweepArgs>();
  CLI::App* sub = app.add_subcommand("sweep", "What-if capacity planning over any spec keys (cartesian product)");
  sub->add_option("spec", args->spec,
                  "Run spec JSON, Bridge run_config.yaml, a launch line file, bridge:<recipe>, or - (stdin) "
                  "(default: the embedded Moonlight 16B seed study)")
      ->check(kSpecPath);
  sub->add_option("--from-megatron-args", args->megatron_line, "A Megatron-LM launch line instead of SPEC");
  sub->add_option("--vary", args->vary,
                  "KEY=V1,V2,... (repeatable). Values are JSON; commas inside [] {} \"\" do not split; "
                  "use ';' as the separator instead when you prefer")
      ->required();
  sub->add_option("--set", args->sets, "Override one key for every point: section.key=JSON (repeatable)");
  sub->add_option("--hf-config", args->hf_config, kHfConfigHelp);
  sub->add_option("--csv", args->csv, "Write one CSV row per point to FILE");
  sub->add_flag("--json", args->json, "Print the points as JSON");
  sub->add_flag("--allocator-replay,!--no-allocator-replay", args->allocator_replay,
                "Judge the fit by the caching-allocator model's replay of every allocation and free (the default); --no-allocator-replay: by the p90 reserved / allocated ratio of our measured runs instead");
  sub->add_option("--html", args->html, "Write a self-contained HTML report with heatmaps to FILE");
  sub->add_option("--budget-gb", args->budget_gb, "Compare peaks to this budget (GB, 10^9 bytes) instead of the GPU capacity");
  sub->add_option("--threads", args->threads, "Worker threads (default: all cores)");
  return [args] {
    if (!args->hf_config.empty()) args->sets.push_back(hf_config_override(args->hf_config));
    std::vector<sim::SweepAxis> axes;
    for (const auto& v : args->vary) {
      std::string err;
      auto axis = sim::parse_vary(v, &err);
      if (!axis) {
        std::cerr << "error: " << err << "\n";
        return kExitInvalidInput;
      }
      axes.push_back(std::move(*axis));
    }
    if (!args->spec.empty() && !args->megatron_line.empty()) {
      std::cerr << "error: give SPEC or --from-megatron-args, not both\n";
      return kExitInvalidInput;
    }
    // Sweep re-parses the text per point: a launch line is read again through parse_spec_input.
    const std::string name = args->megatron_line.empty() ? args->spec : "--from-megatron-args";
    std::string text = args->megatron_line;
    if (args->megatron_line.empty()) {
      auto t = read_spec_text(args->spec);
      if (!t) return kExitInvalidInput;
      text = std::move(*t);
    }
    // The base spec must be valid on its own so a typo in SPEC is not reported once per point.
    const auto base = args->megatron_line.empty() ? load_spec_text(text, name, args->sets) : load_megatron_line(text, args->sets);
    if (!base) return kExitInvalidInput;
    for (const auto& w : base->warnings) std::cerr << model::format(w) << "\n";
    sim::SweepOptions opt;
    opt.replay_allocator = args->allocator_replay;
    if (args->budget_gb) {
      opt.budget = budget_bytes(*args->budget_gb);
      if (!opt.budget) return kExitInvalidInput;
    }
    opt.threads = args->threads;
    opt.spec_name = name;
    const std::size_t total = sim::sweep_size(axes);
    if (total > sim::kMaxSweepPoints) {
      std::cerr << "error: --vary: the grid has " << (total == SIZE_MAX ? std::string("more than 2^64") : std::to_string(total))
                << " points; a sweep runs at most " << sim::kMaxSweepPoints << " (split it into several sweeps)\n";
      return kExitInvalidInput;
    }
    const model::Diagnostics key_errors = sim::sweep_axis_key_errors(text, name, args->sets, axes);
    for (const auto& d : key_errors) std::cerr << model::format(d) << "\n";
    if (!key_errors.empty()) return kExitInvalidInput;
    if (isatty(STDERR_FILENO) && total >= 200) opt.progress = draw_progress;
    const sim::SweepResult result = sim::run_sweep(text, args->sets, axes, opt);
    for (const auto& p : result.points)
      if (!p.valid) {
        std::string where;
        for (std::size_t a = 0; a < axes.size(); ++a) where += (a ? " " : "") + axes[a].key + "=" + p.values[a];
        std::cerr << "skipped " << where << ": " << p.error << "\n";
      }
    if (!args->csv.empty()) {
      if (!write_output("--csv", args->csv, sim::sweep_csv(result))) return kExitInvalidInput;
    }
    if (!args->html.empty() && !write_sweep_html(args->html, result)) return kExitInvalidInput;
    if (args->json) std::cout << sim::to_json(result) << "\n";
    else print_sweep_table(std::cout, result);
    return kExitOk;
  };
}

}  // namespace peakcast::cli
