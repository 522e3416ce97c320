// The run-side refusals of the pinned Megatron Core and of the launchers (docs/megatron-refusals/):
// token dispatchers, CUDA graphs, precision, pipeline schedules, data parallelism, the optimizer and
// what Bridge / Megatron-LM check. One RuleCase per rule and condition (tests/model/rule_cases.hpp).
#include "rule_cases.hpp"

using namespace peakcast::model;
using namespace peakcast::model::test;

namespace {

const std::vector<std::string> kFlex = {"model.moe_token_dispatcher_type=flex", "model.expert_model_parallel_size=2"};
const std::vector<std::string> kNcclep = {"model.moe_token_dispatcher_type=flex", "model.expert_model_parallel_size=2",
                                          "model.moe_flex_dispatcher_backend=ncclep", "model.moe_expert_rank_capacity_factor=1.5"};
const std::vector<std::string> kEpOverlap = {"model.expert_model_parallel_size=2", "model.moe_token_dispatcher_type=alltoall",
                                             "model.overlap_moe_expert_parallel_comm=true"};
const std::vector<std::string> kDistOpt = {"optimizer.use_distributed_optimizer=true", "ddp.use_distributed_optimizer=true"};
const std::vector<std::string> kPp2 = {"model.pipeline_model_parallel_size=2", "model.pipeline_dtype=bf16"};
const std::vector<std::string> kTeGraphs = {"model.cuda_graph_impl=transformer_engine"};

std::vector<std::string> moe(const std::vector<std::string>& extra) { return plus(kMoe, extra); }

const std::vector<RuleCase>& moe_cases() {
  static const std::vector<RuleCase> k = {
      {"deepep_vs_hybridep", "model.moe_enable_deepep", Severity::error,
       moe(plus(kFlex, {"model.moe_enable_deepep=true", "model.moe_flex_dispatcher_backend=hybridep"})),
       moe(plus(kFlex, {"model.moe_flex_dispatcher_backend=hybridep"}))},
      {"flex_deepep_no_capacity_padding", "model.moe_pad_expert_input_to_capacity", Severity::error,
       moe(plus(kFlex, {"model.moe_expert_capacity_factor=1.0", "model.moe_pad_expert_input_to_capacity=true"})),
       moe(plus(kFlex, {"model.moe_expert_capacity_factor=1.0"}))},
      {"deprecated_num_sms_knobs", "model.moe_deepep_num_sms", Severity::warning, moe({"model.moe_deepep_num_sms=20"}),
       moe({"model.moe_flex_dispatcher_num_sms=20"})},
      {"deprecated_num_sms_knobs", "model.moe_deepep_num_sms", Severity::error, moe({"model.moe_deepep_num_sms=20", "model.moe_hybridep_num_sms=24"}), kMoe},
      {"rank_capacity_factor_backend", "model.moe_expert_rank_capacity_factor", Severity::error, moe({"model.moe_expert_rank_capacity_factor=1.5"}),
       moe(kNcclep)},
      {"rank_capacity_factor_backend", "model.moe_expert_rank_capacity_factor", Severity::error,
       moe(plus(kFlex, {"model.moe_flex_dispatcher_backend=hybridep", "model.moe_expert_rank_capacity_factor=1.5"})),
       moe(plus(kFlex, {"model.moe_flex_dispatcher_backend=hybridep", "model.moe_expert_rank_capacity_factor=1.5",
                        "model.use_transformer_engine_op_fuser=true"}))},
      {"paged_stash_needs_rank_capacity", "model.moe_paged_stash", Severity::error, moe({"model.moe_paged_stash=true"}),
       moe(plus(kNcclep, {"model.moe_paged_stash=true"}))},
      {"paged_stash_vs_moe_offload", "model.offload_modules", Severity::error,
       moe(plus(kNcclep, {"model.moe_paged_stash=true", "model.fine_grained_activation_offloading=true", R"(model.offload_modules=["expert_fc1"])"})),
       moe(plus(kNcclep, {"model.moe_paged_stash=true", "model.fine_grained_activation_offloading=true", R"(model.offload_modules=["core_attn"])"}))},
      // 8000 / (1 x 8) = 1000 micro-batches per iteration.
      {"paged_stash_microbatch_limit", "model.moe_paged_stash", Severity::error, moe(plus(kNcclep, {"model.moe_paged_stash=true", "train.global_batch_size=8000"})),
       moe(plus(kNcclep, {"model.moe_paged_stash=true", "train.global_batch_size=7992"}))},
      {"flex_dispatcher_needs_etp_ep", "model.expert_model_parallel_size", Severity::error, moe({"model.moe_token_dispatcher_type=flex"}), moe(kFlex)},
      {"ncclep_zero_copy_needs_static_shape", "model.moe_ncclep_zero_copy", Severity::error, moe(plus(kNcclep, {"model.moe_ncclep_zero_copy=true"})), moe(kNcclep)},
      {"ncclep_static_shape_needs_fused_grouped_gemm", "model.moe_ncclep_static_shape", Severity::error,
       moe(plus(kNcclep, {"model.moe_ncclep_static_shape=true"})),
       moe(plus(kNcclep, {"model.moe_ncclep_static_shape=true", "model.use_transformer_engine_op_fuser=true"}))},
      {"ncclep_needs_rank_capacity_factor", "model.moe_expert_rank_capacity_factor", Severity::error,
       moe({"model.moe_token_dispatcher_type=flex", "model.expert_model_parallel_size=2", "model.moe_flex_dispatcher_backend=ncclep"}), moe(kNcclep)},
      {"ncclep_zero_copy_overlap_extra_copy", "model.moe_ncclep_zero_copy", Severity::warning,
       moe(plus(kNcclep, {"model.moe_ncclep_zero_copy=true", "model.moe_ncclep_static_shape=true", "model.use_transformer_engine_op_fuser=true",
                          "model.overlap_moe_expert_parallel_comm=true"})),
       moe(plus(kNcclep, {"model.moe_ncclep_zero_copy=true", "model.moe_ncclep_static_shape=true", "model.use_transformer_engine_op_fuser=true"}))},
      {"flex_dispatcher_wants_fp32_router", "model.moe_router_dtype", Severity::warning, moe(kFlex), moe(plus(kFlex, {"model.moe_router_dtype=fp32"}))},
      {"ncclep_ep_overlap_offload", "model.offload_modules", Severity::error,
       moe(plus(kNcclep, {"model.overlap_moe_expert_parallel_comm=true", "model.fine_grained_activation_offloading=true", R"(model.offload_modules=["expert_fc1"])"})),
       moe(plus(kNcclep, {"model.overlap_moe_expert_parallel_comm=true", "model.moe_ncclep_static_shape=true",
                          "model.use_transformer_engine_op_fuser=true"}))},
      {"ncclep_ep_overlap_offload", "model.moe_ncclep_static_shape", Severity::warning, moe(plus(kNcclep, {"model.overlap_moe_expert_parallel_comm=true"})),
       moe(plus(kNcclep, {"model.overlap_moe_expert_parallel_comm=true", "model.moe_ncclep_static_shape=true", "model.use_transformer_engine_op_fuser=true"}))},
      {"early_attn_release_needs_ep_overlap", "model.ep_overlap_early_attn_memory_release", Severity::error,
       moe({"model.ep_overlap_early_attn_memory_release=true"}), moe(plus(kEpOverlap, {"model.ep_overlap_early_attn_memory_release=true"}))},
      // The MTP layer copies the last decoder layer; moe_layer_freq 2 makes layer 7 dense.
      {"ep_overlap_mtp_needs_moe", "model.mtp_num_layers", Severity::error, moe(plus(kEpOverlap, {"model.mtp_num_layers=1", "model.moe_layer_freq=2"})),
       moe(plus(kEpOverlap, {"model.mtp_num_layers=1"}))},
  };
  return k;
}

const std::vector<RuleCase>& graph_precision_cases() {
  static const std::vector<RuleCase> k = {
      {"cuda_graph_full_with_others", "model.cuda_graph_modules", Severity::error, plus(kTeGraphs, {R"(model.cuda_graph_modules=["full","attn"])"}),
       plus(kTeGraphs, {R"(model.cuda_graph_modules=["attn"])"})},
      {"cuda_graph_full_scope_deprecated", "model.cuda_graph_modules", Severity::warning, plus(kTeGraphs, {R"(model.cuda_graph_modules=["full"])"}),
       plus(kTeGraphs, {R"(model.cuda_graph_modules=[])"})},
      {"full_iteration_inference_scope_impl", "model.cuda_graph_modules", Severity::error, plus(kTeGraphs, {R"(model.cuda_graph_modules=["full_iteration_inference"])"}), {R"(model.cuda_graph_modules=["full_iteration_inference"])"}},
      {"cuda_graph_inference_scope_ignored", "model.cuda_graph_modules", Severity::warning, {R"(model.cuda_graph_modules=["full_iteration_inference"])"}, {}},
      {"bridge_local_graphs_full_iteration_only", "model.cuda_graph_impl", Severity::error, {"defaults=bridge", "model.cuda_graph_impl=local", "model.use_te_rng_tracker=true"}, {"defaults=bridge", "model.cuda_graph_impl=transformer_engine", "model.use_te_rng_tracker=true"}},
      {"cuda_graphs_need_te_rng_tracker", "model.use_te_rng_tracker", Severity::error, {"defaults=bridge", "model.cuda_graph_impl=transformer_engine"}, {"defaults=bridge", "model.cuda_graph_impl=transformer_engine", "model.use_te_rng_tracker=true"}},
      {"te_graphs_vs_expandable_segments", "cluster.expandable_segments", Severity::warning, plus(kTeGraphs, {"cluster.expandable_segments=true"}), {"model.cuda_graph_impl=local", "cluster.expandable_segments=true"}},
      {"te_graph_nothing_to_capture", "model.pipeline_model_parallel_layout", Severity::warning,
       plus(kTeGraphs, plus(kPp2, {"model.pipeline_model_parallel_layout=\"Etttttttt|L\""})),
       plus(kTeGraphs, plus(kPp2, {"model.pipeline_model_parallel_layout=\"Etttt|ttttL\""}))},
      {"gtp_local_graph_shared_experts", "model.recompute_modules", Severity::error,
       moe({"model.moe_shared_expert_intermediate_size=128", "model.add_bias_linear=false", "model.gtp_weight_remat_size=2", "model.cuda_graph_impl=local",
            "model.fp8=e4m3", "model.fp8_recipe=tensorwise", "model.recompute_granularity=selective", R"(model.recompute_modules=["shared_experts"])"}),
       moe({"model.moe_shared_expert_intermediate_size=128", "model.add_bias_linear=false", "model.gtp_weight_remat_size=2", "model.cuda_graph_impl=local",
            "model.fp8=e4m3", "model.fp8_recipe=tensorwise", "model.recompute_granularity=selective", R"(model.recompute_modules=["shared_experts"])",
            R"(model.cuda_graph_modules=["attn"])"})},
      {"pre_mlp_layernorm_recompute_disabled_by_router_graph", "model.recompute_modules[0]", Severity::warning,
       moe(plus(kTeGraphs, {R"(model.cuda_graph_modules=["moe_router"])", "model.recompute_granularity=selective", R"(model.recompute_modules=["layernorm"])"})),
       moe(plus(kTeGraphs, {R"(model.cuda_graph_modules=["moe_router","moe_preprocess"])", "model.moe_token_dispatcher_type=alltoall",
                            "model.recompute_granularity=selective", R"(model.recompute_modules=["layernorm"])"}))},
      {"offload_norm_disabled_by_graph", "model.offload_modules", Severity::warning,
       plus(kTeGraphs, {R"(model.cuda_graph_modules=["attn"])", "model.fine_grained_activation_offloading=true", R"(model.offload_modules=["attn_norm"])"}),
       plus(kTeGraphs, {R"(model.cuda_graph_modules=["mlp"])", "model.fine_grained_activation_offloading=true", R"(model.offload_modules=["attn_norm"])"})},
      {"offload_norm_disabled_by_graph", "model.offload_modules", Severity::warning,
       plus(kTeGraphs, {R"(model.cuda_graph_modules=["attn"])", "model.fine_grained_activation_offloading=true", R"(model.offload_modules=["mlp_norm"])"}),
       plus(kTeGraphs, {R"(model.cuda_graph_modules=["attn","mlp"])", "model.fine_grained_activation_offloading=true", R"(model.offload_modules=["mlp_norm"])"})},
      {"defer_wgrad_needs_te_spec", "model.defer_embedding_wgrad_compute", Severity::error,
       plus(kPp2, {"model.defer_embedding_wgrad_compute=true", "model.gradient_accumulation_fusion=true", "model.transformer_impl=local"}),
       plus(kPp2, {"model.defer_embedding_wgrad_compute=true", "model.gradient_accumulation_fusion=true", "model.transformer_impl=local",
                   "cluster.calibration_harness=true"})},
      {"fp8_output_proj_needs_mxfp8", "model.fp8_output_proj", Severity::error, {"model.fp8_output_proj=true"}, {"model.fp8_output_proj=true", "model.fp8=e4m3", "model.fp8_recipe=mxfp8"}},
      {"fp8_output_proj_needs_mxfp8", "model.fp8_output_proj", Severity::error, {"model.fp8_output_proj=true", "model.fp8=e4m3", "model.fp8_recipe=tensorwise"}, {"model.fp8_output_proj=true", "model.fp8=e4m3", "model.fp8_recipe=mxfp8"}},
      {"fp4_param_needs_fp4", "model.fp4_param", Severity::error, {"model.fp4_param=true"}, {"model.fp4_param=true", "model.fp4=e2m1"}},
      {"fp4_custom_needs_factory", "model.fp4_quantizer_factory", Severity::error, {"model.fp4=e2m1", "model.fp4_recipe=custom"}, {"model.fp4=e2m1", "model.fp4_recipe=custom", "model.fp4_quantizer_factory=pkg.factory"}},
      {"delayed_no_bf16_edges", "model.first_last_layers_bf16", Severity::error, {"model.fp8=e4m3", "model.fp8_recipe=delayed", "model.first_last_layers_bf16=true"}, {"model.fp8=e4m3", "model.fp8_recipe=tensorwise", "model.first_last_layers_bf16=true"}},
      {"fp8_interval_ignored", "model.fp8_interval", Severity::warning, {"model.fp8=e4m3", "model.fp8_recipe=delayed", "model.fp8_interval=2"}, {"model.fp8=e4m3", "model.fp8_recipe=tensorwise", "model.fp8_interval=2"}},
      {"tp_comm_overlap_disabled_by_layer", "model.tp_comm_overlap", Severity::warning, {"model.tensor_model_parallel_size=2", "model.sequence_parallel=true", "model.tp_comm_overlap=true", "model.mtp_num_layers=1"}, {"model.tensor_model_parallel_size=2", "model.sequence_parallel=true", "model.tp_comm_overlap=true"}},
      {"overlap_p2p_needs_interleaved", "model.overlap_p2p_comm", Severity::error, plus(kPp2, {"model.overlap_p2p_comm=true"}),
       plus(kPp2, {"model.overlap_p2p_comm=true", "model.virtual_pipeline_model_parallel_size=2", "model.batch_p2p_comm=false"})},
      {"overlap_p2p_vs_batch_p2p", "model.batch_p2p_comm", Severity::error,
       plus(kPp2, {"model.overlap_p2p_comm=true", "model.virtual_pipeline_model_parallel_size=2"}),
       plus(kPp2, {"model.overlap_p2p_comm=true", "model.virtual_pipeline_model_parallel_size=2", "model.batch_p2p_comm=false"})},
      // Two MTP layers split over both ranks' last (only) virtual stages.
      {"pipeline_layout_invalid", "model.pipeline_model_parallel_layout", Severity::error,
       plus(kPp2, {"model.mtp_num_layers=2", "model.pipeline_model_parallel_layout=\"Ettttttttm|mL\""}),
       plus(kPp2, {"model.mtp_num_layers=2", "model.pipeline_model_parallel_layout=\"Etttttttt|mmL\""})},
  };
  return k;
}

const std::vector<RuleCase>& ddp_cases() {
  static const std::vector<RuleCase> k = {
      {"distopt_instances_divide_dp", "ddp.num_distributed_optimizer_instances", Severity::error, plus(kDistOpt, {"ddp.num_distributed_optimizer_instances=3"}),
       plus(kDistOpt, {"ddp.num_distributed_optimizer_instances=2"})},
      {"distopt_instances_divide_dp", "ddp.num_distributed_optimizer_instances", Severity::error,
       moe(plus(kDistOpt, {"ddp.num_distributed_optimizer_instances=2", "model.expert_model_parallel_size=8"})),
       moe(plus(kDistOpt, {"ddp.num_distributed_optimizer_instances=2", "model.expert_model_parallel_size=4"}))},
      {"gtp_single_distopt_instance", "ddp.num_distributed_optimizer_instances", Severity::error,
       plus(kDistOpt, {"ddp.num_distributed_optimizer_instances=2", "model.gtp_weight_remat_size=2"}), plus(kDistOpt, {"ddp.num_distributed_optimizer_instances=2"})},
      {"megatron_fsdp_version_range", "ddp.megatron_fsdp_version", Severity::error, {"ddp.megatron_fsdp_version=3"}, {"ddp.megatron_fsdp_version=2"}},
      {"reuse_grad_buf_needs_fp8_param_gather", "ddp.reuse_grad_buf_for_mxfp8_param_ag", Severity::error, {"ddp.reuse_grad_buf_for_mxfp8_param_ag=true"}, {"ddp.reuse_grad_buf_for_mxfp8_param_ag=true", "ddp.fp8_param_gather=true"}},
      {"nccl_ub_vs_expandable_segments", "ddp.nccl_ub", Severity::warning, {"ddp.nccl_ub=true", "cluster.expandable_segments=true"}, {"ddp.nccl_ub=true"}},
      {"fp32_accumulation_patterns_vs_fp32_grads", "ddp.param_name_patterns_for_fp32_local_accumulation", Severity::error, {R"(ddp.param_name_patterns_for_fp32_local_accumulation=["bias"])", "ddp.grad_reduce_in_fp32=true"}, {R"(ddp.param_name_patterns_for_fp32_local_accumulation=["bias"])"}},
      {"num_buckets_vs_bucket_size", "ddp.num_buckets", Severity::error, {"ddp.num_buckets=4", "ddp.bucket_size=1000"}, {"ddp.num_buckets=4"}},
      {"num_buckets_positive", "ddp.num_buckets", Severity::error, {"ddp.num_buckets=0"}, {"ddp.num_buckets=4"}},
      {"gtp_vs_average_in_collective", "ddp.average_in_collective", Severity::error, {"ddp.average_in_collective=true", "model.gtp_weight_remat_size=2"}, {"ddp.average_in_collective=true"}},
      {"per_token_loss_vs_average_in_collective", "ddp.average_in_collective", Severity::error, {"ddp.average_in_collective=true", "model.calculate_per_token_loss=true"}, {"model.calculate_per_token_loss=true"}},
      // DP x CP 45 and expert DP 5 (EP 9): (5 / 45) / 5 != 1 / 45 in doubles.
      {"average_in_collective_expert_scaling", "ddp.average_in_collective", Severity::error,
       moe({"model.num_moe_experts=9", "model.expert_model_parallel_size=9", "cluster.num_gpus=45", "train.global_batch_size=45", "ddp.average_in_collective=true"}),
       moe({"model.num_moe_experts=9", "model.expert_model_parallel_size=9", "cluster.num_gpus=45", "train.global_batch_size=45"})},
      {"partial_distopt_needs_distopt", "ddp.num_distributed_optimizer_instances", Severity::error, {"ddp.num_distributed_optimizer_instances=2"}, plus(kDistOpt, {"ddp.num_distributed_optimizer_instances=2"})},
      {"fp32_rs_vs_multi_instance", "ddp.reduce_scatter_with_fp32_accumulation", Severity::error,
       plus(kDistOpt, {"ddp.reduce_scatter_with_fp32_accumulation=true", "ddp.num_distributed_optimizer_instances=2"}),
       plus(kDistOpt, {"ddp.reduce_scatter_with_fp32_accumulation=true"})},
      {"fp32_rs_single_bucket_groups", "ddp.reduce_scatter_with_fp32_accumulation", Severity::warning,
       plus(kDistOpt, {"ddp.reduce_scatter_with_fp32_accumulation=true", "ddp.overlap_grad_reduce=true", "optimizer.overlap_param_gather_with_optimizer_step=true",
                       "model.fp8=e4m3", "model.fp8_recipe=tensorwise", "model.fp8_param=true"}),
       plus(kDistOpt, {"ddp.reduce_scatter_with_fp32_accumulation=true", "ddp.overlap_grad_reduce=true", "optimizer.overlap_param_gather_with_optimizer_step=true"})},
      {"grouped_mxfp8_params_need_grad_buf_reuse", "ddp.reuse_grad_buf_for_mxfp8_param_ag", Severity::error,
       moe(plus(kDistOpt, {"model.moe_single_grouped_weight=true", "model.use_transformer_engine_op_fuser=true", "model.fp8=e4m3", "model.fp8_recipe=mxfp8",
                           "model.fp8_param=true"})),
       moe(plus(kDistOpt, {"model.moe_single_grouped_weight=true", "model.use_transformer_engine_op_fuser=true", "model.fp8=e4m3", "model.fp8_recipe=mxfp8",
                           "model.fp8_param=true", "ddp.reuse_grad_buf_for_mxfp8_param_ag=true", "ddp.fp8_param_gather=true"}))},
      {"nvfp4_param_even_numel", "model.fp4_param", Severity::error, {"model.fp4=e2m1", "model.fp4_param=true", "model.qk_layernorm=true", "model.kv_channels=33"}, {"model.fp4=e2m1", "model.fp4_param=true", "model.qk_layernorm=true", "model.kv_channels=32"}},
      {"megatron_fsdp_not_simulated", "ddp.fsdp_double_buffer", Severity::error, moe(plus(kEpOverlap, {"ddp.use_megatron_fsdp=true", "ddp.fsdp_double_buffer=true"})), {"ddp.use_megatron_fsdp=true"}},
      {"megatron_fsdp_not_simulated", "ddp.megatron_fsdp_version", Severity::error, {"ddp.use_megatron_fsdp=true", "ddp.megatron_fsdp_version=2", "model.tensor_model_parallel_size=2"}, {"ddp.use_megatron_fsdp=true", "ddp.megatron_fsdp_version=2"}},
      {"megatron_fsdp_not_simulated", "model.cuda_graph_impl", Severity::error, {"ddp.use_megatron_fsdp=true", "model.cuda_graph_impl=local"}, {"ddp.use_megatron_fsdp=true"}},  // any CUDA graph under FSDP is refused since the fsdp branch
      {"ep_overlap_vpp_vs_fsdp", "model.virtual_pipeline_model_parallel_size", Severity::error,
       moe(plus(kEpOverlap, plus(kPp2, {"model.virtual_pipeline_model_parallel_size=2", "ddp.use_megatron_fsdp=true"}))),
       moe(plus(kEpOverlap, plus(kPp2, {"model.virtual_pipeline_model_parallel_size=2"})))},
      {"mxfp8_without_grad_buf_reuse", "optimizer.reuse_grad_buf_for_mxfp8_param_ag", Severity::warning, {"optimizer.fp8_recipe=mxfp8"}, {"optimizer.fp8_recipe=mxfp8", "optimizer.reuse_grad_buf_for_mxfp8_param_ag=true"}},
      {"grad_buf_reuse_vs_param_gather_overlap", "optimizer.reuse_grad_buf_for_mxfp8_param_ag", Severity::error, {"optimizer.reuse_grad_buf_for_mxfp8_param_ag=true", "optimizer.overlap_param_gather_with_optimizer_step=true"}, {"optimizer.reuse_grad_buf_for_mxfp8_param_ag=true"}},
      {"cpu_offload_needs_decoupled_weight_decay", "optimizer.decoupled_weight_decay", Severity::error, {"optimizer.optimizer_cpu_offload=true", "optimizer.decoupled_weight_decay=false"}, {"optimizer.optimizer_cpu_offload=true"}},
      {"distributed_optimizer_needs_adam", "optimizer.optimizer", Severity::error, plus(kDistOpt, {"optimizer.optimizer=sgd"}), {"optimizer.optimizer=sgd"}},
      {"loss_scale_positive", "optimizer.loss_scale", Severity::error, {"optimizer.loss_scale=0"}, {"optimizer.loss_scale=1024"}},
      {"dynamic_loss_scale_range", "optimizer.min_loss_scale", Severity::error, {"model.bf16=false", "model.fp16=true", "optimizer.min_loss_scale=0"}, {"model.bf16=false", "model.fp16=true"}},
  };
  return k;
}

const std::vector<RuleCase>& launcher_cases() {
  static const std::vector<RuleCase> k = {
      {"fp16_cross_entropy_needs_fp16", "model.fp16_lm_cross_entropy", Severity::warning, {"model.fp16_lm_cross_entropy=true"}, {"model.fp16_lm_cross_entropy=true", "model.bf16=false", "model.fp16=true"}},
      {"fp8_param_gather_needs_distopt", "model.fp8_param", Severity::warning, {"model.fp8=e4m3", "model.fp8_recipe=tensorwise", "model.fp8_param=true"}, plus(kDistOpt, {"model.fp8=e4m3", "model.fp8_recipe=tensorwise", "model.fp8_param=true"})},
      {"hybrid_cp_restrictions", "model.hybrid_context_parallel", Severity::warning, {"model.hybrid_context_parallel=true"}, {"model.hybrid_context_parallel=true", "model.calculate_per_token_loss=true"}},
      {"qk_clip_range", "model.qk_clip_alpha", Severity::warning, {"model.qk_clip=true", "model.qk_clip_alpha=1.5"}, {"model.qk_clip=true"}},
      {"cpu_offload_needs_precision_aware", "optimizer.optimizer_cpu_offload", Severity::warning, {"optimizer.optimizer_cpu_offload=true"}, plus(kDistOpt, {"optimizer.optimizer_cpu_offload=true", "optimizer.use_precision_aware_optimizer=true"})},
      {"delay_wgrad_restrictions", "model.delay_wgrad_compute", Severity::warning, {"model.delay_wgrad_compute=true", "model.transformer_impl=local"}, {"model.delay_wgrad_compute=true"}},
      {"mtp_position_embedding_type", "model.position_embedding_type", Severity::warning, {"model.mtp_num_layers=1", "model.position_embedding_type=yarn"}, {"model.mtp_num_layers=1", "model.position_embedding_type=rope"}},
      {"cpu_offloading_num_layers_without_offloading", "model.cpu_offloading_num_layers", Severity::warning, {"model.cpu_offloading_num_layers=2"}, {"model.cpu_offloading_num_layers=2", "model.cpu_offloading=true"}},
      {"step_batch_schedule_vs_global_batch", "train.step_batch_size_schedule", Severity::warning, {"train.step_batch_size_schedule=\"0:8\""}, {"train.step_batch_size_schedule=\"0:8\"", "train.global_batch_size=null"}},
      {"max_position_embeddings_ge_seq_length", "model.max_position_embeddings", Severity::error, {"model.max_position_embeddings=64"}, {"model.max_position_embeddings=128"}},
      {"max_position_embeddings_ge_seq_length", "model.max_position_embeddings", Severity::warning, {"model.max_position_embeddings=64", "model.position_embedding_type=rope"}, {"model.position_embedding_type=rope"}},
      {"rampup_batch_size_ignored", "train.rampup_batch_size", Severity::warning, {"train.rampup_batch_size=[8,8,100]"}, {}},
      {"step_batch_schedule_vs_decrease", "train.step_batch_size_schedule", Severity::error, {"train.step_batch_size_schedule=\"0:8\"", "train.decrease_batch_size_if_needed=true"}, {"train.step_batch_size_schedule=\"0:8\""}},
      {"step_batch_schedule_format", "train.step_batch_size_schedule", Severity::error, {"train.step_batch_size_schedule=\"8\""}, {"train.step_batch_size_schedule=\"0:8\""}},
      {"step_batch_schedule_format", "train.step_batch_size_schedule", Severity::error, {"train.step_batch_size_schedule=\"5:8\""}, {"train.step_batch_size_schedule=\"0:8 100:16\""}},
      {"manual_gc_interval_non_negative", "train.manual_gc_interval", Severity::error, {"train.manual_gc=true", "train.manual_gc_interval=-1"}, {"train.manual_gc=true", "train.manual_gc_interval=0"}},
      {"decrease_batch_size_rounds_down", "train.global_batch_size", Severity::error, {"train.decrease_batch_size_if_needed=true", "train.global_batch_size=4"}, {"train.decrease_batch_size_if_needed=true"}},
      {"one_training_length", "train.train_iters", Severity::error, {"defaults=bridge", "train.train_iters=10", "train.train_samples=100"}, {"defaults=bridge", "train.train_iters=10"}},
      {"rampup_batch_size_ignored", "train.rampup_batch_size", Severity::error, {"defaults=bridge", "train.rampup_batch_size=[8,8,100]", "train.num_epochs=1"}, {"defaults=bridge", "train.num_epochs=1"}},
      {"deterministic_vs_cross_entropy_fusion", "model.cross_entropy_loss_fusion", Severity::error, {"defaults=bridge", "model.deterministic_mode=true"}, {"defaults=bridge", "model.deterministic_mode=true", "model.cross_entropy_loss_fusion=false"}},
      {"mxfp8_param_gather_needs_grad_buf_reuse", "ddp.reuse_grad_buf_for_mxfp8_param_ag", Severity::error, {"defaults=bridge", "model.fp8=e4m3", "model.fp8_recipe=mxfp8", "model.fp8_param=true"}, {"defaults=bridge", "model.fp8=e4m3", "model.fp8_recipe=mxfp8", "model.fp8_param=true", "ddp.fp8_param_gather=true", "ddp.reuse_grad_buf_for_mxfp8_param_ag=true"}},
      {"modelopt_no_grad_accumulation_fusion", "model.gradient_accumulation_fusion", Severity::error, {"defaults=bridge", "model.restore_modelopt_state=true", "model.gradient_accumulation_fusion=true"}, {"defaults=bridge", "model.restore_modelopt_state=true", "model.gradient_accumulation_fusion=false"}},
      {"overlap_param_gather_out_of_sync", "optimizer.overlap_param_gather", Severity::warning, {"defaults=bridge", "optimizer.overlap_param_gather=true"}, {"defaults=bridge", "optimizer.overlap_param_gather=true", "ddp.overlap_param_gather=true"}},
      {"precision_aware_optimizer_dtype_sync", "optimizer.bf16", Severity::error,
       plus(kDistOpt, {"defaults=bridge", "optimizer.use_precision_aware_optimizer=true", "optimizer.bf16=false"}),
       plus(kDistOpt, {"defaults=bridge", "optimizer.use_precision_aware_optimizer=true", "optimizer.bf16=true"})},
      {"gtp_mlm_restrictions", "model.tensor_parallel_num_weight_shards", Severity::warning, {"model.tensor_parallel_num_weight_shards=2", "model.fp8=e4m3", "model.fp8_recipe=mxfp8"}, {"model.tensor_parallel_num_weight_shards=2", "model.fp8=e4m3", "model.fp8_recipe=tensorwise"}},
      {"gtp_not_wired_in_bridge", "model.tensor_parallel_num_weight_shards", Severity::warning, {"defaults=bridge", "model.gtp_weight_remat_size=2"}, {"model.gtp_weight_remat_size=2"}},
  };
  return k;
}

}  // namespace

TEST_CASE("token dispatchers, paged stashing and the EP overlap", "[validate][refusals]") { check_rule_cases(moe_cases()); }
TEST_CASE("CUDA graphs, precision, TP overlap and pipeline schedules", "[validate][refusals]") { check_rule_cases(graph_precision_cases()); }
TEST_CASE("data parallelism, Megatron FSDP and the optimizer", "[validate][refusals]") { check_rule_cases(ddp_cases()); }
TEST_CASE("what Megatron-LM's arguments and Bridge's config check", "[validate][refusals]") { check_rule_cases(launcher_cases()); }
