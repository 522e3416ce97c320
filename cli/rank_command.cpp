// peakcast rank SPEC [--budget-gb G] [--headroom-sigma K] [--json] [--html FILE] [--set KEY=VALUE]...
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>

#include "commands.hpp"
#include "peakcast/sim/ranking.hpp"
#include "report_html.hpp"

namespace peakcast::cli {

namespace {

struct RankArgs {
  std::string spec;
  std::string megatron_line;
  std::vector<std::string> sets;
  std::string hf_config;
  std::optional<double> budget_gb;
  double headroom_sigma = 0;
  bool json = false;
  std::string html;
  bool busiest_rank = false;
  bool balanced = false;
  std::string order = "narrowest";
  bool allocator_replay = true;  // --no-allocator-replay: the p90 reserved / allocated estimate instead
};

void print_ranking_table(std::ostream& os, const sim::Ranking& r, bool expandable_segments, bool replayed) {
  char line[512];
  std::snprintf(line, sizeof line, "budget %.3f GB per GPU, %zu candidates evaluated, %zu rejected by Megatron\n",
                r.budget.gb(), r.candidates.size(), r.rejected.size());
  os << line;
  if (r.headroom_sigma > 0) {
    std::snprintf(line, sizeof line, "headroom: each peak raised by %.1f x the calibration's relative sigma before the check\n",
                  r.headroom_sigma);
    os << line;
  }
  os << (r.order == sim::RankOrder::narrowest
             ? "order: viable selective boundaries first, then full recompute and CPU offloading; each by replay time, then peak\n"
             : "order: viable by replay time, then peak\n");
  if (r.moe_routing_imbalance != 1.0) {
    std::snprintf(line, sizeof line, "MoE: every rank checked at the busiest expert-parallel rank's load, %.3f x balanced\n",
                  r.moe_routing_imbalance);
    os << line;
  }
  os << "\n";
  std::snprintf(line, sizeof line, "%-4s %-48s %-7s %-10s %-10s %-10s %s\n", "#", "policy", "viable", "peak GB",
                "replay s", "step s", "why not viable");
  os << line;
  int i = 0;
  for (const auto& c : r.candidates) {
    std::snprintf(line, sizeof line, "%-4d %-48s %-7s %-10.3f %-10.4f %-10.4f %s\n", ++i, c.label.c_str(),
                  c.viable ? "yes" : "no", c.max_peak.gb(), c.replay_time_s, c.step_time_s, c.reason.c_str());
    os << line;
  }
  os << "\nnarrowest viable: "
     << (r.narrowest_viable ? r.candidates[*r.narrowest_viable].label : std::string("none (nothing fits the budget)"))
     << "\n";
  if (r.narrowest_viable) {
    const auto& c = r.candidates[*r.narrowest_viable];
    // With the allocator replay the verdict already judged the reservation; the p90 estimate is for --no-allocator-replay.
    if (!replayed && c.reserved_p90 > r.budget) {
      std::snprintf(line, sizeof line,
                    "  fragmentation risk: %.3f GB allocated fits, but the caching allocator reserved up to %.3f GB "
                    "at this peak in 90 %% of our measured runs%s\n",
                    c.max_peak.gb(), c.reserved_p90.gb(),
                    expandable_segments ? " with expandable_segments"
                                        : "; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (cluster.expandable_segments) "
                                          "avoids most of it");
      os << line;
    }
  }
  if (r.cheapest_viable && r.cheapest_viable != r.narrowest_viable) {
    const auto& c = r.candidates[*r.cheapest_viable];
    std::snprintf(line, sizeof line,
                  "least replay time: %s (%.4f s); whole-layer recompute and CPU offloading rank after the selective "
                  "boundaries that fit (--order replay-time ranks by replay time alone)\n",
                  c.label.c_str(), c.replay_time_s);
    os << line;
  }
  // One line per tag that never moved the peak in the candidates that include it.
  std::map<model::RecomputeTag, std::pair<int, int>> tag_counts;  // (ineffective, total)
  for (const auto& c : r.candidates) {
    if (c.choice.granularity != model::RecomputeGranularity::selective) continue;
    for (const auto t : c.choice.modules) ++tag_counts[t].second;
    for (const auto t : c.ineffective_tags) ++tag_counts[t].first;
  }
  for (const auto& [tag, n] : tag_counts) {
    if (n.first == 0) continue;
    os << "note: tag " << model::to_string(tag) << " has no effect on the peak in " << n.first << " of " << n.second
       << " candidates that include it (e.g. " << sim::why_tag_has_no_effect(tag) << ")\n";
  }
  for (const auto& c : r.candidates)
    if (c.choice.cpu_offloading) {
      os << "note: CPU offloading candidates keep the saved activations of their N layers in host memory; their "
            "'replay' time is the copy out and back over PCIe Gen5 (63 GB/s), counted without overlap\n";
      break;
    }
  if (!r.rejected.empty()) {
    os << "\nrejected by Megatron's own rules:\n";
    for (const auto& x : r.rejected) os << "  " << sim::describe(x.choice) << ": " << x.reason << "\n";
  }
}

}  // namespace

Runner add_rank_command(CLI::App& app) {
  auto args = std::make_shared<RankArgs>();
  CLI::App* sub = app.add_subcommand(
      "rank", "Every recompute policy Megatron accepts for the run, viable ones (within the budget) first");
  sub->add_option("spec", args->spec, "Run spec JSON, Bridge run_config.yaml, a launch line file, bridge:<recipe>, or - (stdin)")
      ->check(kSpecPath);
  sub->add_option("--from-megatron-args", args->megatron_line, "A Megatron-LM launch line instead of SPEC");
  sub->add_option("--budget-gb", args->budget_gb, "Memory budget per GPU in GB (10^9 bytes); default: the GPU capacity");
  sub->add_option("--headroom-sigma", args->headroom_sigma,
                  "Viable only if peak x (1 + K x the calibration's relative sigma) fits (K = 2: the OOM-safe bound); default 0");
  sub->add_option("--set", args->sets, "Override one key: section.key=JSON (repeatable)");
  sub->add_option("--hf-config", args->hf_config, kHfConfigHelp);
  sub->add_flag("--json", args->json, "Print the schema_version 1 ranking object");
  sub->add_option("--html", args->html, "Write a self-contained HTML report to FILE");
  sub->add_flag("--moe-busiest-rank", args->busiest_rank,
                "MoE: check the busiest expert-parallel rank of an untrained router (the default under expert parallelism)");
  sub->add_flag("--moe-balanced", args->balanced,
                "MoE: check balanced routing instead of the busiest expert-parallel rank");
  sub->add_flag("--allocator-replay,!--no-allocator-replay", args->allocator_replay,
                "Judge the fit by the caching-allocator model's replay of every allocation and free (the default); --no-allocator-replay: by the p90 reserved / allocated ratio of our measured runs instead");
  sub->add_option("--order", args->order,
                  "narrowest (selective boundaries before whole-layer recompute, each by replay time; default) or replay-time")
      ->check(CLI::IsMember({"narrowest", "replay-time"}));
  return [args] {
    if (!args->hf_config.empty()) args->sets.push_back(hf_config_override(args->hf_config));
    if (args->spec.empty() && args->megatron_line.empty()) {
      std::cerr << "error: give SPEC (or -) or --from-megatron-args LINE\n";
      return kExitInvalidInput;
    }
    auto loaded = load_input(args->spec, args->megatron_line, args->sets);
    if (!loaded) return kExitInvalidInput;
    model::RunSpec* spec = &loaded->spec;
    if (args->busiest_rank && args->balanced) {
      std::cerr << "error: --moe-busiest-rank and --moe-balanced: use one or the other\n";
      return kExitInvalidInput;
    }
    // "Fits on every rank" includes the busiest expert-parallel rank: an untrained router does not
    // split tokens evenly, so the check uses that rank's load unless the spec fixes one.
    const bool ep_moe = spec->model.num_moe_experts && spec->model.expert_model_parallel_size > 1;
    if (!args->balanced && (args->busiest_rank || (ep_moe && spec->model.moe_routing_imbalance == 1.0)) &&
        !apply_busiest_rank_routing(*spec, args->busiest_rank))
      return kExitInvalidInput;
    // No budget: the device's capacity less any userbuffers, as predict compares (rank_candidates).
    const std::optional<Bytes> budget = args->budget_gb ? budget_bytes(*args->budget_gb) : std::optional<Bytes>(Bytes{});
    if (!budget) return kExitInvalidInput;
    if (!(args->headroom_sigma >= 0 && args->headroom_sigma <= kMaxHeadroomSigma)) {
      std::cerr << "error: --headroom-sigma: must be a number in [0, " << kMaxHeadroomSigma << "]\n";
      return kExitInvalidInput;
    }
    sim::PredictOptions options;
    options.replay_allocator = args->allocator_replay;
    const sim::Ranking ranking = sim::rank_candidates(
        *spec, *budget, args->headroom_sigma, args->order == "replay-time" ? sim::RankOrder::replay_time : sim::RankOrder::narrowest,
        options);
    if (!args->html.empty() && !write_rank_html(args->html, *spec, ranking, sim::shown_candidate_prediction(*spec, ranking)))
      return kExitInvalidInput;
    if (args->json) {
      std::cout << sim::to_json(ranking) << "\n";
    } else {
      for (const auto& w : loaded->warnings) std::cerr << model::format(w) << "\n";
      print_ranking_table(std::cout, ranking, spec->cluster.expandable_segments, args->allocator_replay);
    }
    return kExitOk;
  };
}

}  // namespace peakcast::cli
