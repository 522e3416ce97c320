#pragma once
// Run spec text -> RunSpec. Strict: unknown keys, wrong types and out-of-range values are
// diagnostics with their key path; nothing is silently defaulted except keys left out, which take
// the pinned Megatron Core / Bridge defaults. `model.preset` loads a shipped model first.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "peakcast/model/diagnostics.hpp"
#include "peakcast/model/run_spec.hpp"

namespace peakcast::model {

struct ParseResult {
  std::optional<RunSpec> spec;  // set when there are no errors
  Diagnostics diagnostics;      // errors and warnings, in file order
  // When the only problems were unknown keys or wrongly typed values, the spec without those keys
  // (defaults in their place), so validation can still list every other problem in one pass.
  std::optional<RunSpec> partial;
};

// `overrides` are "section.key=JSON" strings from --set; they apply after the file and preset.
ParseResult parse_run_spec(std::string_view json_text, const std::vector<std::string>& overrides = {});

// The embedded default: the seed's Moonlight 16B study on 8 x H100 80GB.
std::string_view default_run_spec_text();

}  // namespace peakcast::model
