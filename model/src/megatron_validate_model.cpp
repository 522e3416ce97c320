// validate_args, continued (megatron/training/arguments.py:1200-1900 at 24bad8e6): the model's
// shape and its defaults (ffn_hidden_size, kv_channels, the required arguments), sequence lengths,
// sequence parallelism, biases, position embeddings, MoE, the optimizer, and the remaining checks
// on arguments, in validate_args' order.
#include "megatron_detail.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

void fail(const Namespace& ns, ImportContext& ctx, const std::string& dest, const std::string& rule, const std::string& message,
          int line) {
  ctx.error(option_of(ns, dest), rule, message + " (" + arguments_source(line) + ")");
}

// Iteration- and sample-based training exclude each other's schedule options (:1222-1250).
void check_schedule(Namespace& ns, ImportContext& ctx) {
  if (ns.flag("skip_train")) return;
  if (ns.flag("train_iters")) {
    if (!ns.none("train_samples")) fail(ns, ctx, "train_samples", "iteration_vs_sample_training", "expected iteration-based training", 1227);
    if (!ns.none("lr_decay_samples")) fail(ns, ctx, "lr_decay_samples", "iteration_vs_sample_training", "expected iteration-based learning rate decay", 1229);
    if (ns.integer("lr_warmup_samples") != 0) fail(ns, ctx, "lr_warmup_samples", "iteration_vs_sample_training", "expected iteration-based learning rate warmup", 1231);
    if (!ns.none("lr_warmup_fraction") && ns.integer("lr_warmup_iters") != 0)
      fail(ns, ctx, "lr_warmup_fraction", "warmup_given_twice", "can only specify one of lr-warmup-fraction and lr-warmup-iters", 1235);
  }
  if (ns.flag("train_samples")) {
    if (!ns.none("train_iters")) fail(ns, ctx, "train_iters", "iteration_vs_sample_training", "expected sample-based training", 1242);
    if (!ns.none("lr_decay_iters")) fail(ns, ctx, "lr_decay_iters", "iteration_vs_sample_training", "expected sample-based learning rate decay", 1243);
    if (ns.integer("lr_warmup_iters") != 0) fail(ns, ctx, "lr_warmup_iters", "iteration_vs_sample_training", "expected sample-based learnig rate warmup", 1245);
    if (!ns.none("lr_warmup_fraction") && ns.integer("lr_warmup_samples") != 0)
      fail(ns, ctx, "lr_warmup_fraction", "warmup_given_twice", "can only specify one of lr-warmup-fraction and lr-warmup-samples", 1248);
  }
}

// The layer count, the required arguments and the shape defaults (:1252-1281).
void check_shape(Namespace& ns, ImportContext& ctx) {
  if (!ns.none("num_layers")) {
    if (!ns.none("encoder_num_layers"))
      fail(ns, ctx, "encoder_num_layers", "num_layers_given_twice", "cannot have both num-layers and encoder-num-layers specified", 1254);
  } else if (!ns.none("encoder_num_layers")) {
    set_derived(ns, ctx, "num_layers", ns.at("encoder_num_layers"), 1259);
  }
  bool missing = false;
  for (const char* dest : {"num_layers", "hidden_size", "num_attention_heads", "max_position_embeddings"}) {
    if (!ns.none(dest)) continue;
    std::string opt = option_of(ns, dest);
    if (std::string(dest) == "num_layers") opt += (ctx.hybrid ? " (or --hybrid-layer-pattern)" : "");
    ctx.error(option_of(ns, dest), "required_argument",
              opt + " is required: validate_args asserts " + dest + " is not None (" + arguments_source(1262) + "-" + std::to_string(1265) +
                  ")" + (std::string(dest) == "max_position_embeddings" ? "; it is not taken from --seq-length" : ""));
    missing = true;
  }
  if (missing) return;
  const auto h = ns.integer("hidden_size"), heads = ns.integer("num_attention_heads");
  if (ns.none("ffn_hidden_size")) {
    // SwiGLU keeps a 4h MLP's parameter count, rounded down to a multiple of 64.
    if (ns.flag("swiglu")) set_derived(ns, ctx, "ffn_hidden_size", static_cast<std::int64_t>(4.0 * h * 2 / 3 / 64) * 64, 1275);
    else set_derived(ns, ctx, "ffn_hidden_size", 4 * h, 1277);
  }
  if (ns.none("kv_channels")) {
    if (heads <= 0 || h % heads != 0) {
      fail(ns, ctx, "hidden_size", "hidden_vs_heads", "--hidden-size must be divisible by --num-attention-heads when --kv-channels is not given", 1280);
      return;
    }
    set_derived(ns, ctx, "kv_channels", h / heads, 1281);
  }
}

