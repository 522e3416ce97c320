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
  fused_flops_per_s_ = peak * f.fused_attention_efficiency;
  movement_bytes_per_s_ = gpu.hbm_bandwidth_gbps * 1e9 * (f.movement_efficiency > 0 ? f.movement_efficiency : f.memory_efficiency);
  fused_s_per_call_ = f.fused_attention_s_per_call;
  fused_backward_flops_per_s_ = peak * f.fused_attention_backward_efficiency;
  fused_backward_s_per_call_ = f.fused_attention_backward_s_per_call;
  bytes_per_s_ = gpu.hbm_bandwidth_gbps * 1e9 * f.memory_efficiency;
  // The preset's NVLink figure is both directions together; a ring collective moves its wire
  // bytes over one direction of each link.
  link_bytes_per_s_ = gpu.nvlink_bandwidth_gbps * 1e9 / 2.0 * f.comm_efficiency;
  optimizer_bytes_per_s_ = gpu.hbm_bandwidth_gbps * 1e9 * f.optimizer_memory_efficiency;
  host_forward_s_ = f.host_forward_s_per_call;
  gpu_scale_ = f.gpu_time_scale > 0 ? f.gpu_time_scale : 1.0;
  host_backward_s_ = f.host_backward_s_per_call;
  host_microbatch_s_ = f.host_s_per_microbatch;
  host_checkpoint_s_ = f.host_s_per_checkpoint;
}

double TimeModel::compute_seconds(const ModuleProfile::Work& w) const {
  double t = 0;
  if (gemm_flops_per_s_ > 0) t += w.gemm_flops / gemm_flops_per_s_;
  if (attention_flops_per_s_ > 0) t += w.attention_flops / attention_flops_per_s_;
  if (bytes_per_s_ > 0) t += w.other_bytes / bytes_per_s_;
  if (movement_bytes_per_s_ > 0) t += w.movement_bytes / movement_bytes_per_s_;
  if (fused_flops_per_s_ > 0) t += w.fused_attention_calls * fused_s_per_call_ + w.fused_attention_flops / fused_flops_per_s_;
  else if (attention_flops_per_s_ > 0) t += w.fused_attention_flops / attention_flops_per_s_;
  return t;
}

double TimeModel::backward_compute_seconds(const ModuleProfile::Work& w) const {
  double t = 0;
  if (gemm_flops_per_s_ > 0) t += w.gemm_backward_flops / gemm_flops_per_s_;
  if (attention_flops_per_s_ > 0) t += kAttentionBackwardFactor * w.attention_flops / attention_flops_per_s_;
  if (bytes_per_s_ > 0) t += kOtherBackwardFactor * w.other_bytes / bytes_per_s_;
  if (movement_bytes_per_s_ > 0) t += kOtherBackwardFactor * w.movement_bytes / movement_bytes_per_s_;
  if (fused_backward_flops_per_s_ > 0)
    t += w.fused_attention_calls * fused_backward_s_per_call_ + w.fused_attention_flops / fused_backward_flops_per_s_;
  else if (attention_flops_per_s_ > 0)
    t += kAttentionBackwardFactor * w.fused_attention_flops / attention_flops_per_s_;
  return t;
}

double TimeModel::comm_seconds(double wire_bytes) const {
  return link_bytes_per_s_ > 0 ? wire_bytes / link_bytes_per_s_ : 0.0;
}

double TimeModel::seconds(const ModuleProfile::Work& w) const {
  const double gpu = gpu_scale_ * compute_seconds(w) + comm_seconds(w.comm_bytes);
  const double host = w.host_calls * host_forward_s_ + w.checkpoint_regions * host_checkpoint_s_;
  return w.host_syncs > 0 ? gpu + host : std::max(gpu, host);
}

double TimeModel::backward_seconds(const ModuleProfile::Work& w) const {
  const double gpu = gpu_scale_ * backward_compute_seconds(w) + comm_seconds(w.backward_comm_bytes);
  return std::max(gpu, w.host_calls * host_backward_s_);
}

double TimeModel::optimizer_seconds(double touched_bytes) const {
  return optimizer_bytes_per_s_ > 0 ? touched_bytes / optimizer_bytes_per_s_ : 0.0;
}

}  // namespace peakcast::sim
