// Megatron-LM argument names and CLI defaults, mapped onto the run spec's Megatron Core names.
// Defaults cite megatron/training/arguments.py (validate_args and the parser's add_argument calls).
#include "peakcast/calibration/megatron_args.hpp"

#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "peakcast/model/embedded_configs.hpp"

namespace peakcast::calibration {

namespace {

using nlohmann::json;

struct Arg {
  std::string name;  // without the leading "--"
  std::vector<std::string> values;
};

std::vector<Arg> group_args(const std::vector<std::string>& tokens, std::vector<std::string>& errors) {
  std::vector<Arg> out;
  for (const auto& t : tokens) {
    if (t.rfind("--", 0) == 0) {
      Arg a;
      const auto eq = t.find('=');
      a.name = t.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      if (eq != std::string::npos) a.values.push_back(t.substr(eq + 1));
      out.push_back(std::move(a));
    } else if (out.empty()) {
      errors.push_back("'" + t + "' is not an argument (arguments start with --)");
    } else {
      out.back().values.push_back(t);
    }
  }
  return out;
}

std::int64_t to_int(const Arg& a) {
  if (a.values.size() != 1) throw std::invalid_argument("--" + a.name + " takes one integer");
  std::size_t pos = 0;
  const long long v = std::stoll(a.values[0], &pos);
  if (pos != a.values[0].size()) throw std::invalid_argument("--" + a.name + " takes an integer, got '" + a.values[0] + "'");
  return v;
}

double to_double(const Arg& a) {
  if (a.values.size() != 1) throw std::invalid_argument("--" + a.name + " takes one number");
  return std::stod(a.values[0]);
}

std::string to_str(const Arg& a) {
  if (a.values.size() != 1) throw std::invalid_argument("--" + a.name + " takes one value");
  return a.values[0];
}

// "--recompute-modules core_attn mlp" or the CSV's "[core_attn mlp]".
std::vector<std::string> to_list(const Arg& a) {
  std::vector<std::string> out;
  for (auto v : a.values) {
    for (char& c : v) if (c == '[' || c == ']' || c == ',' || c == '\'' || c == '"') c = ' ';
    std::size_t i = 0;
    while (i < v.size()) {
      while (i < v.size() && v[i] == ' ') ++i;
      std::size_t j = i;
      while (j < v.size() && v[j] != ' ') ++j;
      if (j > i) out.push_back(v.substr(i, j - i));
      i = j;
    }
  }
  return out;
}

// --moe-layer-freq: an int, or a Python list expression such as "([0]*3+[1]*12)" or "[1,0,1]".
json moe_layer_freq(const std::string& text) {
  std::string s;
  for (char c : text) if (!std::isspace(static_cast<unsigned char>(c)) && c != '(' && c != ')') s += c;
  if (!s.empty() && s.front() != '[') return std::stoll(s);
  std::vector<std::int64_t> out;
  std::size_t i = 0;
  while (i < s.size()) {
    if (s[i] != '[') throw std::invalid_argument("--moe-layer-freq '" + text + "' is not a list expression");
    const auto close = s.find(']', i);
    if (close == std::string::npos) throw std::invalid_argument("--moe-layer-freq '" + text + "': missing ]");
    std::vector<std::int64_t> items;
    std::string body = s.substr(i + 1, close - i - 1);
    std::size_t p = 0;
    while (p < body.size()) {
      auto q = body.find(',', p);
      if (q == std::string::npos) q = body.size();
      if (q > p) items.push_back(std::stoll(body.substr(p, q - p)));
      p = q + 1;
    }
    i = close + 1;
    std::int64_t times = 1;
    if (i < s.size() && s[i] == '*') {
      std::size_t k = i + 1;
      while (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) ++k;
      times = std::stoll(s.substr(i + 1, k - i - 1));
      i = k;
    }
    for (std::int64_t t = 0; t < times; ++t) out.insert(out.end(), items.begin(), items.end());
    if (i < s.size()) {
      if (s[i] != '+') throw std::invalid_argument("--moe-layer-freq '" + text + "': expected + between lists");
      ++i;
    }
  }
  return out;
}

std::string underscored(std::string s) {
  for (char& c : s) if (c == '-') c = '_';
  return s;
}

// A flag without a value whose dataclass field has the same name (e.g. --moe-grouped-gemm, --qk-layernorm).
const json& schema() {
  static const json s = [] {
    const auto text = model::embedded_config("schema/run_spec_schema.json");
    return text ? json::parse(*text, nullptr, false) : json::object();
  }();
  return s;
}

std::optional<std::string> schema_section(const std::string& key) {
  for (const char* sec : {"model", "ddp", "optimizer", "train"})
    if (schema().contains(sec) && schema().at(sec).contains(key)) return sec;
  return std::nullopt;
}

json typed_value(const Arg& a, const json& field) {
  const auto types = field.value("types", json::array());
  const auto has = [&](const char* t) { return std::find(types.begin(), types.end(), t) != types.end(); };
  if (a.values.empty()) {
    if (has("bool")) return true;
    throw std::invalid_argument("--" + a.name + " needs a value");
  }
  if (has("int") && a.values.size() == 1) {
    try { return to_int(a); } catch (const std::exception&) {}
  }
  if (has("float") && a.values.size() == 1) return to_double(a);
  if (has("bool") && a.values.size() == 1) return a.values[0] == "True" || a.values[0] == "true" || a.values[0] == "1";
  if (a.values.size() == 1) return a.values[0];
  return to_list(a);
}

// Arguments that only steer logging, checkpoints, data or the scheduler: no memory effect.
bool is_irrelevant(const std::string& n) {
  static const std::set<std::string> exact = {
      "train-iters", "train-samples", "lr", "min-lr", "lr-decay-style", "lr-warmup-fraction", "lr-warmup-iters",
      "lr-decay-iters", "lr-decay-samples", "lr-warmup-samples", "weight-decay", "clip-grad", "adam-beta1",
      "adam-beta2", "adam-eps", "init-method-std", "seed", "split", "data-path", "vocab-file", "merge-file",
      "tokenizer-type", "tokenizer-model", "save", "load", "save-interval", "eval-interval", "eval-iters",
      "distributed-backend", "deterministic-mode", "no-gradient-accumulation-fusion", "use-mcore-models",
      "timing-log-level", "tensorboard-dir", "exit-interval", "attention-softmax-in-fp32", "use-checkpoint-args",
      "use-checkpoint-opt_param-scheduler", "no-load-optim", "no-load-rng", "mock-data", "data-cache-path",
      "ckpt-format", "dist-ckpt-strictness", "manual-gc", "manual-gc-interval", "no-ckpt-fully-parallel-save",
      "ckpt-fully-parallel-load", "ckpt-assume-constant-structure", "async-save", "micro-batch-size",
      "num-workers", "dataloader-type", "no-create-attention-mask-in-dataloader", "no-mmap-bin-files",
      "rotary-base", "rotary-percent", "rotary-interleaved", "norm-epsilon", "wandb-project", "wandb-exp-name",
      "bias-dropout-fusion", "transformer-impl", "test-mode", "finetune", "override-opt_param-scheduler",
      "use-legacy-models", "exit-duration-in-mins", "data-parallel-random-init", "check-weight-hash-across-dp-replicas-interval",
      "ckpt-convert-format", "ckpt-convert-save", "full-validation", "init-model-with-meta-device", "use-tp-pp-dp-mapping",
      "hybrid-attention-ratio", "hybrid-mlp-ratio", "spec", "disable-mamba-mem-eff-path", "apply-layernorm-1p"};
  if (exact.count(n)) return true;
  for (const char* p : {"log", "tensorboard", "wandb", "eval", "save", "load", "ckpt", "timing", "profile", "straggler",
                        "rerun", "num-dataset-builder", "data-", "tokenizer", "seq-length-", "no-check", "result-",
                        "inference", "return-", "record-", "use-persistent", "calculate-per-token-loss", "check-"})
    if (n.rfind(p, 0) == 0) return true;
  return false;
}

}  // namespace

std::vector<std::string> split_command_line(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  bool in_token = false;
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote) {
      if (c == quote) quote = 0;
      else if (c == '\\' && quote == '"' && i + 1 < text.size()) cur += text[++i];
      else cur += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_token = true;
    } else if (c == '\\' && i + 1 < text.size()) {
      if (text[i + 1] != '\n') cur += text[i + 1];
      ++i;
      in_token = in_token || text[i] != '\n';
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      if (in_token) out.push_back(cur);
      cur.clear();
      in_token = false;
    } else {
      cur += c;
      in_token = true;
    }
  }
  if (in_token) out.push_back(cur);
  return out;
}

