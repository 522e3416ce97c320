#include "peakcast/sim/moe_routing.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>

#include "peakcast/model/layer_plan.hpp"
#include "peakcast/sim/fitted_constants.hpp"

namespace peakcast::sim {

namespace {

double integrate_max_of_normals(std::int64_t n) {
  // E[max] = integral of x * n * phi(x) * Phi(x)^(n-1) dx, by the trapezoid rule on [-10, 10].
  const double pi = 3.14159265358979323846;
  const int steps = 20000;
  const double lo = -10.0, hi = 10.0, dx = (hi - lo) / steps;
  double sum = 0;
  for (int i = 0; i <= steps; ++i) {
    const double x = lo + i * dx;
    const double phi = std::exp(-0.5 * x * x) / std::sqrt(2 * pi);
    const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
    const double f = x * static_cast<double>(n) * phi * std::pow(cdf, static_cast<double>(n - 1));
    sum += (i == 0 || i == steps) ? 0.5 * f : f;
  }
  return sum * dx;
}

}  // namespace

double expected_max_of_normals(std::int64_t n) {
  if (n <= 1) return 0.0;
  // A 20,001-point integral: computed once per n (plan asks for it on every layout with EP > 1).
  static std::mutex mutex;
  static std::map<std::int64_t, double> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto it = cache.find(n);
  return it != cache.end() ? it->second : cache.emplace(n, integrate_max_of_normals(n)).first->second;
}

double busiest_rank_routing_load(const model::RunSpec& spec, double expert_load_sigma) {
  const std::int64_t ep = spec.model.expert_model_parallel_size;
  if (!spec.model.num_moe_experts || ep <= 1 || expert_load_sigma <= 0) return 1.0;
  const double local_experts = static_cast<double>(std::max<std::int64_t>(1, *spec.model.num_moe_experts / ep));
  const double layer_load_sigma = expert_load_sigma / std::sqrt(local_experts);
  const model::Derived d = model::derive(spec);
  const model::LayerPlan plan = model::build_layer_plan(spec, d);
  std::int64_t fewest = std::numeric_limits<std::int64_t>::max();
  for (const auto& stage : plan.stages) {
    std::int64_t n = 0;
    for (const auto& c : stage.chunks)
      for (const auto& l : c.layers) n += l.ffn == model::FfnKind::moe ? 1 : 0;
    if (n > 0) fewest = std::min(fewest, n);
  }
  if (fewest == std::numeric_limits<std::int64_t>::max()) return 1.0;
  const double load = 1.0 + layer_load_sigma * expected_max_of_normals(ep) / std::sqrt(static_cast<double>(fewest));
  return std::min(load, static_cast<double>(ep));
}

std::optional<double> untrained_expert_load_sigma(const std::string& score_function) {
  static const auto sigmas = load_fitted_constants().moe_expert_load_sigma;  // the embedded profile, parsed once
  for (const auto& [score, sigma] : sigmas)
    if (score == score_function) return sigma;
  return std::nullopt;
}

std::optional<double> untrained_busiest_rank_load(const model::RunSpec& spec) {
  if (!spec.model.num_moe_experts || spec.model.expert_model_parallel_size <= 1) return std::nullopt;
  if (spec.model.moe_router_force_load_balancing) return 1.0;  // random logits: balanced
  const auto sigma = untrained_expert_load_sigma(spec.model.moe_router_score_function);
  if (!sigma) return std::nullopt;
  return busiest_rank_routing_load(spec, *sigma);
}

}  // namespace peakcast::sim
