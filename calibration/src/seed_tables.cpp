// The seed study's measured H100 rows (nemo-mbridge-perf-activation-recompute, 2026-08-12 study and
// Bridge PR #3107). GB in the tables are 10^9 bytes. Each row only changes recompute_modules.
#include <cmath>
#include <optional>

#include <nlohmann/json.hpp>

#include "peakcast/calibration/ingest.hpp"
#include "peakcast/model/embedded_configs.hpp"

namespace peakcast::calibration {

namespace {

using nlohmann::json;

struct Row {
  std::vector<std::string> modules;
  std::optional<double> peak_gb;        // whole-run peak (after iteration 2 or later)
  std::optional<double> first_iter_gb;  // peak reported after iteration 1 (Nemotron OOM rows, Llama rows)
  std::optional<double> step_ms;
  bool oom = false;
  std::optional<int> oom_iteration;
  std::optional<std::string> oom_phase;
  std::string note;
};

std::optional<std::int64_t> gb(std::optional<double> v) {
  if (!v) return std::nullopt;
  return static_cast<std::int64_t>(std::llround(*v * 1e9));
}

Record make(const std::string& run_file, const std::string& group, const Row& row, std::optional<std::int64_t> pp_rank) {
  json spec = json::parse(*model::embedded_config("runs/" + run_file));
  spec["model"]["recompute_granularity"] = "selective";
  spec["model"]["recompute_modules"] = row.modules;
  spec.erase("description");
  Record r;
  r.group = group;
  r.name = group + "[";
  for (std::size_t i = 0; i < row.modules.size(); ++i) r.name += (i ? "," : "") + row.modules[i];
  r.name += "]";
  r.spec_json = spec.dump();
  r.pp_rank = pp_rank;
  r.measured.peak_allocated_bytes = gb(row.peak_gb);
  r.measured.first_iteration_peak_bytes = gb(row.first_iter_gb);
  if (row.step_ms) r.measured.step_time_s = *row.step_ms / 1000.0;
  r.measured.oom = row.oom;
  r.measured.oom_iteration = row.oom_iteration;
  r.measured.oom_phase = row.oom_phase;
  r.provenance = {{"source", "/work/shared/seeds/nemo-mbridge-perf-activation-recompute.zh.md"},
                  {"run_spec", "configs/runs/" + run_file},
                  {"gpu", "H100 80GB"},
                  {"note", row.note}};
  return r;
}

}  // namespace

std::vector<Record> seed_h100_records() {
  std::vector<Record> out;
  // Moonlight 16B, 8 x H100, TP2 EP8: peak = max of the post-optimizer values reported after
  // iteration 2; step time = mean of iterations 11-20. Which rank is not stated: largest over ranks.
  const char* moon_note = "peak allocated after iteration 2 (max of post-optimizer reports); step time mean of iterations 11-20";
  for (const Row& row : std::vector<Row>{
           {{}, 36.618, {}, 457.18, false, {}, {}, moon_note},
           {{"core_attn"}, 36.614, {}, 474.80, false, {}, {}, moon_note},
           {{"mla_up_proj"}, 35.902, {}, 480.89, false, {}, {}, moon_note},
           {{"mla_up_proj", "mlp"}, 35.917, {}, 496.73, false, {}, {}, moon_note},
           {{"moe_act"}, 35.941, {}, 466.26, false, {}, {}, moon_note},
           {{"layernorm", "moe_act"}, 35.949, {}, 506.53, false, {}, {}, moon_note}})
    out.push_back(make("moonlight-16b-8xh100.json", "seed-moonlight-16b-h100", row, std::nullopt));
  // Nemotron 3 Nano, 16 x H100, rank 0 measured.
  for (const Row& row : std::vector<Row>{
           {{}, {}, 66.297, {}, true, 2, "forward", "OOM in iteration 2 at the MoE router; 66.297 GB on rank 0 after iteration 1"},
           {{"core_attn"}, {}, {}, {}, true, 1, {}, "OOM in iteration 1 allocating in the grouped expert linear"},
           {{"moe_act"}, {}, 62.103, {}, true, 2, {}, "OOM in iteration 2 (output projection needs 2 GiB); 62.103 GB after iteration 1"},
           {{"layernorm", "moe_act"}, {}, {}, {}, true, 1, {}, "OOM in iteration 1 (output projection needs 2 GiB; CUDA graph pools)"},
           {{"moe"}, 64.653, {}, 657.42, false, {}, {}, "completed 12 steps; peak after iteration 2; step time iterations 7-12"},
           {{"moe", "layernorm"}, 63.639, {}, 677.62, false, {}, {}, "completed 12 steps; peak after iteration 2; step time iterations 7-12"}})
    out.push_back(make("nemotron-3-nano-16xh100.json", "seed-nemotron-3-nano-h100", row, 0));
  // Llama 3 70B FP8 (Bridge PR #3107, 2026-04-02/03). Bridge printed memory once, after iteration 1,
  // until its PR #3169 (2026-04-09; issue #3165: "memory usage report only after first iteration"),
  // so every figure is an iteration-1 peak: before the Adam moments exist during forward-backward.
  // The out-of-memory rows ran out later (their reports and throughput exist). Which rank: unstated,
  // compared as the largest. The "core_attn baseline" was the recipe's, which set no recompute
  // granularity (TransformerConfig's default recompute_modules ["core_attn"] applies only under
  // selective); predicted within 0.03 GB of [core_attn] either way.
  const char* llama_note = "memory reported once, after iteration 1 (Bridge before PR #3169)";
  const auto with = [&](const char* what) { return std::string(llama_note) + "; " + what; };
  for (const Row& row : std::vector<Row>{
           {{"core_attn"}, {}, 58.8, {}, true, {}, {}, with("58.8 GB, OOM later on rank 0; ~704 TFLOP/s/GPU")},
           {{"mlp"}, {}, 55.6, {}, false, {}, {}, with("593.6 TFLOP/s/GPU")},
           {{"mlp", "core_attn"}, {}, 55.6, {}, false, {}, {}, with("586.8 TFLOP/s/GPU")},
           {{"core_attn", "layernorm"}, {}, 59.6, {}, true, {}, {}, with("59.6 GB, OOM later on rank 0; ~702 TFLOP/s/GPU")}})
    out.push_back(make("llama3-70b-fp8-32xh100.json", "seed-llama3-70b-fp8-h100", row, std::nullopt));
  return out;
}

}  // namespace peakcast::calibration
