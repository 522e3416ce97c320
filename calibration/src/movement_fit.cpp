#include "peakcast/calibration/movement_fit.hpp"
#include "profile_object.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

namespace peakcast::calibration {

MovementFit fit_movement(const std::string& text, double hbm_bytes_per_s, double ceiling_copy_bytes_per_s) {
  const auto j = nlohmann::json::parse(text);
  MovementFit out;
  out.device = j.value("device", "");
  out.torch = j.value("torch", "");
  double bb = 0, bt = 0;
  std::vector<std::pair<double, double>> pts;
  for (const auto& c : j.at("cases")) {
    const std::string kind = c.value("kind", "");
    if (kind != "gather" && kind != "copy" && kind != "cat") continue;
    const double bytes = c.value("bytes", 0.0), t = c.value("median_s", 0.0);
    if (bytes <= 0 || t <= 0) continue;
    bb += bytes * bytes;
    bt += bytes * t;
    pts.emplace_back(bytes, t);
  }
  out.cases = static_cast<int>(pts.size());
  if (out.cases < 3 || bt <= 0) {
    out.violations.push_back("fewer than 3 timed gather / copy / cat cases");
    return out;
  }
  out.rate = bb / bt;  // time = bytes / rate, least squares through 0
  out.efficiency = out.rate / hbm_bytes_per_s;
  for (const auto& [bytes, t] : pts) out.worst_relative_error = std::max(out.worst_relative_error, std::abs(bytes / out.rate / t - 1.0));
  if (ceiling_copy_bytes_per_s > 0 && out.rate > ceiling_copy_bytes_per_s * 1.02) {
    std::ostringstream s;
    s << "movement rate " << out.rate << " exceeds the measured copy ceiling " << ceiling_copy_bytes_per_s;
    out.violations.push_back(s.str());
  }
  return out;
}

std::string with_movement(const std::string& time_profile_json, const MovementFit& fit, const std::string& source) {
  auto j = detail::profile_object(time_profile_json);
  j["movement"] = {
      {"description",
       "Written by `peakcast calibrate --movement`: row gathers, copies and cat (PyTorch kernels on the H200), "
       "least squares of time = bytes read + written / rate; efficiency = rate / the preset's HBM bandwidth. Used for "
       "MoE permute / sort / unpermute, SequentialMLP's cat and Mamba's block transposes."},
      {"source", {{"file", source}, {"device", fit.device}, {"torch", fit.torch}, {"cases", fit.cases}}},
      {"efficiency", fit.efficiency},
      {"gbps", fit.rate / 1e9},
      {"worst_relative_error", fit.worst_relative_error}};
  return j.dump(2) + "\n";
}

}  // namespace peakcast::calibration
