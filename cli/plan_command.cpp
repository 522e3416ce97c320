// peakcast plan SPEC --gpus N [--gpu KIND] [--objective step_time|memory_headroom] [--top K] [--json]
//                    [--near-tie F] [--max-tp T] [--uneven-pp-window W] [--threads N] [--moe-balanced] [--set KEY=VALUE]...
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "peakcast/sim/planner.hpp"

namespace peakcast::cli {

namespace {

constexpr std::size_t kMaxSpecBytes = 16 * 1024 * 1024;  // as spec_loading.cpp

struct PlanArgs {
  std::string spec;
  std::vector<std::string> sets;
  std::int64_t gpus = 0;
  std::string gpu;
  std::string objective = "step_time";
  std::size_t top = 5;
  double near_tie = 0.01;
  std::int64_t max_tp = 8;
  std::int64_t window = 4;
  unsigned threads = 0;
  bool json = false, balanced = false, keep_overlap = false;
};

// The spec is read and parsed, not validated: its own layout is replaced by every layout of the plan.
std::optional<model::RunSpec> read_spec(const PlanArgs& a) {
  std::string text;
  if (a.spec.rfind("bridge:", 0) != 0) {
    std::ifstream in(a.spec, std::ios::binary);
    if (!in) {
      std::cerr << "error: " << a.spec << ": cannot open the run spec file\n";
      return std::nullopt;
    }
    text.resize(kMaxSpecBytes + 1);
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxSpecBytes) {
      std::cerr << "error: " << a.spec << ": the input is larger than 16 MiB\n";
      return std::nullopt;
    }
  }
  std::vector<std::string> sets = a.sets;
  sets.push_back("cluster.num_gpus=" + std::to_string(a.gpus));
  if (!a.gpu.empty()) sets.push_back("cluster.gpu=\"" + a.gpu + "\"");
  const model::ParseResult parsed = model::parse_spec_input(a.spec, text, sets);
  for (const auto& d : parsed.diagnostics)
    if (d.severity == model::Severity::error) std::cerr << model::format(d) << "\n";
  if (!parsed.spec) return std::nullopt;
  if (!parsed.spec->train.global_batch_size) {
    std::cerr << "error: train.global_batch_size: plan compares layouts at one global batch; the spec must set it "
                 "[plan_needs_global_batch]\n";
    return std::nullopt;
  }
  return parsed.spec;
}

void print_entry(std::ostream& os, const sim::PlanEntry& e, std::size_t i) {
  char line[512];
  const auto& t = e.time;
  std::snprintf(line, sizeof line, "%-3zu%s %-44s %-22s %8.4f %8.2f %8.2f %9.2f\n", i + 1, e.near_tie ? "~" : " ",
                sim::describe(e.layout).c_str(), e.policy.c_str(), t.step_s, e.max_peak_allocated.gb(), e.max_reservation.gb(),
                e.headroom.gb());
  os << line;
}

void print_details(std::ostream& os, const sim::PlanEntry& e, std::size_t i) {
  char line[512];
  const auto& t = e.time;
  os << "\n#" << (i + 1) << "  " << sim::describe(e.layout) << ", recompute " << e.policy << "  (tie group " << e.tie_group << ")\n";
  std::snprintf(line, sizeof line,
                "  step %.4f s = compute %.4f + exposed comm %.4f (grad sync %.4f) + replay %.4f + bubble %.4f + optimizer %.4f\n",
                t.step_s, t.compute_s, t.exposed_comm_s, t.grad_sync_s, t.replay_s, t.bubble_s, t.optimizer_s);
  os << line;
  std::snprintf(line, sizeof line, " (margin %.2f GB, pp_rank %lld)\n", Bytes{e.verdict.run.margin}.gb(),
                static_cast<long long>(e.verdict.run.pp_rank));
  os << "  verdict: " << e.verdict.run.reason << line;
  for (const auto& r : e.ranks) {
    std::snprintf(line, sizeof line, "  pp_rank %-3lld dp_rank %-5lld peak %8.2f GB  with graph pool %8.2f  reserved %8.2f (%s; p90 estimate %.2f)\n",
                  static_cast<long long>(r.rank.pp_rank), static_cast<long long>(r.rank.dp_rank), r.peak_allocated.gb(),
                  r.peak_with_graph_pool.gb(), r.reservation.gb(), r.reservation_replayed ? "replayed" : "p90 estimate",
                  r.estimated_reserved_p90.gb());
    os << line;
  }
  os << "  Megatron-LM:";
  for (const auto& f : e.launch.megatron_lm) os << " " << f;
  os << "\n  Bridge:";
  for (const auto& f : e.launch.bridge_overrides) os << " " << f;
  os << "\n  peakcast:";
  for (const auto& f : e.launch.peakcast_sets) os << " --set '" << f << "'";
  os << "\n";
}

void print_plan(std::ostream& os, const sim::PlanResult& r) {
  const auto& s = r.stats;
  char line[512];
  std::snprintf(line, sizeof line, "plan: %lld x %s, global batch %lld, seq %lld, objective %s\n", static_cast<long long>(r.gpus),
                r.gpu.c_str(), static_cast<long long>(r.global_batch), static_cast<long long>(r.seq_length), sim::to_string(r.objective));
  os << line;
  std::snprintf(line, sizeof line,
                "searched %zu configurations (%zu layouts, %zu shape groups) in %.2f s: %zu refused by Megatron, %zu over the GPU "
                "by static memory alone, %zu cut by the objective bound, %zu simulated (%zu timed), %zu fit\n",
                s.configurations, s.layouts, s.shape_groups, s.seconds, s.rejected_by_megatron, s.pruned_static_memory,
                s.pruned_by_bound, s.simulated, s.timed, s.fitting);
  os << line;
  for (const auto& n : r.notes) os << "note: " << n << "\n";
  if (r.entries.empty()) {
    os << "\nnothing fits: every configuration Megatron accepts is over the GPU on some rank\n";
    return;
  }
  std::snprintf(line, sizeof line, "\n%-4s %-44s %-22s %8s %8s %8s %9s\n", "#", "layout", "recompute", "step s", "peak GB",
                "rsrvd GB", "margin GB");
  os << line;
  for (std::size_t i = 0; i < r.entries.size(); ++i) print_entry(os, r.entries[i], i);
  os << "(~: a near-tie of the last of the top K; equal tie groups: the same objective to 0.01 %)\n";
  for (std::size_t i = 0; i < r.entries.size(); ++i) print_details(os, r.entries[i], i);
}

}  // namespace

