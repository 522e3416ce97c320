#pragma once
// A Megatron-Bridge ConfigContainer document -> the run-spec document. The ConfigContainer is what
// Bridge 600d069b writes into every checkpoint as run_config.yaml (ConfigContainer.to_yaml, after
// runtime_config_update and setup(): docs/bridge/run-config-yaml.md), or what a catalogue recipe
// resolves to (bridge_recipe.cpp). Its model, train, optimizer and ddp fields are Megatron's own names,
// as a run spec's are; the other sections either change what a rank holds (mixed_precision,
// comm_overlap, dist, env_vars, peft) and are mapped or refused, or do not and are listed as ignored.
// Private to peakcast_model.
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "peakcast/model/diagnostics.hpp"
#include "peakcast/model/spec_parser.hpp"

namespace peakcast::model::detail {

struct BridgeDocument {
  nlohmann::json doc;                // the ConfigContainer mapping
  std::string file;                  // for messages: "run_config.yaml" or "bridge:<recipe>"
  std::map<std::string, int> lines;  // key path ("model.seq_length") -> line, when read from YAML
  bool emulated = false;             // apply_bridge_runtime ran the runtime steps on it
  bool resolved = true;              // written after runtime_config_update (run_config.yaml): mixed
                                     // precision and comm overlap are already applied to the sections
  // Where a value came from when not the file itself ("model.hidden_size" -> Hugging Face config, a
  // recipe assignment, a runtime step); the file's own values are named by their line.
  std::map<std::string, KeyOrigin> origins;
  // What the input says of the cluster beside the ConfigContainer (a recipe's GPU folder and world size).
  nlohmann::json cluster = nlohmann::json::object();
};

struct BridgeConversion {
  nlohmann::json spec = nlohmann::json::object();  // model, train, optimizer, ddp, cluster, "defaults": "bridge"
  std::vector<std::string> ignored;                // what was read and has no memory effect, one entry each
  std::map<std::string, KeyOrigin> origins;        // run-spec key path -> where its value came from
};

// Applies `--set section.key=VALUE` for the ConfigContainer's sections to the document (Bridge's own
// override order: before runtime_config_update). Returns the overrides that name run-spec-only keys
// (cluster.*, top-level), for the run-spec document.
std::vector<std::string> apply_bridge_overrides(BridgeDocument& d, const std::vector<std::string>& overrides, Diagnostics& out);

// Runs the parts of Bridge's runtime_config_update that change memory, for a document that was not
// written after it (a recipe) or whose mixed_precision / comm_overlap sections an override changed:
// MixedPrecisionConfig.setup, CommOverlapConfig.setup, the providers' finalize() defaults and
// validate()'s distributed-optimizer sync (configs/bridge/runtime_rules.json lists each with its line).
void apply_bridge_runtime(BridgeDocument& d, Diagnostics& out);

BridgeConversion convert_bridge_container(const BridgeDocument& d, Diagnostics& out);

}  // namespace peakcast::model::detail
