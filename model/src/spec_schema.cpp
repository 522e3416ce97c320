#include "spec_schema.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <mutex>

#include "peakcast/model/embedded_configs.hpp"
#include "spec_suggest.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

struct Schema {
  std::map<std::string, SectionSchema, std::less<>> sections;
  std::string error;
};

void load_sections(const json& doc, Schema& schema, bool extension) {
  for (const auto& [section, fields] : doc.items()) {
    if (!fields.is_object() || section.empty() || section[0] == '_') continue;
    SectionSchema& table = schema.sections[section];
    for (const auto& [name, f] : fields.items()) {
      FieldSchema field;
      field.name = name;
      field.nullable = f.value("nullable", false);
      field.source = f.value("source", "");
      field.annotation = f.value("annotation", "");
      if (const auto it = f.find("types"); it != f.end() && it->is_array()) {
        for (const auto& t : *it)
          if (t.is_string()) field.types.push_back(t.get<std::string>());
      }
      if (const auto it = f.find("choices"); it != f.end() && it->is_array()) {
        for (const auto& c : *it) field.choices.push_back(c);
      }
      if (const auto it = f.find("names"); it != f.end() && it->is_array()) {
        for (const auto& n : *it)
          if (n.is_string()) field.names.push_back(n.get<std::string>());
      }
      if (field.types.empty()) field.types.push_back("any");
      if (const auto it = f.find("default"); it != f.end()) field.default_value = *it;
      field.extension = extension;
      table[name] = std::move(field);
    }
  }
}

const Schema& schema() {
  static const Schema loaded = [] {
    Schema s;
    for (const char* file : {"schema/run_spec_schema.json", "schema/peakcast_extensions.json"}) {
      const auto text = embedded_config(file);
      if (!text) {
        s.error += std::string("configs/") + file + " is not embedded; ";
        continue;
      }
      json doc = json::parse(text->begin(), text->end(), nullptr, /*allow_exceptions=*/false);
      if (doc.is_discarded() || !doc.is_object()) {
        s.error += std::string("configs/") + file + " is not a JSON object; ";
        continue;
      }
      load_sections(doc, s, std::string_view(file).find("extensions") != std::string_view::npos);
    }
    return s;
  }();
  return loaded;
}

bool is_int64(const json& v) {
  if (v.is_number_integer() && !v.is_number_unsigned()) return true;
  return v.is_number_unsigned() && v.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
}

std::string describe_types(const FieldSchema& f) {
  std::string out;
  auto add = [&](const std::string& t) {
    if (!out.empty()) out += " or ";
    out += t;
  };
  for (const auto& t : f.types) {
    if (t == "bool") add("true/false");
    else if (t == "int") add("an integer");
    else if (t == "float") add("a number");
    else if (t == "str") add("a string");
    else if (t == "enum") {
      std::string c;
      for (const auto& v : f.choices) c += std::string(c.empty() ? "" : ", ") + v.dump();
      add("one of " + c);
    } else if (t == "name") add(f.names.empty() ? "a name (string)" : "a name (string)");
    else if (t == "object") add("an object");
    else if (t.rfind("list<", 0) == 0) add("a list");
    else add("any value");
  }
  if (f.nullable) add("null");
  return out;
}

bool matches_scalar(const std::string& t, const json& v) {
  if (t == "any") return true;
  if (t == "bool") return v.is_boolean();
  if (t == "int") return v.is_number_integer();
  if (t == "float") return v.is_number();
  if (t == "str" || t == "name") return v.is_string();
  if (t == "object") return v.is_object();
  if (t == "enum") return v.is_string() || v.is_number_integer();
  return false;
}

// Checks one value against one (non-list) type, with range and choice checks; false + message on failure.
bool check_scalar(const FieldSchema& f, const std::string& t, const json& v, std::string& why) {
  if (!matches_scalar(t, v)) return false;
  if (t == "int" && !is_int64(v)) {
    why = "integer " + short_json(v) + " is out of range (it must fit in a signed 64-bit integer)";
    return false;
  }
  if (t == "float" && v.is_number_float() && !std::isfinite(v.get<double>())) {
    why = "number is out of range (not finite)";
    return false;
  }
  if (t == "enum") {
    for (const auto& c : f.choices)
      if (c == v) return true;
    std::string c;
    std::vector<std::string> strs;
    for (const auto& x : f.choices) {
      c += std::string(c.empty() ? "" : ", ") + x.dump();
      if (x.is_string()) strs.push_back(x.get<std::string>());
    }
    why = short_json(v) + " is not one of " + c;
    if (v.is_string()) {
      if (auto s = closest_name(v.get<std::string>(), strs)) why += "; did you mean \"" + *s + "\"?";
    }
    return false;
  }
  if (t == "name" && !f.names.empty()) {
    const std::string n = normalize_object_name(v.get<std::string>());
    for (const auto& x : f.names)
      if (x == n) return true;
    std::string c;
    for (const auto& x : f.names) c += std::string(c.empty() ? "" : ", ") + x;
    why = short_json(v) + " is not a name peakcast knows for this field (accepted: " + c + ")";
    if (auto s = closest_name(n, f.names)) why += "; did you mean \"" + *s + "\"?";
    return false;
  }
  return true;
}

}  // namespace

