#include "peakcast/model/diagnostics.hpp"

#include <algorithm>

namespace peakcast::model {

bool has_errors(const Diagnostics& d) {
  return std::any_of(d.begin(), d.end(), [](const Diagnostic& x) { return x.severity == Severity::error; });
}

std::string format(const Diagnostic& d) {
  std::string s = d.severity == Severity::error ? "error: " : "warning: ";
  if (!d.path.empty()) s += d.path + ": ";
  s += d.message;
  if (!d.rule.empty()) s += " [" + d.rule + "]";
  return s;
}

}  // namespace peakcast::model
