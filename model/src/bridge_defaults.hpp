#pragma once
// Megatron-Bridge 600d069b's defaults for a run spec under the "bridge" profile, from
// configs/bridge/defaults.json (generated from the pinned sources by extract_bridge_defaults.py):
// the model provider class's fields as Python's dataclass resolution gives them (nearest declaring
// class in the MRO, with the "shadowed" exceptions: MLAModelProvider gets Megatron Core's back), the
// Bridge config classes of the other sections, and the MixedPrecisionConfig fields that
// MixedPrecisionConfig.setup() copies onto model, optimizer and ddp
// (bridge:src/megatron/bridge/training/mixed_precision.py:113-157). Private to peakcast_model.
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace peakcast::model::detail {

// configs/bridge/defaults.json as one parsed document (an empty object if it is missing or invalid; the
// build embeds it, and tests/model check it parses).
const nlohmann::json& bridge_defaults_table();

struct BridgeDefault {
  nlohmann::json value;
  std::string source;
};

class BridgeDefaults {
 public:
  // The defaults of a run with model class `provider_class` ("megatron.bridge.models.gpt_provider.GPTModelProvider").
  // nullptr when the class is not in the table.
  static const BridgeDefaults* for_provider(const std::string& provider_class);

  // The Bridge default of section.key ("model", "optimizer", "ddp", "train"), or nullptr when Bridge
  // leaves it at the Megatron Core dataclass default or the value is an expression peakcast does not
  // evaluate.
  const BridgeDefault* lookup(const std::string& section, const std::string& key) const;

  const std::string& provider_class() const { return provider_class_; }

 private:
  std::string provider_class_;
  std::map<std::string, std::map<std::string, BridgeDefault>> by_section_;
  friend struct BridgeDefaultsBuilder;
};

// The Bridge provider class of a run-spec model document that names none: HybridModelProvider for
// hybrid layer patterns, MLAModelProvider for multi-latent attention, else GPTModelProvider.
std::string default_provider_class(const nlohmann::json& model);

}  // namespace peakcast::model::detail
