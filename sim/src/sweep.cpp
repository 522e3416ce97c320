// run_sweep(): one point = parse + validate + predict, on a pool of std::threads that take the
// next point index from an atomic counter; results land in their input slot, so order is kept.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/validate.hpp"
#include "peakcast/sim/sweep.hpp"
#include "worker_pool.hpp"

namespace peakcast::sim {

namespace {

std::string first_error(const model::Diagnostics& diags) {
  for (const auto& d : diags)
    if (d.severity == model::Severity::error) return d.path + ": " + d.message + " [" + d.rule + "]";
  return {};
}

SweepPoint evaluate_point(const model::SpecText& spec_text, const std::vector<std::string>& base_overrides,
                          const std::vector<SweepAxis>& axes, std::size_t index, const SweepOptions& options) {
  SweepPoint pt;
  pt.values.resize(axes.size());
  std::vector<std::string> overrides = base_overrides;
  // Mixed radix, last axis fastest.
  for (std::size_t a = axes.size(); a-- > 0;) {
    const auto& vals = axes[a].values;
    pt.values[a] = vals[index % vals.size()];
    index /= vals.size();
  }
  for (std::size_t a = 0; a < axes.size(); ++a) overrides.push_back(axes[a].key + "=" + pt.values[a]);
  try {
    const model::ParseResult parsed = spec_text.parse(overrides);
    pt.error = first_error(parsed.diagnostics);
    if (!parsed.spec || !pt.error.empty()) {
      if (pt.error.empty()) pt.error = "the spec did not parse";
      return pt;
    }
    pt.error = first_error(model::validate(*parsed.spec));
    if (!pt.error.empty()) return pt;
    PredictOptions popt;
    popt.replay_allocator = options.replay_allocator;
    const Prediction p = predict(*parsed.spec, popt);
    pt.valid = true;
    pt.max_peak = p.max_peak_allocated;
    pt.limit = options.budget.value_or(p.capacity);
    for (const auto& r : p.ranks) {
      pt.peak_with_graph_pool = max(pt.peak_with_graph_pool, r.peak_with_graph_pool);
      pt.graph_pool = max(pt.graph_pool, r.reserved_outside_allocated);
    }
    // The one verdict (verdict.hpp), against the budget when one is given.
    const Verdict v = run_verdict(p, VerdictLimits{options.budget.value_or(Bytes{}), 0.0});
    pt.verdict = v.kind;
    pt.cause = v.cause;
    pt.margin = v.margin;
    pt.fits = v.kind != FitKind::does_not_fit;
    pt.step_time_s = p.step_time_s;
    pt.replay_time_s = p.replay_time_s;
    const RankPrediction* top = nullptr;
    for (const auto& r : p.ranks)
      if (!top || r.peak_allocated > top->peak_allocated) top = &r;
    for (const auto& r : p.ranks) pt.reserved_p90 = max(pt.reserved_p90, r.estimated_peak_reserved_p90);
    pt.fragmentation_risk = v.cause == FitCause::reservation;
    if (top) {
      pt.peak_pp_rank = top->rank.pp_rank;
      pt.peak_phase = top->peak_phase;
      pt.peak_op = top->peak_op;
    }
  } catch (const SizeOverflow& e) {
    pt.valid = false;
    pt.error = std::string(e.what()) + " for this point [size_out_of_range]";
  } catch (const std::exception& e) {
    // A combination the simulator cannot build is reported like an invalid one, not fatal.
    pt.valid = false;
    pt.error = std::string("internal: ") + e.what();
  }
  return pt;
}

}  // namespace

model::Diagnostics sweep_axis_key_errors(std::string_view spec_text, std::string_view spec_name,
                                         const std::vector<std::string>& base_overrides,
                                         const std::vector<SweepAxis>& axes) {
  const model::SpecText text(spec_text, spec_name);
  model::Diagnostics out;
  for (const auto& axis : axes) {
    if (axis.values.empty()) continue;
    std::vector<std::string> overrides = base_overrides;
    overrides.push_back(axis.key + "=" + axis.values.front());
    for (auto& d : text.parse(overrides).diagnostics)
      if (d.severity == model::Severity::error && d.rule == "unknown_key" && d.path == axis.key) {
        d.message = "--vary " + d.message.substr(d.message.rfind("--set ", 0) == 0 ? 6 : 0);
        out.push_back(std::move(d));
      }
  }
  return out;
}

SweepResult run_sweep(std::string_view spec_text, const std::vector<std::string>& base_overrides,
                      const std::vector<SweepAxis>& axes, const SweepOptions& options) {
  SweepResult result;
  result.axes = axes;
  const std::size_t total = sweep_size(axes);
  result.points.resize(total);
  // The text is read once; each point applies its overrides to the read document, which gives what
  // parse_run_spec(spec_text, overrides) gives.
  const model::SpecText text(spec_text, options.spec_name);
  std::atomic<std::size_t> next{0}, done{0};
  auto worker = [&] {
    for (std::size_t i = next++; i < total; i = next++) {
      result.points[i] = evaluate_point(text, base_overrides, axes, i, options);
      ++done;
    }
  };
  const unsigned n = detail::worker_count(options.threads, total);
  // A thread that cannot start only means fewer workers (worker_pool.hpp).
  std::vector<std::thread> pool = detail::start_workers(n - 1, worker);
  std::optional<std::thread> last;
  if (options.progress) {
    // The calling thread reports progress and leaves the work to the pool and this one.
    std::vector<std::thread> one = detail::start_workers(1, worker);
    if (!one.empty()) last.emplace(std::move(one.front()));
  }
  if (last) {
    while (done.load() < total) {
      options.progress(done.load(), total);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    options.progress(total, total);
    last->join();
  } else {
    worker();
  }
  for (auto& t : pool) t.join();
  return result;
}

}  // namespace peakcast::sim
