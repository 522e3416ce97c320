#pragma once
// Warnings for keys that change memory but are not simulated (configs/schema/memory_effect.json).
// Private to peakcast_model.
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "peakcast/model/diagnostics.hpp"

namespace peakcast::model::detail {

struct FillContext;

// One warning per unsimulated key that the run sets where it matters.
void warn_unsimulated_keys(const nlohmann::json& doc, const FillContext& ctx, Diagnostics& out);

// Whether an applies_when expression holds for the run (throws std::invalid_argument on a malformed one).
bool applies_when(const std::string& condition, const nlohmann::json& doc, const FillContext& ctx);

// Every applies_when expression of the table, as (section.key, expression).
std::vector<std::pair<std::string, std::string>> unsimulated_conditions();

}  // namespace peakcast::model::detail
