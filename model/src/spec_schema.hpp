#pragma once
// The table of every key a run spec accepts, per section, loaded from the embedded
// configs/schema/*.json (generated from the pinned Megatron dataclasses plus peakcast's own keys),
// and the JSON-level type check of one value against it. Private to peakcast_model.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "peakcast/model/diagnostics.hpp"

namespace peakcast::model::detail {

struct FieldSchema {
  std::string name;
  std::vector<std::string> types;  // bool int float str enum name object any list<T>
  bool nullable = false;
  std::vector<nlohmann::json> choices;  // enum values (Literal[...])
  std::vector<std::string> names;       // accepted names for Python objects; empty = any name
  std::string source;                   // "mcore:path:line" of the declaration
  std::string annotation;               // the Python annotation, for messages
  // The dataclass default (a literal; none when the field is required or its default is an
  // expression): what a key left out takes under the megatron-core defaults.
  std::optional<nlohmann::json> default_value;
  bool extension = false;  // a peakcast key (peakcast_extensions.json), not a Megatron field
};

using SectionSchema = std::map<std::string, FieldSchema, std::less<>>;

// Sections in spec order: "model", "train", "optimizer", "ddp", "cluster"; plus "cluster.gpu"
// (keys of a GPU object) and "top" (top-level keys that are not sections).
const std::vector<std::string>& section_names();
const SectionSchema* section_schema(std::string_view section);
const FieldSchema* find_field(std::string_view section, std::string_view key);

// Set when the embedded schema files failed to load (a build problem, reported once).
const std::string& schema_load_error();

// Checks `value` against `field`; appends errors with `path` (and element paths for lists).
// Returns true when the value is acceptable.
bool check_value(const FieldSchema& field, const nlohmann::json& value, const std::string& path,
                 Diagnostics& out);

// Whether a --set value that is not JSON may be read as a plain string for this field.
bool accepts_bare_string(const FieldSchema& field);

// A name written for a Python object, without "torch." / "F." style prefixes.
std::string normalize_object_name(std::string_view name);

// A short rendering of a JSON value for messages (never the whole of a large value).
std::string short_json(const nlohmann::json& value);
std::string json_kind(const nlohmann::json& value);  // "a string", "an integer", ...

}  // namespace peakcast::model::detail
