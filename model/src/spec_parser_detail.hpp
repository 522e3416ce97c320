#pragma once
// The steps of parse_run_spec, each in its own file. Private to peakcast_model.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "peakcast/model/diagnostics.hpp"
#include "peakcast/model/run_spec.hpp"
#include "peakcast/model/spec_parser.hpp"

namespace peakcast::model::detail {

// spec_json_text.cpp: text -> JSON with a size cap, a nesting cap and duplicate-key detection.
// `origin` prefixes messages ("" for the spec file, "--set model.x" for an override value).
std::optional<nlohmann::json> parse_json_text(std::string_view text, const std::string& path,
                                              const std::string& origin, Diagnostics& out);

// spec_overrides.cpp: applies "section.key=VALUE" strings to the document.
void apply_overrides(nlohmann::json& doc, const std::vector<std::string>& overrides, Diagnostics& out);

// spec_preset.cpp: merges configs/models/<model.preset>.json under the file's model keys.
// Returns the keys that came from the preset (for messages).
std::set<std::string> apply_model_preset(nlohmann::json& doc, Diagnostics& out);

// spec_hf_config.cpp: model.hf_config, a Hugging Face config.json mapped as AutoBridge maps it
// (hf_config.cpp), merged under the file's model keys; a relative path is relative to `base_dir`
// (the spec file's directory; "" = the working directory). Conflicts are errors.
struct HfModel;
struct HfApplied {
  std::map<std::string, std::string> keys;  // model keys the config set -> where from
  std::vector<std::string> ignored;         // one line each: config keys nothing read, spec settings kept
  std::string file, bridge, provider_class;
};
HfApplied apply_hf_config(nlohmann::json& doc, const std::string& base_dir, Diagnostics& out);
// The merge alone, on a model section and an already mapped config (`file` names it in messages).
HfApplied merge_hf_model(nlohmann::json& model, const HfModel& mapped, const std::string& file, Diagnostics& out);

// spec_keys.cpp: unknown keys (with "did you mean") and JSON types, section by section.
void check_keys_and_types(const nlohmann::json& doc, const std::set<std::string>& preset_keys, Diagnostics& out);

// spec_aliases.cpp: deprecated or alternative names that Megatron itself maps
// (hybrid_override_pattern/hybrid_layer_pattern, cuda_graph_scope/cuda_graph_modules).
void resolve_aliases(nlohmann::json& doc, const std::set<std::string>& preset_keys, Diagnostics& out);

// spec_fill.cpp: the checked document -> typed RunSpec (plus conversions that can fail); keys the
// document leaves out take `ctx`'s defaults, and every read is recorded in ctx.origins.
struct FillContext;
void fill_run_spec(const nlohmann::json& doc, const FillContext& ctx, RunSpec& spec, Diagnostics& out);

// spec_gpu.cpp: cluster.gpu (preset name or object) -> GpuSpec.
void fill_gpu(const nlohmann::json& gpu, GpuSpec& out_gpu, Diagnostics& out);

// spec_parser.cpp: the parse steps after the text, on a document another reader produced.
ParseResult parse_document(nlohmann::json doc, const std::vector<std::string>& overrides);
// parse_run_spec for a spec read from a file in `base_dir` (model.hf_config paths are relative to it).
ParseResult parse_run_spec_in(std::string_view json_text, const std::vector<std::string>& overrides,
                              const std::string& base_dir);
// The directory of a spec named `name` ("" for stdin "-", a recipe or a bare file name).
std::string spec_directory(std::string_view name);

// yaml_text.cpp: YAML -> JSON as PyYAML's safe_load reads it (YAML 1.1 plain scalars), with size,
// depth and alias caps; duplicate keys, explicit tags and several documents are errors naming the
// line. `lines` (optional) gets the line of every mapping key by its path ("model.seq_length").
std::optional<nlohmann::json> parse_yaml_text(std::string_view text, const std::string& file, Diagnostics& out,
                                              std::map<std::string, int>* lines);

// obj[key] as a string, `fallback` when absent, null or of another type (json::value throws on null).
inline std::string string_or(const nlohmann::json& obj, const char* key, const std::string& fallback = "") {
  if (!obj.is_object()) return fallback;
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : fallback;
}
inline std::int64_t int_or(const nlohmann::json& obj, const char* key, std::int64_t fallback) {
  if (!obj.is_object()) return fallback;
  const auto it = obj.find(key);
  return it != obj.end() && it->is_number_integer() ? it->get<std::int64_t>() : fallback;
}

// obj[key] is the boolean true. A peek only: the key's type is checked where it is converted,
// so a string "yes" here reads as false and is reported there (json::value throws on it).
inline bool is_true(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return false;
  const auto it = obj.find(key);
  return it != obj.end() && it->is_boolean() && it->get<bool>();
}

// Joins a section and key into a path: "model" + "x" -> "model.x".
inline std::string key_path(std::string_view section, std::string_view key) {
  if (section.empty() || section == "top") return std::string(key);
  return std::string(section) + "." + std::string(key);
}

}  // namespace peakcast::model::detail
