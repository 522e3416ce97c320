#pragma once
// The few quantities that have no first-principles size or speed: fixed buffers the framework
// allocates and the efficiency of each op class. They come from a calibration profile under
// configs/calibration/ (written by `peakcast calibrate`), never from code.
#include <string>
#include <utility>
#include <vector>

#include "peakcast/model/units.hpp"

namespace peakcast::sim {

struct FittedConstants {
  std::string profile = "none";  // name of the profile these came from
  // Memory: allocations outside the lifetime graph, per rank.
  // (The cuBLAS workspaces are sized from the spec: framework_fixed.hpp.)
  Bytes framework_fixed;          // persistent allocations no named term accounts for
  double activation_scale = 1.0;  // fitted ratio of measured to simulated activation bytes (1 = none)
  // Time: achieved fraction of the GPU preset's peak, per op class.
  double gemm_efficiency = 0;
  double attention_efficiency = 0;
  double memory_efficiency = 0;  // fraction of HBM bandwidth reached by elementwise/norm ops
  // Fused attention (cuDNN's kernel, as Transformer Engine runs it): time per call = a fixed part
  // plus FLOPs at a fraction of the dense bf16 peak, forward and backward (measured on the H200,
  // calibration/data/attention_h200.json). Zero efficiency: timed like the unfused core.
  double fused_attention_efficiency = 0, fused_attention_s_per_call = 0;
  double fused_attention_backward_efficiency = 0, fused_attention_backward_s_per_call = 0;
  // Row gathers and block copies (MoE permutes, SequentialMLP's cat): fraction of HBM bandwidth
  // (calibration/data/movement_h200.json). Zero: timed like the other memory-bound ops.
  double movement_efficiency = 0;
  // Time, fitted on measured Megatron Core step times (calibration/data/h200_timing.jsonl):
  double host_forward_s_per_call = 0;      // host cost of one forward op call (Python, autograd, launch)
  double host_backward_s_per_call = 0;     // host cost of its backward node
  double host_s_per_microbatch = 0;        // schedule, data and loss host work around each micro-batch
  double host_s_per_checkpoint = 0;        // fixed host cost of one checkpoint call (wrapper, RNG states,
                                           // the nested autograd backward), paid with its replay
  double gpu_time_scale = 1;               // measured / microbenchmark-efficiency GPU time in Megatron runs
  double comm_efficiency = 0;              // fraction of one NVLink direction a TP/EP collective reaches
  double optimizer_memory_efficiency = 0;  // fraction of HBM bandwidth the optimizer step reaches
  // Spread of the fit, for prediction intervals (relative, one sigma).
  double peak_relative_sigma = 0;
  // Reserved over allocated peak in whole measured runs (the caching allocator's cache and
  // fragmentation): median and 90th percentile; 0 when the profile has none.
  double reserved_ratio_median = 0, reserved_ratio_p90 = 0;
  double reserved_ratio_median_expandable = 0, reserved_ratio_p90_expandable = 0;  // expandable_segments runs
  // Untrained routers: spread of one expert's load (per router score function), measured; a rank's
  // layer load spreads by this / sqrt(local experts).
  std::vector<std::pair<std::string, double>> moe_expert_load_sigma;
};

// Loads configs/calibration/<name>.json from the embedded configs; "default" is the shipped one.
// Returns nullopt-equivalent (profile "none", zero constants) when it does not exist.
// `stack` ("transformer_engine" or "local") picks the memory terms fitted for that software stack
// (memory.by_transformer_impl) when the profile has them.
FittedConstants load_fitted_constants(const std::string& name = "default", const std::string& stack = "transformer_engine");

}  // namespace peakcast::sim
