#pragma once
// Each subcommand registers its options on the CLI11 app and returns the function that runs it.
// Only this folder sees CLI11.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "peakcast/model/diagnostics.hpp"
#include "peakcast/model/run_spec.hpp"
#include "peakcast/model/spec_parser.hpp"

namespace peakcast::cli {

using Runner = std::function<int()>;

// Exit statuses fixed by docs/interface.md.
inline constexpr int kExitOk = 0;
inline constexpr int kExitInvalidInput = 2;
inline constexpr int kExitDoesNotFit = 3;  // only with --fail-if-oom

// A run spec read, parsed and validated once, with the warnings of both steps.
struct LoadedSpec {
  model::RunSpec spec;
  model::Diagnostics warnings;
  model::ParseResult parse;  // origins of every value, what was ignored, the input kind and defaults
};

// Reads SPEC (or the embedded default when empty), applies --set overrides, parses and validates.
// Prints every error to stderr and returns nullopt on errors (the caller exits with 2); warnings
// are returned, for the result to carry.
std::optional<LoadedSpec> load_spec(const std::string& path, const std::vector<std::string>& sets);
// The same for a spec text already read (`path` names it in messages).
std::optional<LoadedSpec> load_spec_text(const std::string& text, const std::string& path, const std::vector<std::string>& sets);

// Sets model.moe_routing_imbalance to the busiest expert-parallel rank's load under an untrained
// router (the calibrated per-layer spread). `requested`: the user asked for it (--moe-busiest-rank:
// an error when it cannot be computed or the spec already sets the key); otherwise a default that
// falls back to balanced routing with a note on stderr. False on an error (message on stderr).
bool apply_busiest_rank_routing(model::RunSpec& spec, bool requested = true);

Runner add_predict_command(CLI::App& app);
Runner add_rank_command(CLI::App& app);
Runner add_sweep_command(CLI::App& app);
Runner add_calibrate_command(CLI::App& app);
Runner add_validate_command(CLI::App& app);
Runner add_import_command(CLI::App& app);
Runner add_recipes_command(CLI::App& app);
Runner add_plan_command(CLI::App& app);

}  // namespace peakcast::cli
