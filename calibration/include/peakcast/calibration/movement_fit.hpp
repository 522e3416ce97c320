#pragma once
// Row gathers and block copies (MoE permute / sort / unpermute, SequentialMLP's cat, Mamba's
// block transposes at micro-batch > 1) from the H200 measurement
// (calibration/attention/movement_bench.py -> calibration/data/movement_h200.json): one rate by
// least squares of time = bytes read + written / rate over the gather, copy and cat cases.
// Element-wise 2-D transposes (0.58 TB/s there) are a different kernel and are not fitted.
#include <string>
#include <vector>

namespace peakcast::calibration {

struct MovementFit {
  int cases = 0;
  double rate = 0, efficiency = 0;  // bytes/s; rate / the preset's HBM bandwidth
  double worst_relative_error = 0;
  std::string device, torch;
  std::vector<std::string> violations;  // above the measured copy ceiling
};

MovementFit fit_movement(const std::string& movement_json, double hbm_bytes_per_s, double ceiling_copy_bytes_per_s);

std::string with_movement(const std::string& time_profile_json, const MovementFit& fit, const std::string& source);

}  // namespace peakcast::calibration
