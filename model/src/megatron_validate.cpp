// What Megatron-LM's validate_args (megatron/training/arguments.py:390-1900 at 24bad8e6) does to the
// parsed arguments before the configs are built, in its order: the assignments (every args.X = ...
// of configs/schema/megatron_args.json validate_args_sets that reaches a config field) and the
// assertions about arguments, each an error naming the argument. Rules Megatron Core's dataclasses
// enforce again are left to the run spec's own validation. This file: parallelism, deprecated
// options, CUDA graphs, batch, FSDP and precision (arguments.py:390-1200).
#include <algorithm>

#include "megatron_detail.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

void check_parallel(Namespace& ns, ImportContext& ctx) {
  // --attention-backend local needs --spec local (:434-435).
  if (ns.str("attention_backend") == "local") {
    const json& spec = ns.at("spec");
    if (!(spec.is_array() && !spec.empty() && spec[0] == "local"))
      ctx.error(option_of(ns, "attention_backend"), "attention_backend_local_needs_spec",
                "--attention-backend local is only supported with --spec local (" + arguments_source(435) + ")");
  }
  if (const json& h = ns.at("hierarchical_context_parallel_sizes"); h.is_array() && !h.empty()) {
    std::int64_t product = 1;
    for (const auto& x : h) product *= x.get<std::int64_t>();
    if (product != ns.integer("context_parallel_size", 1))
      ctx.error("--hierarchical-context-parallel-sizes", "hierarchical_cp_product",
                "the product of --hierarchical-context-parallel-sizes (" + std::to_string(product) +
                    ") must equal --context-parallel-size (" + std::to_string(ns.integer("context_parallel_size", 1)) +
                    ") (" + arguments_source(564) + ")");
  }
  const json& cp_comm = ns.at("cp_comm_type");
  bool a2a_p2p = false;
  if (cp_comm.is_array())
    for (const auto& x : cp_comm) a2a_p2p = a2a_p2p || x == "a2a+p2p";
  if (a2a_p2p && ns.none("hierarchical_context_parallel_sizes"))
    ctx.error("--cp-comm-type", "a2a_p2p_needs_hierarchical_cp",
              "--hierarchical-context-parallel-sizes must be set when a2a+p2p is used in cp comm (" + arguments_source(566) + ")");
  if (ns.none("expert_tensor_parallel_size"))
    set_derived(ns, ctx, "expert_tensor_parallel_size", ns.at("tensor_model_parallel_size"), 570);
}

// Deprecated options validate_args refuses (:572-587) or rewrites (:589-623).
void check_deprecated(Namespace& ns, ImportContext& ctx) {
  const struct {
    const char* dest;
    const char* use;
    int line;
  } refused[] = {
      {"batch_size", "--micro-batch-size", 573}, {"warmup", "--lr-warmup-fraction", 576}, {"model_parallel_size", "--tensor-model-parallel-size", 579}};
  for (const auto& r : refused)
    if (!ns.none(r.dest))
      ctx.error(option_of(ns, r.dest), "deprecated_argument_refused",
                option_of(ns, r.dest) + " is no longer valid, use " + r.use + " instead (validate_args asserts, " +
                    arguments_source(r.line) + ")");
  if (ns.flag("checkpoint_activations"))
    ctx.error("--checkpoint-activations", "deprecated_argument_refused",
              "--checkpoint-activations is no longer valid, use --recompute-activations, or --recompute-granularity "
              "and --recompute-method (validate_args prints this and exits, " +
                  arguments_source(583) + ")");
  if (ns.flag("recompute_activations")) set_derived(ns, ctx, "recompute_granularity", "selective", 590);
}