Runner add_plan_command(CLI::App& app) {
  auto a = std::make_shared<PlanArgs>();
  CLI::App* sub = app.add_subcommand("plan", "The fastest layouts (or those with the most headroom) that fit on every rank, searched");
  sub->add_option("spec", a->spec, "Run spec JSON, Bridge run_config.yaml or bridge:<recipe> (its layout is replaced)")->required();
  sub->add_option("--gpus", a->gpus, "Number of GPUs")->required()->check(CLI::PositiveNumber);
  sub->add_option("--gpu", a->gpu, "GPU preset (configs/gpus), e.g. h100-sxm-80gb; default: the spec's");
  sub->add_option("--objective", a->objective, "step_time (default) or memory_headroom")
      ->check(CLI::IsMember({"step_time", "memory_headroom"}));
  sub->add_option("--top", a->top, "How many configurations to show (default 5), plus their ties and near-ties")->check(CLI::PositiveNumber);
  sub->add_option("--near-tie", a->near_tie, "Near-tie range relative to the last shown objective (default 0.01)")->check(CLI::Range(0.0, 1.0));
  sub->add_option("--max-tp", a->max_tp, "Largest TP and ETP (default 8, one NVLink domain; 0: no limit)")->check(CLI::NonNegativeNumber);
  sub->add_option("--uneven-pp-window", a->window, "End stages up to W layers lighter than a middle stage (default 4; 0: even splits)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--threads", a->threads, "Worker threads (default: all hardware threads)");
  sub->add_flag("--moe-balanced", a->balanced, "MoE: check balanced routing instead of the busiest expert-parallel rank");
  sub->add_flag("--keep-overlap-grad-reduce", a->keep_overlap, "Keep the spec's ddp.overlap_grad_reduce instead of trying both");
  sub->add_option("--set", a->sets, "Override one key: section.key=JSON (repeatable)");
  sub->add_flag("--json", a->json, "Print the plan as JSON");
  return [a] {
    const auto spec = read_spec(*a);
    if (!spec) return kExitInvalidInput;
    sim::PlanOptions o;
    o.objective = a->objective == "memory_headroom" ? sim::PlanObjective::memory_headroom : sim::PlanObjective::step_time;
    o.top = a->top;
    o.near_tie = a->near_tie;
    o.max_tensor_parallel = a->max_tp;
    o.uneven_pipeline_window = a->window;
    o.threads = a->threads;
    o.moe_busiest_rank = !a->balanced;
    o.vary_overlap_grad_reduce = !a->keep_overlap;
    const sim::PlanResult r = sim::plan(*spec, o);
    if (a->json) std::cout << sim::to_json(r) << "\n";
    else print_plan(std::cout, r);
    return kExitOk;
  };
}

}  // namespace peakcast::cli
