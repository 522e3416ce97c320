#include "peakcast/calibration/step_fit.hpp"
#include "profile_object.hpp"

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

namespace peakcast::calibration {

namespace {
constexpr double kHostBoundComputeFraction = 0.05;
constexpr double kGpuBoundFactor = 3.0;  // GPU time at least 3x the host time: the host hides
// Optimizer steps touching less than this are dominated by per-tensor host work, not HBM traffic
// (the shrunk runs' 0.1-0.6 GB steps take 3-48 ms).
constexpr double kOptimizerFitMinTouchedBytes = 1e9;
}  // namespace

StepFit fit_step_terms(const std::vector<Evaluation>& evals, double hbm_bytes_per_s, double link_bytes_per_s) {
  StepFit f;
  // Host terms.
  std::vector<const Evaluation*> host;
  for (const auto& e : evals) {
    const auto& m = e.record->measured;
    if (!m.fwd_bwd_time_s || e.predicted_time.microbatches <= 0) continue;
    if (e.predicted_time.comm_wire_bytes == 0 && e.predicted_time.compute_s < kHostBoundComputeFraction * *m.fwd_bwd_time_s)
      host.push_back(&e);
  }
  if (host.size() >= 4) {
    Eigen::MatrixXd A(host.size(), 4);
    Eigen::VectorXd y = Eigen::VectorXd::Ones(static_cast<Eigen::Index>(host.size()));
    for (std::size_t i = 0; i < host.size(); ++i) {
      const auto& t = host[i]->predicted_time;
      const double meas = *host[i]->record->measured.fwd_bwd_time_s;
      // Relative residuals: every record weighs the same whatever its length.
      A(static_cast<Eigen::Index>(i), 0) = t.host_forward_calls / meas;
      A(static_cast<Eigen::Index>(i), 1) = t.host_backward_calls / meas;
      A(static_cast<Eigen::Index>(i), 2) = t.microbatches / meas;
      A(static_cast<Eigen::Index>(i), 3) = t.checkpoint_regions / meas;
    }
    const Eigen::VectorXd x = A.colPivHouseholderQr().solve(y);
    f.host_forward_s_per_call = x(0);
    f.host_backward_s_per_call = x(1);
    f.host_s_per_microbatch = x(2);
    f.host_s_per_checkpoint = x(3);
    f.host_records = static_cast<int>(host.size());
    if (x.minCoeff() < 0) f.notes.push_back("host fit has a negative term; records do not separate the four terms");
  } else {
    f.notes.push_back("fewer than 4 host-bound records: host terms not fitted");
  }
  const auto host_seconds = [&f](const sim::RankPrediction::StepTime& t) {
    return t.host_forward_calls * f.host_forward_s_per_call + t.host_backward_calls * f.host_backward_s_per_call +
           t.checkpoint_regions * f.host_s_per_checkpoint;
  };
  // In-situ GPU time scale: the GPU-bound runs without collectives, measured (less the per-micro-
  // batch host time) against the microbenchmark-efficiency compute time, least squares through 0.
  double yx = 0, xx = 0;
  for (const auto& e : evals) {
    const auto& m = e.record->measured;
    const auto& t = e.predicted_time;
    if (!m.fwd_bwd_time_s || t.comm_wire_bytes > 0 || t.compute_s < kGpuBoundFactor * host_seconds(t)) continue;
    const double y = *m.fwd_bwd_time_s - t.microbatches * f.host_s_per_microbatch;
    yx += y * t.compute_s;
    xx += t.compute_s * t.compute_s;
    ++f.gpu_records;
  }
  f.gpu_time_scale = xx > 0 ? yx / xx : 1.0;
  // Comm efficiency from GPU-bound records with collectives.
  double wire_sum = 0, exposed_sum = 0;
  for (const auto& e : evals) {
    const auto& m = e.record->measured;
    const auto& t = e.predicted_time;
    if (!m.fwd_bwd_time_s || t.comm_wire_bytes <= 0) continue;
    if (t.compute_s < host_seconds(t)) {
      f.notes.push_back(e.record->name + ": host-bound, not used for the comm fit");
      continue;
    }
    const double exposed = *m.fwd_bwd_time_s - f.gpu_time_scale * t.compute_s - t.microbatches * f.host_s_per_microbatch;
    if (exposed <= 0) {
      f.notes.push_back(e.record->name + ": no time left for collectives, not used for the comm fit");
      continue;
    }
    wire_sum += t.comm_wire_bytes;
    exposed_sum += exposed;
    ++f.comm_records;
  }
  if (f.comm_records > 0 && link_bytes_per_s > 0) f.comm_efficiency = std::min(1.0, wire_sum / exposed_sum / link_bytes_per_s);
  // Optimizer.
  double st = 0, tt = 0;
  for (const auto& e : evals) {
    const auto& m = e.record->measured;
    const double touched = e.predicted_time.optimizer_touched_bytes;
    if (!m.optimizer_time_s || touched < kOptimizerFitMinTouchedBytes) continue;
    st += touched * *m.optimizer_time_s;
    tt += touched * touched;
    ++f.optimizer_records;
  }
  // time = touched x s  =>  s = sum(touched t) / sum(touched^2); rate = 1 / s.
  if (f.optimizer_records > 0 && st > 0 && hbm_bytes_per_s > 0) f.optimizer_memory_efficiency = (tt / st) / hbm_bytes_per_s;
  return f;
}

std::string with_step_terms(const std::string& time_profile_json, const StepFit& f, const std::string& source) {
  auto j = detail::profile_object(time_profile_json);
  j["step"] = {
      {"description",
       "Written by `peakcast calibrate --timing`: host cost per forward op call, per backward op call, "
       "per micro-batch and per checkpoint call (relative least squares over the host-bound shrunk runs), the in-situ GPU "
       "time scale (measured over microbenchmark-efficiency compute time on the GPU-bound runs without collectives), "
       "the fraction of one NVLink direction collectives reach (GPU-bound runs with TP/EP collectives), and the optimizer "
       "step's fraction of HBM bandwidth (least squares over measured optimizer.step() times)."},
      {"source", source},
      {"host_forward_s_per_call", f.host_forward_s_per_call},
      {"host_backward_s_per_call", f.host_backward_s_per_call},
      {"host_s_per_microbatch", f.host_s_per_microbatch},
      {"host_s_per_checkpoint", f.host_s_per_checkpoint},
      {"host_records", f.host_records},
      {"gpu_time_scale", f.gpu_time_scale},
      {"gpu_records", f.gpu_records},
      {"comm_efficiency", f.comm_efficiency},
      {"comm_records", f.comm_records},
      {"optimizer_memory_efficiency", f.optimizer_memory_efficiency},
      {"optimizer_records", f.optimizer_records}};
  return j.dump(2) + "\n";
}

}  // namespace peakcast::calibration