ImportedSpec import_megatron_args(const std::vector<std::string>& tokens, const ImportOptions& options) {
  ImportedSpec out;
  const auto args = group_args(tokens, out.errors);
  std::map<std::string, Arg> by_name;
  for (const auto& a : args) by_name[a.name] = a;  // the last occurrence wins, as argparse does
  const auto has = [&](const char* n) { return by_name.count(n) > 0; };
  const auto get = [&](const char* n) -> const Arg& { return by_name.at(n); };

  json model = json::object(), train = json::object(), optimizer = json::object(), ddp = json::object();
  std::set<std::string> used;
  const auto use = [&](const char* n) { used.insert(n); return has(n); };

  try {
    const bool bf16 = use("bf16"), fp16 = use("fp16");
    for (const char* req : {"num-layers", "hidden-size", "num-attention-heads", "seq-length", "micro-batch-size"})
      if (!has(req)) out.errors.push_back("--" + std::string(req) + " is required");
    if (!out.errors.empty()) return out;

    // Model shape.
    const std::int64_t hidden = to_int(get("hidden-size")), heads = to_int(get("num-attention-heads"));
    model["num_layers"] = to_int(get("num-layers"));
    // Megatron-LM's training always deallocates the pipeline outputs it sends
    // (megatron/training/argument_utils.py:305); Megatron Core's dataclass default is False.
    model["deallocate_pipeline_outputs"] = true;
    model["hidden_size"] = hidden;
    model["num_attention_heads"] = heads;
    model["seq_length"] = to_int(get("seq-length"));
    used.insert({"num-layers", "hidden-size", "num-attention-heads", "seq-length"});
    const bool swiglu = use("swiglu");
    model["gated_linear_unit"] = swiglu;
    model["activation_func"] = swiglu ? "silu" : (use("squared-relu") ? "squared_relu" : "gelu");
    if (use("ffn-hidden-size")) model["ffn_hidden_size"] = to_int(get("ffn-hidden-size"));
    else {
      // validate_args: SwiGLU keeps the parameter count of a 4h MLP, rounded down to 64.
      model["ffn_hidden_size"] = swiglu ? (4 * hidden * 2 / 3) / 64 * 64 : 4 * hidden;
      out.notes.push_back("ffn_hidden_size = " + model["ffn_hidden_size"].dump() + " (Megatron-LM default for " +
                          (swiglu ? "SwiGLU" : "a 4h MLP") + ")");
    }
    if (use("group-query-attention"))
      model["num_query_groups"] = use("num-query-groups") ? to_int(get("num-query-groups")) : 1;
    else if (use("num-query-groups"))
      out.ignored.push_back("--num-query-groups without --group-query-attention (Megatron-LM ignores it)");
    if (use("kv-channels")) model["kv_channels"] = to_int(get("kv-channels"));
    model["max_position_embeddings"] =
        use("max-position-embeddings") ? to_int(get("max-position-embeddings")) : model["seq_length"].get<std::int64_t>();
    model["position_embedding_type"] = use("position-embedding-type") ? to_str(get("position-embedding-type")) : "learned_absolute";
    if (use("use-rotary-position-embeddings")) model["position_embedding_type"] = "rope";
    model["normalization"] = use("normalization") ? to_str(get("normalization")) : "LayerNorm";
    model["add_bias_linear"] = !use("disable-bias-linear");
    model["share_embeddings_and_output_weights"] = !use("untie-embeddings-and-output-weights");
    if (use("qk-layernorm")) model["qk_layernorm"] = true;

    // Vocabulary: the tokenizer's size, padded to make_vocab_size_divisible_by x TP as Megatron-LM does.
    if (use("vocab-size")) model["vocab_size"] = to_int(get("vocab-size"));
    else {
      model["vocab_size"] = 50257;
      out.notes.push_back("vocab_size = 50257 (GPT-2 BPE, the functional tests' tokenizer; pass --vocab-size otherwise)");
    }
    model["should_pad_vocab"] = true;
    model["make_vocab_size_divisible_by"] =
        use("make-vocab-size-divisible-by") ? to_int(get("make-vocab-size-divisible-by")) : 128;

    // Precision and fusions (Megatron-LM CLI defaults).
    model["bf16"] = bf16;
    model["fp16"] = fp16;
    model["params_dtype"] = bf16 ? "bf16" : fp16 ? "fp16" : "fp32";
    model["pipeline_dtype"] = model["params_dtype"];  // Megatron-LM: argument_utils.py:306
    model["transformer_impl"] = use("transformer-impl") ? to_str(get("transformer-impl")) : "transformer_engine";
    if (use("attention-backend")) model["attention_backend"] = to_str(get("attention-backend"));
    model["masked_softmax_fusion"] = !use("no-masked-softmax-fusion");
    model["bias_activation_fusion"] = !(use("no-bias-gelu-fusion") || use("no-bias-swiglu-fusion"));
    model["bias_dropout_fusion"] = !use("no-bias-dropout-fusion");
    model["gradient_accumulation_fusion"] = !use("no-gradient-accumulation-fusion");
    model["apply_rope_fusion"] = !use("no-rope-fusion");
    model["persist_layer_norm"] = !use("no-persist-layer-norm");
    // --apply-query-key-layer-scaling forces the softmax to fp32 (validate_args).
    model["attention_softmax_in_fp32"] = use("attention-softmax-in-fp32") || use("apply-query-key-layer-scaling");
    model["hidden_dropout"] = use("hidden-dropout") ? to_double(get("hidden-dropout")) : 0.1;
    model["attention_dropout"] = use("attention-dropout") ? to_double(get("attention-dropout")) : 0.1;
    if (use("fp8-format")) {
      model["fp8"] = to_str(get("fp8-format"));
      model["fp8_recipe"] = use("fp8-recipe") ? to_str(get("fp8-recipe")) : "delayed";
    } else if (use("fp8-recipe")) {
      out.ignored.push_back("--fp8-recipe without --fp8-format (FP8 stays off)");
    }

    // Parallelism.
    const auto tp = use("tensor-model-parallel-size") ? to_int(get("tensor-model-parallel-size")) : 1;
    const auto pp = use("pipeline-model-parallel-size") ? to_int(get("pipeline-model-parallel-size")) : 1;
    model["tensor_model_parallel_size"] = tp;
    model["pipeline_model_parallel_size"] = pp;
    if (use("num-layers-per-virtual-pipeline-stage")) {
      const auto per = to_int(get("num-layers-per-virtual-pipeline-stage"));
      const auto layers = model["num_layers"].get<std::int64_t>();
      if (per <= 0 || layers % (pp * per) != 0)
        out.errors.push_back("--num-layers-per-virtual-pipeline-stage " + std::to_string(per) +
                             " does not divide num_layers / pipeline size");
      else model["virtual_pipeline_model_parallel_size"] = layers / pp / per;
    }
    if (use("num-virtual-stages-per-pipeline-rank"))
      model["virtual_pipeline_model_parallel_size"] = to_int(get("num-virtual-stages-per-pipeline-rank"));
    // ModelParallelConfig.microbatch_group_size_per_vp_stage (model_parallel_config.py:431; None = PP).
    if (use("microbatch-group-size-per-virtual-pipeline-stage"))
      model["microbatch_group_size_per_vp_stage"] = to_int(get("microbatch-group-size-per-virtual-pipeline-stage"));
    for (const char* n : {"context-parallel-size", "expert-model-parallel-size", "expert-tensor-parallel-size"})
      if (use(n)) model[underscored(n)] = to_int(get(n));
    model["sequence_parallel"] = use("sequence-parallel") && tp > 1;  // validate_args drops SP at TP 1
    if (use("decoder-first-pipeline-num-layers"))
      model["num_layers_in_first_pipeline_stage"] = to_int(get("decoder-first-pipeline-num-layers"));
    if (use("decoder-last-pipeline-num-layers"))
      model["num_layers_in_last_pipeline_stage"] = to_int(get("decoder-last-pipeline-num-layers"));
    if (use("pipeline-model-parallel-layout")) model["pipeline_model_parallel_layout"] = to_str(get("pipeline-model-parallel-layout"));
    if (use("account-for-embedding-in-pipeline-split")) model["account_for_embedding_in_pipeline_split"] = true;
    if (use("account-for-loss-in-pipeline-split")) model["account_for_loss_in_pipeline_split"] = true;

    // Recompute.
    if (use("recompute-activations")) model["recompute_granularity"] = "selective";
    if (use("recompute-granularity")) model["recompute_granularity"] = to_str(get("recompute-granularity"));
    if (use("recompute-method")) model["recompute_method"] = to_str(get("recompute-method"));
    if (use("recompute-num-layers")) model["recompute_num_layers"] = to_int(get("recompute-num-layers"));
    if (use("recompute-modules")) model["recompute_modules"] = to_list(get("recompute-modules"));
    else if (model.value("recompute_granularity", "") == "selective") model["recompute_modules"] = json::array({"core_attn"});

    // MoE, MLA, MTP, hybrid.
    if (use("num-experts")) {
      model["num_moe_experts"] = to_int(get("num-experts"));
      model["moe_router_topk"] = use("moe-router-topk") ? to_int(get("moe-router-topk")) : 2;
      model["moe_ffn_hidden_size"] = use("moe-ffn-hidden-size") ? json(to_int(get("moe-ffn-hidden-size"))) : model["ffn_hidden_size"];
      if (use("moe-shared-expert-intermediate-size"))
        model["moe_shared_expert_intermediate_size"] = to_int(get("moe-shared-expert-intermediate-size"));
      if (use("moe-layer-freq")) model["moe_layer_freq"] = moe_layer_freq(to_str(get("moe-layer-freq")));
      model["moe_token_dispatcher_type"] =
          use("moe-token-dispatcher-type") ? to_str(get("moe-token-dispatcher-type")) : "allgather";
    }
    if (use("multi-latent-attention")) {
      model["multi_latent_attention"] = true;
      // Megatron-LM's MLA argument defaults (not MLATransformerConfig's).
      model["q_lora_rank"] = use("q-lora-rank") ? json(to_int(get("q-lora-rank"))) : json(nullptr);
      model["kv_lora_rank"] = use("kv-lora-rank") ? to_int(get("kv-lora-rank")) : 32;
      model["qk_head_dim"] = use("qk-head-dim") ? to_int(get("qk-head-dim")) : 128;
      model["qk_pos_emb_head_dim"] = use("qk-pos-emb-head-dim") ? to_int(get("qk-pos-emb-head-dim")) : 64;
      model["v_head_dim"] = use("v-head-dim") ? to_int(get("v-head-dim")) : 128;
    }
    if (use("mtp-num-layers")) model["mtp_num_layers"] = to_int(get("mtp-num-layers"));
    if (use("hybrid-override-pattern")) model["hybrid_override_pattern"] = to_str(get("hybrid-override-pattern"));
    else if (options.mamba) out.errors.push_back("pretrain_mamba.py without --hybrid-override-pattern is not supported");

    // CUDA graphs, offloading.
    if (use("cuda-graph-impl")) model["cuda_graph_impl"] = to_str(get("cuda-graph-impl"));
    if (use("enable-cuda-graph")) model["cuda_graph_impl"] = "local";
    if (use("external-cuda-graph")) model["cuda_graph_impl"] = "transformer_engine";
    if (use("cpu-offloading")) model["cpu_offloading"] = true;

    // Batch, optimizer, DDP.
    train["micro_batch_size"] = to_int(get("micro-batch-size"));
    used.insert("micro-batch-size");
    // Without --global-batch-size Megatron-LM takes micro_batch_size x data_parallel_size
    // (arguments.py:684-685): one micro-batch per step. Left out, the spec's default is the same
    // rule over cluster.num_gpus.
    if (use("global-batch-size")) train["global_batch_size"] = to_int(get("global-batch-size"));
    const bool distopt = use("use-distributed-optimizer");
    optimizer["optimizer"] = use("optimizer") ? to_str(get("optimizer")) : "adam";
    if (optimizer["optimizer"] != "adam" && optimizer["optimizer"] != "sgd")
      out.errors.push_back("--optimizer " + optimizer["optimizer"].get<std::string>() + " is not modelled (adam and sgd are)");
    optimizer["implementation"] = "te_fused_adam";
    optimizer["use_distributed_optimizer"] = distopt;
    optimizer["bf16"] = bf16;
    optimizer["fp16"] = fp16;
    optimizer["params_dtype"] = model["params_dtype"];
    if (use("use-precision-aware-optimizer")) optimizer["use_precision_aware_optimizer"] = true;
    ddp["use_distributed_optimizer"] = distopt;
    // validate_args: bf16 training accumulates and all-reduces grads in fp32.
    ddp["grad_reduce_in_fp32"] = bf16 || use("accumulate-allreduce-grads-in-fp32");
    ddp["overlap_grad_reduce"] = use("overlap-grad-reduce");
    ddp["overlap_param_gather"] = use("overlap-param-gather");

    for (const char* n : {"use-torch-fsdp2", "use-megatron-fsdp", "fine-grained-activation-offloading"})
      if (use(n)) out.errors.push_back("--" + std::string(n) + " is not modelled by peakcast");

    // Anything else: a dataclass field of the same name, or a flag with no known memory effect.
    for (const auto& a : args) {
      if (used.count(a.name)) continue;
      const auto key = underscored(a.name);
      if (const auto sec = schema_section(key)) {
        json& target = *sec == "model" ? model : *sec == "ddp" ? ddp : *sec == "optimizer" ? optimizer : train;
        target[key] = typed_value(a, schema().at(*sec).at(key));
      } else if (!is_irrelevant(a.name)) {
        out.ignored.push_back("--" + a.name);
      }
    }
  } catch (const std::exception& e) {
    out.errors.push_back(e.what());
  }
  if (!out.errors.empty()) return out;
  json spec;
  spec["description"] = "Imported from Megatron-LM command-line arguments (peakcast import)";
  spec["model"] = model;
  spec["train"] = train;
  spec["optimizer"] = optimizer;
  spec["ddp"] = ddp;
  spec["cluster"] = {{"num_gpus", options.num_gpus}, {"gpu", options.gpu}};
  out.spec_json = spec.dump(2);
  return out;
}

}  // namespace peakcast::calibration
