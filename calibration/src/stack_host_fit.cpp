#include "peakcast/calibration/stack_host_fit.hpp"
#include "profile_object.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

#include "peakcast/calibration/evaluate.hpp"
#include "peakcast/calibration/time_validation.hpp"
#include "peakcast/sim/prediction.hpp"

namespace peakcast::calibration {

namespace {

// Search box: a TE call costs between a quarter and eight times a local one; a checkpoint call up
// to 3 ms (the local stack's is 0.77 ms). Coarse steps, then two refinements around the best cell.
constexpr double kScaleMin = 0.25, kScaleMax = 8.0, kScaleStep = 0.25;
constexpr double kCheckpointMaxS = 3e-3, kCheckpointStepS = 1e-4;
constexpr int kRefinements = 2;

struct Timed {
  const Record* record = nullptr;
  model::RunSpec spec;
  bool fitted = false;
  std::optional<std::size_t> control;  // index of the group's no-recompute (or first timed) row
};

double predicted_step(const Timed& t, const sim::FittedConstants& c) {
  sim::Predictor p(t.spec, c);
  sim::PredictOptions time_only;
  time_only.replay_allocator = false;  // the step time does not depend on the allocator replay
  return p.run(time_only).step_time_s;
}

struct Best {
  double scale = 1, checkpoint_s = 0, error = std::numeric_limits<double>::infinity();
};

double objective(const std::vector<Timed>& ts, const std::vector<bool>& use, const sim::FittedConstants& local, double k, double c) {
  const auto consts = with_stack_host_terms(local, k, c);
  double e = 0;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    if (!use[i]) continue;
    const double r = predicted_step(ts[i], consts) / *ts[i].record->measured.step_time_s - 1.0;
    e += r * r;
  }
  return e;
}

Best grid_fit(const std::vector<Timed>& ts, const std::vector<bool>& use, const sim::FittedConstants& local) {
  Best b;
  double k_lo = kScaleMin, k_hi = kScaleMax, k_step = kScaleStep;
  double c_lo = 0, c_hi = kCheckpointMaxS, c_step = kCheckpointStepS;
  for (int round = 0; round <= kRefinements; ++round) {
    const int nk = static_cast<int>(std::lround((k_hi - k_lo) / k_step));
    const int nc = static_cast<int>(std::lround((c_hi - c_lo) / c_step));
    for (int i = 0; i <= nk; ++i) {
      for (int j = 0; j <= nc; ++j) {
        const double k = k_lo + i * k_step, c = c_lo + j * c_step;
        const double e = objective(ts, use, local, k, c);
        if (e < b.error) b = {k, c, e};
      }
    }
    k_lo = std::max(kScaleMin, b.scale - k_step);
    k_hi = std::min(kScaleMax, b.scale + k_step);
    c_lo = std::max(0.0, b.checkpoint_s - c_step);
    c_hi = std::min(kCheckpointMaxS, b.checkpoint_s + c_step);
    k_step /= 10;
    c_step /= 10;
  }
  return b;
}

}  // namespace

sim::FittedConstants with_local_host_terms(sim::FittedConstants stack, const sim::FittedConstants& local) {
  stack.host_forward_s_per_call = local.host_forward_s_per_call;
  stack.host_backward_s_per_call = local.host_backward_s_per_call;
  stack.host_s_per_microbatch = local.host_s_per_microbatch;
  stack.host_s_per_checkpoint = local.host_s_per_checkpoint;
  return stack;
}

sim::FittedConstants with_stack_host_terms(sim::FittedConstants c, double host_scale, double host_s_per_checkpoint) {
  c.host_forward_s_per_call *= host_scale;
  c.host_backward_s_per_call *= host_scale;
  c.host_s_per_microbatch *= host_scale;
  c.host_s_per_checkpoint = host_s_per_checkpoint;
  return c;
}

