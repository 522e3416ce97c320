// The functional tests' own arguments and world sizes (golden_case_args.hpp).
#include "golden_case_args.hpp"

#include <nlohmann/json.hpp>

#include "peakcast/model/embedded_configs.hpp"

namespace peakcast::calibration::detail {

const nlohmann::json& embedded_section(const char* name, const char* section) {
  static std::map<std::string, nlohmann::json> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  const auto text = model::embedded_config(name);
  nlohmann::json j = text ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json::object();
  nlohmann::json cases = j.is_object() && j.contains(section) && j[section].is_object() ? j[section] : nlohmann::json::object();
  return cache.emplace(name, std::move(cases)).first->second;
}

namespace {

// The words following `--key` up to the next option, joined by spaces; "True" for a bare flag;
// nullopt when the key is not passed.
std::optional<std::string> passed_value(const std::vector<std::string>& words, const std::string& key) {
  std::optional<std::string> out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (words[i] != key) continue;
    std::string v;
    for (std::size_t j = i + 1; j < words.size() && words[j].rfind("--", 0) != 0; ++j) v += (v.empty() ? "" : " ") + words[j];
    out = v.empty() ? "True" : v;  // the last occurrence wins, as argparse takes it
  }
  return out;
}

// A CSV cell as the harness would have passed it: "[a b]" -> "a b".
std::string cell_value(const std::string& cell) {
  if (cell.size() >= 2 && cell.front() == '[' && cell.back() == ']') return cell.substr(1, cell.size() - 2);
  return cell;
}

bool same_value(const std::string& a, const std::string& b) {
  if (a == b) return true;
  try {  // 1e-5 against 1.0e-5, 32 against 32.0
    std::size_t ia = 0, ib = 0;
    const double x = std::stod(a, &ia), y = std::stod(b, &ib);
    return ia == a.size() && ib == b.size() && x == y;
  } catch (const std::exception&) { return false; }
}

}  // namespace

std::optional<TestCaseArgs> functional_test_args(const std::string& case_key) {
  const auto& cases = embedded_section("functional_test_args.json", "cases");
  if (!cases.contains(case_key)) return std::nullopt;
  const auto& c = cases[case_key];
  TestCaseArgs out;
  out.source = c.value("source", std::string());
  if (c.contains("model_args") && c["model_args"].is_array())
    for (const auto& w : c["model_args"])
      if (w.is_string()) out.words.push_back(w.get<std::string>());
  if (c.contains("env_vars") && c["env_vars"].is_object())
    for (const auto& [k, v] : c["env_vars"].items())
      if (v.is_string()) out.env.emplace_back(k, v.get<std::string>());
  return out;
}

std::vector<std::string> csv_disagreements(const TestCaseArgs& args, const std::map<std::string, std::string>& columns) {
  std::vector<std::string> out;
  for (const auto& [column, cell] : columns) {
    if (cell.empty()) continue;
    if (column == "alloc_conf") {
      std::string env;
      for (const auto& [k, v] : args.env)
        if (k == "PYTORCH_CUDA_ALLOC_CONF") env = v;
      if (env != cell) out.push_back("column 'alloc_conf' = '" + cell + "' but ENV_VARS PYTORCH_CUDA_ALLOC_CONF is '" + env + "'");
      continue;
    }
    const auto passed = passed_value(args.words, "--" + column);
    if (!passed || !same_value(*passed, cell_value(cell)))
      out.push_back("column '" + column + "' = '" + cell + "' but MODEL_ARGS " + (passed ? "gives '" + *passed + "'" : "does not pass it"));
  }
  return out;
}

std::optional<std::pair<int, std::string>> recipe_world_size(const std::string& row_key) {
  const auto& cases = embedded_section("schema/functional_test_world_sizes.json", "cases");
  if (!cases.contains(row_key)) return std::nullopt;
  const auto& c = cases[row_key];
  if (!c.contains("world_size") || !c["world_size"].is_number_integer()) return std::nullopt;
  const int w = c["world_size"].get<int>();
  const auto text = [&](const char* key) { return c.contains(key) ? (c[key].is_string() ? c[key].get<std::string>() : c[key].dump()) : ""; };
  return std::make_pair(w, std::to_string(w) + " (recipe " + text("source") + ")");
}

}  // namespace peakcast::calibration::detail
