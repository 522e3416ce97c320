// peakcast predict [SPEC | - | --from-megatron-args LINE] [--json] [--set KEY=VALUE]... [--timeline FILE] [--fail-if-oom]
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>
#include "commands.hpp"
#include "peakcast/sim/moe_routing.hpp"
#include "peakcast/sim/prediction.hpp"

#include "report_html.hpp"
#include "report_spec.hpp"
#include "report_text.hpp"

namespace peakcast::cli {

namespace {
struct PredictArgs {
  std::string spec;
  std::string megatron_line;
  std::vector<std::string> sets;
  std::string hf_config;
  bool json = false;
  bool fail_if_oom = false;
  std::string timeline;
  std::string html;
  bool explain = false;
  bool busiest_rank = false;
  bool show_spec = false;
  bool allocator_replay = true;  // --no-allocator-replay: the p90 reserved / allocated estimate instead
  std::string allocator_trace;
};
// The replayed request streams, for checking the allocator model against torch's own allocator.
bool write_allocator_trace(const std::string& path, const model::RunSpec& spec, const sim::Prediction& p) {
  std::ofstream out(path);
  if (!out) {
    std::cerr << "error: --allocator-trace: cannot write " << path << "\n";
    return false;
  }
  nlohmann::json j;
  j["expandable_segments"] = spec.cluster.expandable_segments;
  j["capacity_bytes"] = p.capacity.value;
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& r : p.ranks) {
    nlohmann::json x{{"pp_rank", r.rank.pp_rank}, {"events", r.allocator_trace}, {"where", r.allocator_trace_where}};
    if (r.allocator) x["peak_reserved_bytes"] = r.allocator->peak_reserved.value - r.reserved_outside_allocated.value;
    if (r.allocator) x["peak_allocated_bytes"] = r.allocator->peak_allocated.value;
    if (r.allocator) x["pass_starts"] = r.allocator->pass_starts;
    if (r.allocator) x["segments"] = r.allocator->segments;
    ranks.push_back(std::move(x));
  }
  j["ranks"] = std::move(ranks);
  out << j.dump() << "\n";
  return true;
}

}  // namespace

Runner add_predict_command(CLI::App& app) {
  auto args = std::make_shared<PredictArgs>();
  CLI::App* sub = app.add_subcommand("predict", "Per-rank peak allocated memory, where it lands, and replay cost");
  sub->add_option("spec", args->spec,
                  "Run spec JSON, Bridge run_config.yaml, a Megatron-LM launch line file, bridge:<recipe>, or - (stdin) "
                  "(default: the embedded Moonlight 16B seed study)")
      ->check(kSpecPath);
  sub->add_option("--from-megatron-args", args->megatron_line,
                  "A Megatron-LM launch line (torchrun ... pretrain_gpt.py ARGS, or ARGS alone) instead of SPEC");
  sub->add_option("--set", args->sets, "Override one key: section.key=JSON (repeatable)");
  sub->add_option("--hf-config", args->hf_config, kHfConfigHelp);
  sub->add_flag("--json", args->json, "Print the schema_version 1 result object");
  sub->add_flag("--fail-if-oom", args->fail_if_oom, "Exit with status 3 when some rank does not fit");
  sub->add_option("--timeline", args->timeline, "Write each rank's memory timeline (JSON) to FILE");
  sub->add_option("--html", args->html, "Write a self-contained HTML report (timelines, breakdown) to FILE");
  sub->add_flag("--explain", args->explain, "Also print each module's saved and transient bytes per micro-batch");
  sub->add_flag("--show-spec", args->show_spec,
                "Also print the resolved spec: every memory-relevant key, its value and where it came from (JSON: resolved_spec)");
  sub->add_flag("--allocator-replay,!--no-allocator-replay", args->allocator_replay,
                "Judge the fit by the caching-allocator model's replay of every allocation and free (the default); --no-allocator-replay: by the p90 reserved / allocated ratio of our measured runs instead");
  sub->add_option("--allocator-trace", args->allocator_trace,
                  "Write each rank's replayed requests (bytes; a free as -(n+1)) to FILE (JSON)");
  sub->add_flag("--moe-busiest-rank", args->busiest_rank,
                "MoE: predict the busiest expert-parallel rank of an untrained router (sets model.moe_routing_imbalance)");
  return [args] {
    if (!args->hf_config.empty()) args->sets.push_back(hf_config_override(args->hf_config));
    auto loaded = load_input(args->spec, args->megatron_line, args->sets);
    if (!loaded) return kExitInvalidInput;
    model::RunSpec& spec = loaded->spec;
    if (args->busiest_rank && !apply_busiest_rank_routing(spec)) return kExitInvalidInput;
    sim::PredictOptions opt;
    opt.record_timeline = !args->timeline.empty() || !args->html.empty();
    opt.record_held_tensors = args->explain;
    opt.replay_allocator = args->allocator_replay || !args->allocator_trace.empty();
    opt.record_allocator_trace = !args->allocator_trace.empty();
    opt.routing_band_samples = sim::kPredictRoutingBandSamples;  // MoE: the reservation under sampled routings
    sim::Prediction p = sim::predict(spec, opt);
    // The spec's validation warnings first, then what the simulation itself found (fragmentation risk).
    const model::Diagnostics found = p.warnings;
    p.warnings = loaded->warnings;
    p.warnings.insert(p.warnings.end(), found.begin(), found.end());
    if (!args->html.empty() && !write_predict_html(args->html, spec, p)) return kExitInvalidInput;
    if (!args->allocator_trace.empty() && !write_allocator_trace(args->allocator_trace, spec, p)) return kExitInvalidInput;
    if (!args->timeline.empty()) {
      if (!write_output("--timeline", args->timeline, sim::to_json(p, true) + "\n")) return kExitInvalidInput;
    }
    if (args->json) {
      if (!args->show_spec) {
        std::cout << sim::to_json(p) << "\n";
      } else {
        nlohmann::json j = nlohmann::json::parse(sim::to_json(p));
        j["resolved_spec"] = nlohmann::json::parse(resolved_spec_json(args->spec, *loaded, p));
        std::cout << j.dump(2) << "\n";
      }
    } else {
      if (args->show_spec) print_resolved_spec(std::cout, args->spec, *loaded, p);
      for (const auto& w : loaded->warnings) std::cerr << model::format(w) << "\n";
      print_prediction_table(std::cout, spec, p);
      for (const auto& w : found) std::cout << "warning: " << w.message << "\n";
      // At balanced routing every EP rank looks alike; say what the busiest one of an untrained router needs.
      if (!args->busiest_rank && spec.model.moe_routing_imbalance == 1.0) {
        if (const auto load = sim::untrained_busiest_rank_load(spec)) {
          model::RunSpec busy = spec;
          busy.model.moe_routing_imbalance = *load;
          const sim::Prediction pb = sim::predict(busy);
          char line[256];
          std::snprintf(line, sizeof line,
                        "busiest of %lld EP ranks under an untrained router (%.3f x its balanced rows): max peak %.3f GB%s "
                        "(--moe-busiest-rank)\n",
                        static_cast<long long>(spec.model.expert_model_parallel_size), *load,
                        pb.max_peak_allocated.gb(), pb.fits ? "" : ", does not fit");
          std::cout << line;
        }
      }
      if (args->explain) print_module_table(std::cout, p);
    }
    return (args->fail_if_oom && !p.fits) ? kExitDoesNotFit : kExitOk;
  };
}

}  // namespace peakcast::cli
