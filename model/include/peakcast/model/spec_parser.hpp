#pragma once
// Run spec text -> RunSpec. Strict: unknown keys, wrong types and out-of-range values are
// diagnostics with their key path; nothing is silently defaulted except keys left out, which take
// the pinned Megatron Core / Bridge defaults. `model.preset` loads a shipped model first.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "peakcast/model/diagnostics.hpp"
#include "peakcast/model/run_spec.hpp"

namespace peakcast::model {

// Which defaults a key left out takes: the pinned Megatron Core dataclasses' (what a script that builds
// TransformerConfig itself gets), or Megatron-Bridge's provider and config classes' (what a Bridge
// recipe or run_config.yaml runs with). A run spec says which with the top-level key "defaults";
// without it, a spec that names a model.preset (every shipped model is a Bridge model) takes
// Bridge's, any other spec Megatron Core's.
enum class DefaultsProfile { megatron_core,
                             bridge };
const char* to_string(DefaultsProfile p);

// Where one value of the resolved spec came from.
struct KeyOrigin {
  std::string origin;  // "user", "preset", "Megatron Core default", "Bridge default", "peakcast default", ...
  std::string source;  // the file and line the value or its default is declared at, when known
  std::string value;   // the value, as JSON text
};

struct ParseResult {
  std::optional<RunSpec> spec;  // set when there are no errors
  Diagnostics diagnostics;      // errors and warnings, in file order
  // When the only problems were unknown keys or wrongly typed values, the spec without those keys
  // (defaults in their place), so validation can still list every other problem in one pass.
  std::optional<RunSpec> partial;
  DefaultsProfile defaults = DefaultsProfile::megatron_core;
  // Every key the typed spec read ("model.hidden_size"), with its value and where it came from.
  std::map<std::string, KeyOrigin> origins;
  // What the input held that has no memory effect (Bridge sections, host objects), one line each.
  std::vector<std::string> ignored;
  std::string input_kind = "run spec";  // "run spec" | "Bridge run_config.yaml" | "Bridge recipe"
};

// `overrides` are "section.key=JSON" strings from --set; they apply after the file and preset.
ParseResult parse_run_spec(std::string_view json_text, const std::vector<std::string>& overrides = {});

// Any input a user describes a run with, by its name and text: a peakcast run spec (JSON), a
// Megatron-Bridge run_config.yaml (YAML; detected by content), or "bridge:<recipe function>" (a
// pinned Bridge recipe from the catalogue, `text` empty). Overrides name Bridge's sections for
// Bridge inputs (model.*, mixed_precision.*, comm_overlap.*, ...) and cluster.* for all.
ParseResult parse_spec_input(std::string_view name, std::string_view text, const std::vector<std::string>& overrides = {});

// A parsed spec as a Megatron-Bridge run_config.yaml (ConfigContainer sections, Bridge's encodings,
// keys sorted as yaml.safe_dump writes them) with every key the typed spec read, under `model_class`
// (a Bridge provider's _target_). The GPU is not part of a ConfigContainer: give it back with
// --set cluster.gpu=... when reading the file.
std::string to_bridge_run_config_yaml(const ParseResult& parsed, const std::string& model_class);

// A spec text read once and parsed many times with different overrides (what a sweep does):
// SpecText(text).parse(overrides) gives exactly what parse_run_spec(text, overrides) gives, without
// reading the text again for each call. Copies share the read text; parse() may run concurrently.
// A Bridge input (name "bridge:..." or a YAML text) is parsed through parse_spec_input each time.
class SpecText {
 public:
  explicit SpecText(std::string_view json_text, std::string_view name = "");
  ParseResult parse(const std::vector<std::string>& overrides = {}) const;

 private:
  struct Parsed;
  std::shared_ptr<const Parsed> parsed_;
};

// A shipped GPU preset (configs/gpus/<name>.json); nullopt with an error in `out` when there is none.
std::optional<GpuSpec> gpu_preset(const std::string& name, Diagnostics& out);

// The embedded default: the seed's Moonlight 16B study on 8 x H100 80GB.
std::string_view default_run_spec_text();

}  // namespace peakcast::model
