// Megatron-LM functional-test golden memory values (external-validation CSV) -> records.
// Columns after alloc_conf are MODEL_ARGS (empty = flag not set); only those are known, so every
// other argument takes Megatron-LM's CLI default.
#include <cmath>
#include <map>
#include <sstream>

#include "peakcast/calibration/ingest.hpp"
#include "peakcast/calibration/megatron_args.hpp"
#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/validate.hpp"

namespace peakcast::calibration {

namespace {

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') { cur += '"'; ++i; }
      else if (c == '"') quoted = false;
      else cur += c;
    } else if (c == '"') quoted = true;
    else if (c == ',') { out.push_back(cur); cur.clear(); }
    else if (c != '\r') cur += c;
  }
  out.push_back(cur);
  return out;
}

std::optional<double> number(const std::string& s) {
  if (s.empty() || s == "nan") return std::nullopt;
  try { return std::stod(s); } catch (const std::exception&) { return std::nullopt; }
}

// The test platforms' GPUs (tests/test_utils/recipes); world size is 8 on all of them.
std::string gpu_for(const std::string& platform) {
  if (platform.find("gb200") != std::string::npos) return "b200";
  if (platform.find("h100") != std::string::npos) return "h100-sxm-80gb";
  return "a100-80gb";
}

}  // namespace

CsvIngest ingest_golden_memory_csv(const std::string& text) {
  CsvIngest out;
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  const auto header = split_csv_line(line);
  std::size_t first_arg = 0;
  for (std::size_t i = 0; i < header.size(); ++i) if (header[i] == "num-layers") first_arg = i;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto cells = split_csv_line(line);
    if (cells.size() != header.size()) { out.skipped.push_back("malformed CSV line: " + line.substr(0, 60)); continue; }
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < header.size(); ++i) row[header[i]] = cells[i];
    const std::string id = row["model"] + "/" + row["test_case"] + " (" + row["env_platform"] + ")";
    const auto skip = [&](const std::string& why) { out.skipped.push_back(id + ": " + why); };
    const std::string& m = row["model"];
    const std::string& tc = row["test_case"];
    if (m == "t5" || m == "bert" || m == "multimodal-llava" || m == "mimo") { skip("not a GPT/Mamba decoder model"); continue; }
    // A resumed run loads its optimizer state before the first step, so its first iteration is already
    // the steady state: compare the whole-run peak only (checkpoint-loading buffers are not modelled).
    const bool resume = tc.find("resume") != std::string::npos;
    if (tc.find("grpo") != std::string::npos) { skip("GRPO case: includes RL inference memory (KV cache)"); continue; }
    if (!row["use-megatron-fsdp"].empty() || !row["use-torch-fsdp2"].empty()) { skip("FSDP is not modelled"); continue; }
    const auto final_gb = number(row["max_alloc_final_GB"]);
    if (!final_gb) { skip("max_alloc_final_GB is missing or NaN"); continue; }

    std::vector<std::string> args;
    for (std::size_t i = first_arg; i < header.size(); ++i) {
      const std::string& k = header[i];
      const std::string& v = cells[i];
      if (v.empty() || k == "train-iters") continue;
      args.push_back("--" + k);
      if (v != "True") args.push_back(v);
    }
    // Megatron-LM refuses top-1 routing without pre-softmax, and these runs did start: the flag was
    // set in MODEL_ARGS but is not a CSV column.
    if (row["moe-router-topk"] == "1") args.push_back("--moe-router-pre-softmax");
    // Likewise MoE layers refuse linear biases unless ETP == 1 (transformer_config.py:2307); runs with
    // experts over a larger ETP did start, so their MODEL_ARGS had --disable-bias-linear.
    if (!row["num-experts"].empty()) {
      const std::string& etp = row["expert-tensor-parallel-size"].empty() ? row["tensor-model-parallel-size"]
                                                                           : row["expert-tensor-parallel-size"];
      if (!etp.empty() && etp != "1") args.push_back("--disable-bias-linear");
    }
    ImportOptions opt;
    opt.num_gpus = 8;
    opt.gpu = gpu_for(row["env_platform"]);
    opt.mamba = m == "hybrid" || !row["hybrid-override-pattern"].empty();
    const auto imported = import_megatron_args(args, opt);
    if (!imported.errors.empty()) { skip("import: " + imported.errors.front()); continue; }
    const auto parsed = model::parse_run_spec(imported.spec_json);
    if (!parsed.spec) {
      for (const auto& d : parsed.diagnostics)
        if (d.severity == model::Severity::error) { skip("spec: " + model::format(d)); break; }
      continue;
    }
    const auto diags = model::validate(*parsed.spec);
    if (model::has_errors(diags)) {
      for (const auto& d : diags)
        if (d.severity == model::Severity::error) { skip("validation: " + model::format(d)); break; }
      continue;
    }
    Record r;
    r.name = m + "/" + tc + "@" + row["env_platform"];
    r.group = "megatron-functional-" + m;
    r.spec_json = imported.spec_json;
    const std::int64_t pp = parsed.spec->model.pipeline_model_parallel_size;
    r.pp_rank = pp - 1;  // the last global rank logs memory: last PP stage
    r.measured.peak_allocated_bytes = static_cast<std::int64_t>(std::llround(*final_gb * 1e9));
    if (resume) r.group += "-resume";
    if (const auto first = number(row["max_alloc_first_GB"]); first && !resume)
      r.measured.first_iteration_peak_bytes = static_cast<std::int64_t>(std::llround(*first * 1e9));
    r.provenance = {{"source", "/work/shared/external-validation/megatron_functional_golden_memory.csv"},
                    {"megatron_lm_commit", "d98e8a64ddf34856e74b24714e3bedb2f5a39553"},
                    {"platform", row["env_platform"]},
                    {"alloc_conf", row["alloc_conf"]},
                    {"alloc_steady_GB", row["alloc_steady_GB"]},
                    {"steps", row["first_step"] + "-" + row["last_step"]},
                    {"world_size", "8 (README: 1x8 A100/H100, 2x4 GB200)"},
                    {"caveat", "only MODEL_ARGS columns of the CSV are known; other flags take Megatron-LM defaults"}};
    out.records.push_back(std::move(r));
  }
  return out;
}

}  // namespace peakcast::calibration
