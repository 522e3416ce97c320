// --set KEY=VALUE: dotted key path, value parsed as JSON (or taken as a string where the field is one).
#include <algorithm>

#include "spec_parser_detail.hpp"
#include "spec_schema.hpp"
#include "spec_suggest.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

std::vector<std::string> split_dots(std::string_view s) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = s.find('.', start);
    parts.emplace_back(s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts;
}

void unknown_override_key(const std::string& key, const std::string& section, const std::string& name,
                          Diagnostics& out) {
  std::string msg = "--set names an unknown key";
  if (auto s = suggest_key(section, name)) msg += "; did you mean " + *s + "?";
  out.push_back({Severity::error, key, "unknown_key", msg});
}

}  // namespace

void apply_overrides(json& doc, const std::vector<std::string>& overrides, Diagnostics& out) {
  for (const std::string& item : overrides) {
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      out.push_back({Severity::error, "--set", "set_syntax",
                     "expected KEY=VALUE with a dotted key such as model.seq_length=8192, got \"" +
                         item.substr(0, 80) + "\""});
      continue;
    }
    const std::string key = item.substr(0, eq);
    const std::string value_text = item.substr(eq + 1);
    const std::vector<std::string> parts = split_dots(key);

    const FieldSchema* field = nullptr;
    const std::string& section = parts[0];
    const bool is_section = std::find(section_names().begin(), section_names().end(), section) != section_names().end();
    if (parts.size() == 1) {
      field = find_field("top", section);
      if (field == nullptr) {
        std::string msg = "--set needs section.key";
        if (auto s = suggest_key("top", section)) msg += "; did you mean " + *s + "?";
        out.push_back({Severity::error, key, "unknown_key", msg});
        continue;
      }
    } else if (!is_section) {
      std::string msg = "unknown section \"" + section + "\" (sections: model, train, optimizer, ddp, cluster, peft)";
      if (auto s = closest_name(section, section_names())) msg += "; did you mean " + *s + "?";
      out.push_back({Severity::error, key, "unknown_key", msg});
      continue;
    } else if (parts.size() == 2) {
      field = find_field(section, parts[1]);
      if (field == nullptr) {
        unknown_override_key(key, section, parts[1], out);
        continue;
      }
    } else if (parts.size() == 3 && section == "cluster" && parts[1] == "gpu") {
      field = find_field("cluster.gpu", parts[2]);
      if (field == nullptr) {
        unknown_override_key(key, "cluster.gpu", parts[2], out);
        continue;
      }
    } else {
      out.push_back({Severity::error, key, "unknown_key",
                     "--set keys are section.key (or cluster.gpu.key); this path is too deep"});
      continue;
    }

    // A bare word where the field takes one (cluster.gpu=h200-141gb) is a string. Checking with
    // json::accept first saves the parse error (an exception) that would say the same thing.
    std::optional<json> value;
    Diagnostics json_errors;
    if (accepts_bare_string(*field) && value_text.size() < 4096 && !json::accept(value_text)) {
      value = json(value_text);
    } else {
      value = parse_json_text(value_text, key, "--set " + key, json_errors);
    }
    if (!value) {
      if (accepts_bare_string(*field) && value_text.size() < 4096) {
        value = json(value_text);
      } else {
        out.push_back({Severity::error, key, "set_syntax",
                       "--set value \"" + value_text.substr(0, 60) +
                           "\" is not valid JSON, and this key does not take a bare string (write strings as \"...\")"});
        continue;
      }
    }

    // Place the value; a section that is not an object is reported by the type check instead.
    if (parts.size() == 1) {
      doc[section] = std::move(*value);
      continue;
    }
    if (!doc.contains(section)) doc[section] = json::object();
    json& sec = doc[section];
    if (!sec.is_object()) continue;
    if (parts.size() == 2) {
      sec[parts[1]] = std::move(*value);
    } else {
      json& gpu = sec["gpu"];
      if (gpu.is_string()) gpu = json{{"name", gpu.get<std::string>()}};
      else if (!gpu.is_object()) gpu = json::object();
      gpu[parts[2]] = std::move(*value);
    }
  }
}

}  // namespace peakcast::model::detail
