// _peakcast: the C++ half of the `peakcast` Python package (python/peakcast/__init__.py). The same
// parse, validation and prediction as `peakcast predict --json`, for pre-flight checks in Python.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/units.hpp"
#include "peakcast/model/validate.hpp"
#include "peakcast/sim/moe_routing.hpp"
#include "peakcast/sim/prediction.hpp"
#include "peakcast/sim/ranking.hpp"
#include "peakcast/sim/sweep.hpp"

namespace py = pybind11;
using namespace peakcast;

namespace {

// What `peakcast predict` does before it simulates (cli/spec_loading.cpp): parse the input, then
// validate the spec (or, when only unknown keys or types failed, the spec without them, so every
// problem is listed at once).
struct Checked {
  std::optional<model::RunSpec> spec;  // set when there is no error
  model::Diagnostics diagnostics;
};

Checked check_input(const std::string& name, const std::string& text, const std::vector<std::string>& overrides) {
  model::ParseResult parsed = model::parse_spec_input(name, text, overrides);
  Checked c{std::nullopt, parsed.diagnostics};
  if (parsed.spec || parsed.partial) {
    const model::Diagnostics v = model::validate(parsed.spec ? *parsed.spec : *parsed.partial);
    c.diagnostics.insert(c.diagnostics.end(), v.begin(), v.end());
  }
  if (parsed.spec && !model::has_errors(c.diagnostics)) c.spec = std::move(parsed.spec);
  return c;
}

py::list to_python(const model::Diagnostics& ds) {
  py::list out;
  for (const auto& d : ds) {
    py::dict x;
    x["severity"] = d.severity == model::Severity::error ? "error" : "warning";
    x["path"] = d.path;
    x["rule"] = d.rule;
    x["message"] = d.message;
    x["text"] = model::format(d);
    out.append(std::move(x));
  }
  return out;
}

[[noreturn]] void raise_errors(const model::Diagnostics& ds) {
  std::string msg;
  for (const auto& d : ds) {
    if (d.severity != model::Severity::error) continue;
    if (!msg.empty()) msg += '\n';
    msg.append(model::format(d));
  }
  throw py::value_error(msg);
}

// The result object (docs/interface.md, schema_version 1) as JSON text, the spec's warnings first,
// as `predict --json` prints it; an invalid input raises ValueError with every error, one per line.
std::string predict_json(const std::string& name, const std::string& text, const std::vector<std::string>& overrides) {
  const Checked c = check_input(name, text, overrides);
  if (!c.spec) raise_errors(c.diagnostics);
  try {
    sim::PredictOptions opt;
    opt.routing_band_samples = sim::kPredictRoutingBandSamples;  // as `peakcast predict` (cli/predict_command.cpp)
    sim::Prediction p = sim::predict(*c.spec, opt);
    const model::Diagnostics found = p.warnings;
    p.warnings = c.diagnostics;  // only warnings are left
    p.warnings.insert(p.warnings.end(), found.begin(), found.end());
    return sim::to_json(p);
  } catch (const SizeOverflow& e) {
    throw py::value_error(std::string("error: ") + e.what() + " [size_out_of_range]");
  }
}

// `peakcast rank --json` (cli/rank_command.cpp): under expert parallelism every rank is checked at
// the busiest EP rank's load of an untrained router unless `balanced` or the spec fixes a load; a
// budget of 0 is the device's capacity.
std::string rank_json(const std::string& name, const std::string& text, const std::vector<std::string>& overrides,
                      double budget_gb, double headroom_sigma, const std::string& order, bool balanced) {
  Checked c = check_input(name, text, overrides);
  if (!c.spec) raise_errors(c.diagnostics);
  if (!(budget_gb >= 0 && budget_gb <= 1e6)) throw py::value_error("budget_gb: a number of GB in [0, 1e6] (0: the GPU's capacity)");
  if (!(headroom_sigma >= 0 && headroom_sigma <= 100)) throw py::value_error("headroom_sigma: a number in [0, 100]");
  if (order != "narrowest" && order != "replay-time") throw py::value_error("order: 'narrowest' or 'replay-time', not '" + order + "'");
  model::RunSpec& spec = *c.spec;
  if (!balanced && spec.model.moe_routing_imbalance == 1.0)
    if (const auto load = sim::untrained_busiest_rank_load(spec)) spec.model.moe_routing_imbalance = *load;
  try {
    const Bytes budget{static_cast<std::int64_t>(std::llround(budget_gb * 1e9))};
    return sim::to_json(sim::rank_candidates(spec, budget, headroom_sigma,
                                             order == "replay-time" ? sim::RankOrder::replay_time : sim::RankOrder::narrowest));
  } catch (const SizeOverflow& e) {
    throw py::value_error(std::string("error: ") + e.what() + " [size_out_of_range]");
  }
}

std::vector<sim::SweepAxis> sweep_axes(const std::vector<std::string>& vary) {
  std::vector<sim::SweepAxis> axes;
  for (const auto& v : vary) {
    std::string err;
    auto axis = sim::parse_vary(v, &err);
    if (!axis) throw py::value_error("vary '" + v + "': " + err);
    axes.push_back(std::move(*axis));
  }
  if (axes.empty()) throw py::value_error("vary: give at least one KEY=V1,V2,... axis");
  return axes;
}

// `peakcast sweep --json` (cli/sweep_command.cpp): each `vary` entry is "KEY=V1,V2,..."; the grid's
// size limit and a misspelt axis key are errors before anything runs. A budget of 0: each point's GPU.
std::string sweep_json(const std::string& name, const std::string& text, const std::vector<std::string>& overrides,
                       const std::vector<std::string>& vary, double budget_gb, unsigned threads) {
  const Checked c = check_input(name, text, overrides);
  if (!c.spec) raise_errors(c.diagnostics);
  const std::vector<sim::SweepAxis> axes = sweep_axes(vary);
  if (sim::sweep_size(axes) > sim::kMaxSweepPoints)
    throw py::value_error("the grid has more than " + std::to_string(sim::kMaxSweepPoints) + " points; split it into several sweeps");
  const model::Diagnostics key_errors = sim::sweep_axis_key_errors(text, name, overrides, axes);
  if (!key_errors.empty()) raise_errors(key_errors);
  if (!(budget_gb >= 0 && budget_gb <= 1e6)) throw py::value_error("budget_gb: a number of GB in [0, 1e6] (0: each point's GPU)");
  sim::SweepOptions opt;
  opt.spec_name = name;
  opt.threads = threads;
  if (budget_gb > 0) opt.budget = Bytes{static_cast<std::int64_t>(std::llround(budget_gb * 1e9))};
  return sim::to_json(sim::run_sweep(text, overrides, axes, opt));
}

}  // namespace

PYBIND11_MODULE(_peakcast, m) {
  m.doc() = "peakcast's C++ core; use the peakcast package";
  m.def(
      "check", [](const std::string& name, const std::string& text, const std::vector<std::string>& overrides) {
        return to_python(check_input(name, text, overrides).diagnostics);
      },
      py::arg("name"), py::arg("text"), py::arg("overrides"));
  m.def("predict_json", &predict_json, py::arg("name"), py::arg("text"), py::arg("overrides"));
  m.def("rank_json", &rank_json, py::arg("name"), py::arg("text"), py::arg("overrides"), py::arg("budget_gb"),
        py::arg("headroom_sigma"), py::arg("order"), py::arg("balanced"));
  m.def(
      "sweep_key_errors", [](const std::string& name, const std::string& text, const std::vector<std::string>& overrides, const std::vector<std::string>& vary) {
        return to_python(sim::sweep_axis_key_errors(text, name, overrides, sweep_axes(vary)));
      },
      py::arg("name"), py::arg("text"), py::arg("overrides"), py::arg("vary"));
  m.def("sweep_json", &sweep_json, py::arg("name"), py::arg("text"), py::arg("overrides"), py::arg("vary"), py::arg("budget_gb"),
        py::arg("threads"));
}
