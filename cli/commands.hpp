#pragma once
// Each subcommand registers its options on the CLI11 app and returns the function that runs it.
// Only this folder sees CLI11.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "output_file.hpp"
#include "peakcast/model/diagnostics.hpp"
#include "peakcast/model/run_spec.hpp"
#include "peakcast/model/spec_parser.hpp"

namespace peakcast::cli {

using Runner = std::function<int()>;

// --budget-gb as bytes: a positive, finite number up to 10^6 GB (a petabyte per GPU, far above any
// device, and far below where GB x 10^9 stops being an exact int64). nullopt after an error message.
inline constexpr double kMaxBudgetGb = 1e6;
std::optional<Bytes> budget_bytes(double gb);
// --headroom-sigma: 0 to 100 standard deviations (a relative sigma of about 1 % makes 100 sigma double the peak).
inline constexpr double kMaxHeadroomSigma = 100;

// A SPEC argument given as "" is a mistake (an unset shell variable), not a request for the default.
inline const CLI::Validator kSpecPath(
    [](std::string& s) { return s.empty() ? std::string("an empty SPEC path; leave SPEC out for the embedded default") : std::string(); },
    "SPEC");

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
// A Megatron-LM launch line (--from-megatron-args; model/megatron_args.hpp), parsed and validated.
std::optional<LoadedSpec> load_megatron_line(const std::string& line, const std::vector<std::string>& sets);
// SPEC or --from-megatron-args LINE (an error when both are given).
std::optional<LoadedSpec> load_input(const std::string& spec, const std::string& megatron_line, const std::vector<std::string>& sets);
// The text SPEC names: the file, stdin for "-", the embedded default for "", nothing for bridge:<recipe>;
// nullopt (with the message printed) when it cannot be read or is larger than 16 MiB.
std::optional<std::string> read_spec_text(const std::string& path);
// --hf-config PATH as the override that sets model.hf_config to PATH made absolute (so it does not
// depend on where the spec lives); the spec's other model keys must agree with it.
std::string hf_config_override(const std::string& path);
inline constexpr const char* kHfConfigHelp =
    "A Hugging Face config.json: the architecture as Megatron-Bridge's AutoBridge maps it, the rest from SPEC "
    "(sets model.hf_config; conflicting model keys are errors)";

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
Runner add_allocator_replay_command(CLI::App& app);

}  // namespace peakcast::cli