// Sequence lengths and the remaining scalar checks of :1283-1348.
void check_lengths(Namespace& ns, ImportContext& ctx) {
  const auto cp = ns.integer("context_parallel_size", 1);
  if (!ns.none("seq_length") && cp > 1 && ns.integer("seq_length") % (cp * 2) != 0)
    fail(ns, ctx, "seq_length", "seq_length_vs_cp", "seq-length should be a multiple of 2 * context-parallel-size if context-parallel-size > 1", 1285);
  if (!ns.none("seq_length")) {
    if (!ns.none("encoder_seq_length")) fail(ns, ctx, "encoder_seq_length", "seq_length_given_twice", "--encoder-seq-length cannot be given with --seq-length", 1295);
  } else if (ns.none("encoder_seq_length")) {
    ctx.error("--seq-length", "required_argument", "--seq-length (or --encoder-seq-length) is required (" + arguments_source(1298) + ")");
  } else {
    set_derived(ns, ctx, "seq_length", ns.at("encoder_seq_length"), 1299);
  }
  if (!ns.none("seq_length") && !ns.none("max_position_embeddings") && ns.integer("max_position_embeddings") < ns.integer("seq_length"))
    fail(ns, ctx, "max_position_embeddings", "max_position_embeddings_vs_seq_length",
         "max_position_embeddings (" + std::to_string(ns.integer("max_position_embeddings")) + ") must be greater than or equal to seq_length (" +
             std::to_string(ns.integer("seq_length")) + ")",
         1302);
  if (!ns.none("decoder_seq_length") && ns.integer("max_position_embeddings") < ns.integer("decoder_seq_length"))
    fail(ns, ctx, "decoder_seq_length", "max_position_embeddings_vs_seq_length", "max_position_embeddings must be >= decoder_seq_length", 1306);
  if (!ns.none("lr") && ns.at("min_lr").is_number() && ns.at("min_lr").get<double>() > ns.at("lr").get<double>())
    fail(ns, ctx, "min_lr", "min_lr_above_lr", "--min-lr must be <= --lr", 1308);
  if (!ns.none("save") && (ns.none("save_interval") || ns.integer("save_interval") <= 0))
    fail(ns, ctx, "save_interval", "save_needs_interval", "--save needs a positive --save-interval", 1310);
  if (!ns.none("log_memory_interval") && ns.integer("log_interval", 100) > 0 &&
      ns.integer("log_memory_interval") % ns.integer("log_interval", 100) != 0)
    fail(ns, ctx, "log_memory_interval", "log_memory_interval", "--log-memory-interval must be a multiple of --log-interval", 1318);
  if (ns.flag("fp16_lm_cross_entropy") && !ns.flag("fp16"))
    fail(ns, ctx, "fp16_lm_cross_entropy", "fp16_lm_cross_entropy_needs_fp16", "lm cross entropy in fp16 only support in fp16 mode.", 1321);
  if (ns.flag("fp32_residual_connection") && !ns.flag("fp16") && !ns.flag("bf16"))
    fail(ns, ctx, "fp32_residual_connection", "fp32_residual_needs_half", "residual connection in fp32 only supported when using fp16 or bf16.", 1324);
  if (!ns.none("no_weight_decay_cond_type")) {
    ctx.warning("--no-weight-decay-cond-type", "deprecated_argument", "--no-weight-decay-cond-type is deprecated. Please use --apply-wd-to-qk-layernorm instead (" + arguments_source(1331) + ")");
    if (ns.str("no_weight_decay_cond_type") == "apply_wd_to_qk_layernorm") set_derived(ns, ctx, "apply_wd_to_qk_layernorm", true, 1336);
    else fail(ns, ctx, "no_weight_decay_cond_type", "invalid_value", "Invalid no_weight_decay_cond_type: " + ns.str("no_weight_decay_cond_type"), 1338);
  }
  const bool constant = ns.str("weight_decay_incr_style") == "constant";
  if (constant && (!ns.none("start_weight_decay") || !ns.none("end_weight_decay")))
    fail(ns, ctx, "start_weight_decay", "weight_decay_style", "--start-weight-decay / --end-weight-decay need a non-constant --weight-decay-incr-style", 1342);
  if (!constant && (ns.none("start_weight_decay") || ns.none("end_weight_decay")))
    fail(ns, ctx, "weight_decay_incr_style", "weight_decay_style", "a non-constant --weight-decay-incr-style needs --start-weight-decay and --end-weight-decay", 1347);
}

