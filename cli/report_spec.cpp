#include "report_spec.hpp"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "peakcast/model/static_memory.hpp"

namespace peakcast::cli {

namespace {

std::string with_commas(std::int64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > (n < 0 ? 1 : 0); i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

std::string rank_name(const sim::RankPrediction& r) {
  return "pp " + std::to_string(r.rank.pp_rank) + " ep " + std::to_string(r.rank.ep_rank);
}

}  // namespace

void print_resolved_spec(std::ostream& os, const std::string& input, const LoadedSpec& loaded, const sim::Prediction& p) {
  const model::ParseResult& r = loaded.parse;
  os << "resolved spec: " << r.input_kind << " " << (input.empty() ? "(embedded default)" : input) << ", defaults "
     << model::to_string(r.defaults) << "\n";
  char line[512];
  std::snprintf(line, sizeof line, "  %-48s %-22s %-22s %s\n", "key", "value", "from", "source");
  os << line;
  for (const auto& [key, o] : r.origins) {
    const std::string value = o.value.size() > 22 ? o.value.substr(0, 19) + "..." : o.value;
    std::snprintf(line, sizeof line, "  %-48s %-22s %-22s %s\n", key.c_str(), value.c_str(), o.origin.c_str(), o.source.c_str());
    os << line;
  }
  const auto d = model::derive(loaded.spec);
  os << "parameters: " << with_commas(model::total_parameters(loaded.spec, d, false)) << " in the model ("
     << with_commas(model::total_parameters(loaded.spec, d, true)) << " with MTP); per rank:";
  for (const auto& rank : p.ranks)
    os << " " << rank_name(rank) << " " << with_commas(rank.params.dense) << " dense + " << with_commas(rank.params.expert) << " expert;";
  os << "\n";
  for (const auto& i : r.ignored) os << "ignored: " << i << "\n";
  os << "warnings: " << loaded.warnings.size() << (loaded.warnings.empty() ? "\n" : " (printed above)\n");
}

std::string resolved_spec_json(const std::string& input, const LoadedSpec& loaded, const sim::Prediction& p) {
  const model::ParseResult& r = loaded.parse;
  nlohmann::json keys = nlohmann::json::object();
  for (const auto& [key, o] : r.origins)
    keys[key] = {{"value", nlohmann::json::parse(o.value, nullptr, false)}, {"from", o.origin}, {"source", o.source}};
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& rank : p.ranks)
    ranks.push_back({{"pp_rank", rank.rank.pp_rank}, {"ep_rank", rank.rank.ep_rank}, {"dense", rank.params.dense}, {"expert", rank.params.expert}});
  nlohmann::json warnings = nlohmann::json::array();
  for (const auto& w : loaded.warnings) warnings.push_back({{"path", w.path}, {"rule", w.rule}, {"message", w.message}});
  const auto d = model::derive(loaded.spec);
  return nlohmann::json{{"input", input},
                        {"input_kind", r.input_kind},
                        {"defaults", model::to_string(r.defaults)},
                        {"keys", keys},
                        {"parameters", {{"total", model::total_parameters(loaded.spec, d, false)}, {"total_with_mtp", model::total_parameters(loaded.spec, d, true)}, {"per_rank", ranks}}},
                        {"ignored", r.ignored},
                        {"warnings", warnings}}
      .dump();
}

}  // namespace peakcast::cli