void check_cuda_graph_flags(Namespace& ns, ImportContext& ctx) {
  const bool enable = ns.flag("enable_cuda_graph"), external = ns.flag("external_cuda_graph");
  if (enable || external) {
    const std::string opt = enable ? "--enable-cuda-graph" : "--external-cuda-graph";
    if (ns.str("cuda_graph_impl") != "none")
      ctx.error(opt, "cuda_graph_flag_with_impl",
                "Do not use --enable-cuda-graph or --external-cuda-graph with --cuda-graph-impl (" + arguments_source(596) + ")");
    else if (enable && external)
      ctx.error(opt, "cuda_graph_flags_together",
                "--enable-cuda-graph and --external-cuda-graph cannot be enabled at the same time (" + arguments_source(599) + ")");
    else {
      const char* impl = enable ? "local" : "transformer_engine";
      ctx.warning(opt, "deprecated_argument", opt + " is deprecated, use --cuda-graph-impl=" + impl + " instead (" + arguments_source(enable ? 603 : 609) + ")");
      set_derived(ns, ctx, "cuda_graph_impl", impl, enable ? 605 : 612);
      ns.v.erase(enable ? "enable_cuda_graph" : "external_cuda_graph");  // del args.X (:606, :613)
    }
  }
  if (!ns.none("cuda_graph_scope_deprecated")) {
    if (ns.flag("cuda_graph_modules"))
      ctx.error("--cuda-graph-scope", "cuda_graph_scope_and_modules",
                "--cuda-graph-scope and --cuda-graph-modules cannot be used together (" + arguments_source(617) + ")");
    ctx.warning("--cuda-graph-scope", "deprecated_argument",
                "--cuda-graph-scope is deprecated, use --cuda-graph-modules instead (" + arguments_source(620) + ")");
    set_derived(ns, ctx, "cuda_graph_modules", ns.at("cuda_graph_scope_deprecated"), 622);
  }
}

// _normalize_cuda_graph_modules_args (:255-293) and the inference scope (:296-298, :628-634).
void normalize_cuda_graph_modules(Namespace& ns, ImportContext& ctx) {
  const json scopes = ns.at("cuda_graph_modules").is_array() ? ns.at("cuda_graph_modules") : json::array();
  const std::string opt = option_of(ns, "cuda_graph_modules");
  json normalized = json::array();
  std::string deprecated;
  bool full = false;
  for (const auto& s : scopes) {
    const std::string name = s.get<std::string>();
    if (name == "full") full = true;
    else if (name == "full_iteration" || name == "full_iteration_inference") {
      if (!deprecated.empty() && deprecated != name)
        ctx.error(opt, "cuda_graph_modules_deprecated_twice",
                  "cuda_graph_modules cannot contain multiple deprecated values at the same time "
                  "(mcore:megatron/core/transformer/cuda_graph_config.py:104)");
      deprecated = name;
    } else if (std::find(normalized.begin(), normalized.end(), s) == normalized.end()) normalized.push_back(s);
  }
  if (full) {
    if (scopes.size() != 1) ctx.error(opt, "cuda_graph_full_with_others",
                                      "full scope cannot be used with other scopes "
                                      "(mcore:megatron/core/transformer/cuda_graph_config.py:41)");
    ctx.warning(opt, "deprecated_value", "full scope is deprecated. Use empty cuda_graph_modules to capture the whole layer (" + arguments_source(273) + ")");
    normalized = json::array();
  }
  const std::string impl = ns.str("cuda_graph_impl");
  if (deprecated == "full_iteration") {
    if (impl != "none" && impl != "local" && impl != "full_iteration")
      ctx.error(opt, "cuda_graph_modules_migration",
                "cuda_graph_modules='full_iteration' cannot be combined with cuda_graph_impl='" + impl +
                    "' (mcore:megatron/core/transformer/cuda_graph_config.py:112)");
    ctx.warning(opt, "deprecated_value",
                "--cuda-graph-modules 'full_iteration' is deprecated. Setting "
                "--cuda-graph-impl=full_iteration instead (" +
                    arguments_source(288) + ")");
    set_derived(ns, ctx, "cuda_graph_impl", "full_iteration", 291);
  } else if (deprecated == "full_iteration_inference") {
    ctx.warning(opt, "deprecated_value",
                "--cuda-graph-modules 'full_iteration_inference' is deprecated: it sets the "
                "inference CUDA-graph scope only (no training effect) (" +
                    arguments_source(280) + ")");
  }
  if (ns.at("cuda_graph_modules") != normalized) set_derived(ns, ctx, "cuda_graph_modules", normalized, 293);
  const std::string now = ns.str("cuda_graph_impl");
  std::string scope = ns.str("inference_cuda_graph_scope");
  if (scope.empty()) scope = (deprecated == "full_iteration_inference" && (now == "local")) ? "block" : (now == "local" ? "layer" : "none");
  else if (scope != "none" && scope != "layer" && scope != "block")
    ctx.error("--inference-cuda-graph-scope", "invalid_choice",
              "argument --inference-cuda-graph-scope: invalid choice: '" + scope + "' (choose from 'none', 'layer', 'block')");
  const bool allowed = now == "local" ? (scope == "layer" || scope == "block") : scope == "none";
  if (!allowed)
    ctx.error(option_of(ns, "inference_cuda_graph_scope"), "inference_cuda_graph_scope",
              "Invalid inference CUDA graph scope '" + scope + "' for --cuda-graph-impl=" + now + " (" + arguments_source(633) + ")");
  ns.v["inference_cuda_graph_scope"] = scope;
}

