#pragma once
// Op time from work against the GPU preset's ceilings: GEMM and attention FLOPs at a fitted
// fraction of the dense bf16 peak, other ops by bytes moved at a fitted fraction of HBM bandwidth,
// collectives by wire bytes at a fitted fraction of one NVLink direction. The host issues ops
// asynchronously, so a module takes the longer of its GPU time and its host time (calls x fitted
// cost per call), and the sum of both when it blocks the host on the GPU (MoE token counts).
#include "peakcast/model/run_spec.hpp"
#include "peakcast/sim/fitted_constants.hpp"
#include "peakcast/sim/layer_graph.hpp"

namespace peakcast::sim {

class TimeModel {
 public:
  TimeModel(const model::GpuSpec& gpu, const FittedConstants& fitted);

  // GPU-only parts at the microbenchmark's efficiencies (no host term, no in-situ scale), for fits.
  double compute_seconds(const ModuleProfile::Work& w) const;
  // Backward: dgrad + wgrad GEMMs (2x), attention backward (2.5x: recomputes the probabilities),
  // elementwise backward about the forward's traffic twice.
  double backward_compute_seconds(const ModuleProfile::Work& w) const;
  double comm_seconds(double wire_bytes) const;

  // Wall time of a module's forward (or of its replay, given the replayed work) and backward.
  double seconds(const ModuleProfile::Work& w) const;
  double backward_seconds(const ModuleProfile::Work& w) const;

  // Optimizer step: every byte of parameters, gradients and optimizer state read, state and
  // parameters written back, at the fitted optimizer fraction of HBM bandwidth.
  double optimizer_seconds(double touched_bytes) const;

  // Host work outside the modules per micro-batch (the GPU waits for it at micro-batch edges).
  double host_microbatch_seconds() const { return host_microbatch_s_; }

 private:
  double gemm_flops_per_s_ = 0, attention_flops_per_s_ = 0, bytes_per_s_ = 0;
  double movement_bytes_per_s_ = 0;
  double fused_flops_per_s_ = 0, fused_s_per_call_ = 0, fused_backward_flops_per_s_ = 0, fused_backward_s_per_call_ = 0;
  double link_bytes_per_s_ = 0, optimizer_bytes_per_s_ = 0, gpu_scale_ = 1;
  double host_forward_s_ = 0, host_backward_s_ = 0, host_microbatch_s_ = 0, host_checkpoint_s_ = 0;
};

}  // namespace peakcast::sim
