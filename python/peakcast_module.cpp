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
#include "peakcast/sim/prediction.hpp"

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

// The result object (docs/interface.md, schema_version 1) as JSON text, the spec's warnings first,
// as `predict --json` prints it; an invalid input raises ValueError with every error, one per line.
std::string predict_json(const std::string& name, const std::string& text, const std::vector<std::string>& overrides) {
  const Checked c = check_input(name, text, overrides);
  if (!c.spec) {
    std::string msg;
    for (const auto& d : c.diagnostics)
      if (d.severity == model::Severity::error) msg += (msg.empty() ? "" : "\n") + model::format(d);
    throw py::value_error(msg);
  }
  try {
    sim::Prediction p = sim::predict(*c.spec);
    const model::Diagnostics found = p.warnings;
    p.warnings = c.diagnostics;  // only warnings are left
    p.warnings.insert(p.warnings.end(), found.begin(), found.end());
    return sim::to_json(p);
  } catch (const SizeOverflow& e) {
    throw py::value_error(std::string("error: ") + e.what() + " [size_out_of_range]");
  }
}

}  // namespace

PYBIND11_MODULE(_peakcast, m) {
  m.doc() = "peakcast's C++ core; use the peakcast package";
  m.def("check", [](const std::string& name, const std::string& text, const std::vector<std::string>& overrides) {
    return to_python(check_input(name, text, overrides).diagnostics);
  }, py::arg("name"), py::arg("text"), py::arg("overrides"));
  m.def("predict_json", &predict_json, py::arg("name"), py::arg("text"), py::arg("overrides"));
}