void check_batch(Namespace& ns, ImportContext& ctx) {
  // pretrain_gpt.py / pretrain_hybrid.py: args_defaults={'tokenizer_type': 'GPT2BPETokenizer'}
  // (pretrain_gpt.py:514), pretrain_bert.py and pretrain_t5.py: BertWordPieceLowerCase (examples/bert/pretrain_bert.py:185,
  // examples/t5/pretrain_t5.py:273), set when the parsed value is None (:638-648).
  if (ns.none("tokenizer_type")) {
    ns.v["tokenizer_type"] = ctx.bert || ctx.t5 ? "BertWordPieceLowerCase" : "GPT2BPETokenizer";
    const char* source = ctx.bert ? "mcore:examples/bert/pretrain_bert.py:185" : ctx.t5 ? "mcore:examples/t5/pretrain_t5.py:273"
                                                                                        : "mcore:pretrain_gpt.py:514";
    ctx.derived["tokenizer_type"] = std::string(source) + " (args_defaults, applied at " + arguments_source(648) + ")";
  }
  if (ns.none("micro_batch_size"))
    ctx.error("--micro-batch-size", "required_argument", "--micro-batch-size is required (validate_args asserts it is set, " + arguments_source(675) + ")");
  else if (ns.integer("micro_batch_size") <= 0)
    ctx.error(option_of(ns, "micro_batch_size"), "value_out_of_range", "--micro-batch-size must be > 0 (" + arguments_source(676) + ")");
  if (!ns.none("step_batch_size_schedule") && !ns.none("global_batch_size"))
    ctx.error("--step-batch-size-schedule", "batch_schedule_with_global_batch",
              "Cannot specify both --step-batch-size-schedule and --global-batch-size (" + arguments_source(682) + ")");
  if (!ns.none("global_batch_size") && ns.integer("global_batch_size") <= 0)
    ctx.error(option_of(ns, "global_batch_size"), "value_out_of_range", "--global-batch-size must be > 0 (" + arguments_source(687) + ")");
}

void check_param_gather(Namespace& ns, ImportContext& ctx) {
  if (ns.flag("overlap_param_gather")) {
    if (!ns.flag("use_distributed_optimizer") && !ns.flag("use_megatron_fsdp") && ns.str("optimizer") != "dist_muon")
      ctx.error("--overlap-param-gather", "overlap_param_gather_needs_distopt",
                "--overlap-param-gather only supported with distributed optimizer, megatron fsdp, or dist_muon (" + arguments_source(993) + ")");
    if (!ns.flag("overlap_grad_reduce"))
      ctx.error("--overlap-param-gather", "overlap_param_gather_needs_grad_reduce",
                "Must use --overlap-param-gather with --overlap-grad-reduce (" + arguments_source(995) + ")");
  }
  if (ns.flag("overlap_param_gather_with_optimizer_step")) {
    const std::string opt = "--overlap-param-gather-with-optimizer-step";
    if (!ns.flag("use_distributed_optimizer") || !ns.flag("overlap_param_gather") ||
        ns.none("virtual_pipeline_model_parallel_size") || ns.str("ckpt_format") != "torch")
      ctx.error(opt, "overlap_param_gather_with_optimizer_step",
                opt +
                    " needs --use-distributed-optimizer, --overlap-param-gather, an interleaved pipeline schedule and "
                    "no distributed checkpointing (--ckpt-format torch) (" +
                    arguments_source(1034) + "-" + std::to_string(1040) + ")");
  }
}

