#include "peakcast/sim/time_model.hpp"

#include <algorithm>

namespace peakcast::sim {

namespace {
constexpr double kAttentionBackwardFactor = 2.5;  // FlashAttention-2: 5 matmuls backward vs 2 forward
constexpr double kOtherBackwardFactor = 2.0;      // reads saved input and output grad, writes input grad
}  // namespace

TimeModel::TimeModel(const model::GpuSpec& gpu, const FittedConstants& f) {
  const double peak = gpu.bf16_dense_tflops * 1e12;
  gemm_flops_per_s_ = peak * f.gemm_efficiency;
  attention_flops_per_s_ = peak * f.attention_efficiency;
  bytes_per_s_ = gpu.hbm_bandwidth_gbps * 1e9 * f.memory_efficiency;
}

double TimeModel::seconds(const ModuleProfile::Work& w) const {
  double t = 0;
  if (gemm_flops_per_s_ > 0) t += w.gemm_flops / gemm_flops_per_s_;
  if (attention_flops_per_s_ > 0) t += w.attention_flops / attention_flops_per_s_;
  if (bytes_per_s_ > 0) t += w.other_bytes / bytes_per_s_;
  return t;
}

double TimeModel::backward_seconds(const ModuleProfile::Work& w) const {
  double t = 0;
  if (gemm_flops_per_s_ > 0) t += 2.0 * w.gemm_flops / gemm_flops_per_s_;
  if (attention_flops_per_s_ > 0) t += kAttentionBackwardFactor * w.attention_flops / attention_flops_per_s_;
  if (bytes_per_s_ > 0) t += kOtherBackwardFactor * w.other_bytes / bytes_per_s_;
  return t;
}

}  // namespace peakcast::sim
