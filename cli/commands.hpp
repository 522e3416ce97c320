#pragma once
// Each subcommand registers its options on the CLI11 app and returns the function that runs it.
// Only this folder sees CLI11.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "peakcast/model/run_spec.hpp"

namespace peakcast::cli {

using Runner = std::function<int()>;

// Exit statuses fixed by interface.md.
inline constexpr int kExitOk = 0;
inline constexpr int kExitInvalidInput = 2;
inline constexpr int kExitDoesNotFit = 3;  // only with --fail-if-oom

// Reads SPEC (or the embedded default when empty), applies --set overrides, parses and validates.
// Prints every diagnostic to stderr; on errors returns nullopt (the caller exits with 2).
// Warnings are returned through `warnings` so results can carry them.
std::optional<model::RunSpec> load_spec(const std::string& path, const std::vector<std::string>& sets,
                                        std::vector<std::string>* warnings = nullptr);

// --moe-busiest-rank: set model.moe_routing_imbalance to the busiest expert-parallel rank's load
// under an untrained router (the calibrated per-layer spread). False (message on stderr) when the
// spec already sets that key.
// Sets model.moe_routing_imbalance to the busiest EP rank's load under an untrained router.
// `requested`: the user asked for it (an error when it cannot be computed); otherwise a default that
// falls back to balanced routing with a note on stderr.
bool apply_busiest_rank_routing(model::RunSpec& spec, bool requested = true);

Runner add_predict_command(CLI::App& app);
Runner add_rank_command(CLI::App& app);
Runner add_sweep_command(CLI::App& app);
Runner add_calibrate_command(CLI::App& app);
Runner add_validate_command(CLI::App& app);
Runner add_import_command(CLI::App& app);

}  // namespace peakcast::cli
