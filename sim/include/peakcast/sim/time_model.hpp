#pragma once
// Op time from work against the GPU preset's ceilings: GEMM and attention FLOPs at a fitted
// fraction of the dense bf16 peak, other ops by bytes moved at a fitted fraction of HBM bandwidth.
#include "peakcast/model/run_spec.hpp"
#include "peakcast/sim/fitted_constants.hpp"
#include "peakcast/sim/layer_graph.hpp"

namespace peakcast::sim {

class TimeModel {
 public:
  TimeModel(const model::GpuSpec& gpu, const FittedConstants& fitted);

  double seconds(const ModuleProfile::Work& w) const;
  // Backward: dgrad + wgrad GEMMs (2x), attention backward (2.5x: recomputes the probabilities),
  // elementwise backward about the forward's traffic twice.
  double backward_seconds(const ModuleProfile::Work& w) const;

 private:
  double gemm_flops_per_s_ = 0, attention_flops_per_s_ = 0, bytes_per_s_ = 0;
};

}  // namespace peakcast::sim
