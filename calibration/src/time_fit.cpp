// time_i = work_i / rate, least squares over the ops of one class (weights large ops, which carry
// the step time). GEMM: "gemm"; attention: the unfused core's "bmm"; memory: softmax, norm,
// swiglu, elementwise, copy by bytes read + written.
#include "peakcast/calibration/time_fit.hpp"

#include <algorithm>
#include <sstream>

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

namespace peakcast::calibration {

namespace {

ClassFit fit_class(const nlohmann::json& ops, const std::vector<std::string>& kinds, const char* work_key, double peak) {
  std::vector<double> w, t;
  ClassFit f;
  for (const auto& op : ops) {
    const auto kind = op.value("kind", "");
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) continue;
    const double work = op.value(work_key, 0.0), time = op.value("median_s", 0.0);
    if (work <= 0 || time <= 0) continue;
    w.push_back(work);
    t.push_back(time);
    f.best_op_rate = std::max(f.best_op_rate, work / time);
  }
  f.ops = static_cast<int>(w.size());
  if (w.empty()) return f;
  const Eigen::Map<Eigen::VectorXd> x(w.data(), static_cast<Eigen::Index>(w.size()));
  const Eigen::Map<Eigen::VectorXd> y(t.data(), static_cast<Eigen::Index>(t.size()));
  const double seconds_per_unit = x.dot(y) / x.dot(x);
  f.rate = 1.0 / seconds_per_unit;
  f.efficiency = f.rate / peak;
  return f;
}

}  // namespace

TimeFit fit_time_efficiencies(const std::string& text, double peak_flops, double peak_bytes) {
  const auto j = nlohmann::json::parse(text);
  TimeFit out;
  out.device = j.value("device", "");
  out.driver = j.value("driver", "");
  out.cuda = j.value("cuda", "");
  const auto& c = j.at("ceilings");
  out.ceiling_gemm_flops = c.value("gemm_bf16_tflops", 0.0) * 1e12;
  out.ceiling_copy_bytes = c.value("copy_gbps", 0.0) * 1e9;
  const auto& ops = j.at("ops");
  out.gemm = fit_class(ops, {"gemm"}, "flops", peak_flops);
  out.attention = fit_class(ops, {"bmm"}, "flops", peak_flops);
  out.memory = fit_class(ops, {"softmax", "norm", "swiglu", "elementwise", "copy"}, "bytes", peak_bytes);
  const auto check = [&](const char* name, const ClassFit& f, double ceiling) {
    if (ceiling > 0 && f.rate > ceiling * 1.02) {
      std::ostringstream s;
      s << name << " fitted rate " << f.rate << " exceeds the measured ceiling " << ceiling;
      out.violations.push_back(s.str());
    }
  };
  check("gemm", out.gemm, out.ceiling_gemm_flops);
  check("attention", out.attention, out.ceiling_gemm_flops);
  check("memory", out.memory, out.ceiling_copy_bytes);
  return out;
}

std::string time_profile_json(const TimeFit& f, const std::string& source, const std::string& gpu_preset) {
  nlohmann::json j;
  j["profile"] = "time-h200-microbench";
  j["description"] =
      "Written by `peakcast calibrate --microbench`. Each efficiency = least-squares rate of "
      "(median time = work / rate) over that op class of the CUDA replay microbenchmark, divided by "
      "the " +
      gpu_preset +
      " preset's datasheet peak (bf16 dense FLOP/s for gemm and attention, HBM "
      "bytes/s for memory). gemm: cuBLASLt GEMMs; attention: the unfused core's batched GEMMs; memory: "
      "softmax, RMSNorm, SwiGLU, elementwise, copy (bytes read + written). Checked: every fitted rate "
      "is at most the measured ceilings below.";
  j["source"] = {{"file", source}, {"device", f.device}, {"driver", f.driver}, {"cuda", f.cuda}, {"gpu_preset", gpu_preset}, {"measured_ceiling_gemm_bf16_tflops", f.ceiling_gemm_flops / 1e12}, {"measured_ceiling_copy_gbps", f.ceiling_copy_bytes / 1e9}};
  j["gemm_efficiency"] = f.gemm.efficiency;
  j["attention_efficiency"] = f.attention.efficiency;
  j["memory_efficiency"] = f.memory.efficiency;
  j["fit"] = {{"gemm", {{"ops", f.gemm.ops}, {"tflops", f.gemm.rate / 1e12}, {"best_op_tflops", f.gemm.best_op_rate / 1e12}}},
              {"attention", {{"ops", f.attention.ops}, {"tflops", f.attention.rate / 1e12}, {"best_op_tflops", f.attention.best_op_rate / 1e12}}},
              {"memory", {{"ops", f.memory.ops}, {"gbps", f.memory.rate / 1e9}, {"best_op_gbps", f.memory.best_op_rate / 1e9}}}};
  return j.dump(2) + "\n";
}

}  // namespace peakcast::calibration
