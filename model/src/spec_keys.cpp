// Every key known, every value of the right JSON type.
#include <algorithm>

#include "spec_parser_detail.hpp"
#include "spec_schema.hpp"
#include "spec_suggest.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

// "Did you mean" compares a key with every schema key: worth it for a typo or ten, not for a file of
// 50,000 unknown keys (seconds). Past this many unknown keys in one spec, they are listed without a hint.
constexpr std::size_t kMaxSuggestions = 32;

void unknown_key(const std::string& section, const std::string& key, bool from_preset, std::size_t& unknown, Diagnostics& out) {
  std::string msg = "unknown key";
  std::optional<std::string> hint;
  if (unknown++ >= kMaxSuggestions) {
    msg = section == "top" ? "unknown top-level key" : "unknown key";
  } else if (section == "top") {
    hint = closest_name(key, section_names());
    if (!hint) hint = suggest_key("top", key);
    msg = "unknown top-level key (sections are model, train, optimizer, ddp, cluster, peft)";
  } else {
    hint = suggest_key(section, key);
  }
  if (hint) msg += "; did you mean " + *hint + "?";
  if (from_preset) msg += " (from model.preset)";
  out.push_back({Severity::error, key_path(section, key), "unknown_key", msg});
}

void check_object(const json& obj, const std::string& section, const std::string& path,
                  const std::set<std::string>& preset_keys, std::size_t& unknown, Diagnostics& out) {
  for (const auto& [key, value] : obj.items()) {
    const FieldSchema* field = find_field(section, key);
    const bool from_preset = section == "model" && preset_keys.count(key) > 0;
    if (field == nullptr) {
      if (section == "cluster.gpu") {
        std::string msg = "unknown GPU key";
        if (unknown++ < kMaxSuggestions)
          if (auto s = suggest_key("cluster.gpu", key)) msg += "; did you mean " + *s + "?";
        out.push_back({Severity::error, path + "." + key, "unknown_key", msg});
      } else {
        unknown_key(section, key, from_preset, unknown, out);
      }
      continue;
    }
    const std::size_t before = out.size();
    check_value(*field, value, key_path(path, key), out);
    if (from_preset) {
      for (std::size_t i = before; i < out.size(); ++i) out[i].message += " (from model.preset)";
    }
    if (section == "cluster" && key == "gpu" && value.is_object()) check_object(value, "cluster.gpu", "cluster.gpu", preset_keys, unknown, out);
  }
}

}  // namespace

void check_keys_and_types(const json& doc, const std::set<std::string>& preset_keys, Diagnostics& out) {
  std::size_t unknown = 0;
  for (const auto& [key, value] : doc.items()) {
    const auto& sections = section_names();
    if (std::find(sections.begin(), sections.end(), key) != sections.end()) {
      if (!value.is_object()) {
        out.push_back({Severity::error, key, "wrong_type",
                       "section must be an object of Megatron keys, got " + json_kind(value)});
        continue;
      }
      check_object(value, key, key, preset_keys, unknown, out);
    } else if (const FieldSchema* field = find_field("top", key)) {
      check_value(*field, value, key, out);
    } else {
      unknown_key("top", key, false, unknown, out);
    }
  }
}

}  // namespace peakcast::model::detail
