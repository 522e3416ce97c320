#pragma once
// The catalogue of pinned Megatron-Bridge recipes (configs/recipes/<function>.json). Private to peakcast_model.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge_container.hpp"
#include "peakcast/model/diagnostics.hpp"

namespace peakcast::model::detail {

std::vector<std::string> recipe_names();
std::optional<nlohmann::json> recipe_entry(const std::string& name);

// The recipe as a ConfigContainer document before runtime_config_update (BridgeDocument::resolved
// false), with the world size of its name and the GPU of its folder.
std::optional<BridgeDocument> recipe_document(const std::string& name, Diagnostics& out, bool vocab_given = false);

}  // namespace peakcast::model::detail
