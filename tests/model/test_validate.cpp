// validate(): one case per rule. Each breaks the rule with --set overrides on a small valid spec and
// expects the diagnostic (rule id, key path, severity); a neighbouring spec that keeps the rule must not get it.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/validate.hpp"
#include "rule_cases.hpp"

using namespace peakcast::model;
using namespace peakcast::model::test;

namespace {

const std::vector<RuleCase>& cases() {
  static const std::vector<RuleCase> k = {
      // Sizes
      {"value_out_of_range", "model.num_layers", Severity::error, {"model.num_layers=0"}, {"model.num_layers=8"}},
      {"value_out_of_range", "model.tensor_model_parallel_size", Severity::error, {"model.tensor_model_parallel_size=-2"}, {"model.tensor_model_parallel_size=2"}},
      {"value_out_of_range", "train.micro_batch_size", Severity::error, {"train.micro_batch_size=0"}, {"train.micro_batch_size=1"}},
      {"value_out_of_range", "model.hidden_size", Severity::error, {"model.hidden_size=4000000000"}, {"model.hidden_size=512"}},
      {"value_out_of_range", "cluster.gpu.memory_bytes", Severity::error, {"cluster.gpu.memory_bytes=-1"}, {"cluster.gpu.memory_bytes=1"}},
      {"value_out_of_range", "model.hidden_dropout", Severity::error, {"model.hidden_dropout=1.5"}, {"model.hidden_dropout=0.1"}},
      {"num_moe_experts_positive", "model.num_moe_experts", Severity::error, {"model.num_moe_experts=0"}, kMoe},
      {"shared_expert_size_positive", "model.moe_shared_expert_intermediate_size", Severity::error,
       plus(kMoe, {"model.moe_shared_expert_intermediate_size=0"}), plus(kMoe, {"model.moe_shared_expert_intermediate_size=128"})},
      {"size_out_of_range", "model.seq_length", Severity::error, {"model.seq_length=60000000", "train.micro_batch_size=16000000", "model.hidden_size=4096", "train.global_batch_size=null"}, {"model.seq_length=60000"}},
      // Layout
      {"heads_divisible_by_tp", "model.num_attention_heads", Severity::error, {"model.tensor_model_parallel_size=4", "model.num_attention_heads=6", "model.hidden_size=240"}, {"model.tensor_model_parallel_size=4"}},
      {"query_groups_vs_tp", "model.num_query_groups", Severity::error, {"model.tensor_model_parallel_size=2", "model.num_query_groups=3", "model.num_attention_heads=6"}, {"model.tensor_model_parallel_size=4", "model.num_query_groups=2"}},
      {"heads_divisible_by_query_groups", "model.num_query_groups", Severity::error, {"model.num_query_groups=3"}, {"model.num_query_groups=4"}},
      {"sequence_parallel_needs_tp", "model.sequence_parallel", Severity::error, {"model.sequence_parallel=true"}, {"model.sequence_parallel=true", "model.tensor_model_parallel_size=2"}},
      {"ep_tp_wants_sequence_parallel", "model.sequence_parallel", Severity::warning, plus(kMoe, {"model.expert_model_parallel_size=2", "model.tensor_model_parallel_size=2"}),
       plus(kMoe, {"model.expert_model_parallel_size=2", "model.tensor_model_parallel_size=2", "model.sequence_parallel=true"})},
      {"world_divisible_by_tp_pp_cp", "cluster.num_gpus", Severity::error, {"model.tensor_model_parallel_size=2", "cluster.num_gpus=3", "train.global_batch_size=3"}, {"model.tensor_model_parallel_size=2", "cluster.num_gpus=4", "train.global_batch_size=2"}},
      {"world_divisible_by_etp_ep_pp", "cluster.num_gpus", Severity::error, plus(kMoe, {"model.expert_model_parallel_size=8", "model.expert_tensor_parallel_size=2"}),
       plus(kMoe, {"model.expert_model_parallel_size=4", "model.expert_tensor_parallel_size=2"})},
      {"vpp_needs_pp", "model.virtual_pipeline_model_parallel_size", Severity::error, {"model.virtual_pipeline_model_parallel_size=2"}, {"model.virtual_pipeline_model_parallel_size=2", "model.pipeline_model_parallel_size=2", "train.global_batch_size=8"}},
      {"context_parallel_needs_te_attention", "model.context_parallel_size", Severity::error, {"model.context_parallel_size=2", "model.transformer_impl=local"}, {"model.context_parallel_size=2"}},
      {"seq_divisible_by_2cp", "model.seq_length", Severity::error, {"model.context_parallel_size=2", "model.seq_length=130"}, {"model.context_parallel_size=2", "model.seq_length=132"}},
      {"seq_divisible_by_tp_under_sp", "model.seq_length", Severity::error, {"model.tensor_model_parallel_size=2", "model.sequence_parallel=true", "model.seq_length=127"}, {"model.tensor_model_parallel_size=2", "model.sequence_parallel=true", "model.seq_length=126"}},
      {"layers_divisible_by_pp", "model.pipeline_model_parallel_size", Severity::error, {"model.pipeline_model_parallel_size=8", "model.num_layers=12"}, {"model.pipeline_model_parallel_size=4", "model.num_layers=12"}},
      {"layers_divisible_by_pp", "model.num_layers", Severity::error, {"model.pipeline_model_parallel_size=2", "model.account_for_loss_in_pipeline_split=true"}, {"model.pipeline_model_parallel_size=2", "model.num_layers=7", "model.account_for_loss_in_pipeline_split=true"}},
      {"layers_per_rank_divisible_by_vpp", "model.virtual_pipeline_model_parallel_size", Severity::error, {"model.pipeline_model_parallel_size=2", "model.virtual_pipeline_model_parallel_size=3"}, {"model.pipeline_model_parallel_size=2", "model.virtual_pipeline_model_parallel_size=2"}},
      {"uneven_pp_vs_account_for", "model.num_layers_in_first_pipeline_stage", Severity::error, {"model.pipeline_model_parallel_size=2", "model.num_layers_in_first_pipeline_stage=3", "model.account_for_embedding_in_pipeline_split=true"}, {"model.pipeline_model_parallel_size=2", "model.num_layers_in_first_pipeline_stage=3"}},
      {"layout_vs_other_pipeline_args", "model.pipeline_model_parallel_layout", Severity::error, {"model.pipeline_model_parallel_size=2", "model.pipeline_model_parallel_layout=\"Etttt|ttttL\"", "model.num_layers_in_first_pipeline_stage=4"}, {"model.pipeline_model_parallel_size=2", "model.pipeline_model_parallel_layout=\"Etttt|ttttL\""}},
      {"uneven_pp_stage_positive", "model.num_layers_in_first_pipeline_stage", Severity::error, {"model.pipeline_model_parallel_size=2", "model.num_layers_in_first_pipeline_stage=0"}, {"model.pipeline_model_parallel_size=2", "model.num_layers_in_first_pipeline_stage=2", "model.num_layers_in_last_pipeline_stage=6"}},
      {"uneven_pp_stage_divisible_by_vpp", "model.num_layers_in_last_pipeline_stage", Severity::error, {"model.pipeline_model_parallel_size=2", "model.virtual_pipeline_model_parallel_size=2", "model.num_layers_in_last_pipeline_stage=3", "model.num_layers=7"}, {"model.pipeline_model_parallel_size=2", "model.virtual_pipeline_model_parallel_size=2", "model.num_layers_in_last_pipeline_stage=2", "model.num_layers=6"}},
      {"uneven_pp_middle_mismatch", "model.num_layers", Severity::error, {"model.pipeline_model_parallel_size=2", "model.num_layers_in_first_pipeline_stage=3", "model.num_layers_in_last_pipeline_stage=3"}, {"model.pipeline_model_parallel_size=2", "model.num_layers_in_first_pipeline_stage=3", "model.num_layers_in_last_pipeline_stage=5"}},
      {"uneven_pp_middle_divisible", "model.num_layers", Severity::error, {"model.pipeline_model_parallel_size=4", "model.num_layers_in_first_pipeline_stage=3", "train.global_batch_size=2"}, {"model.pipeline_model_parallel_size=4", "model.num_layers_in_first_pipeline_stage=2", "train.global_batch_size=2"}},
      {"uneven_pp_middle_divisible_by_vpp", "model.virtual_pipeline_model_parallel_size", Severity::error, {"model.pipeline_model_parallel_size=4", "model.virtual_pipeline_model_parallel_size=2", "model.num_layers=6", "model.num_layers_in_first_pipeline_stage=2", "model.num_layers_in_last_pipeline_stage=2", "train.global_batch_size=8"}, {"model.pipeline_model_parallel_size=4", "model.virtual_pipeline_model_parallel_size=2", "model.num_layers=8", "model.num_layers_in_first_pipeline_stage=2", "model.num_layers_in_last_pipeline_stage=2", "train.global_batch_size=8"}},
      {"hybrid_segments_divisible_by_pp", "model.hybrid_override_pattern", Severity::error, {"model.num_layers=null", "model.hybrid_override_pattern=\"M*|M*|-E\"", "model.pipeline_model_parallel_size=2", "train.global_batch_size=4"}, {"model.num_layers=null", "model.hybrid_override_pattern=\"M*|-E\"", "model.pipeline_model_parallel_size=2", "train.global_batch_size=4"}},
      {"global_batch_divisible", "train.global_batch_size", Severity::error, {"train.global_batch_size=12"}, {"train.global_batch_size=16"}},
      {"microbatch_group_range", "model.microbatch_group_size_per_vp_stage", Severity::error, {"model.pipeline_model_parallel_size=2", "model.virtual_pipeline_model_parallel_size=2", "train.global_batch_size=16", "model.microbatch_group_size_per_vp_stage=1"}, {"model.pipeline_model_parallel_size=2", "model.virtual_pipeline_model_parallel_size=2", "train.global_batch_size=16", "model.microbatch_group_size_per_vp_stage=2"}},
      {"microbatch_group_remainder", "model.microbatch_group_size_per_vp_stage", Severity::error, {"model.pipeline_model_parallel_size=2", "model.virtual_pipeline_model_parallel_size=2", "train.global_batch_size=20", "model.microbatch_group_size_per_vp_stage=2"}, {"model.pipeline_model_parallel_size=2", "model.virtual_pipeline_model_parallel_size=2", "train.global_batch_size=20", "model.microbatch_group_size_per_vp_stage=5"}},
      {"distributed_optimizer_out_of_sync", "ddp.use_distributed_optimizer", Severity::warning, {"optimizer.use_distributed_optimizer=true"}, {"optimizer.use_distributed_optimizer=true", "ddp.use_distributed_optimizer=true"}},
      // MoE
      {"ep_needs_experts", "model.expert_model_parallel_size", Severity::error, {"model.expert_model_parallel_size=2"}, plus(kMoe, {"model.expert_model_parallel_size=2"})},
      {"moe_ffn_without_experts", "model.moe_ffn_hidden_size", Severity::error, {"model.moe_ffn_hidden_size=64"}, {}},
      {"moe_ffn_without_experts", "model.moe_ffn_hidden_size", Severity::warning, {"model.moe_ffn_hidden_size=64", "model.moe_layer_freq=2"}, {"model.moe_layer_freq=2"}},
      {"experts_divisible_by_ep", "model.num_moe_experts", Severity::error, plus(kMoe, {"model.num_moe_experts=6", "model.expert_model_parallel_size=4"}), plus(kMoe, {"model.expert_model_parallel_size=4"})},
      {"topk_exceeds_experts", "model.moe_router_topk", Severity::error, plus(kMoe, {"model.moe_router_topk=9"}), plus(kMoe, {"model.moe_router_topk=8"})},
      {"moe_layer_freq_length", "model.moe_layer_freq", Severity::error, plus(kMoe, {"model.moe_layer_freq=[0,1,1]"}), plus(kMoe, {"model.moe_layer_freq=[0,1,1,1,1,1,1,1]"})},
      {"moe_ffn_defaults_to_ffn", "model.moe_ffn_hidden_size", Severity::warning, {"model.num_moe_experts=8"}, kMoe},
      {"shared_expert_overlap_needs_alltoall", "model.moe_shared_expert_overlap", Severity::error,
       plus(kMoe, {"model.moe_shared_expert_intermediate_size=128", "model.moe_shared_expert_overlap=true"}),
       plus(kMoe, {"model.moe_shared_expert_intermediate_size=128", "model.moe_shared_expert_overlap=true", "model.moe_token_dispatcher_type=alltoall"})},
      {"pad_to_capacity_needs_capacity_factor", "model.moe_pad_expert_input_to_capacity", Severity::error, plus(kMoe, {"model.moe_pad_expert_input_to_capacity=true"}),
       plus(kMoe, {"model.moe_pad_expert_input_to_capacity=true", "model.moe_expert_capacity_factor=1.0"})},
      {"moe_bias_needs_etp1", "model.add_bias_linear", Severity::error, plus(kMoe, {"model.expert_tensor_parallel_size=2"}),
       plus(kMoe, {"model.expert_tensor_parallel_size=2", "model.add_bias_linear=false"})},
      {"ep_overlap_needs_ep", "model.overlap_moe_expert_parallel_comm", Severity::error, plus(kMoe, {"model.overlap_moe_expert_parallel_comm=true", "model.moe_token_dispatcher_type=alltoall"}),
       plus(kMoe, {"model.overlap_moe_expert_parallel_comm=true", "model.moe_token_dispatcher_type=alltoall", "model.expert_model_parallel_size=2"})},
      {"ep_overlap_needs_alltoall", "model.overlap_moe_expert_parallel_comm", Severity::error, plus(kMoe, {"model.overlap_moe_expert_parallel_comm=true", "model.expert_model_parallel_size=2"}),
       plus(kMoe, {"model.overlap_moe_expert_parallel_comm=true", "model.expert_model_parallel_size=2", "model.moe_token_dispatcher_type=flex"})},
      {"ep_overlap_needs_vpp", "model.overlap_moe_expert_parallel_comm", Severity::error,
       plus(kMoe, {"model.overlap_moe_expert_parallel_comm=true", "model.expert_model_parallel_size=2", "model.moe_token_dispatcher_type=alltoall", "model.pipeline_model_parallel_size=2"}),
       plus(kMoe, {"model.overlap_moe_expert_parallel_comm=true", "model.expert_model_parallel_size=2", "model.moe_token_dispatcher_type=alltoall", "model.pipeline_model_parallel_size=2", "model.virtual_pipeline_model_parallel_size=2"})},
      {"ep_overlap_needs_half_precision", "model.overlap_moe_expert_parallel_comm", Severity::error,
       plus(kMoe, {"model.overlap_moe_expert_parallel_comm=true", "model.expert_model_parallel_size=2", "model.moe_token_dispatcher_type=alltoall", "model.bf16=false"}),
       plus(kMoe, {"model.overlap_moe_expert_parallel_comm=true", "model.expert_model_parallel_size=2", "model.moe_token_dispatcher_type=alltoall"})},
      {"ep_overlap_vs_shared_expert_overlap", "model.moe_shared_expert_overlap", Severity::error,
       plus(kMoe, {"model.overlap_moe_expert_parallel_comm=true", "model.expert_model_parallel_size=2", "model.moe_token_dispatcher_type=alltoall", "model.moe_shared_expert_overlap=true"}),
       plus(kMoe, {"model.overlap_moe_expert_parallel_comm=true", "model.expert_model_parallel_size=2", "model.moe_token_dispatcher_type=alltoall"})},
      {"ep_overlap_mtp_layers", "model.mtp_num_layers", Severity::error,
       plus(kMoe, {"model.overlap_moe_expert_parallel_comm=true", "model.expert_model_parallel_size=2", "model.moe_token_dispatcher_type=alltoall", "model.mtp_num_layers=2"}),
       plus(kMoe, {"model.overlap_moe_expert_parallel_comm=true", "model.expert_model_parallel_size=2", "model.moe_token_dispatcher_type=alltoall", "model.mtp_num_layers=1"})},
      {"delay_wgrad_needs_ep_overlap", "model.delay_wgrad_compute", Severity::error, plus(kMoe, {"model.delay_wgrad_compute=true"}),
       plus(kMoe, {"model.delay_wgrad_compute=true", "model.overlap_moe_expert_parallel_comm=true", "model.expert_model_parallel_size=2", "model.moe_token_dispatcher_type=alltoall"})},
      // Recompute and offloading (recompute digest §1.2 rules 1-30)
      {"cpu_offloading_num_layers_range", "model.cpu_offloading_num_layers", Severity::error, {"model.cpu_offloading=true", "model.cpu_offloading_num_layers=8"}, {"model.cpu_offloading=true", "model.cpu_offloading_num_layers=7"}},
      {"cpu_offloading_vs_pp", "model.cpu_offloading", Severity::error, {"model.cpu_offloading=true", "model.pipeline_model_parallel_size=2"}, {"model.cpu_offloading=true"}},
      {"cpu_offloading_vs_recompute", "model.cpu_offloading", Severity::error, {"model.cpu_offloading=true", "model.recompute_granularity=selective"}, {"model.cpu_offloading=true"}},
      // Transformer Engine's availability, not transformer_impl (validate_environment.cpp).
      {"cpu_offloading_needs_te", "model.cpu_offloading", Severity::error, {"model.cpu_offloading=true", "model.transformer_impl=local", "cluster.transformer_engine_available=false"}, {"model.cpu_offloading=true", "model.transformer_impl=local"}},
      {"fine_grained_offloading_vs_cpu_offloading", "model.fine_grained_activation_offloading", Severity::error, {"model.cpu_offloading=true", "model.fine_grained_activation_offloading=true", R"(model.offload_modules=["core_attn"])"}, {"model.fine_grained_activation_offloading=true", R"(model.offload_modules=["core_attn"])"}},
      {"fine_grained_offloading_not_simulated", "model.recompute_granularity", Severity::warning, {"model.fine_grained_activation_offloading=true", R"(model.offload_modules=["core_attn"])", "model.recompute_granularity=full", "model.recompute_method=uniform", "model.recompute_num_layers=1"}, {"model.fine_grained_activation_offloading=true", R"(model.offload_modules=["core_attn"])"}},
      {"fine_grained_offloading_needs_te", "model.fine_grained_activation_offloading", Severity::warning, {"model.fine_grained_activation_offloading=true", R"(model.offload_modules=["core_attn"])", "model.transformer_impl=local"}, {"model.fine_grained_activation_offloading=true", R"(model.offload_modules=["core_attn"])"}},
      {"fine_grained_offloading_needs_te", "model.fine_grained_activation_offloading", Severity::error, {"model.fine_grained_activation_offloading=true", R"(model.offload_modules=["core_attn"])", "model.transformer_impl=local", "cluster.transformer_engine_available=false"}, {"model.fine_grained_activation_offloading=true", R"(model.offload_modules=["core_attn"])"}},
      {"offload_modules_required", "model.offload_modules", Severity::error, {"model.fine_grained_activation_offloading=true"}, {"model.fine_grained_activation_offloading=true", R"(model.offload_modules=["attn_norm"])"}},
      {"offload_module_unknown", "model.offload_modules[1]", Severity::error, {"model.fine_grained_activation_offloading=true", R"(model.offload_modules=["core_attn", "mlp"])"}, {"model.fine_grained_activation_offloading=true", R"(model.offload_modules=["core_attn", "mlp_norm"])"}},
      {"attn_proj_offload_needs_core_attn", "model.offload_modules", Severity::error, {"model.fine_grained_activation_offloading=true", R"(model.offload_modules=["attn_proj"])"}, {"model.fine_grained_activation_offloading=true", R"(model.offload_modules=["attn_proj", "core_attn"])"}},
      // Fine-grained offloading under CUDA graphs (transformer_config.py:2622-2667)
      {"offload_local_graph_modules", "model.offload_modules", Severity::error, {"model.fine_grained_activation_offloading=true", R"(model.offload_modules=["core_attn"])", "model.cuda_graph_impl=local", R"(model.cuda_graph_modules=["attn"])"}, {"model.fine_grained_activation_offloading=true", R"(model.offload_modules=["core_attn"])", "model.cuda_graph_impl=transformer_engine", R"(model.cuda_graph_modules=["attn"])"}},
      {"offload_local_graph_whole_layer", "model.cuda_graph_modules", Severity::error,
       plus(kMoe, {"model.fine_grained_activation_offloading=true", R"(model.offload_modules=["expert_fc1"])", "model.cuda_graph_impl=local"}),
       plus(kMoe, {"model.fine_grained_activation_offloading=true", R"(model.offload_modules=["expert_fc1"])", "model.cuda_graph_impl=local", R"(model.cuda_graph_modules=["attn"])"})},
      {"offload_graph_moe_scope", "model.cuda_graph_modules", Severity::error,
       plus(kMoe, {"model.fine_grained_activation_offloading=true", R"(model.offload_modules=["core_attn"])", "model.cuda_graph_impl=transformer_engine", R"(model.cuda_graph_modules=["moe"])"}),
       plus(kMoe, {"model.fine_grained_activation_offloading=true", R"(model.offload_modules=["core_attn"])", "model.cuda_graph_impl=transformer_engine", R"(model.cuda_graph_modules=["attn"])"})},
      {"offload_graph_warmup_steps", "model.cuda_graph_warmup_steps", Severity::error, {"model.fine_grained_activation_offloading=true", R"(model.offload_modules=["core_attn"])", "model.cuda_graph_impl=transformer_engine", R"(model.cuda_graph_modules=["attn"])", "model.cuda_graph_warmup_steps=0"}, {"model.fine_grained_activation_offloading=true", R"(model.offload_modules=["core_attn"])", "model.cuda_graph_impl=transformer_engine", R"(model.cuda_graph_modules=["attn"])", "model.cuda_graph_warmup_steps=1"}},
      {"offload_full_graph_inflight", "model.fine_grained_offloading_max_inflight_offloads", Severity::error, {"model.fine_grained_activation_offloading=true", R"(model.offload_modules=["core_attn"])", "model.cuda_graph_impl=full_iteration"}, {"model.fine_grained_activation_offloading=true", R"(model.offload_modules=["core_attn"])", "model.cuda_graph_impl=full_iteration", "model.fine_grained_offloading_max_inflight_offloads=0"}},
      {"activation_offload_fraction_range", "model.activation_offload_fraction", Severity::error, {"model.fine_grained_activation_offloading=true", R"(model.offload_modules=["core_attn"])", "model.activation_offload_fraction=1.5"}, {"model.fine_grained_activation_offloading=true", R"(model.offload_modules=["core_attn"])", "model.activation_offload_fraction=0.5"}},
      {"min_offloaded_tensor_size_range", "model.min_offloaded_tensor_size", Severity::error, {"model.fine_grained_activation_offloading=true", R"(model.offload_modules=["core_attn"])", "model.min_offloaded_tensor_size=-1"}, {"model.fine_grained_activation_offloading=true", R"(model.offload_modules=["core_attn"])", "model.min_offloaded_tensor_size=0"}},
      {"full_recompute_needs_method", "model.recompute_method", Severity::error, {"model.recompute_granularity=full", "model.recompute_num_layers=1"}, {"model.recompute_granularity=full", "model.recompute_num_layers=1", "model.recompute_method=block"}},
      {"full_recompute_needs_num_layers", "model.recompute_num_layers", Severity::error, {"model.recompute_granularity=full", "model.recompute_method=uniform"}, {"model.recompute_granularity=full", "model.recompute_method=uniform", "model.recompute_num_layers=2"}},
      {"recompute_num_layers_above_chunk", "model.recompute_num_layers", Severity::warning, {"model.recompute_granularity=full", "model.recompute_method=uniform", "model.recompute_num_layers=9"}, {"model.recompute_granularity=full", "model.recompute_method=uniform", "model.recompute_num_layers=8"}},
      {"selective_rejects_num_layers", "model.recompute_num_layers", Severity::error, {"model.recompute_granularity=selective", "model.recompute_num_layers=1"}, {"model.recompute_granularity=selective"}},
      {"recompute_method_ignored_under_selective", "model.recompute_method", Severity::warning, {"model.recompute_granularity=selective", "model.recompute_method=block"}, {"model.recompute_granularity=selective"}},
      {"distribute_saved_activations_vs_sp", "model.distribute_saved_activations", Severity::error, {"model.recompute_granularity=full", "model.recompute_method=uniform", "model.recompute_num_layers=1", "model.distribute_saved_activations=true", "model.tensor_model_parallel_size=2", "model.sequence_parallel=true"}, {"model.recompute_granularity=full", "model.recompute_method=uniform", "model.recompute_num_layers=1", "model.distribute_saved_activations=true", "model.tensor_model_parallel_size=2"}},
      {"distribute_saved_activations_needs_tp", "model.distribute_saved_activations", Severity::warning, {"model.recompute_granularity=full", "model.recompute_method=uniform", "model.recompute_num_layers=1", "model.distribute_saved_activations=true"}, {"model.recompute_granularity=full", "model.recompute_method=uniform", "model.recompute_num_layers=1", "model.distribute_saved_activations=true", "model.tensor_model_parallel_size=2"}},
      {"distribute_saved_activations_ignored", "model.distribute_saved_activations", Severity::warning, {"model.recompute_granularity=selective", "model.distribute_saved_activations=true"}, {"model.recompute_granularity=selective"}},
      {"recompute_module_unknown", "model.recompute_modules[1]", Severity::error, {"model.recompute_granularity=selective", R"(model.recompute_modules=["mlp","mhc"])"}, {"model.recompute_granularity=selective", R"(model.recompute_modules=["mlp"])"}},
      {"moe_act_needs_grouped_gemm", "model.recompute_modules[0]", Severity::error, plus(kMoe, {"model.moe_grouped_gemm=false", "model.recompute_granularity=selective", R"(model.recompute_modules=["moe_act"])"}),
       plus(kMoe, {"model.recompute_granularity=selective", R"(model.recompute_modules=["moe_act"])"})},
      {"moe_act_ineffective_local_spec", "model.recompute_modules[0]", Severity::warning, plus(kMoe, {"model.transformer_impl=local", "model.recompute_granularity=selective", R"(model.recompute_modules=["moe_act"])"}),
       plus(kMoe, {"model.recompute_granularity=selective", R"(model.recompute_modules=["moe_act"])"})},
      {"moe_act_without_moe", "model.recompute_modules[0]", Severity::warning, {"model.moe_grouped_gemm=true", "model.recompute_granularity=selective", R"(model.recompute_modules=["moe_act"])"}, plus(kMoe, {"model.recompute_granularity=selective", R"(model.recompute_modules=["moe_act"])"})},
      {"mla_up_proj_needs_mla", "model.recompute_modules[1]", Severity::error, {"model.recompute_granularity=selective", R"(model.recompute_modules=["mlp","mla_up_proj"])"}, {"model.recompute_granularity=selective", R"(model.recompute_modules=["mlp","mla_up_proj"])", "model.multi_latent_attention=true"}},
      {"gdn_norm_out_needs_gdn", "model.recompute_modules[0]", Severity::error, {"model.recompute_granularity=selective", R"(model.recompute_modules=["gdn_norm_out"])"}, {"model.recompute_granularity=selective", R"(model.recompute_modules=["gdn_norm_out"])", "model.experimental_attention_variant=gated_delta_net"}},
      {"core_attn_under_fused_attention", "model.recompute_modules", Severity::warning, {"model.recompute_granularity=selective"}, {"model.recompute_granularity=selective", "model.attention_backend=unfused"}},
      {"shared_experts_vs_shared_expert_overlap", "model.recompute_modules[0]", Severity::error,
       plus(kMoe, {"model.moe_token_dispatcher_type=alltoall", "model.moe_shared_expert_intermediate_size=128", "model.moe_shared_expert_overlap=true", "model.recompute_granularity=selective", R"(model.recompute_modules=["shared_experts"])"}),
       plus(kMoe, {"model.moe_token_dispatcher_type=alltoall", "model.moe_shared_expert_intermediate_size=128", "model.recompute_granularity=selective", R"(model.recompute_modules=["shared_experts"])"})},
      {"shared_experts_without_shared_expert", "model.recompute_modules[0]", Severity::warning, plus(kMoe, {"model.recompute_granularity=selective", R"(model.recompute_modules=["shared_experts"])"}),
       plus(kMoe, {"model.moe_shared_expert_intermediate_size=128", "model.recompute_granularity=selective", R"(model.recompute_modules=["shared_experts"])"})},
      {"fp8_delayed_vs_output_discarding_recompute", "model.recompute_modules[0]", Severity::error,
       plus(kMoe, {"model.fp8=hybrid", "model.recompute_granularity=selective", R"(model.recompute_modules=["moe_act"])"}),
       plus(kMoe, {"model.fp8=hybrid", "model.fp8_recipe=tensorwise", "model.recompute_granularity=selective", R"(model.recompute_modules=["moe_act"])"})},
      {"moe_layer_recompute_deprecated", "model.moe_layer_recompute", Severity::warning, plus(kMoe, {"model.moe_layer_recompute=true"}), kMoe},
      {"moe_layer_recompute_vs_full", "model.moe_layer_recompute", Severity::error,
       plus(kMoe, {"model.moe_layer_recompute=true", "model.recompute_granularity=full", "model.recompute_method=uniform", "model.recompute_num_layers=1"}),
       plus(kMoe, {"model.moe_layer_recompute=true", "model.recompute_granularity=selective"})},
      {"recompute_modules_ignored", "model.recompute_modules", Severity::warning, {"model.recompute_granularity=full", "model.recompute_method=uniform", "model.recompute_num_layers=1", R"(model.recompute_modules=["mlp"])"}, {"model.recompute_granularity=selective", R"(model.recompute_modules=["mlp"])"}},
      {"mlp_on_all_moe_model", "model.recompute_modules[0]", Severity::warning, plus(kMoe, {"model.recompute_granularity=selective", R"(model.recompute_modules=["mlp"])"}),
       plus(kMoe, {"model.moe_layer_freq=2", "model.recompute_granularity=selective", R"(model.recompute_modules=["mlp"])"})},
      {"layernorm_fused_under_te", "model.recompute_modules[0]", Severity::warning, {"model.recompute_granularity=selective", R"(model.recompute_modules=["layernorm"])"}, plus(kMoe, {"model.recompute_granularity=selective", R"(model.recompute_modules=["layernorm"])"})},
      // CheckpointWithoutOutput needs Transformer Engine importable, whatever transformer_impl says.
      {"checkpoint_without_output_needs_te", "model.recompute_modules[0]", Severity::error, {"model.transformer_impl=local", "model.recompute_granularity=selective", R"(model.recompute_modules=["layernorm"])", "cluster.transformer_engine_available=false"}, {"model.transformer_impl=local", "model.recompute_granularity=selective", R"(model.recompute_modules=["layernorm"])"}},
      {"checkpoint_without_output_needs_te", "model.recompute_modules[0]", Severity::error, {"model.transformer_impl=local", "model.recompute_granularity=selective", R"(model.recompute_modules=["layernorm"])", "cluster.transformer_engine_available=false", "cluster.calibration_harness=false"}, {"model.transformer_impl=local", "model.recompute_granularity=selective", R"(model.recompute_modules=["layernorm"])", "cluster.transformer_engine_available=false", "cluster.calibration_harness=true"}},
      {"checkpoint_without_output_uses_te", "model.recompute_modules[0]", Severity::warning, {"model.transformer_impl=local", "model.recompute_granularity=selective", R"(model.recompute_modules=["layernorm"])"}, {"model.recompute_granularity=selective", R"(model.recompute_modules=["layernorm"])"}},
      {"moe_ineffective_local_graphs", "model.recompute_modules[0]", Severity::warning,
       plus(kMoe, {"model.cuda_graph_impl=local", R"(model.cuda_graph_modules=["attn"])", "model.recompute_granularity=selective", R"(model.recompute_modules=["moe"])"}),
       plus(kMoe, {"model.recompute_granularity=selective", R"(model.recompute_modules=["moe"])"})},
      {"ep_overlap_vs_moe_recompute", "model.recompute_modules[0]", Severity::error,
       plus(kMoe, {"model.overlap_moe_expert_parallel_comm=true", "model.expert_model_parallel_size=2", "model.moe_token_dispatcher_type=alltoall", "model.recompute_granularity=selective", R"(model.recompute_modules=["moe"])"}),
       plus(kMoe, {"model.overlap_moe_expert_parallel_comm=true", "model.expert_model_parallel_size=2", "model.moe_token_dispatcher_type=alltoall", "model.recompute_granularity=selective", R"(model.recompute_modules=["moe_act"])"})},
      {"ep_overlap_vs_full_recompute", "model.recompute_granularity", Severity::error,
       plus(kMoe, {"model.overlap_moe_expert_parallel_comm=true", "model.expert_model_parallel_size=2", "model.moe_token_dispatcher_type=alltoall", "model.recompute_granularity=full", "model.recompute_method=uniform", "model.recompute_num_layers=1"}),
       plus(kMoe, {"model.overlap_moe_expert_parallel_comm=true", "model.expert_model_parallel_size=2", "model.moe_token_dispatcher_type=alltoall"})},
      {"ep_overlap_vs_recompute_method", "model.recompute_method", Severity::error,
       plus(kMoe, {"model.overlap_moe_expert_parallel_comm=true", "model.expert_model_parallel_size=2", "model.moe_token_dispatcher_type=alltoall", "model.recompute_method=uniform"}),
       plus(kMoe, {"model.overlap_moe_expert_parallel_comm=true", "model.expert_model_parallel_size=2", "model.moe_token_dispatcher_type=alltoall"})},
      // Precision
      {"bf16_and_fp16", "model.fp16", Severity::error, {"model.fp16=true"}, {"model.fp16=true", "model.bf16=false"}},
      {"fp16_skipped_first_steps", "optimizer.loss_scale", Severity::warning, {"model.fp16=true", "model.bf16=false", "optimizer.fp16=true", "optimizer.bf16=false"}, {"model.fp16=true", "model.bf16=false", "optimizer.fp16=true", "optimizer.bf16=false", "optimizer.loss_scale=1024"}},
      {"fp8_param_needs_fp8", "model.fp8_param", Severity::error, {"model.fp8_param=true"}, {"model.fp8_param=true", "model.fp8=e4m3"}},
      {"bf16_edge_layers_out_of_range", "model.num_layers_at_start_in_bf16", Severity::error, {"model.fp8=hybrid", "model.fp8_recipe=tensorwise", "model.first_last_layers_bf16=true", "model.num_layers_at_start_in_bf16=9"}, {"model.fp8=hybrid", "model.fp8_recipe=tensorwise", "model.first_last_layers_bf16=true", "model.num_layers_at_start_in_bf16=8"}},
      {"bf16_edge_layers_out_of_range", "model.num_layers_at_end_in_bf16", Severity::error, {"model.fp8=hybrid", "model.fp8_recipe=tensorwise", "model.first_last_layers_bf16=true", "model.num_layers_at_end_in_bf16=-1"}, {"model.fp8=hybrid", "model.fp8_recipe=tensorwise", "model.first_last_layers_bf16=true", "model.num_layers_at_end_in_bf16=0"}},
      {"fp8_needs_transformer_engine", "model.fp8", Severity::error, {"model.fp8=hybrid", "model.transformer_impl=local"}, {"model.fp8=hybrid"}},
      // CUDA graphs
      {"cuda_graph_modules_ignored", "model.cuda_graph_modules", Severity::warning, {R"(model.cuda_graph_modules=["attn"])"}, {R"(model.cuda_graph_modules=["attn"])", "model.cuda_graph_impl=transformer_engine"}},
      {"full_iteration_graph_modules_empty", "model.cuda_graph_modules", Severity::error, {"model.cuda_graph_impl=full_iteration", R"(model.cuda_graph_modules=["attn"])"}, {"model.cuda_graph_impl=full_iteration"}},
      {"cuda_graphs_vs_cpu_offloading", "model.cuda_graph_impl", Severity::error, {"model.cuda_graph_impl=transformer_engine", "model.cpu_offloading=true"}, {"model.cuda_graph_impl=full_iteration", "model.cpu_offloading=true"}},
      {"graph_moe_and_moe_router", "model.cuda_graph_modules", Severity::error, plus(kMoe, {"model.cuda_graph_impl=transformer_engine", R"(model.cuda_graph_modules=["moe","moe_router"])"}),
       plus(kMoe, {"model.cuda_graph_impl=transformer_engine", R"(model.cuda_graph_modules=["moe_router"])"})},
      {"graph_moe_preprocess_needs_router", "model.cuda_graph_modules", Severity::error, plus(kMoe, {"model.cuda_graph_impl=transformer_engine", R"(model.cuda_graph_modules=["moe_preprocess"])"}),
       plus(kMoe, {"model.cuda_graph_impl=local", R"(model.cuda_graph_modules=["moe_preprocess"])"})},
      {"graph_moe_needs_moe", "model.cuda_graph_modules", Severity::error, {"model.cuda_graph_impl=transformer_engine", R"(model.cuda_graph_modules=["moe_router"])"}, plus(kMoe, {"model.cuda_graph_impl=transformer_engine", R"(model.cuda_graph_modules=["moe_router"])"})},
      {"graph_mlp_needs_dense_layers", "model.cuda_graph_modules", Severity::error, plus(kMoe, {"model.cuda_graph_impl=transformer_engine", R"(model.cuda_graph_modules=["mlp"])"}),
       plus(kMoe, {"model.moe_layer_freq=2", "model.cuda_graph_impl=transformer_engine", R"(model.cuda_graph_modules=["mlp"])"})},
      {"graph_moe_needs_drop_and_pad", "model.cuda_graph_modules", Severity::error, plus(kMoe, {"model.cuda_graph_impl=transformer_engine", R"(model.cuda_graph_modules=["moe"])"}),
       plus(kMoe, {"model.cuda_graph_impl=transformer_engine", R"(model.cuda_graph_modules=["moe"])", "model.moe_expert_capacity_factor=1.0", "model.moe_pad_expert_input_to_capacity=true"})},
      {"graph_moe_preprocess_host_sync", "model.cuda_graph_modules", Severity::error,
       plus(kMoe, {"model.cuda_graph_impl=transformer_engine", R"(model.cuda_graph_modules=["moe_router","moe_preprocess"])", "model.moe_token_dispatcher_type=alltoall", "model.moe_expert_capacity_factor=1.0"}),
       plus(kMoe, {"model.cuda_graph_impl=transformer_engine", R"(model.cuda_graph_modules=["moe_router","moe_preprocess"])", "model.moe_token_dispatcher_type=alltoall"})},
      {"full_recompute_needs_full_iteration_graph", "model.recompute_granularity", Severity::error, {"model.cuda_graph_impl=transformer_engine", "model.recompute_granularity=full", "model.recompute_method=uniform", "model.recompute_num_layers=1"}, {"model.cuda_graph_impl=full_iteration", "model.recompute_granularity=full", "model.recompute_method=uniform", "model.recompute_num_layers=1"}},
      {"moe_recompute_vs_moe_router_graph", "model.recompute_modules[0]", Severity::error,
       plus(kMoe, {"model.cuda_graph_impl=transformer_engine", R"(model.cuda_graph_modules=["moe_router"])", "model.recompute_granularity=selective", R"(model.recompute_modules=["moe"])"}),
       plus(kMoe, {"model.cuda_graph_impl=transformer_engine", R"(model.cuda_graph_modules=["attn"])", "model.recompute_granularity=selective", R"(model.recompute_modules=["moe"])"})},
      {"attention_dropout_vs_graphed_core_attn", "model.recompute_modules[0]", Severity::error, {"model.attention_dropout=0.1", "model.cuda_graph_impl=transformer_engine", R"(model.cuda_graph_modules=["attn"])", "model.recompute_granularity=selective", R"(model.recompute_modules=["core_attn"])"}, {"model.attention_dropout=0.1", "model.cuda_graph_impl=transformer_engine", R"(model.cuda_graph_modules=["mlp"])", "model.recompute_granularity=selective", R"(model.recompute_modules=["core_attn"])"}},
      {"hidden_dropout_vs_graphed_mlp_moe", "model.recompute_modules[0]", Severity::error, {"model.hidden_dropout=0.1", "model.cuda_graph_impl=transformer_engine", "model.recompute_granularity=selective", R"(model.recompute_modules=["mlp"])"}, {"model.hidden_dropout=0.0", "model.cuda_graph_impl=transformer_engine", "model.recompute_granularity=selective", R"(model.recompute_modules=["mlp"])"}},
      {"jitter_vs_graphed_moe_recompute", "model.recompute_modules[0]", Severity::error,
       plus(kMoe, {"model.moe_input_jitter_eps=0.01", "model.cuda_graph_impl=full_iteration", "model.recompute_granularity=selective", R"(model.recompute_modules=["moe"])"}),
       plus(kMoe, {"model.moe_input_jitter_eps=0.01", "model.cuda_graph_impl=transformer_engine", R"(model.cuda_graph_modules=["attn"])", "model.recompute_granularity=selective", R"(model.recompute_modules=["moe"])"})},
      {"ep_overlap_vs_graphed_mlp_moe", "model.cuda_graph_modules", Severity::error,
       plus(kMoe, {"model.moe_layer_freq=2", "model.overlap_moe_expert_parallel_comm=true", "model.expert_model_parallel_size=2", "model.moe_token_dispatcher_type=alltoall", "model.cuda_graph_impl=transformer_engine", R"(model.cuda_graph_modules=["mlp"])"}),
       plus(kMoe, {"model.moe_layer_freq=2", "model.overlap_moe_expert_parallel_comm=true", "model.expert_model_parallel_size=2", "model.moe_token_dispatcher_type=alltoall", "model.cuda_graph_impl=transformer_engine", R"(model.cuda_graph_modules=["attn"])"})},
      // Optimizer
      {"precision_aware_needs_adam", "optimizer.use_precision_aware_optimizer", Severity::error, {"optimizer.use_precision_aware_optimizer=true", "optimizer.use_distributed_optimizer=true", "ddp.use_distributed_optimizer=true", "optimizer.optimizer=sgd"}, {"optimizer.use_precision_aware_optimizer=true", "optimizer.use_distributed_optimizer=true", "ddp.use_distributed_optimizer=true"}},
      {"precision_aware_needs_distributed_optimizer", "optimizer.use_precision_aware_optimizer", Severity::error, {"optimizer.use_precision_aware_optimizer=true"}, {"optimizer.use_precision_aware_optimizer=true", "optimizer.use_distributed_optimizer=true", "ddp.use_distributed_optimizer=true"}},
      {"precision_aware_needs_te_fused_adam", "optimizer.implementation", Severity::error, {"optimizer.use_precision_aware_optimizer=true", "optimizer.use_distributed_optimizer=true", "ddp.use_distributed_optimizer=true", "optimizer.implementation=apex_fused_adam"}, {"optimizer.use_precision_aware_optimizer=true", "optimizer.use_distributed_optimizer=true", "ddp.use_distributed_optimizer=true"}},
      {"dtype_needs_precision_aware_optimizer", "optimizer.exp_avg_dtype", Severity::error, {"optimizer.exp_avg_dtype=bf16"}, {"optimizer.exp_avg_dtype=bf16", "optimizer.use_precision_aware_optimizer=true", "optimizer.use_distributed_optimizer=true", "ddp.use_distributed_optimizer=true"}},
      {"param_gather_overlap_needs_distributed_optimizer", "ddp.overlap_param_gather", Severity::warning, {"ddp.overlap_param_gather=true"}, {"ddp.overlap_param_gather=true", "optimizer.use_distributed_optimizer=true", "ddp.use_distributed_optimizer=true"}},
      // Rules once checked on the raw JSON (spec_untyped_rules.cpp, removed): now on typed fields
      {"router_padding_needs_fp8", "model.moe_router_padding_for_quantization", Severity::error,
       plus(kMoe, {"model.moe_router_padding_for_quantization=true", "model.moe_token_dispatcher_type=alltoall"}),
       plus(kMoe, {"model.moe_router_padding_for_quantization=true", "model.moe_token_dispatcher_type=alltoall", "model.fp8=hybrid"})},
      {"router_padding_needs_fp8", "model.moe_router_padding_for_quantization", Severity::error,
       plus(kMoe, {"model.moe_router_padding_for_fp8=true", "model.moe_token_dispatcher_type=alltoall"}),
       plus(kMoe, {"model.moe_router_padding_for_fp8=true", "model.moe_token_dispatcher_type=alltoall", "model.fp4=e2m1"})},
      {"router_padding_vs_allgather", "model.moe_router_padding_for_quantization", Severity::error,
       plus(kMoe, {"model.moe_router_padding_for_quantization=true", "model.fp8=hybrid"}),
       plus(kMoe, {"model.moe_router_padding_for_quantization=true", "model.fp8=hybrid", "model.moe_token_dispatcher_type=alltoall"})},
      {"expert_bias_needs_sigmoid", "model.moe_router_enable_expert_bias", Severity::error, plus(kMoe, {"model.moe_router_enable_expert_bias=true"}),
       plus(kMoe, {"model.moe_router_enable_expert_bias=true", "model.moe_router_score_function=sigmoid"})},
      {"topk1_needs_pre_softmax", "model.moe_router_topk", Severity::error, plus(kMoe, {"model.moe_router_topk=1"}), plus(kMoe, {"model.moe_router_topk=1", "model.moe_router_pre_softmax=true"})},
      {"deepep_needs_flex", "model.moe_enable_deepep", Severity::error, plus(kMoe, {"model.moe_enable_deepep=true"}), plus(kMoe, {"model.moe_enable_deepep=true", "model.moe_token_dispatcher_type=flex"})},
      {"ncclep_needs_flex", "model.moe_flex_dispatcher_backend", Severity::error, plus(kMoe, {"model.moe_flex_dispatcher_backend=ncclep"}),
       plus(kMoe, {"model.moe_flex_dispatcher_backend=ncclep", "model.moe_token_dispatcher_type=flex"})},
      {"group_topk_le_groups", "model.moe_router_group_topk", Severity::error, plus(kMoe, {"model.moe_router_num_groups=2", "model.moe_router_group_topk=3"}),
       plus(kMoe, {"model.moe_router_num_groups=2", "model.moe_router_group_topk=2"})},
      {"paged_stash_vs_cpu_offloading", "model.moe_paged_stash", Severity::error, plus(kMoe, {"model.moe_paged_stash=true", "model.cpu_offloading=true"}), kMoe},
      {"dispatch_wgrad_overlap_exclusive", "model.overlap_dispatch_backward_with_experts_wgrad", Severity::error,
       plus(kMoe, {"model.overlap_dispatch_backward_with_experts_wgrad=true", "model.delay_wgrad_compute=true"}), plus(kMoe, {"model.overlap_dispatch_backward_with_experts_wgrad=true"})},
      {"fp4_and_fp8", "model.fp4", Severity::error, {"model.fp4=e2m1", "model.fp8=hybrid"}, {"model.fp8=hybrid"}},
      {"pipeline_layout_invalid", "model.pipeline_model_parallel_layout", Severity::error, {"model.pipeline_model_parallel_size=2", "model.pipeline_model_parallel_layout=Ettt|ttttL"}, {"model.pipeline_model_parallel_size=2", "model.pipeline_model_parallel_layout=Etttt|ttttL"}},
      {"pipeline_layout_invalid", "model.pipeline_model_parallel_layout", Severity::error, {"model.pipeline_model_parallel_size=2", "model.pipeline_model_parallel_layout=E(t)*99999999|L"}, {"model.pipeline_model_parallel_size=2", "model.pipeline_model_parallel_layout=E(t)*4|(t)*4L"}},
      {"pipeline_layout_invalid", "model.pipeline_model_parallel_layout", Severity::error, {"model.pipeline_model_parallel_size=2", "model.pipeline_model_parallel_layout=Etttt|tttt|L"}, {"model.pipeline_model_parallel_size=2", "model.pipeline_model_parallel_layout=Ett|tt|tt|ttL"}},
      {"pipeline_layout_invalid", "model.pipeline_model_parallel_layout", Severity::error, {"model.pipeline_model_parallel_size=2", "model.virtual_pipeline_model_parallel_size=4", "model.pipeline_model_parallel_layout=Ett|tt|tt|ttL"}, {"model.pipeline_model_parallel_size=2", "model.virtual_pipeline_model_parallel_size=2", "model.pipeline_model_parallel_layout=Ett|tt|tt|ttL"}},
      {"value_out_of_range", "model.rotary_percent", Severity::error, {"model.rotary_percent=0"}, {"model.rotary_percent=0.5"}},
      {"capacity_factor_load_balancing", "model.moe_router_load_balancing_type", Severity::error,
       plus(kMoe, {"model.moe_expert_capacity_factor=1.0", "model.moe_router_load_balancing_type=sinkhorn"}),
       plus(kMoe, {"model.moe_expert_capacity_factor=1.0", "model.moe_router_load_balancing_type=seq_aux_loss"})},
      {"fp8_input_store_needs_swiglu", "model.activation_func_fp8_input_store", Severity::error, {"model.activation_func_fp8_input_store=true", "model.activation_func=gelu"}, {"model.activation_func_fp8_input_store=true", "model.activation_func=silu", "model.gated_linear_unit=true"}},
      {"not_simulated", "model.fp32_residual_connection", Severity::warning, {"model.fp32_residual_connection=true"}, {"model.fp32_residual_connection=false"}},
      // Read only by Bridge's full-TE layer spec (memory_effect.json applies_when).
      {"not_simulated", "model.apply_residual_connection_post_layernorm", Severity::warning, {"model.apply_residual_connection_post_layernorm=true", "model.use_transformer_engine_full_layer_spec=true"}, {"model.apply_residual_connection_post_layernorm=true"}},
      {"value_out_of_range", "model.mlp_chunks_for_training", Severity::error, {"model.mlp_chunks_for_training=0"}, {"model.mlp_chunks_for_training=4"}},
      {"defer_wgrad_needs_pp", "model.defer_embedding_wgrad_compute", Severity::error, {"model.defer_embedding_wgrad_compute=true", "model.gradient_accumulation_fusion=true"}, {"model.defer_embedding_wgrad_compute=true", "model.gradient_accumulation_fusion=true", "model.pipeline_model_parallel_size=2"}},
      {"defer_wgrad_needs_grad_accumulation_fusion", "model.defer_embedding_wgrad_compute", Severity::error, {"model.defer_embedding_wgrad_compute=true", "model.pipeline_model_parallel_size=2"}, {"model.defer_embedding_wgrad_compute=true", "model.pipeline_model_parallel_size=2", "model.gradient_accumulation_fusion=true"}},
      {"wgrad_deferral_limit_non_negative", "model.wgrad_deferral_limit", Severity::error, {"model.defer_embedding_wgrad_compute=true", "model.pipeline_model_parallel_size=2", "model.gradient_accumulation_fusion=true", "model.wgrad_deferral_limit=-1"}, {"model.defer_embedding_wgrad_compute=true", "model.pipeline_model_parallel_size=2", "model.gradient_accumulation_fusion=true", "model.wgrad_deferral_limit=0"}},
      {"defer_wgrad_vs_mxfp8_output_proj", "model.defer_embedding_wgrad_compute", Severity::error, {"model.defer_embedding_wgrad_compute=true", "model.pipeline_model_parallel_size=2", "model.gradient_accumulation_fusion=true", "model.fp8=e4m3", "model.fp8_recipe=mxfp8", "model.fp8_output_proj=true", "model.transformer_impl=transformer_engine"}, {"model.defer_embedding_wgrad_compute=true", "model.pipeline_model_parallel_size=2", "model.gradient_accumulation_fusion=true", "model.fp8=e4m3", "model.fp8_recipe=mxfp8", "model.fp8_output_proj=false", "model.transformer_impl=transformer_engine"}},
      // The MXFP8 LM head exists only under fp8 with the mxfp8 recipe.
      {"not_simulated", "model.fp8_output_proj", Severity::warning, {"model.fp8_output_proj=true", "model.fp8=e4m3", "model.fp8_recipe=mxfp8"}, {"model.fp8_output_proj=true", "model.fp8=e4m3", "model.fp8_recipe=tensorwise"}},
      {"not_simulated", "optimizer.bf16", Severity::warning, {"optimizer.bf16=false"}, {"optimizer.bf16=false", "optimizer.use_distributed_optimizer=true"}},
      {"linear_attention_freq_required", "model.linear_attention_freq", Severity::error, {"model.experimental_attention_variant=gated_delta_net"}, {"model.experimental_attention_variant=gated_delta_net", "model.linear_attention_freq=4"}},
      {"linear_attention_freq_length", "model.linear_attention_freq", Severity::error, {"model.experimental_attention_variant=gated_delta_net", "model.linear_attention_freq=[1,1,1,0]"}, {"model.experimental_attention_variant=gated_delta_net", "model.linear_attention_freq=[1,1,1,0,1,1,1,0]"}},
      {"value_out_of_range", "model.linear_attention_freq", Severity::error, {"model.experimental_attention_variant=gated_delta_net", "model.linear_attention_freq=0"}, {"model.experimental_attention_variant=gated_delta_net", "model.linear_attention_freq=1"}},
      {"gdn_value_heads_multiple_of_key_heads", "model.linear_num_value_heads", Severity::error, {"model.experimental_attention_variant=gated_delta_net", "model.linear_attention_freq=4", "model.linear_num_value_heads=24"}, {"model.experimental_attention_variant=gated_delta_net", "model.linear_attention_freq=4", "model.linear_num_value_heads=32"}},
      {"gdn_heads_divisible_by_tp_cp", "model.linear_num_key_heads", Severity::error, {"model.experimental_attention_variant=gated_delta_net", "model.linear_attention_freq=4", "model.linear_num_key_heads=2", "model.linear_num_value_heads=8", "model.tensor_model_parallel_size=4"}, {"model.experimental_attention_variant=gated_delta_net", "model.linear_attention_freq=4", "model.linear_num_key_heads=4", "model.linear_num_value_heads=8", "model.tensor_model_parallel_size=4"}},
      {"mtp_full_recompute_one_layer", "model.recompute_num_layers", Severity::error, {"model.mtp_num_layers=1", "model.recompute_granularity=full", "model.recompute_method=uniform", "model.recompute_num_layers=2"}, {"model.mtp_num_layers=1", "model.recompute_granularity=full", "model.recompute_method=uniform", "model.recompute_num_layers=1"}},
      {"mtp_block_recompute_skipped", "model.recompute_method", Severity::warning, {"model.mtp_num_layers=1", "model.recompute_granularity=full", "model.recompute_method=block", "model.recompute_num_layers=2"}, {"model.recompute_granularity=full", "model.recompute_method=block", "model.recompute_num_layers=2"}},
      {"partial_activation_checkpoints_unread", "model.num_microbatches_with_partial_activation_checkpoints", Severity::warning, {"model.num_microbatches_with_partial_activation_checkpoints=2"}, {"model.num_microbatches_with_partial_activation_checkpoints=null"}},
      {"output_gate_vs_fused_single_qkv_rope", "model.fused_single_qkv_rope", Severity::error, {"model.attention_output_gate=true", "model.fused_single_qkv_rope=true"}, {"model.attention_output_gate=true"}},
      // Shapes: each dimension Megatron splits with divide() (validate_shapes.cpp)
      {"vocab_divisible_by_tp", "model.vocab_size", Severity::error, {"model.tensor_model_parallel_size=2", "model.vocab_size=1001"}, {"model.tensor_model_parallel_size=2", "model.vocab_size=1001", "model.should_pad_vocab=true"}},
      {"ffn_divisible_by_tp", "model.ffn_hidden_size", Severity::error, {"model.tensor_model_parallel_size=2", "model.ffn_hidden_size=1001"}, {"model.tensor_model_parallel_size=2", "model.ffn_hidden_size=1002"}},
      // One key/value head on four TP ranks: 8 * 33 + 2 * 33 = 330 columns do not split four ways.
      {"qkv_width_divisible_by_tp", "model.kv_channels", Severity::error, {"model.tensor_model_parallel_size=4", "model.num_query_groups=1", "model.kv_channels=33"}, {"model.tensor_model_parallel_size=4", "model.num_query_groups=1", "model.kv_channels=32"}},
      {"moe_ffn_divisible_by_etp", "model.moe_ffn_hidden_size", Severity::error,
       plus(kMoe, {"model.expert_tensor_parallel_size=2", "model.moe_ffn_hidden_size=129"}),
       plus(kMoe, {"model.expert_tensor_parallel_size=2", "model.moe_ffn_hidden_size=130"})},
      {"shared_expert_ffn_divisible_by_tp", "model.moe_shared_expert_intermediate_size", Severity::error,
       plus(kMoe, {"model.tensor_model_parallel_size=2", "model.sequence_parallel=true", "model.moe_shared_expert_intermediate_size=129"}),
       plus(kMoe, {"model.tensor_model_parallel_size=2", "model.sequence_parallel=true", "model.moe_shared_expert_intermediate_size=130"})},
      {"mamba_d_inner_divisible_by_head_dim", "model.mamba_head_dim", Severity::error, {"model.num_layers=null", "model.hybrid_override_pattern=\"M*M*\"", "model.mamba_head_dim=48"}, {"model.num_layers=null", "model.hybrid_override_pattern=\"M*M*\"", "model.mamba_head_dim=64"}},
      {"mamba_heads_divisible_by_tp", "model.mamba_num_heads", Severity::error, {"model.num_layers=null", "model.hybrid_override_pattern=\"M*M*\"", "model.tensor_model_parallel_size=4", "model.mamba_num_heads=6", "model.mamba_num_groups=2"}, {"model.num_layers=null", "model.hybrid_override_pattern=\"M*M*\"", "model.tensor_model_parallel_size=4", "model.mamba_num_heads=8", "model.mamba_num_groups=4"}},
      {"mamba_groups_divisible_by_tp", "model.mamba_num_groups", Severity::error, {"model.num_layers=null", "model.hybrid_override_pattern=\"M*M*\"", "model.tensor_model_parallel_size=2", "model.mamba_num_groups=1"}, {"model.num_layers=null", "model.hybrid_override_pattern=\"M*M*\"", "model.tensor_model_parallel_size=2", "model.mamba_num_groups=2"}},
      {"mamba_heads_divisible_by_groups", "model.mamba_num_heads", Severity::error, {"model.num_layers=null", "model.hybrid_override_pattern=\"M*M*\"", "model.mamba_num_heads=12"}, {"model.num_layers=null", "model.hybrid_override_pattern=\"M*M*\"", "model.mamba_num_heads=16"}},
      // hidden 257 over two heads: kv_channels 128, so only MTP's eh_proj (2h -> h) splits 257.
      {"mtp_hidden_divisible_by_tp", "model.hidden_size", Severity::error, {"model.hidden_size=257", "model.num_attention_heads=2", "model.ffn_hidden_size=1024", "model.tensor_model_parallel_size=2", "model.mtp_num_layers=1"}, {"model.hidden_size=257", "model.num_attention_heads=2", "model.ffn_hidden_size=1024", "model.tensor_model_parallel_size=2"}},
      {"allgather_no_variable_seq_lengths", "model.variable_seq_lengths", Severity::error, {"model.variable_seq_lengths=true"}, {"model.variable_seq_lengths=true", "model.moe_token_dispatcher_type=alltoall"}},
  };
  return k;
}

}  // namespace