// dtype_map (:1042-1046): the names stay names; 'auto' and None mean no override.
void map_dtypes(Namespace& ns) {
  for (const char* dest : {"main_grads_dtype", "main_params_dtype", "exp_avg_dtype", "exp_avg_sq_dtype",
                           "megatron_fsdp_main_params_dtype", "megatron_fsdp_main_grads_dtype", "megatron_fsdp_grad_comm_dtype"})
    if (ns.str(dest) == "auto") ns.v[dest] = nullptr;
}

void check_low_precision(Namespace& ns, ImportContext& ctx) {
  if (ns.flag("fp8_param_gather") && !ns.flag("use_distributed_optimizer") && !ns.flag("use_megatron_fsdp"))
    ctx.error("--fp8-param-gather", "fp8_param_gather_needs_distopt",
              "--fp8-param-gather only supported with distributed optimizer, torch fsdp2, megatron fsdp, or inference mode (" +
                  arguments_source(1062) + ")");
  if (!ns.none("fp4") && !ns.none("fp8"))
    ctx.error("--fp4-format", "fp4_with_fp8", "--fp4-format and --fp8-format cannot be used simultaneously (" + arguments_source(1066) + ")");
  if (ns.flag("fp4_param_gather") && ns.none("fp4"))
    ctx.error("--fp4-param-gather", "fp4_param_gather_needs_fp4", "--fp4-param-gather must be used together with --fp4-format (" + arguments_source(1070) + ")");
}

// Megatron-FSDP (:1083-1149): the memory-relevant settings and the assertions on arguments.
void check_megatron_fsdp(Namespace& ns, ImportContext& ctx) {
  if (!ns.flag("use_megatron_fsdp")) {
    if (ns.flag("fsdp_manual_registration"))
      ctx.error("--fsdp-manual-registration", "fsdp_manual_registration", "FSDP manual registration is only supported with Megatron FSDP (" + arguments_source(1155) + ")");
    return;
  }
  set_derived(ns, ctx, "use_custom_fsdp", true, 1087);
  if (ns.integer("megatron_fsdp_version", 1) == 2) {
    if (ns.flag("use_distributed_optimizer"))
      ctx.error("--megatron-fsdp-version", "megatron_fsdp_v2_with_distopt",
                "--megatron-fsdp-version 2 is not compatible with --use-distributed-optimizer (" + arguments_source(1091) + ")");
  } else {
    if (!ns.flag("use_distributed_optimizer"))
      ctx.warning("--use-megatron-fsdp", "megatron_fsdp_sets_distopt",
                  "Megatron-FSDP v1 is only compatible with --use-distributed-optimizer. Using DistributedOptimizer... (" + arguments_source(1097) + ")");
    set_derived(ns, ctx, "use_distributed_optimizer", true, 1100);
  }
  set_derived(ns, ctx, "reuse_grad_buf_for_mxfp8_param_ag", false, 1102);
  if (ns.flag("moe_single_grouped_weight") || ns.flag("moe_single_grouped_bias"))
    ctx.error("--use-megatron-fsdp", "megatron_fsdp_grouped_moe",
              "Megatron-FSDP does not currently support moe_single_grouped_weight or moe_single_grouped_bias (" + arguments_source(1109) + ")");
  const std::string opt = ns.str("optimizer");
  if (opt != "sgd" && opt != "adam")
    ctx.error("--optimizer", "megatron_fsdp_optimizer", "Megatron-FSDP does not support the " + opt + " optimizer yet (" + arguments_source(1116) + ")");
  if (ns.str("ckpt_format") != "fsdp_dtensor")
    ctx.error("--use-megatron-fsdp", "megatron_fsdp_ckpt_format",
              "Megatron-FSDP requires the `fsdp_dtensor` checkpointing format: add --ckpt-format fsdp_dtensor (" + arguments_source(1135) + ")");
  if (ns.flag("nccl_ub")) {
    set_derived(ns, ctx, "fsdp_manual_registration", true, 1140);
    set_derived(ns, ctx, "fsdp_double_buffer", true, 1141);
  }
  if (ns.flag("megatron_fsdp_max_pool_double_buffer")) set_derived(ns, ctx, "fsdp_double_buffer", true, 1146);
  if (ns.flag("fsdp_manual_registration") && !ns.flag("nccl_ub"))
    ctx.error("--fsdp-manual-registration", "fsdp_manual_registration", "FSDP manual registration is only supported with --nccl-ub argument (" + arguments_source(1156) + ")");
}