// Recompute, sequence parallelism, TP overlap, biases, position embeddings (:1355-1578).
void check_layers(Namespace& ns, ImportContext& ctx) {
  if (ns.flag("distribute_saved_activations") &&
      (ns.integer("tensor_model_parallel_size", 1) <= 1 || ns.str("recompute_granularity") != "full" || ns.none("recompute_method")))
    fail(ns, ctx, "distribute_saved_activations", "distribute_saved_activations",
         "distributing recomputed activations needs TP > 1, --recompute-granularity full and a --recompute-method", 1359);
  if (ns.str("recompute_granularity") == "selective" && !ns.none("recompute_method"))
    fail(ns, ctx, "recompute_method", "selective_with_method", "recompute method is not yet supported for selective recomputing granularity", 1375);
  if (ns.integer("tensor_model_parallel_size", 1) == 1) {
    if (ns.flag("sequence_parallel"))
      ctx.warning("--sequence-parallel", "sequence_parallel_at_tp1", "Disabling sequence parallelism because tensor model parallelism is disabled (" + arguments_source(1384) + ")");
    if (ns.flag("sequence_parallel")) set_derived(ns, ctx, "sequence_parallel", false, 1387);
  }
  if (ns.flag("tp_comm_overlap") && !ns.flag("sequence_parallel"))
    fail(ns, ctx, "tp_comm_overlap", "tp_comm_overlap_needs_sp", "Tensor parallel communication/GEMM overlap can happen only when sequence parallelism is enabled", 1390);
  if (ns.flag("hybrid_context_parallel") &&
      (ns.integer("pipeline_model_parallel_size", 1) > 1 || ns.flag("enable_cuda_graph") || ns.flag("use_megatron_fsdp") ||
       ns.str("dataloader_type") != "single" || !ns.flag("calculate_per_token_loss")))
    fail(ns, ctx, "hybrid_context_parallel", "hybrid_context_parallel",
         "Hybrid context parallelism needs PP 1, no CUDA graph, no Megatron FSDP, the single dataloader and --calculate-per-token-loss", 1393);
  if (!ns.flag("add_bias_linear") && ns.flag("bias_gelu_fusion")) set_derived(ns, ctx, "bias_gelu_fusion", false, 1539);
  if (ns.flag("add_bias_linear") && !ns.flag("add_qkv_bias")) set_derived(ns, ctx, "add_qkv_bias", true, 1543);
  if (ns.flag("qk_clip")) {
    const double alpha = ns.at("qk_clip_alpha").is_number() ? ns.at("qk_clip_alpha").get<double>() : 0;
    const double threshold = ns.at("qk_clip_threshold").is_number() ? ns.at("qk_clip_threshold").get<double>() : 0;
    if (!(alpha > 0 && alpha < 1)) fail(ns, ctx, "qk_clip_alpha", "qk_clip", "--qk-clip-alpha must be between 0.0 and 1.0 when using --qk-clip.", 1549);
    if (!(threshold > 0)) fail(ns, ctx, "qk_clip_threshold", "qk_clip", "--qk-clip-threshold must be greater than 0 when using --qk-clip.", 1551);
  }
  if (ns.flag("use_rotary_position_embeddings")) {
    ctx.warning("--use-rotary-position-embeddings", "deprecated_argument", "--use-rotary-position-embeddings is deprecated: it sets --position-embedding-type rope (" + arguments_source(1559) + ")");
    set_derived(ns, ctx, "position_embedding_type", "rope", 1560);
  }
  if (ns.str("position_embedding_type") != "rope" && ns.flag("apply_rope_fusion")) set_derived(ns, ctx, "apply_rope_fusion", false, 1562);
  if (!ns.flag("add_position_embedding") && ns.str("position_embedding_type") != "rope")
    fail(ns, ctx, "add_position_embedding", "no_position_embedding", "--no-position-embedding is deprecated, use --position-embedding-type", 1567);
  else if (!ns.flag("add_position_embedding"))
    ctx.warning("--no-position-embedding", "deprecated_argument", "--no-position-embedding is deprecated; with rope it has no effect (" + arguments_source(1566) + ")");
  if (ns.str("position_embedding_type") == "relative" && ns.str("transformer_impl") != "transformer_engine")
    fail(ns, ctx, "position_embedding_type", "relative_needs_te", "Local transformer implementation currently does not support attention bias-based position embeddings.", 1572);
  if (ns.str("position_embedding_type") == "mrope" && ns.none("mrope_section"))
    fail(ns, ctx, "position_embedding_type", "mrope_needs_section", "--mrope-section should be set when using --position-embedding-type mrope.", 1577);
}

