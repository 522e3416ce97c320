#pragma once
// Fused attention time from the H200 measurement (calibration/attention/attention_bench.py ->
// calibration/data/attention_h200.json): cuDNN's fused kernel, causal, forward and backward at the
// per-rank shapes of the presets. Per direction, time = a fixed part per call + FLOPs / rate,
// relative least squares over the cases (small cases do not fill the GPU; a pure rate would make
// them several times too fast).
#include <string>
#include <vector>

namespace peakcast::calibration {

struct AttentionDirectionFit {
  double s_per_call = 0, rate = 0, efficiency = 0;  // efficiency = rate / the preset's bf16 dense peak
  double worst_relative_error = 0;                  // over the fitted cases
};

struct AttentionFit {
  std::string backend = "cudnn";
  int cases = 0;
  AttentionDirectionFit forward, backward;
  std::string device, driver, torch, cuda;
  std::vector<std::string> violations;  // a rate above the measured GEMM ceiling (physically impossible)
};

AttentionFit fit_fused_attention(const std::string& attention_json, double peak_flops, double ceiling_gemm_flops,
                                 const std::string& backend = "cudnn");

// Writes "fused_attention" into the time profile JSON text (keeps everything else).
std::string with_fused_attention(const std::string& time_profile_json, const AttentionFit& fit, const std::string& source);

}  // namespace peakcast::calibration
