#pragma once
// The files under configs/, compiled into the binary so `peakcast predict` works from anywhere.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace peakcast::model {

// Text of configs/<relative_path>, e.g. "models/moonlight-16b.json"; nullopt if not shipped.
std::optional<std::string_view> embedded_config(std::string_view relative_path);

// Relative paths of all shipped configs that start with `prefix` (e.g. "models/").
std::vector<std::string> embedded_config_paths(std::string_view prefix);

}  // namespace peakcast::model
