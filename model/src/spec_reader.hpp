#pragma once
// Typed reads of one section of the checked run-spec document. A key the document leaves out takes
// its default from one table: the schema's (configs/schema/run_spec_schema.json, the pinned Megatron
// Core dataclass defaults, and peakcast_extensions.json for peakcast's own keys), or under the
// "bridge" defaults Bridge's provider and config classes first (bridge_defaults.hpp). Every read
// records where its value came from. Private to peakcast_model.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "peakcast/model/diagnostics.hpp"
#include "peakcast/model/spec_parser.hpp"

namespace peakcast::model::detail {

class BridgeDefaults;

// What fills the keys a document leaves out, and where the reads are recorded.
struct FillContext {
  DefaultsProfile profile = DefaultsProfile::megatron_core;
  const std::set<std::string>* preset_keys = nullptr;           // model keys that came from model.preset
  const std::map<std::string, std::string>* hf_keys = nullptr;  // model keys from model.hf_config -> source
  const BridgeDefaults* bridge = nullptr;                       // the model's Bridge class (bridge profile)
  std::map<std::string, KeyOrigin>* origins = nullptr;          // filled when set
};

class Reader {
 public:
  Reader(const nlohmann::json& doc, const char* section, const FillContext& ctx, Diagnostics& out);

  // The value the spec runs with: the document's, else the profile's default (nullptr when neither).
  const nlohmann::json* find(const char* key) const;
  // Whether the document itself sets the key (not null).
  bool has(const char* key) const;
  std::string path(const char* key) const { return std::string(section_) + "." + key; }

  void read(const char* key, bool& dst) const;
  void read(const char* key, std::int64_t& dst) const;
  void read(const char* key, std::optional<std::int64_t>& dst) const;
  void read(const char* key, double& dst) const;
  void read(const char* key, std::optional<double>& dst) const;
  void read(const char* key, std::string& dst) const;
  void read(const char* key, std::optional<std::string>& dst) const;
  std::optional<std::string> name(const char* key) const;  // a Python object's name, normalized

  void error(const std::string& path, const char* rule, const std::string& message) const;
  void warning(const std::string& path, const char* rule, const std::string& message) const;

  static std::optional<std::int64_t> as_int(const nlohmann::json& v);

 private:
  const nlohmann::json* in_document(const char* key) const;
  const nlohmann::json* obj_ = nullptr;
  const char* section_;
  const FillContext& ctx_;
  Diagnostics& out_;
};

}  // namespace peakcast::model::detail
