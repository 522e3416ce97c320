#pragma once
// Op-class efficiencies from the CUDA replay microbenchmark (calibration/data/microbench_h200.json):
// per-op median time vs FLOPs (GEMM, attention BMM) or bytes moved (everything else).
#include <string>
#include <vector>

namespace peakcast::calibration {

struct ClassFit {
  int ops = 0;
  double rate = 0;        // fitted FLOP/s or byte/s (least squares of time = work / rate)
  double efficiency = 0;  // rate / datasheet peak of the GPU preset
  double best_op_rate = 0;
};

struct TimeFit {
  ClassFit gemm, attention, memory;
  double ceiling_gemm_flops = 0, ceiling_copy_bytes = 0;  // measured ceilings in the file
  std::string device, driver, cuda;
  std::vector<std::string> violations;  // fitted rates above the measured ceilings (physically impossible)
};

// peak_flops / peak_bytes: the GPU preset's datasheet figures the simulator scales.
TimeFit fit_time_efficiencies(const std::string& microbench_json, double peak_flops, double peak_bytes_per_s);

std::string time_profile_json(const TimeFit& fit, const std::string& source_file, const std::string& gpu_preset);

}  // namespace peakcast::calibration
