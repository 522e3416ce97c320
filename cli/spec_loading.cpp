#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>

#include "commands.hpp"
#include "input_file.hpp"
#include "peakcast/sim/moe_routing.hpp"
#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/validate.hpp"

namespace peakcast::cli {

std::optional<LoadedSpec> load_spec(const std::string& path, const std::vector<std::string>& sets) {
  std::string text;
  if (path.empty()) {
    text = std::string(model::default_run_spec_text());
  } else if (path.rfind("bridge:", 0) != 0) {  // a recipe name has no file
    auto read = read_input("SPEC", path, kMaxSpecBytes);
    if (!read) return std::nullopt;
    text = std::move(*read);
  }
  return load_spec_text(text, path, sets);
}

std::optional<LoadedSpec> load_spec_text(const std::string& text, const std::string& path, const std::vector<std::string>& sets) {
  model::ParseResult parsed = model::parse_spec_input(path, text, sets);
  model::Diagnostics all = parsed.diagnostics;
  if (parsed.spec || parsed.partial) {
    const model::Diagnostics v = model::validate(parsed.spec ? *parsed.spec : *parsed.partial);
    all.insert(all.end(), v.begin(), v.end());
  }
  LoadedSpec loaded;
  for (const auto& d : all) {
    if (d.severity == model::Severity::error) std::cerr << model::format(d) << "\n";
    else loaded.warnings.push_back(d);
  }
  if (!parsed.spec || model::has_errors(all)) return std::nullopt;
  loaded.spec = *parsed.spec;
  loaded.parse = std::move(parsed);
  return loaded;
}

bool apply_busiest_rank_routing(model::RunSpec& spec, bool requested) {
  if (spec.model.moe_routing_imbalance != 1.0) {
    std::cerr << "error: --moe-busiest-rank: model.moe_routing_imbalance is already set ("
              << spec.model.moe_routing_imbalance << "); use one or the other\n";
    return false;
  }
  if (!spec.model.num_moe_experts || spec.model.expert_model_parallel_size <= 1) {
    std::cerr << "MoE routing: no expert parallelism here; --moe-busiest-rank changes nothing\n";
    return true;
  }
  if (spec.model.moe_router_force_load_balancing) {
    std::cerr << "MoE routing: moe_router_force_load_balancing draws random router logits (router.py:859-861); "
                 "every rank is checked at balanced routing\n";
    return true;
  }
  const std::string& score = spec.model.moe_router_score_function;
  const auto sigma = sim::untrained_expert_load_sigma(score);
  if (!sigma && !requested) {
    std::cerr << "MoE routing: no measured routing spread for " << score
              << " routers in the calibration profile; every rank is checked at balanced routing\n";
    return true;
  }
  if (!sigma) {
    std::cerr << "error: --moe-busiest-rank: no measured routing spread for " << score
              << " routers in the calibration profile (configs/calibration/default.json, moe_routing)\n";
    return false;
  }
  const double load = sim::busiest_rank_routing_load(spec, *sigma);
  spec.model.moe_routing_imbalance = load;
  std::cerr << "MoE routing: the busiest of " << spec.model.expert_model_parallel_size
            << " expert-parallel ranks under an untrained " << score << " router receives " << load
            << " x its balanced rows (per-expert spread " << *sigma << ", measured; configs/calibration/default.json)\n";
  return true;
}

std::optional<Bytes> budget_bytes(double gb) {
  if (!(gb > 0 && gb <= kMaxBudgetGb)) {
    std::cerr << "error: --budget-gb: the budget must be a number of GB in (0, " << kMaxBudgetGb << "]\n";
    return std::nullopt;
  }
  return Bytes{std::llround(gb * 1e9)};
}

}  // namespace peakcast::cli
