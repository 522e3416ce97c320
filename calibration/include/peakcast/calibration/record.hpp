#pragma once
// One measured training run, as read from a JSON-lines corpus (docs/measurement-format.md):
// the run spec it used, which rank was measured, and what was measured there.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace peakcast::calibration {

struct Measurement {
  std::optional<std::int64_t> peak_allocated_bytes;        // whole run (cumulative max_memory_allocated)
  std::optional<std::int64_t> first_iteration_peak_bytes;  // up to the end of iteration 1
  std::optional<std::int64_t> peak_reserved_bytes;         // whole run (cumulative max_memory_reserved)
  std::optional<double> step_time_s;                       // steady iterations, when timed
  // Medians over the steady iterations (3 on when there are at least two, else 2 on), when timed.
  std::optional<double> fwd_bwd_time_s, optimizer_time_s;
  std::optional<double> fwd_bwd_time_min_s, fwd_bwd_time_max_s;  // their spread
  bool oom = false;
  std::optional<std::string> oom_phase;  // "forward", "backward", "grad_sync", "optimizer", ...
  std::optional<int> oom_iteration;
  std::optional<std::string> peak_phase;  // where the whole-run peak landed, when known
  // Dropless MoE routing of the iteration with the largest forward-backward peak: the rows the
  // rank's local experts received over the rows its routers sent (tokens x top-k), summed over
  // the MoE layers. Predictions for the record use it as model.moe_routing_imbalance.
  std::optional<double> moe_routing_imbalance;
  // The loss went non-finite after iteration 1: the whole-run peak is not compared, only the
  // first iteration's (measured.iterations[].last_microbatch_loss_sum is null).
  bool diverged_after_first_iteration = false;
  bool diverged_in_first_iteration = false;  // not a training step at all: the record is skipped
  // received / routed rows of each MoE layer in iteration 1 (the router as initialised).
  std::vector<double> first_iteration_layer_loads;
  // Fewest experts any MoE layer of iteration 1 sent tokens to (measured.iterations[].moe_routing[]
  // .expert_counts); none when not recorded. At most top-k means every token went to the same
  // experts: the router saw identical inputs, not an untrained router's spread.
  std::optional<std::int64_t> first_iteration_min_active_experts;
};

struct Record {
  std::string source;                   // file (or "<text>") it came from
  int line = 0;                         // 1-based line in that file
  std::string name;                     // "case"
  std::string group;                    // optional grouping label
  std::string spec_json;                // the run spec, as JSON text
  std::optional<std::int64_t> pp_rank;  // the measured rank's pipeline stage; unset = largest over ranks
  Measurement measured;
  std::vector<std::pair<std::string, std::string>> provenance;  // facts kept with the record (text)
};

struct ReadResult {
  std::vector<Record> records;
  std::vector<std::string> errors;   // "file:line: message"; records with errors are left out
  std::vector<std::string> skipped;  // valid lines that carry no measurement (e.g. expected validation errors)
};

// Strict: every non-blank line must be a JSON object with record_version 1, a "case" name, a "spec"
// object and a "measured" object whose known keys have the right types.
ReadResult read_records(const std::string& text, const std::string& source = "<text>");
ReadResult read_record_file(const std::string& path);

// One record back to a JSON line (summary keys only), for the ingested tables.
std::string to_json_line(const Record& r);

}  // namespace peakcast::calibration