void check_moe(Namespace& ns, ImportContext& ctx) {
  if (ns.at("num_experts").is_number_integer() && ns.integer("num_experts") == 0) set_derived(ns, ctx, "num_experts", nullptr, 1582);
  if (!ns.none("num_experts") && ns.none("moe_ffn_hidden_size")) set_derived(ns, ctx, "moe_ffn_hidden_size", ns.at("ffn_hidden_size"), 1584);
  const auto ep = ns.integer("expert_model_parallel_size", 1);
  if (ep > 1 && ns.none("num_experts"))
    fail(ns, ctx, "expert_model_parallel_size", "ep_needs_experts", "num_experts must be non None to use expert model parallelism", 1589);
  else if (ep > 1 && ns.integer("num_experts") % ep != 0)
    fail(ns, ctx, "expert_model_parallel_size", "experts_vs_ep", "Number of experts should be a multiple of expert model parallel_size.", 1590);
  for (const auto& [dest, line] : {std::pair<const char*, int>{"moe_router_load_balancing_type", 1595}, {"moe_aux_loss_coeff", 1597}})
    if (ns.at(dest).is_array() && ns.at(dest).size() == 1) set_derived(ns, ctx, dest, ns.at(dest)[0], line);
}

// Checkpoint formats, data sources, fusions, determinism (:1599-1648).
void check_training(Namespace& ns, ImportContext& ctx) {
  const std::string fmt = ns.str("ckpt_format");
  if (fmt == "torch_dcp") fail(ns, ctx, "ckpt_format", "ckpt_format_torch_dcp", "--ckpt-format torch_dcp is only tested with FSDP (--use-torch-fsdp2).", 1601);
  if (fmt == "fsdp_dtensor" && !ns.flag("use_megatron_fsdp"))
    fail(ns, ctx, "ckpt_format", "ckpt_format_fsdp_dtensor", "--ckpt-format fsdp_dtensor is only tested with Megatron FSDP.", 1609);
  const int sources = int(ns.flag("mock_data")) + int(ns.flag("data_path")) +
                      int(ns.flag("train_data_path") || ns.flag("valid_data_path") || ns.flag("test_data_path"));
  if (sources > 1) fail(ns, ctx, "mock_data", "several_data_sources", "A single data source must be provided in training mode, else None", 1615);
  if (ns.flag("cross_entropy_loss_fusion") && ns.str("cross_entropy_fusion_impl") == "te")
    fail(ns, ctx, "cross_entropy_fusion_impl", "te_cross_entropy_fusion",
         "Transformer Engine cross entropy loss fusion is disabled due to stability issues. Use --cross-entropy-fusion-impl native", 1632);
  if (ns.flag("deterministic_mode") && (ns.flag("cross_entropy_loss_fusion") || ns.flag("tp_comm_overlap")))
    ctx.error(ns.flag("tp_comm_overlap") ? "--tp-comm-overlap" : "--cross-entropy-loss-fusion", "deterministic_mode",
              "--deterministic-mode requires cross_entropy_loss_fusion=False and tp_comm_overlap=False "
              "(mcore:megatron/training/determinism.py:24, :143; called at " +
                  arguments_source(1644) + ")");
  if (ns.flag("apply_query_key_layer_scaling") && !ns.flag("attention_softmax_in_fp32")) set_derived(ns, ctx, "attention_softmax_in_fp32", true, 1648);
}

