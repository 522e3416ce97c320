// Fused attention time fitted on the H200 measurement (calibration/data/attention_h200.json).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "../source_file.hpp"
#include "peakcast/calibration/attention_fit.hpp"
#include "peakcast/sim/fitted_constants.hpp"

using namespace peakcast;
using namespace peakcast::calibration;

namespace {
// The h200-141gb preset's bf16 dense peak, which the shipped efficiencies are relative to.
double h200_peak() {
  return nlohmann::json::parse(test::read_source_file("configs/gpus/h200-141gb.json")).at("bf16_dense_tflops").get<double>() * 1e12;
}
constexpr double kGemmCeiling = 784.25e12;  // the microbenchmark's measured 8192^3 GEMM
}  // namespace

TEST_CASE("fused attention fit: physical, close to every measured case, and shipped", "[calibration][time]") {
  const std::string text = test::read_source_file("calibration/data/attention_h200.json");
  const AttentionFit f = fit_fused_attention(text, h200_peak(), kGemmCeiling);
  CHECK(f.violations.empty());
  CHECK(f.cases >= 10);
  CHECK(f.device == "NVIDIA H200");
  // Never faster than the measured GEMM ceiling; a fixed part per call under a millisecond.
  CHECK(f.forward.rate > 0);
  CHECK(f.forward.rate <= kGemmCeiling);
  CHECK(f.forward.s_per_call > 0);
  CHECK(f.forward.s_per_call < 1e-3);
  CHECK(f.backward.s_per_call > 0);
  // The backward recomputes the probabilities and does about 2.5x the forward's matrix work.
  const double ratio = f.forward.rate / f.backward.rate;
  CHECK(ratio > 2.0);
  CHECK(ratio < 3.5);
  // The two-term model reproduces every case to within 30 % (small cases do not fill the GPU).
  CHECK(f.forward.worst_relative_error < 0.30);
  CHECK(f.backward.worst_relative_error < 0.30);
  // Recomputing a case from the file: the largest one, where the per-call part is small.
  const auto j = nlohmann::json::parse(text);
  double best_flops = 0, best_fwd = 0;
  for (const auto& c : j.at("cases"))
    if (c.value("backend", "") == "cudnn" && !c.contains("error") && c.value("fwd_flops", 0.0) > best_flops) {
      best_flops = c.value("fwd_flops", 0.0);
      best_fwd = c.value("fwd_s", 0.0);
    }
  CHECK(f.forward.s_per_call + best_flops / f.forward.rate == Approx(best_fwd).epsilon(0.15));
  // The shipped profile holds this fit.
  const auto shipped = sim::load_fitted_constants("default", "transformer_engine");
  CHECK(shipped.fused_attention_efficiency == Approx(f.forward.efficiency).epsilon(1e-6));
  CHECK(shipped.fused_attention_s_per_call == Approx(f.forward.s_per_call).epsilon(1e-6));
  CHECK(shipped.fused_attention_backward_efficiency == Approx(f.backward.efficiency).epsilon(1e-6));
  CHECK(shipped.fused_attention_backward_s_per_call == Approx(f.backward.s_per_call).epsilon(1e-6));
}