const std::vector<std::string>& section_names() {
  static const std::vector<std::string> kNames = {"model", "train", "optimizer", "ddp", "cluster", "peft"};
  return kNames;
}

const SectionSchema* section_schema(std::string_view section) {
  const auto& s = schema().sections;
  const auto it = s.find(section);
  return it == s.end() ? nullptr : &it->second;
}

const FieldSchema* find_field(std::string_view section, std::string_view key) {
  const SectionSchema* s = section_schema(section);
  if (s == nullptr) return nullptr;
  const auto it = s->find(key);
  return it == s->end() ? nullptr : &it->second;
}

const std::string& schema_load_error() { return schema().error; }

std::string normalize_object_name(std::string_view name) {
  for (std::string_view prefix : {"torch.nn.functional.", "torch.", "F.", "AttnBackend.", "CudaGraphModule.", "CudaGraphScope."}) {
    if (name.substr(0, prefix.size()) == prefix) {
      name.remove_prefix(prefix.size());
      break;
    }
  }
  return std::string(name);
}

std::string json_kind(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a number with a fraction or exponent";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "a list";
    case json::value_t::object: return "an object";
    default: return "an unsupported value";
  }
}

std::string short_json(const json& v) {
  std::string s;
  if (v.is_array()) s = "a list of " + std::to_string(v.size());
  else if (v.is_object()) s = "an object with " + std::to_string(v.size()) + " keys";
  else s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

bool accepts_bare_string(const FieldSchema& f) {
  for (const auto& t : f.types) {
    if (t == "str" || t == "name" || t == "any") return true;
    if (t == "enum") {
      for (const auto& c : f.choices)
        if (c.is_string()) return true;
    }
  }
  return false;
}

bool check_value(const FieldSchema& f, const json& v, const std::string& path, Diagnostics& out) {
  if (v.is_null()) {
    if (f.nullable) return true;
    out.push_back({Severity::error, path, "wrong_type",
                   "must not be null: expected " + describe_types(f) + " (Megatron: " + f.annotation + ")"});
    return false;
  }
  std::string why;
  // Lists: pick the list type and check each element, so errors name e.g. model.recompute_modules[1].
  if (v.is_array()) {
    for (const auto& t : f.types) {
      if (t == "any") return true;
      if (t.rfind("list<", 0) != 0) continue;
      const std::string inner = t.substr(5, t.size() - 6);
      bool ok = true;
      for (std::size_t i = 0; i < v.size(); ++i) {
        std::string element_why;
        const json& e = v[i];
        const bool element_ok = inner == "any" || (inner == "enum" ? matches_scalar("str", e)
                                                                   : check_scalar(f, inner, e, element_why));
        if (!element_ok) {
          const std::string where = path + "[" + std::to_string(i) + "]";
          out.push_back({Severity::error, where, "wrong_type",
                         element_why.empty() ? "expected " + std::string(inner == "int" ? "an integer" : inner == "float" ? "a number"
                                                                                                     : inner == "bool"    ? "true/false"
                                                                                                                          : "a string") +
                                                   " in this list, got " + json_kind(e)
                                             : element_why});
          ok = false;
          if (out.size() > 200) return false;  // a huge wrong list: enough said
        }
      }
      return ok;
    }
    out.push_back({Severity::error, path, "wrong_type",
                   "expected " + describe_types(f) + ", got " + json_kind(v) + " (Megatron: " + f.annotation + ")"});
    return false;
  }
  for (const auto& t : f.types) {
    if (t.rfind("list<", 0) == 0) continue;
    if (check_scalar(f, t, v, why)) return true;
    if (!why.empty()) break;  // matched the kind but failed a range or choice check
  }
  if (why.empty()) {
    why = "expected " + describe_types(f) + ", got " + json_kind(v) + " " + short_json(v);
    if (!f.annotation.empty()) why += " (Megatron: " + f.annotation + ")";
  }
  out.push_back({Severity::error, path, "wrong_type", why});
  return false;
}

}  // namespace peakcast::model::detail