TEST_CASE("the small base specs are valid", "[validate]") {
  for (const auto& sets : {std::vector<std::string>{}, kMoe}) {
    const Outcome o = run(sets);
    INFO(dump(o.diagnostics));
    CHECK(o.parsed);
    CHECK_FALSE(has_errors(o.diagnostics));
  }
}

TEST_CASE("every validation rule fires on a config that breaks it and not on its neighbour", "[validate]") {
  check_rule_cases(cases());
}

TEST_CASE("validate never divides by a zero size", "[validate]") {
  RunSpec spec;  // every size left at 0 or 1
  spec.model.tensor_model_parallel_size = 0;
  spec.model.pipeline_model_parallel_size = 0;
  spec.train.micro_batch_size = 0;
  spec.cluster.num_gpus = 0;
  const Diagnostics d = validate(spec);
  CHECK(has_errors(d));
  CHECK(has_rule(d, "value_out_of_range", "model.tensor_model_parallel_size"));
}

TEST_CASE("the shipped seed run specs are valid", "[validate][runs]") {
  const auto r = parse_run_spec(default_run_spec_text());
  INFO(dump(r.diagnostics));
  REQUIRE(r.spec.has_value());
  const Diagnostics d = validate(*r.spec);
  INFO(dump(d));
  CHECK_FALSE(has_errors(d));
  CHECK(r.spec->model.recompute_granularity == RecomputeGranularity::selective);
  CHECK(r.spec->model.recompute_modules == std::optional<std::vector<RecomputeTag>>(std::vector<RecomputeTag>{}));
  CHECK(r.spec->cluster.num_gpus == 8);
}
