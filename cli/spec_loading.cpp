#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>

#include "commands.hpp"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "input_file.hpp"
#include "peakcast/model/megatron_args.hpp"
#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/validate.hpp"
#include "peakcast/sim/moe_routing.hpp"

namespace peakcast::cli {

std::optional<std::string> read_spec_text(const std::string& path) {
  if (path.empty()) return std::string(model::default_run_spec_text());
  if (path.rfind("bridge:", 0) == 0) return std::string();  // a recipe name has no file
  if (path != "-") return read_input("SPEC", path, kMaxSpecBytes);
  // "-": the spec (JSON, YAML or a launch line) on stdin. Read at most the cap and one byte more: a
  // larger input is refused without reading it whole.
  std::string text(kMaxSpecBytes + 1, '\0');
  std::cin.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(std::cin.gcount()));
  if (text.size() > kMaxSpecBytes) {
    std::cerr << "error: SPEC: stdin is larger than 16 MiB; a run spec, run_config.yaml or launch line is small\n";
    return std::nullopt;
  }
  return text;
}

std::string hf_config_override(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(path, ec);
  return "model.hf_config=" + nlohmann::json(ec ? path : abs.string()).dump();
}

std::optional<LoadedSpec> load_spec(const std::string& path, const std::vector<std::string>& sets) {
  const auto text = read_spec_text(path);
  if (!text) return std::nullopt;
  return load_spec_text(*text, path, sets);
}

namespace {
// Validation after parsing, errors to stderr; the warnings of both steps are kept.
std::optional<LoadedSpec> finish_loading(model::ParseResult parsed) {
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
}  // namespace

std::optional<LoadedSpec> load_spec_text(const std::string& text, const std::string& path, const std::vector<std::string>& sets) {
  return finish_loading(model::parse_spec_input(path, text, sets));
}

std::optional<LoadedSpec> load_megatron_line(const std::string& line, const std::vector<std::string>& sets) {
  return finish_loading(model::parse_megatron_line(line, sets));
}

std::optional<LoadedSpec> load_input(const std::string& spec, const std::string& megatron_line, const std::vector<std::string>& sets) {
  if (megatron_line.empty()) return load_spec(spec, sets);
  if (!spec.empty()) {
    std::cerr << "error: give SPEC or --from-megatron-args, not both\n";
    return std::nullopt;
  }
  return load_megatron_line(megatron_line, sets);
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
