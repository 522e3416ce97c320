// model.preset: a shipped model (configs/models/<name>.json) under the file's own model keys.
#include <map>
#include <mutex>

#include "peakcast/model/embedded_configs.hpp"
#include "spec_parser_detail.hpp"
#include "spec_suggest.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

std::vector<std::string> available_presets() {
  std::vector<std::string> names;
  for (const std::string& p : embedded_config_paths("models/")) {
    std::string n = p.substr(7);
    if (n.size() > 5 && n.compare(n.size() - 5, 5, ".json") == 0) names.push_back(n.substr(0, n.size() - 5));
  }
  return names;
}

// The shipped preset files are compiled in and never change, so each is parsed once per process
// (sweeps and rankings read the same preset for every point). Entries are never modified after
// insertion, so the reference stays valid and may be read without the lock.
const std::optional<json>& parsed_preset(const std::string& name, std::string_view text) {
  static std::mutex mutex;
  static std::map<std::string, std::optional<json>> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(name);
  if (it == cache.end()) {
    Diagnostics preset_errors;
    it = cache.emplace(name, parse_json_text(text, "model.preset", "configs/models/" + name + ".json", preset_errors)).first;
  }
  return it->second;
}

}  // namespace

std::set<std::string> apply_model_preset(json& doc, Diagnostics& out) {
  std::set<std::string> from_preset;
  if (!doc.is_object()) return from_preset;
  const auto model_it = doc.find("model");
  if (model_it == doc.end() || !model_it->is_object()) return from_preset;
  json& model = *model_it;
  const auto preset_it = model.find("preset");
  if (preset_it == model.end() || !preset_it->is_string()) return from_preset;  // null/absent: none; else a type error
  const std::string name = preset_it->get<std::string>();

  const auto text = embedded_config("models/" + name + ".json");
  if (!text || name.find('/') != std::string::npos) {
    const std::vector<std::string> names = available_presets();
    std::string list;
    for (const auto& n : names) list += std::string(list.empty() ? "" : ", ") + n;
    std::string msg = "no shipped model named \"" + name.substr(0, 80) + "\"; available: " + list;
    if (auto s = closest_name(name, names)) msg += "; did you mean \"" + *s + "\"?";
    out.push_back({Severity::error, "model.preset", "unknown_preset", msg});
    return from_preset;
  }
  const std::optional<json>& preset = parsed_preset(name, *text);
  if (!preset || !preset->is_object() || !preset->contains("model") || !preset->at("model").is_object()) {
    out.push_back({Severity::error, "model.preset", "bad_preset",
                   "shipped preset configs/models/" + name + ".json has no \"model\" object (a packaging bug)"});
    return from_preset;
  }
  for (const auto& [key, value] : preset->at("model").items()) {
    if (key == "preset") continue;
    if (!model.contains(key)) {
      model[key] = value;
      from_preset.insert(key);
    }
  }
  return from_preset;
}

}  // namespace peakcast::model::detail
