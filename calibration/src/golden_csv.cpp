// Megatron-LM functional-test golden memory values (external-validation CSV) -> records.
// Columns after alloc_conf are MODEL_ARGS (empty = flag not set); only those are known, so every
// other argument takes Megatron-LM's CLI default. Each row becomes the launch line the test ran
// (its alloc_conf as PYTORCH_CUDA_ALLOC_CONF, its training script, the arguments) and goes through
// the Megatron-LM front end (model/megatron_args.hpp), as a user's line would.
#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "golden_case_args.hpp"
#include "peakcast/calibration/ingest.hpp"
#include "peakcast/model/megatron_args.hpp"
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
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') quoted = false;
      else cur += c;
    } else if (c == '"') quoted = true;
    else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') cur += c;
  }
  out.push_back(cur);
  return out;
}

std::optional<double> number(const std::string& s) {
  if (s.empty() || s == "nan") return std::nullopt;
  try {
    return std::stod(s);
  } catch (const std::exception&) { return std::nullopt; }
}

// The test platforms' GPUs (tests/test_utils/recipes): dgx_gb200 is a GB200 node (configs/gpus/gb200.json).
std::string gpu_for(const std::string& platform) {
  if (platform.find("gb200") != std::string::npos) return "gb200";
  if (platform.find("h100") != std::string::npos) return "h100-sxm-80gb";
  return "a100-80gb";
}

struct WorldSize {
  int gpus = 8;
  std::string why;
};

// World size is not a CSV column; it is the recipe's nodes x gpus (tests/test_utils/recipes at the
// CSV's commit d98e8a64). The rule, from the row alone:
//  - a test name that states it, "<N>N<G>G" (nemotron3_5_..._1N4G: recipe gb200/nemotron-1node.yaml,
//    nodes 1, gpus 4), is N x G;
//  - a test name ending in "_1node" runs one node: GB200 nodes hold 4 GPUs (recipes
//    gb200/{gpt,moe,nemotron}-1node.yaml: nodes 1, gpus 4, every test case listed there ends in
//    "_1node"), DGX A100/H100 nodes 8;
//  - every other case runs on 8 GPUs: 1 node x 8 on DGX A100/H100 (h100/gpt.yaml, moe.yaml, ...),
//    2 nodes x 4 on GB200 (gb200/gpt.yaml, moe.yaml).
// The release cases (gpt3_15b_8t_release*, mixtral_*_release) are in no recipe of that commit;
// they keep 8, which their layouts then accept or refuse.
WorldSize world_size_for(const std::string& test_case, const std::string& platform) {
  static const std::regex stated("(^|_)([0-9]+)N([0-9]+)G($|_)");
  std::smatch m;
  if (std::regex_search(test_case, m, stated)) {
    const int n = std::stoi(m[2].str()), g = std::stoi(m[3].str());
    return {n * g, std::to_string(n * g) + " (test name: " + m[2].str() + " node(s) x " + m[3].str() + " GPUs)"};
  }
  const bool gb200 = platform.find("gb200") != std::string::npos;
  const std::string one_node = "_1node";
  if (test_case.size() >= one_node.size() &&
      test_case.compare(test_case.size() - one_node.size(), one_node.size(), one_node) == 0) {
    if (gb200) return {4, "4 (a _1node case on GB200: recipe gb200/*-1node.yaml, 1 node x 4 GPUs)"};
    return {8, "8 (a _1node case on a DGX node: 1 x 8 GPUs)"};
  }
  return {8, gb200 ? "8 (GB200 recipe: 2 nodes x 4 GPUs)" : "8 (DGX recipe: 1 node x 8 GPUs)"};
}

// --microbatch-group-size-per-virtual-pipeline-stage is not a CSV column either. The interleaved
// schedule refuses a group size N outside [PP, M] or one with 0 < M % N < PP (schedules.py:1143-1162,
// M = micro-batches per step), and a row with a measured value did run. So when Megatron's default
// N = PP is refused, the run's MODEL_ARGS set N; it is taken when exactly one N is accepted, else the
// row is left out. Returns the accepted group sizes.
std::vector<std::int64_t> accepted_group_sizes(std::int64_t pp, std::int64_t micro) {
  std::vector<std::int64_t> out;
  for (std::int64_t n = pp; n <= micro; ++n) {
    const std::int64_t rest = micro % n;
    if (rest == 0 || rest >= pp) out.push_back(n);
  }
  return out;
}

