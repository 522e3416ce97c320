#pragma once
// The time profile a fit step adds its section to: the JSON object so far, or an empty one when the
// text is not an object (the first step of a refit).
#include <string>

#include <nlohmann/json.hpp>

namespace peakcast::calibration::detail {

inline nlohmann::json profile_object(const std::string& time_profile_json) {
  auto j = nlohmann::json::parse(time_profile_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) j = nlohmann::json::object();
  return j;
}

}  // namespace peakcast::calibration::detail