// Optimizers other than adam and sgd run the layer-wise distributed optimizer (:1657-1674); the gloo
// and fake-process-group settings (:1677-1695).
void check_optimizer(Namespace& ns, ImportContext& ctx) {
  set_derived(ns, ctx, "use_layer_wise_distributed_optimizer", false, 1658);
  const std::string opt = ns.str("optimizer");
  if (opt != "sgd" && opt != "adam") {
    if (opt == "dist_muon") {
      ctx.warning("--optimizer", "deprecated_value", "optimizer='dist_muon' is deprecated. Use --optimizer muon --use-distributed-optimizer instead (" + arguments_source(1662) + ")");
      set_derived(ns, ctx, "optimizer", "muon", 1665);
      set_derived(ns, ctx, "use_layer_wise_distributed_optimizer", true, 1666);
    }
    if (ns.flag("use_distributed_optimizer")) {
      set_derived(ns, ctx, "use_layer_wise_distributed_optimizer", true, 1669);
      set_derived(ns, ctx, "use_distributed_optimizer", false, 1670);
    }
    if (ns.flag("use_megatron_fsdp")) fail(ns, ctx, "use_megatron_fsdp", "emerging_optimizer_fsdp", "Emerging optimizer does not support Megatron-FSDP for now.", 1673);
    if (ns.str("ckpt_format") != "torch" && ns.str("ckpt_format") != "torch_dist")
      fail(ns, ctx, "ckpt_format", "emerging_optimizer_ckpt", "Emerging optimizer supports torch and torch_dist checkpoint format.", 1674);
  }
  if (!ns.flag("use_gloo_process_groups") && ns.flag("use_distributed_optimizer") && ns.str("ckpt_format") == "torch")
    fail(ns, ctx, "use_gloo_process_groups", "distopt_without_gloo",
         "the distributed optimizer without Gloo process groups needs distributed checkpointing (--ckpt-format other than torch)", 1683);
  if (ns.flag("fake_process_group")) {
    if (ns.str("moe_token_dispatcher_type") == "flex")
      fail(ns, ctx, "moe_token_dispatcher_type", "fake_process_group_flex", "Fake process group is not supported with flex token dispatcher.", 1690);
    set_derived(ns, ctx, "check_for_nan_in_loss_and_grad", false, 1692);
    set_derived(ns, ctx, "use_gloo_process_groups", false, 1695);
  }
}

