// Least squares for the residual memory terms, and error statistics.
#include "peakcast/calibration/fit.hpp"

#include "peakcast/calibration/record.hpp"
#include "peakcast/model/spec_parser.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

namespace peakcast::calibration {

StackFit fit_stack(const std::string& stack, const std::vector<FitPoint>& points) {
  StackFit f;
  f.stack = stack;
  f.n = static_cast<int>(points.size());
  if (points.empty()) return f;
  // measured - simulated = X beta; one column today (framework_fixed). Kept as a design matrix so
  // a further named term is one more column.
  Eigen::MatrixXd x(f.n, 1);
  Eigen::VectorXd y(f.n);
  for (int i = 0; i < f.n; ++i) {
    x(i, 0) = 1.0;
    y(i) = points[i].measured - points[i].simulated;
  }
  const Eigen::VectorXd beta = x.colPivHouseholderQr().solve(y);
  f.framework_fixed = beta(0);
  double ss = 0, ss_rel = 0;
  for (int i = 0; i < f.n; ++i) {
    const double r = y(i) - (x.row(i) * beta)(0);
    f.residuals.push_back(r);
    ss += r * r;
    ss_rel += (r / points[i].measured) * (r / points[i].measured);
  }
  const int dof = std::max(1, f.n - static_cast<int>(beta.size()));
  f.sigma = std::sqrt(ss / dof);
  f.relative_sigma = std::sqrt(ss_rel / dof);
  return f;
}

ErrorStats error_stats(std::vector<double> e) {
  ErrorStats s;
  s.n = static_cast<int>(e.size());
  if (e.empty()) return s;
  std::sort(e.begin(), e.end());
  const auto quantile = [&](double q) {  // linear interpolation between order statistics
    const double pos = q * (e.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const auto hi = std::min(lo + 1, e.size() - 1);
    return e[lo] + (pos - lo) * (e[hi] - e[lo]);
  };
  s.median = quantile(0.5);
  s.p90 = quantile(0.9);
  s.worst = e.back();
  s.within_10 = static_cast<double>(std::upper_bound(e.begin(), e.end(), 0.10) - e.begin()) / static_cast<double>(e.size());
  return s;
}

RoutingFit fit_routing(const std::vector<Record>& records) {
  std::map<std::string, std::pair<double, RoutingFit::Spread>> acc;  // sum of squares, counts
  for (const auto& r : records) {
    if (r.measured.first_iteration_layer_loads.empty()) continue;
    const auto parsed = model::parse_run_spec(r.spec_json);
    if (!parsed.spec) continue;
    const model::ModelSpec& m = parsed.spec->model;
    const std::int64_t ep = m.expert_model_parallel_size, experts = m.num_moe_experts.value_or(0);
    if (ep <= 1 || experts < ep) continue;
    // expandable_segments records repeat cases of the other corpora for the allocator (same seed,
    // same routing): counting them would weigh those layers twice.
    if (parsed.spec->cluster.expandable_segments) continue;
    // A layer whose tokens all went to the same top-k experts routed identical inputs (a fake
    // process group's stand-in data), not an untrained router's spread.
    if (r.measured.first_iteration_min_active_experts &&
        *r.measured.first_iteration_min_active_experts <= m.moe_router_topk) continue;
    // Under ETP the harness's fake process group fills the other ETP ranks' gathered rows with
    // stand-in data, which then reaches the later layers' routers: not an untrained router's spread.
    // (All our ETP records are fake-process-group runs, calibration/data/h200_etp.jsonl.)
    if (model::derive(*parsed.spec).etp > 1) continue;
    const std::string& score = m.moe_router_score_function;
    const double local = static_cast<double>(experts / ep);
    auto& [ss, spread] = acc[score];
    ++spread.records;
    for (double l : r.measured.first_iteration_layer_loads) {
      ss += (l - 1.0) * (l - 1.0) * local;
      ++spread.layers;
    }
  }
  RoutingFit f;
  for (auto& [score, v] : acc) {
    v.second.expert_load_sigma = std::sqrt(v.first / v.second.layers);
    f.by_score_function.emplace_back(score, v.second);
  }
  return f;
}

ReservedFit fit_reserved(const std::vector<Record>& records, bool expandable_segments) {
  std::vector<double> ratios;
  for (const auto& r : records) {
    const auto& m = r.measured;
    if (m.oom || !m.peak_allocated_bytes || !m.peak_reserved_bytes || *m.peak_allocated_bytes <= 0) continue;
    const auto parsed = model::parse_run_spec(r.spec_json);
    if (!parsed.spec || parsed.spec->cluster.expandable_segments != expandable_segments) continue;
    // A graph pool is reserved beside the allocator's cache: predict adds it to the ratio's estimate.
    if (parsed.spec->model.cuda_graph_impl != model::CudaGraphImpl::none) continue;
    ratios.push_back(static_cast<double>(*m.peak_reserved_bytes) / static_cast<double>(*m.peak_allocated_bytes));
  }
  // The same order statistics as the error report: median, 90th percentile and largest.
  const ErrorStats s = error_stats(std::move(ratios));
  return {s.n, s.median, s.p90, s.worst};
}

std::string profile_json(const std::vector<StackFit>& fits, const std::string& default_stack,
                         const std::vector<std::string>& corpus_files, const RoutingFit& routing, const ReservedFit& reserved,
                         const ReservedFit& reserved_expandable) {
  nlohmann::json by = nlohmann::json::object();
  const StackFit* def = nullptr;
  for (const auto& f : fits) {
    by[f.stack] = {{"framework_fixed_bytes", std::llround(f.framework_fixed)},
                   {"residual_sigma_bytes", std::llround(f.sigma)},
                   {"peak_relative_sigma", f.relative_sigma},
                   {"records", f.n}};
    if (f.stack == default_stack) def = &f;
  }
  nlohmann::json j;
  j["profile"] = "default";
  j["description"] =
      "Written by `peakcast calibrate`. framework_fixed_bytes: least-squares constant of measured - simulated "
      "whole-run peaks (after the named workspaces of sim/framework_fixed.hpp), per "
      "transformer_impl (memory.by_transformer_impl); the top-level value is the '" +
      default_stack +
      "' stack's (0 when that stack has no measured records). peak_relative_sigma: residual spread "
      "(one sigma, relative) for prediction intervals; OOM-safe bound = prediction + 2 sigma.";
  j["corpus"] = corpus_files;
  j["memory"] = {{"framework_fixed_bytes", def ? std::llround(def->framework_fixed) : 0},
                 {"activation_scale", 1.0},
                 {"peak_relative_sigma", def ? def->relative_sigma : 0.0},
                 {"residual_sigma_bytes", def ? std::llround(def->sigma) : 0},
                 {"by_transformer_impl", by}};
  if (reserved.records > 0) {
    j["memory"]["reserved_over_allocated"] = {
        {"description",
         "max_memory_reserved() / max_memory_allocated() of whole measured runs (PyTorch's caching "
         "allocator, default settings, no expandable_segments): quantiles over the records. predict "
         "multiplies a rank's allocated peak by them for its reserved estimate and warns when the p90 "
         "one no longer fits."},
        {"median", reserved.median},
        {"p90", reserved.p90},
        {"max", reserved.max},
        {"records", reserved.records}};
  }
  if (reserved_expandable.records > 0) {
    j["memory"]["reserved_over_allocated_expandable"] = {
        {"description",
         "The same ratio for runs with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (the spec's "
         "cluster.expandable_segments); predict uses it for such specs."},
        {"median", reserved_expandable.median},
        {"p90", reserved_expandable.p90},
        {"max", reserved_expandable.max},
        {"records", reserved_expandable.records}};
  }
  if (!routing.by_score_function.empty()) {
    nlohmann::json by = nlohmann::json::object();
    for (const auto& [score, sp] : routing.by_score_function)
      by[score] = {{"untrained_expert_load_sigma", sp.expert_load_sigma}, {"layers", sp.layers}, {"records", sp.records}};
    j["moe_routing"] = {
        {"description",
         "untrained_expert_load_sigma, per router score function: root mean square of (layer load - 1) x "
         "sqrt(local experts) over the MoE layers of the first iterations measured with expert parallelism "
         "(the router as initialised; a layer's load is received / balanced rows on the rank). predict "
         "--moe-busiest-rank turns it into the busiest expert-parallel rank's load."},
        {"by_score_function", by}};
  }
  return j.dump(2) + "\n";
}

}  // namespace peakcast::calibration

#include "peakcast/model/embedded_configs.hpp"

namespace peakcast::calibration {

double StackTerms::for_stack(const std::string& stack) const {
  for (const auto& [s, v] : by_stack)
    if (s == stack) return v;
  return top_level;
}

StackTerms stack_terms(const std::string& profile_text) {
  StackTerms t;
  std::string text = profile_text;
  if (text.empty()) {
    const auto e = model::embedded_config("calibration/default.json");
    if (!e) return t;
    text = std::string(*e);
  }
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("memory")) return t;
  const auto& m = j.at("memory");
  t.top_level = m.value("framework_fixed_bytes", 0.0);
  if (m.contains("by_transformer_impl"))
    for (const auto& [k, v] : m.at("by_transformer_impl").items()) t.by_stack.emplace_back(k, v.value("framework_fixed_bytes", 0.0));
  return t;
}

}  // namespace peakcast::calibration
