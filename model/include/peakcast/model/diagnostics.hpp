#pragma once
// Problems found in a run spec. Parsing and validation collect them all rather than stopping at the
// first, so a user fixes a file in one pass. Errors make the CLI exit with status 2.
#include <string>
#include <vector>

namespace peakcast::model {

enum class Severity { error, warning };

struct Diagnostic {
  Severity severity = Severity::error;
  std::string path;     // key path, e.g. "model.recompute_modules[1]"
  std::string rule;     // short rule id, e.g. "moe_act_needs_grouped_gemm"
  std::string message;  // in words a Megatron user recognises
};

using Diagnostics = std::vector<Diagnostic>;

bool has_errors(const Diagnostics& d);
std::string format(const Diagnostic& d);  // "error: model.x: message [rule]"

}  // namespace peakcast::model