// The checks of :1724-1896 that concern memory or refuse a line.
void check_rest(Namespace& ns, ImportContext& ctx) {
  if (ns.flag("load_main_params_from_ckpt") && !ns.flag("no_load_optim"))
    fail(ns, ctx, "load_main_params_from_ckpt", "load_main_params_needs_no_load_optim", "--load-main-params-from-ckpt must be used with --no-load-optim.", 1726);
  if (ns.integer("inference_batch_times_seqlen_threshold", -1) > -1 &&
      (ns.integer("pipeline_model_parallel_size", 1) <= 1 || ns.str("cuda_graph_impl") != "none"))
    fail(ns, ctx, "inference_batch_times_seqlen_threshold", "inference_threshold",
         "--inference-batch-times-seqlen-threshold requires --pipeline-model-parallel-size > 1 and no CUDA graphs", 1771);
  if (ns.flag("moe_use_upcycling") && ns.none("save"))
    fail(ns, ctx, "moe_use_upcycling", "upcycling_needs_save", "When using upcycling, the --save option must be specified.", 1778);
  if (ns.flag("optimizer_cpu_offload")) {
    if (!ns.flag("use_precision_aware_optimizer"))
      fail(ns, ctx, "optimizer_cpu_offload", "cpu_offload_needs_precision_aware", "The optimizer cpu offload must be used in conjunction with `--use-precision-aware-optimizer`", 1799);
    if (ns.flag("fp8_param_gather") && ns.str("fp8_recipe") != "delayed")
      fail(ns, ctx, "optimizer_cpu_offload", "cpu_offload_fp8_recipe", "With --fp8-param-gather the optimizer cpu offload needs --fp8-recipe delayed", 1803);
  }
  const bool te = ns.str("transformer_impl") == "transformer_engine";
  if (ns.flag("delay_wgrad_compute") && !te)
    fail(ns, ctx, "delay_wgrad_compute", "delay_wgrad_needs_te", "Delaying wgrad compute is only supported with transformer_engine implementation", 1818);
  if (ns.flag("fine_grained_activation_offloading") && !te)
    fail(ns, ctx, "fine_grained_activation_offloading", "fine_grained_offloading_needs_te",
         "Fine-grained activation offloading is only supported with transformer_engine implementation", 1850);
  if (ns.flag("mtp_num_layers")) {
    const std::string pe = ns.str("position_embedding_type");
    if (pe != "learned_absolute" && pe != "rope" && pe != "mrope" && pe != "none")
      fail(ns, ctx, "mtp_num_layers", "mtp_position_embedding", "Multi-Token Prediction (MTP) is not supported with '" + pe + "' position embedding type", 1859);
  }
  if (ns.integer("cpu_offloading_num_layers", 0) > 0) set_derived(ns, ctx, "cpu_offloading", true, 1865);
  const std::string impl = ns.str("cuda_graph_impl");
  if (impl != "none" && (te || impl == "transformer_engine") && !ns.flag("te_rng_tracker")) set_derived(ns, ctx, "te_rng_tracker", true, 1873);
  if (impl == "full_iteration" && ns.flag("cuda_graph_modules"))
    fail(ns, ctx, "cuda_graph_modules", "full_iteration_with_modules", "--cuda-graph-modules must be empty when --cuda-graph-impl=full_iteration.", 1884);
  if (ns.flag("multi_latent_attention") && ns.flag("group_query_attention"))
    fail(ns, ctx, "group_query_attention", "gqa_with_mla", "Group query attention is mutually exclusive with multi latent attention.", 1888);
  if (ns.flag("mla_down_proj_fusion") && !ns.flag("multi_latent_attention"))
    fail(ns, ctx, "mla_down_proj_fusion", "mla_down_proj_fusion_needs_mla", "--mla-down-proj-fusion requires --multi-latent-attention", 1891);
  if (!ns.none("moe_latent_size") && (ns.integer("moe_latent_size") <= 0 || ns.none("num_experts")))
    fail(ns, ctx, "moe_latent_size", "moe_latent_size", "MoE latent projections need a dimension > 0 and --num-experts", 1895);
}

}  // namespace

void apply_validate_model_args(Namespace& ns, ImportContext& ctx) {
  check_schedule(ns, ctx);
  check_shape(ns, ctx);
  check_lengths(ns, ctx);
  check_layers(ns, ctx);
  check_moe(ns, ctx);
  check_training(ns, ctx);
  check_optimizer(ns, ctx);
  check_rest(ns, ctx);
}

}  // namespace peakcast::model::detail
