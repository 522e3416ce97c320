// Names Megatron itself treats as one setting. A key from the preset yields to the file's spelling.
#include "spec_parser_detail.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

bool is_set(const json& model, const char* key) {
  const auto it = model.find(key);
  return it != model.end() && !it->is_null();
}

// Both spellings present: drop the one the preset supplied, or report the clash.
void one_of(json& model, const char* old_name, const char* new_name, const std::set<std::string>& preset_keys,
            const std::string& rule, const std::string& message, Diagnostics& out) {
  if (!is_set(model, old_name) || !is_set(model, new_name)) return;
  const bool old_from_preset = preset_keys.count(old_name) > 0;
  const bool new_from_preset = preset_keys.count(new_name) > 0;
  if (old_from_preset && !new_from_preset) model.erase(old_name);
  else if (new_from_preset && !old_from_preset) model.erase(new_name);
  else out.push_back({Severity::error, std::string("model.") + old_name, rule, message});
}

bool is_default_graph_modules(const json& v) {
  return v.is_null() || (v.is_string() && v.get<std::string>() == "full") || (v.is_array() && v.empty());
}

}  // namespace

void resolve_aliases(json& doc, const std::set<std::string>& preset_keys, Diagnostics& out) {
  if (!doc.is_object() || !doc.contains("model") || !doc["model"].is_object()) return;
  json& model = doc["model"];

  one_of(model, "hybrid_override_pattern", "hybrid_layer_pattern", preset_keys, "hybrid_pattern_twice",
         "hybrid_override_pattern and hybrid_layer_pattern cannot both be specified. hybrid_override_pattern is "
         "deprecated; use hybrid_layer_pattern instead. (Bridge hybrid_provider.py:182)",
         out);

  // cuda_graph_scope is the deprecated name of cuda_graph_modules (transformer_config.py:2409-2432).
  if (is_set(model, "cuda_graph_scope")) {
    const auto modules = model.find("cuda_graph_modules");
    if (modules != model.end() && !is_default_graph_modules(*modules)) {
      if (preset_keys.count("cuda_graph_scope") > 0) model.erase("cuda_graph_scope");
      else if (preset_keys.count("cuda_graph_modules") > 0) model.erase("cuda_graph_modules");
      else
        out.push_back({Severity::error, "model.cuda_graph_scope", "cuda_graph_scope_and_modules",
                       "cuda_graph_scope and cuda_graph_modules cannot be set together. "
                       "(transformer_config.py:2410)"});
    } else {
      out.push_back({Severity::warning, "model.cuda_graph_scope", "cuda_graph_scope_deprecated",
                     "cuda_graph_scope is deprecated, use cuda_graph_modules instead. (transformer_config.py:2415)"});
    }
  }
}

}  // namespace peakcast::model::detail
