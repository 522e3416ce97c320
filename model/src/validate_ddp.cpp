// Data-parallel wrapping and the optimizer's construction: DistributedDataParallelConfig.__post_init__,
// DistributedDataParallel / the grad buffers, Megatron FSDP, OptimizerConfig and the grad scalers.
#include "validate_detail.hpp"

namespace peakcast::model::detail {

namespace {

bool gtp_active(const RunSpec& spec) {
  // Bridge never passes the GTP sizes to initialize_model_parallel (bridge:src/megatron/bridge/training/initialize.py:805-825).
  return !spec.bridge_training && (spec.model.gtp_weight_remat_size > 1 || spec.model.expert_gtp_weight_remat_size > 1);
}

void ddp_config(const RunSpec& spec, RuleSink& sink) {
  const DdpSpec& d = spec.ddp;
  // distributed_data_parallel_config.py:256-281
  if (d.megatron_fsdp_version != 1 && d.megatron_fsdp_version != 2)
    sink.error("ddp.megatron_fsdp_version", "megatron_fsdp_version_range",
               "megatron_fsdp_version must be either 1 or 2 (distributed_data_parallel_config.py:257)");
  if (d.reuse_grad_buf_for_mxfp8_param_ag && !d.fp8_param_gather)
    sink.error("ddp.reuse_grad_buf_for_mxfp8_param_ag", "reuse_grad_buf_needs_fp8_param_gather",
               "Reuse grad buffer only when keeping params in MXFP8. (distributed_data_parallel_config.py:260): "
               "ddp.fp8_param_gather is false");
  if (d.nccl_ub && spec.cluster.expandable_segments)
    sink.warning("ddp.nccl_ub", "nccl_ub_vs_expandable_segments",
                 "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True is currently not supported with nccl_ub due to compatibility "
                 "issue with torch.cuda.MemPool API. (distributed_data_parallel_config.py:264): raised with PyTorch < 2.11");
  if (d.fp32_local_accumulation_patterns && d.grad_reduce_in_fp32)
    sink.error("ddp.param_name_patterns_for_fp32_local_accumulation", "fp32_accumulation_patterns_vs_fp32_grads",
               "Only need to explicitly specify param_name patterns for FP32 local accumulation if .main_grads aren't already in "
               "FP32 (distributed_data_parallel_config.py:270)");
  if (d.num_buckets && d.bucket_size)
    sink.error("ddp.num_buckets", "num_buckets_vs_bucket_size", "Cannot specify both num_buckets and bucket_size (distributed_data_parallel_config.py:276)");
  if (d.num_buckets && *d.num_buckets <= 0)
    sink.error("ddp.num_buckets", "num_buckets_positive", "num_buckets must be greater than 0 (distributed_data_parallel_config.py:277)");
}

void ddp_wrap(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  const DdpSpec& d = spec.ddp;
  const bool distopt = d.use_distributed_optimizer || (spec.bridge_training && spec.optimizer.use_distributed_optimizer);
  // distributed_data_parallel.py:172-181
  if (gtp_active(spec) && d.average_in_collective)
    sink.error("ddp.average_in_collective", "gtp_vs_average_in_collective",
               "GTP requires average_in_collective=False (the default); averaged collectives reduce over the GTP-excluded group "
               "and would miss the 1/gtp_remat gradient scaling factor. (distributed_data_parallel.py:173)");
  if (m.calculate_per_token_loss && d.average_in_collective)
    sink.error("ddp.average_in_collective", "per_token_loss_vs_average_in_collective",
               "Cannot average in collective when calculating per-token loss! (distributed_data_parallel.py:180)");
  // distributed_data_parallel.py:206-233: the expert buffers' float check (edp / dpcp) / edp == 1 / dpcp.
  const std::int64_t world = spec.cluster.num_gpus, tp = m.tensor_model_parallel_size, pp = m.pipeline_model_parallel_size;
  const std::int64_t etp = m.expert_tensor_parallel_size.value_or(tp), ep = m.expert_model_parallel_size;
  if (d.average_in_collective && !m.calculate_per_token_loss && d.num_distributed_optimizer_instances == 1 && is_moe_model(m) &&
      tp * pp > 0 && etp * ep * pp > 0 && world % (tp * pp) == 0 && world % (etp * ep * pp) == 0) {
    const double dpcp = static_cast<double>(world / (tp * pp)), edp = static_cast<double>(world / (etp * ep * pp));
    if ((edp / dpcp) / edp != 1.0 / dpcp)
      sink.error("ddp.average_in_collective", "average_in_collective_expert_scaling",
                 "average_in_collective with these data-parallel sizes (DP x CP " + str(world / (tp * pp)) + ", expert DP " +
                     str(world / (etp * ep * pp)) +
                     ") fails the float check scaling_factor / data_parallel_group.size() == "
                     "target_gradient_scaling_factor (distributed_data_parallel.py:232)");
  }
  if (d.num_distributed_optimizer_instances > 1 && !distopt)
    sink.error("ddp.num_distributed_optimizer_instances", "partial_distopt_needs_distopt",
               "Partial DistOpt cannot be used without DistOpt (distributed_data_parallel.py:293)");
  if (d.reduce_scatter_with_fp32_accumulation && d.num_distributed_optimizer_instances > 1)
    sink.error("ddp.reduce_scatter_with_fp32_accumulation", "fp32_rs_vs_multi_instance",
               "RS w/ FP32 accumulation not supported with num_distributed_optimizer_instances > 1 (param_and_grad_buffer.py:233)");
  // One bucket group over every buffer of a chunk (dist_utils.py:356-359) with FP8 params beside the others.
  if (d.reduce_scatter_with_fp32_accumulation && distopt && d.overlap_grad_reduce && m.fp8_param &&
      (m.virtual_pipeline_model_parallel_size || spec.optimizer.overlap_param_gather_with_optimizer_step))
    sink.warning("ddp.reduce_scatter_with_fp32_accumulation", "fp32_rs_single_bucket_groups",
                 "Only 1 bucket supported with reduce_scatter_with_fp32_accumulation=True (param_and_grad_buffer.py:770): with "
                 "bucketing disabled (VPP chunks > 0 or overlap_param_gather_with_optimizer_step) a chunk whose FP8 and "
                 "high-precision parameters sit in separate buffers forms one group of several buckets (not run)");
  // Single grouped expert weights in quantized storage (param_and_grad_buffer.py:1330-1340).
  if (m.moe_single_grouped_weight && distopt && m.fp8_param && m.fp8_recipe == Fp8Recipe::mxfp8 && !d.reuse_grad_buf_for_mxfp8_param_ag)
    sink.error("ddp.reuse_grad_buf_for_mxfp8_param_ag", "grouped_mxfp8_params_need_grad_buf_reuse",
               "Single grouped MXFP8 params require --reuse-grad-buf-for-mxfp8-param-ag. (param_and_grad_buffer.py:1334)");
  // NVFP4 packs two values per byte (param_and_grad_buffer.py:1498): the 1-D parameters are the ones that can be odd.
  if (m.fp4_param && m.fp4_recipe == std::optional<std::string>("nvfp4")) {
    const bool odd = m.hidden_size % 2 != 0 || (m.qk_layernorm && m.kv_channels.value_or(m.hidden_size / std::max<std::int64_t>(1, m.num_attention_heads)) % 2 != 0) ||
                     (m.moe_router_enable_expert_bias && m.num_moe_experts && *m.num_moe_experts % 2 != 0);
    if (odd)
      sink.error("model.fp4_param", "nvfp4_param_even_numel",
                 "NVFP4 requires even numel for packing (param_and_grad_buffer.py:1498): a norm weight or bias of this model has an "
                 "odd element count");
  }
}

// What static_memory_fsdp.cpp simulates of Megatron-FSDP v1, and what it refuses by name
// (docs/research/megatron-fsdp-memory-facts.md section 5).
void fsdp_v1_simulated(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  const DdpSpec& d = spec.ddp;
  const std::string& strategy = d.data_parallel_sharding_strategy;
  if (strategy != "no_shard" && strategy != "optim" && strategy != "optim_grads" && strategy != "optim_grads_params")
    sink.error("ddp.data_parallel_sharding_strategy", "fsdp_sharding_strategy",
               "Invalid data_parallel_sharding_strategy: " + strategy.substr(0, 40) +
                   " (param_and_grad_buffer.py:2338-2341: no_shard, optim, optim_grads or optim_grads_params)");
  if (d.outer_dp_sharding_strategy != "no_shard" && d.outer_dp_sharding_strategy != "optim")
    sink.error("ddp.outer_dp_sharding_strategy", "fsdp_outer_sharding_strategy",
               "outer_dp_sharding_strategy must be no_shard or optim (arguments.py:3031-3037)");
  const bool hfsdp = d.num_distributed_optimizer_instances > 1 && d.outer_dp_sharding_strategy != "no_shard";
  if (hfsdp && strategy != "optim_grads_params")
    sink.error("ddp.outer_dp_sharding_strategy", "hfsdp_needs_optim_grads_params",
               "[Megatron-FSDP] Optimizer fully-sharded HFSDP is only supported with full-sharding on DP-Shard. "
               "(param_and_grad_buffer.py:2482-2493)");
  if (d.megatron_fsdp_version != 1) return;  // v2: refused above
  const char* rule = "megatron_fsdp_not_simulated";
  if (hfsdp)
    sink.error("ddp.outer_dp_sharding_strategy", rule,
               "outer_dp_sharding_strategy optim (HFSDP helper buffers, param_and_grad_buffer.py:2390-2480) is not simulated");
  if (d.fsdp_double_buffer || d.nccl_ub)
    sink.error(d.nccl_ub ? "ddp.nccl_ub" : "ddp.fsdp_double_buffer", rule,
               "Megatron-FSDP's double-buffer pools (FixedPoolAllocator / MaxPoolAllocator, param_and_grad_buffer.py:2518-2550; "
               "nccl_ub turns them on) are not simulated");
  if (m.fp8_param || d.fp8_param_gather || m.fp4_param)
    sink.error("model.fp8_param", rule,
               "FP8 / FP4 parameters under Megatron-FSDP (uint8 weight buffers and MXFP8 transpose buffers, "
               "param_and_grad_buffer.py:2625-2638) are not simulated");
  if (!d.megatron_fsdp_main_params_dtype)
    sink.error("ddp.megatron_fsdp_main_params_dtype", rule,
               "megatron_fsdp_main_params_dtype auto (the model weight buffer as the optimizer's weights, "
               "param_and_grad_buffer.py:3241-3268) is not simulated");
  const std::optional<DType> grad_dtype = d.megatron_fsdp_main_grads_dtype;
  // With sharded grads the temporary full bucket is allocated in the communication dtype (get_main_grad,
  // param_and_grad_buffer.py:3099-3103: simulated); unsharded or HSDP grads get extra copies.
  const bool sharded_grads = strategy == "optim_grads" || strategy == "optim_grads_params";
  if (d.megatron_fsdp_grad_comm_dtype && d.megatron_fsdp_grad_comm_dtype != grad_dtype &&
      (!sharded_grads || d.num_distributed_optimizer_instances > 1))
    sink.error("ddp.megatron_fsdp_grad_comm_dtype", rule,
               "a gradient communication dtype other than the main grads dtype with unsharded or HSDP gradients "
               "(extra communication buckets, param_and_grad_buffer.py:4035-4048, :2752-2790) is not simulated");
  if (spec.peft.enabled)
    sink.error("peft", rule, "PEFT under Megatron-FSDP (frozen parameter groups, param_and_grad_buffer.py:2640-2645) is not simulated");
  if (m.cuda_graph_impl != CudaGraphImpl::none || d.megatron_fsdp_cuda_graph_mode)
    sink.error("model.cuda_graph_impl", rule, "CUDA graphs under Megatron-FSDP (megatron_fsdp_cuda_graph_mode) are not simulated");
  if (spec.optimizer.optimizer_cpu_offload)
    sink.error("optimizer.optimizer_cpu_offload", rule, "optimizer CPU offload under Megatron-FSDP is not simulated");
}

// Megatron FSDP (distributed/fsdp/mcore_fsdp_adapter.py, optimizer/__init__.py:1054, Bridge config.py:1075-1196).
void megatron_fsdp(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  const DdpSpec& d = spec.ddp;
  if (!d.use_megatron_fsdp) return;
  const char* rule = "megatron_fsdp_not_simulated";
  if (m.overlap_moe_expert_parallel_comm && d.fsdp_double_buffer)
    sink.error("ddp.fsdp_double_buffer", rule, "1F1B overlap with FSDP does not support double buffer. (mcore_fsdp_adapter.py:179)");
  if (m.overlap_moe_expert_parallel_comm && (m.cuda_graph_impl == CudaGraphImpl::local || m.cuda_graph_impl == CudaGraphImpl::transformer_engine))
    sink.error("model.cuda_graph_impl", rule, "1F1B overlap with FSDP does not support per-layer CUDA graphs (mcore_fsdp_adapter.py:183)");
  if (m.overlap_moe_expert_parallel_comm && m.virtual_pipeline_model_parallel_size)
    sink.error("model.virtual_pipeline_model_parallel_size", "ep_overlap_vpp_vs_fsdp",
               "EP overlap 1F1B with FSDP is not supported for interleaved pipeline parallelism (combined_1f1b.py:210)");
  if (m.cuda_graph_impl == CudaGraphImpl::local)
    sink.error("model.cuda_graph_impl", rule,
               "Tried to cudagraph a module with user registered pre-forward hooks, which is not "
               "allowed. (cuda_graphs.py:1874): Megatron FSDP hooks every module");
  if (spec.bridge_training && d.fsdp_manual_registration && !d.nccl_ub)
    sink.error("ddp.fsdp_manual_registration", rule, "DDP.fsdp_manual_registration requires DDP.nccl_ub! (Bridge config.py:1116)");
  if (d.megatron_fsdp_version == 2) {
    const std::int64_t tp = m.tensor_model_parallel_size, pp = m.pipeline_model_parallel_size, cp = m.context_parallel_size;
    if (tp != 1 || pp != 1 || cp != 1 || m.expert_model_parallel_size != 1)
      sink.error("ddp.megatron_fsdp_version", rule, "MFSDP v2 does not currently support TP/PP/CP/EP != 1 (mcore_fsdp_adapter.py:619)");
    if (is_moe_model(m)) sink.error("ddp.megatron_fsdp_version", rule, "MFSDP v2 does not support MoE (mcore_fsdp_adapter.py:640)");
    if (d.overlap_grad_reduce || d.overlap_param_gather)
      sink.error("ddp.megatron_fsdp_version", rule, "MFSDP v2 does not support overlap_grad_reduce / overlap_param_gather (mcore_fsdp_adapter.py:650)");
    if (m.fp8 || m.fp4) sink.error("ddp.megatron_fsdp_version", rule, "MFSDP v2 does not support fp8/fp4 (mcore_fsdp_adapter.py:656)");
    if (m.cuda_graph_impl != CudaGraphImpl::none) sink.error("ddp.megatron_fsdp_version", rule, "MFSDP v2 does not support CUDA graphs (mcore_fsdp_adapter.py:658)");
    if (d.use_distributed_optimizer || spec.optimizer.use_distributed_optimizer)
      sink.error("optimizer.use_distributed_optimizer", rule, "MFSDP v2 currently requires use_distributed_optimizer=False. (optimizer/__init__.py:1054)");
    if (spec.bridge_training && (!m.bf16 || !spec.optimizer.bf16))
      sink.error("model.bf16", rule, "MFSDP V2 requires BF16 training (model.bf16=True and optimizer.bf16=True). (Bridge config.py:1133)");
  }
  fsdp_v1_simulated(spec, sink);
}

void optimizer_rules(const RunSpec& spec, RuleSink& sink) {
  const OptimizerSpec& o = spec.optimizer;
  const bool distopt = o.use_distributed_optimizer || spec.ddp.use_distributed_optimizer;
  if (o.fp8_recipe == std::optional<std::string>("mxfp8") && !o.reuse_grad_buf_for_mxfp8_param_ag)
    sink.warning("optimizer.reuse_grad_buf_for_mxfp8_param_ag", "mxfp8_without_grad_buf_reuse",
                 "mxfp8 without using reuse_grad_buf_for_mxfp8_param_ag and fp8_param_gather will use significant amount "
                 "additional GPU memory. (optimizer_config.py:417)");
  if (o.reuse_grad_buf_for_mxfp8_param_ag && o.overlap_param_gather_with_optimizer_step)
    sink.error("optimizer.reuse_grad_buf_for_mxfp8_param_ag", "grad_buf_reuse_vs_param_gather_overlap",
               "overlap_param_gather_with_optimizer_step is not supported with reuse_grad_buf_for_mxfp8_param_ag. (optimizer_config.py:425)");
  if (o.optimizer_cpu_offload && !o.decoupled_weight_decay)
    sink.error("optimizer.decoupled_weight_decay", "cpu_offload_needs_decoupled_weight_decay",
               "CPU offloading only supported with decoupled_weight_decay enabled (AdamW mode). (optimizer/__init__.py:510)");
  if (distopt && o.optimizer == "sgd" && !o.optimizer_cpu_offload)
    sink.error("optimizer.optimizer", "distributed_optimizer_needs_adam",
               "Only Adam, HybridDeviceOptimizer, and optimizers with an init_state_fn (e.g., Lion) are currently supported, due to "
               "checkpointing requirements. (distrib_optimizer.py:688)");
  // Grad scalers (grad_scaler.py:19, :109-124): a constant scale, or fp16's dynamic one.
  if (o.loss_scale && *o.loss_scale <= 0)
    sink.error("optimizer.loss_scale", "loss_scale_positive", "loss_scale must be positive: ConstantGradScaler asserts initial_scale > 0.0 (grad_scaler.py:19)");
  if (spec.model.fp16 && !o.loss_scale) {
    const auto refuse = [&](const char* key, const char* what) {
      sink.error(std::string("optimizer.") + key, "dynamic_loss_scale_range", std::string("DynamicGradScaler asserts ") + what + " (grad_scaler.py:109-124)");
    };
    if (o.initial_loss_scale <= 0) refuse("initial_loss_scale", "initial_scale > 0.0");
    if (o.min_loss_scale <= 0) refuse("min_loss_scale", "min_scale > 0.0");
    else if (o.min_loss_scale > o.initial_loss_scale) refuse("min_loss_scale", "min_scale <= initial_scale");
    if (o.loss_scale_window <= 0) refuse("loss_scale_window", "growth_interval > 0");
    if (o.hysteresis <= 0) refuse("hysteresis", "hysteresis > 0");
  }
}

}  // namespace

void validate_ddp(const RunSpec& spec, RuleSink& sink) {
  ddp_config(spec, sink);
  ddp_wrap(spec, sink);
  megatron_fsdp(spec, sink);
  optimizer_rules(spec, sink);
  // initialize_model_parallel (parallel_state.py:808, :922, :1447)
  const ModelSpec& m = spec.model;
  const std::int64_t instances = spec.ddp.num_distributed_optimizer_instances;
  if (instances > 1 && gtp_active(spec))
    sink.error("ddp.num_distributed_optimizer_instances", "gtp_single_distopt_instance",
               "GTP_remat with num_distributed_optimizer_instances > 1 is not yet supported. (parallel_state.py:808)");
  const std::int64_t world = spec.cluster.num_gpus, tp = m.tensor_model_parallel_size, pp = m.pipeline_model_parallel_size;
  const std::int64_t etp = m.expert_tensor_parallel_size.value_or(tp);
  if (instances > 1 && tp * pp > 0 && world % (tp * pp) == 0 && (world / (tp * pp)) % instances != 0)
    sink.error("ddp.num_distributed_optimizer_instances", "distopt_instances_divide_dp",
               "Data parallel size should be divisible by partial DistOpt shard factor (parallel_state.py:922)");
  const std::int64_t expert_group = etp * m.expert_model_parallel_size * pp;
  if (instances > 1 && is_moe_model(m) && expert_group > 0 && world % expert_group == 0 && (world / expert_group) % instances != 0)
    sink.error("ddp.num_distributed_optimizer_instances", "distopt_instances_divide_dp",
               "Expert data parallel size should be divisible by partial DistOpt shard factor (parallel_state.py:1447)");
}

}  // namespace peakcast::model::detail
