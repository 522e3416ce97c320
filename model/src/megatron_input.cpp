// import_megatron_line and parse_megatron_line: the launch line through the shell split, the
// launcher, Megatron-LM's parser, validate_args and the config builders, into a run-spec document
// (and through parse_document into a RunSpec). Every argument given on the line ends up in a key,
// in a diagnostic, or in `ignored`.
#include "megatron_detail.hpp"
#include "spec_parser_detail.hpp"

namespace peakcast::model {

using nlohmann::json;
using namespace detail;

namespace {

// Deprecated arguments validate_args itself reports or rewrites (megatron_validate*.cpp says so there).
bool deprecation_handled(const std::string& dest) {
  for (const char* d : {"enable_cuda_graph", "external_cuda_graph", "cuda_graph_scope_deprecated", "hybrid_override_pattern",
                        "mtp_hybrid_override_pattern", "use_rotary_position_embeddings", "add_position_embedding",
                        "no_weight_decay_cond_type", "batch_size", "warmup", "model_parallel_size", "checkpoint_activations"})
    if (dest == d) return true;
  return false;
}

// Arguments validate_args turns into run-spec keys without being config fields themselves.
bool read_by_validate(const std::string& dest) {
  for (const char* d : {"recompute_activations", "enable_cuda_graph", "external_cuda_graph", "cuda_graph_scope_deprecated",
                        "num_layers_per_virtual_pipeline_stage", "num_virtual_stages_per_pipeline_rank", "no_weight_decay_cond_type",
                        "fake_process_group", "group_query_attention", "hybrid_override_pattern"})
    if (dest == d) return true;
  return false;
}

void warn_deprecated(const Namespace& ns, ImportContext& ctx) {
  for (const auto& def : megatron_arg_defs()) {
    if (!ns.has(def.dest) || !def.j->value("deprecated", false) || deprecation_handled(def.dest)) continue;
    const json& repl = (*def.j)["replacement"];
    ctx.warning(option_of(ns, def.dest), "deprecated_argument",
                option_of(ns, def.dest) + " is deprecated" + (repl.is_string() ? " (use " + repl.get<std::string>() + ")" : "") + ": " +
                    def.j->value("deprecation", std::string("see its definition at ") + def.j->value("source", "")));
  }
}

// Which model the script builds: pretrain_hybrid.py / pretrain_mamba.py a HybridModel (pretrain_mamba.py
// runs pretrain_hybrid.py, pretrain_mamba.py:1-20), pretrain_gpt.py a GPTModel; arguments alone are
// read as pretrain_gpt.py's unless they give a hybrid pattern.
bool decide_model(const LaunchLine& line, const Namespace& ns, Diagnostics& out) {
  const bool pattern = !ns.none("hybrid_layer_pattern") || !ns.none("hybrid_override_pattern");
  if (line.script == "pretrain_hybrid.py" || line.script == "pretrain_mamba.py") {
    if (!pattern)
      out.push_back({Severity::error, "--hybrid-layer-pattern", "hybrid_pattern_required",
                     line.script + " needs --hybrid-layer-pattern: without it peakcast cannot tell the layer stack "
                                   "(HybridModelConfig takes the pattern, mcore:megatron/training/argument_utils.py:510)"});
    return true;
  }
  if ((line.script == "pretrain_gpt.py" || line.script == "pretrain_bert.py" || line.script == "pretrain_t5.py") && pattern)
    out.push_back({Severity::error, ns.none("hybrid_layer_pattern") ? "--hybrid-override-pattern" : "--hybrid-layer-pattern",
                   "hybrid_pattern_with_gpt_script",
                   line.script + " builds a " +
                       (line.script == "pretrain_bert.py" ? "BertModel" : line.script == "pretrain_t5.py" ? "T5Model"
                                                                                                          : "GPTModel") +
                       ", which does not read the hybrid layer pattern (gpt_config_from_args, "
                       "mcore:megatron/training/argument_utils.py:433-481; examples/bert/pretrain_bert.py:29-60; "
                       "examples/t5/pretrain_t5.py:68-137); launch pretrain_hybrid.py for a hybrid model"});
  return pattern && line.script.empty();
}

// The launched process's environment: PYTORCH_CUDA_ALLOC_CONF is the allocator's; the others are listed.
void read_environment(const LaunchLine& line, json& cluster, MegatronLineImport& r) {
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : line.env) env[k] = v;
  for (const auto& [k, v] : env) {
    if (k == "PYTORCH_CUDA_ALLOC_CONF") {
      std::size_t start = 0;
      while (start <= v.size()) {
        const auto comma = v.find(',', start);
        const std::string item = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        const auto colon = item.find(':');
        const std::string key = item.substr(0, colon), value = colon == std::string::npos ? "" : item.substr(colon + 1);
        if (key == "expandable_segments" && (value == "True" || value == "False")) {
          cluster["expandable_segments"] = value == "True";
          r.origins["cluster.expandable_segments"] = {"environment", "PYTORCH_CUDA_ALLOC_CONF=" + v, value == "True" ? "true" : "false"};
        } else if (!item.empty()) {
          r.diagnostics.push_back({Severity::warning, "PYTORCH_CUDA_ALLOC_CONF", "allocator_setting_not_simulated",
                                   "PYTORCH_CUDA_ALLOC_CONF '" + item + "' is not simulated (peakcast reads expandable_segments:True/False only)"});
        }
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else if (k == "WORLD_SIZE" || k == "PET_NNODES" || k == "PET_NPROC_PER_NODE") {
      continue;  // read with the launcher
    } else if (k == "CUBLAS_WORKSPACE_CONFIG") {
      cluster["cublas_workspace_config"] = v;
      r.origins["cluster.cublas_workspace_config"] = {"environment", "CUBLAS_WORKSPACE_CONFIG=" + v, json(v).dump()};
    } else if (k.rfind("NVTE_", 0) == 0) {
      r.diagnostics.push_back({Severity::warning, k, "environment_not_simulated",
                               k + "=" + v + " is not read by peakcast; it can change what Transformer Engine allocates"});
    } else {
      r.ignored.push_back(k + "=" + v + " (environment variable; no memory effect in peakcast's model)");
    }
  }
}

void cluster_section(const LaunchLine& line, const MegatronLineOptions& options, json& cluster, MegatronLineImport& r) {
  if (options.num_gpus) {
    if (line.world_size && *line.world_size != *options.num_gpus)
      r.diagnostics.push_back({Severity::warning, "cluster.num_gpus", "world_size_overridden",
                               "the line launches " + std::to_string(*line.world_size) + " processes (" + line.world_size_from +
                                   "); the given world size " + std::to_string(*options.num_gpus) + " is used"});
    cluster["num_gpus"] = *options.num_gpus;
    r.origins["cluster.num_gpus"] = {"option", "world size given with the line", std::to_string(*options.num_gpus)};
  } else if (line.world_size) {
    cluster["num_gpus"] = *line.world_size;
    r.origins["cluster.num_gpus"] = {"launcher", line.world_size_from, std::to_string(*line.world_size)};
  }
  if (options.gpu) {
    cluster["gpu"] = *options.gpu;
    r.origins["cluster.gpu"] = {"option", "GPU given with the line", json(*options.gpu).dump()};
  }
}

MegatronLineImport import_line(std::string_view text, const MegatronLineOptions& options) {
  MegatronLineImport r;
  auto line = read_launch_line(text, false, r.diagnostics);
  if (!line) return r;
  r.script = line->script;
  auto ns = parse_megatron_args(line->args, r.diagnostics);
  if (!ns) return r;
  ImportContext ctx{*line, options, false, r.diagnostics, r.notes, {}};
  ctx.hybrid = decide_model(*line, *ns, r.diagnostics);
  ctx.bert = line->script == "pretrain_bert.py";
  ctx.t5 = line->script == "pretrain_t5.py";
  refuse_unmodelled(*ns, ctx);
  warn_deprecated(*ns, ctx);
  apply_validate_args(*ns, ctx);
  if (has_errors(r.diagnostics)) return r;
  BuiltSpec built = build_run_spec_document(*ns, ctx);
  if (has_errors(r.diagnostics)) return r;
  json cluster = json::object();
  read_environment(*line, cluster, r);
  cluster_section(*line, options, cluster, r);
  if (!cluster.empty()) built.doc["cluster"] = cluster;
  if (ns->none("global_batch_size"))
    r.notes.push_back(
        "train.global_batch_size: not given; Megatron-LM takes micro_batch_size x data-parallel size "
        "(mcore:megatron/training/arguments.py:684-685), as the run spec does over cluster.num_gpus");
  built.doc["description"] = "Imported from a Megatron-LM launch line (" + (line->script.empty() ? std::string("arguments") : line->script) + ")";
  r.ignored.insert(r.ignored.begin(), line->ignored.begin(), line->ignored.end());  // after the environment's
  for (const auto& def : megatron_arg_defs())
    if (ns->has(def.dest) && !built.consumed.count(def.dest) && !read_by_validate(def.dest)) r.ignored.push_back(ignored_entry(*ns, def));
  for (auto& [k, o] : built.origins) r.origins[k] = o;
  r.spec_json = built.doc.dump(2);
  return r;
}

bool set_by(const std::vector<std::string>& overrides, const std::string& key) {
  for (const auto& o : overrides)
    if (o.rfind(key + "=", 0) == 0) return true;
  return false;
}

}  // namespace

MegatronLineImport import_megatron_line(std::string_view line, const MegatronLineOptions& options) {
  try {
    return import_line(line, options);
  } catch (const std::exception& e) {  // a missed case stays inside the library
    MegatronLineImport r;
    r.diagnostics.push_back({Severity::error, "", "internal", std::string("the launch line could not be read: ") + e.what()});
    return r;
  }
}

ParseResult parse_megatron_line(std::string_view line, const std::vector<std::string>& overrides, const MegatronLineOptions& options) {
  MegatronLineImport imp = import_megatron_line(line, options);
  ParseResult r;
  r.input_kind = "Megatron-LM launch line";
  r.diagnostics = imp.diagnostics;
  if (has_errors(r.diagnostics)) return r;
  const json doc = json::parse(imp.spec_json);
  const json& cluster = doc.contains("cluster") ? doc["cluster"] : json::object();
  if (!cluster.contains("gpu") && !set_by(overrides, "cluster.gpu"))
    r.diagnostics.push_back({Severity::error, "cluster.gpu", "megatron_line_gpu_unknown",
                             "a launch line does not name the GPU; give it with --set cluster.gpu=h100-sxm-80gb (or h200-141gb, "
                             "b200, gb200, gb300, a100-80gb; import takes --gpu)"});
  if (!cluster.contains("num_gpus") && !set_by(overrides, "cluster.num_gpus"))
    r.diagnostics.push_back({Severity::error, "cluster.num_gpus", "megatron_line_world_size_unknown",
                             "the line does not give the world size (torchrun --nnodes / --nproc-per-node, or WORLD_SIZE=N); give it "
                             "with --set cluster.num_gpus=N (import takes --num-gpus)"});
  if (has_errors(r.diagnostics)) return r;
  ParseResult parsed = parse_document(doc, overrides);
  for (auto& [path, o] : parsed.origins) {
    if (o.origin != "user") continue;
    if (const auto it = imp.origins.find(path); it != imp.origins.end()) {
      o.origin = it->second.origin;
      o.source = it->second.source;
    } else {
      o.origin = "--set";
    }
  }
  parsed.ignored = imp.ignored;
  parsed.input_kind = r.input_kind;
  parsed.diagnostics.insert(parsed.diagnostics.begin(), r.diagnostics.begin(), r.diagnostics.end());
  return parsed;
}

Diagnostics check_megatron_line(std::string_view line, bool allow_variables) {
  Diagnostics out;
  try {
    if (auto l = read_launch_line(line, allow_variables, out)) parse_megatron_args(l->args, out);
  } catch (const std::exception& e) {
    out.push_back({Severity::error, "", "internal", std::string("the launch line could not be read: ") + e.what()});
  }
  return out;
}

Diagnostics check_megatron_arguments(const std::vector<std::string>& args, const std::string& script) {
  Diagnostics out;
  try {
    parse_megatron_args(args, out, script);
  } catch (const std::exception& e) {
    out.push_back({Severity::error, "", "internal", std::string("the arguments could not be read: ") + e.what()});
  }
  return out;
}

bool looks_like_megatron_line(std::string_view text) { return looks_like_launch_line(text); }

}  // namespace peakcast::model