// A MODEL_ARGS value as the test harness puts it on the command line
// (tests/functional_tests/shell_test_utils/_run_training.sh:139-160 at d98e8a64): "True" is the bare
// flag, a value wrapped in [ ] loses its brackets and splits on spaces, any other value is one word.
void append_value(std::vector<std::string>& args, const std::string& v) {
  if (v == "True") return;
  if (v.size() >= 2 && v.front() == '[' && v.back() == ']') {
    std::istringstream words(v.substr(1, v.size() - 2));
    for (std::string w; words >> w;) args.push_back(w);
    return;
  }
  args.push_back(v);
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The case's tokenizer and training script: configs/tokenizers.json functional_tests, generated from
// the case's model_config.yaml and recipe at the CSV's commit (d98e8a64).
const nlohmann::json& case_tokenizers() { return detail::embedded_section("tokenizers.json", "functional_tests"); }

struct RowLine {
  std::string line;                    // the launch line
  model::MegatronLineOptions options;  // world size, GPU, the tokenizer's length
  std::string skip;                    // why the row cannot be imported, else empty
};

RowLine launch_line(const std::string& case_key, const std::vector<std::pair<std::string, std::string>>& env,
                    const std::vector<std::string>& args, bool full_args, int world, const std::string& gpu) {
  RowLine out;
  out.options.num_gpus = world;
  out.options.gpu = gpu;
  std::string script;
  const bool listed = case_tokenizers().contains(case_key);
  const nlohmann::json& tok = listed ? case_tokenizers()[case_key] : nlohmann::json::object();
  if (listed) {
    script = tok.value("training_script", "");
    if (script != "pretrain_gpt.py" && script != "pretrain_hybrid.py" && script != "pretrain_mamba.py" &&
        script != "examples/bert/pretrain_bert.py" && script != "examples/t5/pretrain_t5.py") {
      out.skip = "training script " + script +
                 " (configs/tokenizers.json functional_tests): its arguments are not "
                 "pretrain_gpt.py's / pretrain_hybrid.py's / pretrain_bert.py's / pretrain_t5.py's";
      return out;
    }
    if (!tok.contains("unpadded_vocab_size") || !tok["unpadded_vocab_size"].is_number_integer()) {
      out.skip = "the vocabulary of its tokenizer (" + tok.value("tokenizer_type", std::string("?")) + ") is not known: " +
                 tok.value("rule", std::string("configs/tokenizers.json has no size"));
      return out;
    }
    out.options.tokenizer_vocab_size = tok["unpadded_vocab_size"].get<std::int64_t>();
    out.options.tokenizer_vocab_source = "configs/tokenizers.json functional_tests['" + case_key + "']: " + tok.value("rule", std::string());
  } else {
    // A case the table does not list: the script of its model directory, and the row's own arguments
    // with Megatron-LM's defaults (GPT2BPETokenizer, GPT-2's vocabulary when no files are given).
    const std::string dir = case_key.substr(0, case_key.find('/'));
    script = dir == "hybrid" || dir == "nemotron" ? "pretrain_hybrid.py" : "pretrain_gpt.py";
  }
  for (const auto& [k, v] : env) out.line += k + "=" + shell_quote(v) + " ";
  out.line += "torchrun " + script;
  if (!full_args && tok.value("tokenizer_type_from", std::string()) == "MODEL_ARGS")
    out.line += " --tokenizer-type " + tok.value("tokenizer_type", std::string());
  for (const auto& a : args) out.line += " " + shell_quote(a);
  return out;
}

std::string first_error(const model::Diagnostics& d) {
  for (const auto& x : d)
    if (x.severity == model::Severity::error) return model::format(x);
  return "";
}

// The row's MODEL_ARGS columns as the harness passes them, plus the arguments the runs must have had
// (they started) that are not CSV columns.
std::vector<std::string> row_arguments(const std::vector<std::string>& header, const std::vector<std::string>& cells,
                                       std::size_t first_arg, std::map<std::string, std::string>& row) {
  std::vector<std::string> args;
  for (std::size_t i = first_arg; i < header.size(); ++i) {
    const std::string& k = header[i];
    const std::string& v = cells[i];
    if (v.empty()) continue;
    args.push_back("--" + k);
    append_value(args, v);
  }
  // --max-position-embeddings is required (arguments.py:1262-1265) and not a CSV column; every
  // GPT / MoE / hybrid model_config.yaml of the CSV's cases sets it equal to --seq-length (154 of 154
  // at d98e8a64; the exceptions are t5 and llava, which the caller leaves out).
  if (!row["seq-length"].empty()) {
    args.push_back("--max-position-embeddings");
    args.push_back(row["seq-length"]);
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
  // --num-query-groups only takes effect with --group-query-attention (argument_utils.py:330-333),
  // which is not a CSV column; every functional-test model_config.yaml of the CSV's commit that sets
  // --num-query-groups also sets --group-query-attention (40 of 40).
  if (!row["num-query-groups"].empty()) args.push_back("--group-query-attention");
  // moe_act recompute is refused without --moe-grouped-gemm (transformer_config.py:1811), not a
  // CSV column; the runs with it did start.
  if (row["recompute-modules"].find("moe_act") != std::string::npos) args.push_back("--moe-grouped-gemm");
  return args;
}

// Why a row's run is outside what peakcast models, else empty.
std::string unmodelled_case(std::map<std::string, std::string>& row) {
  const std::string& m = row["model"];
  if (m == "multimodal-llava" || m == "mimo") return "not a GPT/Mamba decoder, BERT or T5 model";
  if (row["test_case"].find("grpo") != std::string::npos) return "GRPO case: includes RL inference memory (KV cache)";
  // Megatron-FSDP is simulated (static_memory_fsdp.cpp); PyTorch FSDP2 is not.
  if (!row["use-torch-fsdp2"].empty()) return "PyTorch FSDP2 is not modelled";
  // Not modelled: the momentum of Muon and the layer-wise distributed optimizer (the run spec would
  // treat them as Adam with a warning). Fine-grained activation offloading is simulated
  // (docs/research/fine-grained-offloading-memory-facts.md).
  if (const std::string& o = row["optimizer"]; !o.empty() && o != "adam" && o != "sgd")
    return "--optimizer " + o + " is not modelled (adam and sgd are)";
  return "";
}

// What the test passed: its model_config.yaml's MODEL_ARGS and ENV_VARS where the table lists the
// case (the CSV's columns must then agree with them), else the CSV's columns and the rules above.
struct RowInputs {
  std::optional<detail::TestCaseArgs> tested;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  std::string skip;  // why the row cannot be imported, else empty
};

RowInputs row_inputs(const std::vector<std::string>& header, const std::vector<std::string>& cells, std::size_t first_arg,
                     std::map<std::string, std::string>& row) {
  RowInputs out;
  out.tested = detail::functional_test_args(row["model"] + "/" + row["test_case"]);
  if (out.tested) {
    std::map<std::string, std::string> columns;
    for (std::size_t i = first_arg; i < header.size(); ++i) columns[header[i]] = cells[i];
    columns["alloc_conf"] = row["alloc_conf"];
    if (const auto bad = detail::csv_disagreements(*out.tested, columns); !bad.empty()) {
      out.skip = "the CSV disagrees with " + out.tested->source + ": " + bad.front();
      return out;
    }
    out.args = out.tested->words;
    out.env = out.tested->env;
    return out;
  }
  out.args = row_arguments(header, cells, first_arg, row);
  if (!row["alloc_conf"].empty()) out.env.emplace_back("PYTORCH_CUDA_ALLOC_CONF", row["alloc_conf"]);
  if (row["num-layers"].empty()) out.skip = "the CSV has no num-layers for this row (the layer stack is unknown)";
  return out;
}

// The interleaved schedule refuses the default micro-batch group size (PP) for some micro-batch counts
// (accepted_group_sizes). Where exactly one size is accepted, the run must have used it: the launch line
// takes it and is imported again. Returns why the row cannot be imported, else empty.
std::string derive_vpp_group_size(std::map<std::string, std::string>& row, const WorldSize& world, RowLine& launch,
                                  model::MegatronLineImport& imported, model::ParseResult& parsed) {
  const auto& ms = parsed.spec->model;
  if (!ms.virtual_pipeline_model_parallel_size || ms.pipeline_model_parallel_size <= 1 || ms.microbatch_group_size_per_vp_stage) return "";
  const std::int64_t pp = ms.pipeline_model_parallel_size;
  const std::int64_t dp = world.gpus / std::max<std::int64_t>(1, ms.tensor_model_parallel_size * pp * ms.context_parallel_size);
  const std::int64_t mbs = parsed.spec->train.micro_batch_size;
  const std::int64_t gbs = parsed.spec->train.global_batch_size.value_or(mbs * dp);
  if (dp < 1 || mbs < 1 || gbs % (mbs * dp) != 0) return "";
  const std::int64_t micro = gbs / (mbs * dp);
  const auto sizes = accepted_group_sizes(pp, micro);
  if (!sizes.empty() && sizes.front() == pp) return "";
  if (sizes.size() != 1) {
    std::string list;
    for (const auto n : sizes) list += (list.empty() ? "" : ", ") + std::to_string(n);
    const std::string head = "interleaved schedule with M=" + std::to_string(micro) +
                             " micro-batches refuses the default group size PP=" + std::to_string(pp) + "; ";
    if (sizes.empty())
      return head + "no group size is accepted, so the run's batch was not " +
             (row["global-batch-size"].empty() ? std::string("Megatron's default MBS x DP (the CSV has no global-batch-size)")
                                               : "the CSV's");
    return head + "--microbatch-group-size-per-virtual-pipeline-stage is not a CSV column and sizes {" + list +
           "} are all accepted";
  }
  launch.line += " --microbatch-group-size-per-virtual-pipeline-stage " + std::to_string(sizes.front());
  imported = model::import_megatron_line(launch.line, launch.options);
  if (model::has_errors(imported.diagnostics)) return "import: " + first_error(imported.diagnostics);
  parsed = model::parse_run_spec(imported.spec_json);
  if (!parsed.spec) return "spec: with the derived group size";
  return "";
}

}  // namespace

CsvIngest ingest_golden_memory_csv(const std::string& text) {
  CsvIngest out;
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  const auto header = split_csv_line(line);
  std::size_t first_arg = 0;
  for (std::size_t i = 0; i < header.size(); ++i)
    if (header[i] == "num-layers") first_arg = i;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto cells = split_csv_line(line);
    if (cells.size() != header.size()) {
      out.skipped.push_back("malformed CSV line: " + line.substr(0, 60));
      continue;
    }
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < header.size(); ++i) row[header[i]] = cells[i];
    const std::string id = row["model"] + "/" + row["test_case"] + " (" + row["env_platform"] + ")";
    const auto skip = [&](const std::string& why) { out.skipped.push_back(id + ": " + why); };
    ++out.rows;
    // A row without a measured peak cannot be compared, whatever else it holds.
    const auto final_gb = number(row["max_alloc_final_GB"]);
    if (!final_gb) {
      skip("max_alloc_final_GB is missing or NaN");
      continue;
    }
    ++out.rows_with_value;
    const bool usable = row["test_case"].find("resume") == std::string::npos && row["test_case"].find("grpo") == std::string::npos;
    out.usable += usable;
    const std::string& m = row["model"];
    const std::string& tc = row["test_case"];
    if (const std::string why = unmodelled_case(row); !why.empty()) {
      skip(why);
      continue;
    }
    // A resumed run loads its optimizer state before the first step, so its first iteration is already
    // the steady state: compare the whole-run peak only (checkpoint-loading buffers are not modelled).
    const bool resume = tc.find("resume") != std::string::npos;
    RowInputs inputs = row_inputs(header, cells, first_arg, row);
    if (!inputs.skip.empty()) {
      skip(inputs.skip);
      continue;
    }
    const auto& tested = inputs.tested;
    WorldSize world = world_size_for(tc, row["env_platform"]);
    if (const auto recipe = detail::recipe_world_size(m + "/" + tc + "/" + row["env_platform"])) world = {recipe->first, recipe->second};
    RowLine launch = launch_line(m + "/" + tc, inputs.env, inputs.args, tested.has_value(), world.gpus, gpu_for(row["env_platform"]));
    if (!launch.skip.empty()) {
      skip(launch.skip);
      continue;
    }
    auto imported = model::import_megatron_line(launch.line, launch.options);
    if (model::has_errors(imported.diagnostics)) {
      skip("import: " + first_error(imported.diagnostics));
      continue;
    }
    auto parsed = model::parse_run_spec(imported.spec_json);
    if (!parsed.spec) {
      for (const auto& d : parsed.diagnostics)
        if (d.severity == model::Severity::error) {
          skip("spec: " + model::format(d));
          break;
        }
      continue;
    }
    if (const std::string why = derive_vpp_group_size(row, world, launch, imported, parsed); !why.empty()) {
      skip(why);
      continue;
    }
    const auto diags = model::validate(*parsed.spec);
    if (model::has_errors(diags)) {
      for (const auto& d : diags) {
        if (d.severity != model::Severity::error) continue;
        const std::string prefix = d.path == "cluster.num_gpus" ? "world size " + world.why + " does not fit this layout and nothing in the row gives another; " : "";
        skip(prefix + "validation: " + model::format(d));
        break;
      }
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
                    {"world_size", world.why},
                    {"launch_line", launch.line},
                    {"arguments", tested ? tested->source : "the CSV's MODEL_ARGS columns; other flags take Megatron-LM defaults"}};
    out.records.push_back(std::move(r));
    out.usable_imported += usable;
  }
  return out;
}

}  // namespace peakcast::calibration
