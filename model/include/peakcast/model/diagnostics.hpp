#pragma once
// Problems found in a run spec. Parsing and validation collect them all rather than stopping at the
// first, so a user fixes a file in one pass. Errors make the CLI exit with status 2.
#include <string>
#include <string_view>
#include <vector>

namespace peakcast::model {

enum class Severity { error,
                      warning };

struct Diagnostic {
  Severity severity = Severity::error;
  std::string path;     // key path, e.g. "model.recompute_modules[1]"
  std::string rule;     // short rule id, e.g. "moe_act_needs_grouped_gemm"
  std::string message;  // in words a Megatron user recognises
};

using Diagnostics = std::vector<Diagnostic>;

bool has_errors(const Diagnostics& d);
std::string format(const Diagnostic& d);  // "error: model.x: message [rule]", made printable

// Text from input made safe for a terminal: C0 control characters other than newline and tab, DEL and
// the UTF-8-encoded C1 controls (U+0080-U+009F, e.g. CSI) become "\xNN" escapes, so a spec's ESC or BEL
// cannot move the cursor, recolour or ring the terminal that shows a diagnostic.
std::string printable(std::string_view text);

}  // namespace peakcast::model