StackHostFit fit_stack_host_terms(const std::vector<Record>& records, const std::vector<std::string>& fit_groups,
                                  const sim::FittedConstants& local_terms, const std::string& stack) {
  StackHostFit out;
  out.stack = stack;
  std::vector<Timed> ts;
  for (const auto& r : records) {
    if (!r.measured.step_time_s || r.measured.oom) continue;
    std::string why;
    auto spec = record_spec(r, &why);
    if (!spec) {
      out.notes.push_back(r.name + ": " + why);
      continue;
    }
    const bool local = spec->model.transformer_impl == model::TransformerImpl::local;
    if ((stack == "local") != local) continue;
    const bool fitted = std::find(fit_groups.begin(), fit_groups.end(), r.group) != fit_groups.end();
    ts.push_back({&r, std::move(*spec), fitted, std::nullopt});
  }
  // Each row's control: its group's row without recompute, else the group's first timed row.
  for (std::size_t i = 0; i < ts.size(); ++i)
    ts[i].control = control_row(
        ts.size(), i, [&](std::size_t a, std::size_t b) { return ts[a].record->group == ts[b].record->group; },
        [&](std::size_t j) { return runs_without_recompute(ts[j].spec); });
  std::vector<bool> use(ts.size());
  for (std::size_t i = 0; i < ts.size(); ++i) use[i] = ts[i].fitted;
  out.records = static_cast<int>(std::count(use.begin(), use.end(), true));
  if (out.records < 3) {
    out.notes.push_back("fewer than 3 timed records in the fitted groups: " + stack + " host terms not fitted");
    return out;
  }
  const Best b = grid_fit(ts, use, local_terms);
  out.host_scale = b.scale;
  out.host_s_per_checkpoint = b.checkpoint_s;
  out.rms_relative_error = std::sqrt(b.error / out.records);
  const auto consts = with_stack_host_terms(local_terms, b.scale, b.checkpoint_s);
  std::vector<double> pred(ts.size());
  for (std::size_t i = 0; i < ts.size(); ++i) pred[i] = predicted_step(ts[i], consts);
  for (std::size_t i = 0; i < ts.size(); ++i) {
    StackHostPoint p;
    p.name = ts[i].record->name;
    p.group = ts[i].record->group;
    p.fitted = ts[i].fitted;
    p.measured_step_s = *ts[i].record->measured.step_time_s;
    p.predicted_step_s = pred[i];
    const std::size_t c = *ts[i].control;
    p.has_control = c != i;
    if (p.has_control) {
      p.measured_overhead = p.measured_step_s / *ts[c].record->measured.step_time_s - 1.0;
      p.predicted_overhead = pred[i] / pred[c] - 1.0;
      if (p.fitted) {
        // Refit without this row (its control stays in: the overhead is measured against it).
        auto loo = use;
        loo[i] = false;
        const Best lb = grid_fit(ts, loo, local_terms);
        const auto lc = with_stack_host_terms(local_terms, lb.scale, lb.checkpoint_s);
        p.loo_predicted_overhead = predicted_step(ts[i], lc) / predicted_step(ts[c], lc) - 1.0;
      } else {
        p.loo_predicted_overhead = p.predicted_overhead;
      }
    }
    out.points.push_back(p);
  }
  return out;
}

std::string with_stack_host_terms_json(const std::string& time_profile_json, const StackHostFit& fit,
                                       const sim::FittedConstants& local_terms, const std::string& source) {
  auto j = detail::profile_object(time_profile_json);
  const auto c = with_stack_host_terms(local_terms, fit.host_scale, fit.host_s_per_checkpoint);
  nlohmann::json held_out = nlohmann::json::array(), fitted = nlohmann::json::array();
  for (const auto& p : fit.points) (p.fitted ? fitted : held_out).push_back(p.name);
  j["step"]["by_transformer_impl"][fit.stack] = {
      {"description",
       "Written by `peakcast calibrate --stack-timing`: this stack's host costs, the local stack's per-call forward, "
       "backward and micro-batch costs times host_scale and its own cost per checkpoint call, fitted (relative least "
       "squares of step time, coarse-to-fine grid) on its published step times; GPU, collective and optimizer terms "
       "are the local fit's."},
      {"source", source},
      {"host_scale", fit.host_scale},
      {"host_forward_s_per_call", c.host_forward_s_per_call},
      {"host_backward_s_per_call", c.host_backward_s_per_call},
      {"host_s_per_microbatch", c.host_s_per_microbatch},
      {"host_s_per_checkpoint", c.host_s_per_checkpoint},
      {"rms_relative_step_error", fit.rms_relative_error},
      {"fitted_records", fitted},
      {"held_out_records", held_out}};
  return j.dump(2) + "\n";
}

}  // namespace peakcast::calibration
