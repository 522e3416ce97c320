#include "peakcast/calibration/attention_fit.hpp"
#include "profile_object.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

namespace peakcast::calibration {

namespace {

// min sum ((t0 + F / R) / t - 1)^2 over (t0, 1/R): linear least squares in the two unknowns.
AttentionDirectionFit fit_direction(const std::vector<double>& flops, const std::vector<double>& times, double peak) {
  AttentionDirectionFit f;
  const auto n = static_cast<Eigen::Index>(flops.size());
  Eigen::MatrixXd A(n, 2);
  Eigen::VectorXd y = Eigen::VectorXd::Ones(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    A(i, 0) = 1.0 / times[static_cast<std::size_t>(i)];
    A(i, 1) = flops[static_cast<std::size_t>(i)] / times[static_cast<std::size_t>(i)];
  }
  const Eigen::Vector2d x = A.colPivHouseholderQr().solve(y);
  f.s_per_call = x(0);
  f.rate = x(1) > 0 ? 1.0 / x(1) : 0.0;
  f.efficiency = f.rate / peak;
  for (std::size_t i = 0; i < flops.size(); ++i) {
    const double pred = f.s_per_call + flops[i] * x(1);
    f.worst_relative_error = std::max(f.worst_relative_error, std::abs(pred / times[i] - 1.0));
  }
  return f;
}

}  // namespace

AttentionFit fit_fused_attention(const std::string& text, double peak_flops, double ceiling_gemm_flops,
                                 const std::string& backend) {
  const auto j = nlohmann::json::parse(text);
  AttentionFit out;
  out.backend = backend;
  out.device = j.value("device", "");
  out.driver = j.value("driver", "");
  out.torch = j.value("torch", "");
  out.cuda = j.value("cuda", "");
  std::vector<double> f, tf, tb;
  for (const auto& c : j.at("cases")) {
    if (c.value("backend", "") != backend || c.contains("error")) continue;
    const double flops = c.value("fwd_flops", 0.0), fwd = c.value("fwd_s", 0.0), bwd = c.value("bwd_s", 0.0);
    if (flops <= 0 || fwd <= 0 || bwd <= 0) continue;
    f.push_back(flops);
    tf.push_back(fwd);
    tb.push_back(bwd);
  }
  out.cases = static_cast<int>(f.size());
  if (out.cases < 3) {
    out.violations.push_back("fewer than 3 timed " + backend + " cases");
    return out;
  }
  out.forward = fit_direction(f, tf, peak_flops);
  out.backward = fit_direction(f, tb, peak_flops);
  const auto check = [&](const char* name, const AttentionDirectionFit& d) {
    if (d.rate <= 0 || d.s_per_call < 0) out.violations.push_back(std::string(name) + ": non-physical fit (rate or fixed part <= 0)");
    // The backward rate is per forward FLOP, so only the forward is held to the matrix ceiling.
    if (ceiling_gemm_flops > 0 && name == std::string("forward") && d.rate > ceiling_gemm_flops * 1.02) {
      std::ostringstream s;
      s << name << " fused-attention rate " << d.rate << " exceeds the measured GEMM ceiling " << ceiling_gemm_flops;
      out.violations.push_back(s.str());
    }
  };
  check("forward", out.forward);
  check("backward", out.backward);
  return out;
}

std::string with_fused_attention(const std::string& time_profile_json, const AttentionFit& fit, const std::string& source) {
  auto j = detail::profile_object(time_profile_json);
  j["fused_attention"] = {
      {"description",
       "Written by `peakcast calibrate --attention`: cuDNN fused attention (PyTorch SDPA, the kernels Transformer "
       "Engine's FusedAttention runs), causal, batch 1, at the presets' per-rank shapes. Per call: s_per_call + "
       "forward FLOPs / (efficiency x the preset's bf16 dense peak), forward and backward separately (the backward "
       "rate counts forward FLOPs), relative least squares."},
      {"source", {{"file", source}, {"device", fit.device}, {"driver", fit.driver}, {"torch", fit.torch}, {"cuda", fit.cuda}, {"backend", fit.backend}, {"cases", fit.cases}}},
      {"forward_efficiency", fit.forward.efficiency},
      {"forward_s_per_call", fit.forward.s_per_call},
      {"forward_worst_relative_error", fit.forward.worst_relative_error},
      {"backward_efficiency", fit.backward.efficiency},
      {"backward_s_per_call", fit.backward.s_per_call},
      {"backward_worst_relative_error", fit.backward.worst_relative_error}};
  return j.dump(2) + "\n";
}

}  // namespace peakcast::calibration