// Parameters dtype and bf16 gradient accumulation (:1155-1183).
void check_params_dtype(Namespace& ns, ImportContext& ctx) {
  set_derived(ns, ctx, "params_dtype", "fp32", 1159);
  if (ns.flag("fp16")) {
    if (ns.flag("bf16")) ctx.error("--fp16", "fp16_with_bf16", "--fp16 and --bf16 cannot both be set (" + arguments_source(1161) + ")");
    set_derived(ns, ctx, "params_dtype", "fp16", 1162);
    if (!ns.flag("loss_scale")) set_derived(ns, ctx, "check_for_nan_in_loss_and_grad", false, 1166);
  }
  if (ns.flag("bf16")) {
    if (!ns.flag("fp16")) set_derived(ns, ctx, "params_dtype", "bf16", 1171);
    if (ns.flag("accumulate_allreduce_grads_in_fp32") && ns.str("main_grads_dtype") != "fp32")
      ctx.error("--main-grads-dtype", "main_grads_dtype_with_fp32_reduce",
                "--main-grads-dtype can only be fp32 when --accumulate-allreduce-grads-in-fp32 is set (" + arguments_source(1176) + ")");
    if (ns.flag("grad_reduce_in_bf16")) set_derived(ns, ctx, "accumulate_allreduce_grads_in_fp32", false, 1179);
    else if (!ns.flag("accumulate_allreduce_grads_in_fp32") && ns.str("main_grads_dtype") == "fp32")
      set_derived(ns, ctx, "accumulate_allreduce_grads_in_fp32", true, 1181);
  }
  if (ns.str("cuda_graph_impl") == "full_iteration" && ns.flag("check_for_nan_in_loss_and_grad"))
    ctx.error("--cuda-graph-impl", "full_iteration_needs_no_nan_check",
              "--no-check-for-nan-in-loss-and-grad should be set with --cuda-graph-impl=full_iteration for training (" + arguments_source(1185) + ")");
  if (ns.str("inference_cuda_graph_scope") == "block" && !ns.none("fp8") &&
      (ns.str("transformer_impl") != "inference_optimized" || ns.str("fp8_recipe") != "mxfp8"))
    ctx.error("--inference-cuda-graph-scope", "inference_block_graphs_fp8",
              "fp8 with --inference-cuda-graph-scope=block is only supported with --transformer-impl=inference_optimized and "
              "--fp8-recipe=mxfp8 (" +
                  arguments_source(1190) + ")");
  if (ns.str("cuda_graph_impl") == "local") {
    const auto n = ns.integer("inference_dynamic_batching_num_cuda_graphs", 16);
    if (!(n > 0 || n == -1))
      ctx.error("--inference-dynamic-batching-num-cuda-graphs", "value_out_of_range",
                "inference_dynamic_batching_num_cuda_graphs should be a positive integer or -1 (" + arguments_source(1196) + ")");
  }
  if (ns.none("dataloader_type")) ns.v["dataloader_type"] = "single";
  if (ns.integer("num_dataset_builder_threads", 1) <= 0)
    ctx.error("--num-dataset-builder-threads", "value_out_of_range", "--num-dataset-builder-threads must be > 0 (" + arguments_source(1206) + ")");
}

}  // namespace

void ImportContext::error(const std::string& path, const std::string& rule, const std::string& message) const {
  out.push_back({Severity::error, path, rule, message});
}

void ImportContext::warning(const std::string& path, const std::string& rule, const std::string& message) const {
  out.push_back({Severity::warning, path, rule, message});
}

void apply_validate_args(Namespace& ns, ImportContext& ctx) {
  check_parallel(ns, ctx);
  check_deprecated(ns, ctx);
  check_cuda_graph_flags(ns, ctx);
  normalize_cuda_graph_modules(ns, ctx);
  check_batch(ns, ctx);
  apply_hybrid_pattern(ns, ctx);  // also the virtual pipeline size (:700-980)
  check_param_gather(ns, ctx);
  map_dtypes(ns);
  check_low_precision(ns, ctx);
  check_megatron_fsdp(ns, ctx);
  check_params_dtype(ns, ctx);
  apply_validate_model_args(ns, ctx);
}

}  // namespace peakcast::model::detail
