// The model-side refusals of the pinned Megatron Core (docs/megatron-refusals/): what fails at the
// first forward or backward, the installation, the MLP / norm / attention / DSA / hybrid modules.
// One RuleCase per rule and condition (tests/model/rule_cases.hpp).
#include "rule_cases.hpp"

using namespace peakcast::model;
using namespace peakcast::model::test;

namespace {

const std::vector<std::string> kSel = {"model.recompute_granularity=selective"};
const std::vector<std::string> kMla = {"model.multi_latent_attention=true"};
const std::vector<std::string> kDsa = {"model.experimental_attention_variant=dsa", "model.multi_latent_attention=true",
                                       "model.add_bias_linear=false"};
// A DSA model peakcast simulates: the cuDNN kernels, an indexer of 4 x 64 heads selecting 64 keys.
const std::vector<std::string> kDsaSim = plus(kDsa, {"model.dsa_kernel_backend=cudnn", "model.dsa_indexer_n_heads=4", "model.dsa_indexer_head_dim=64",
                                                     "model.dsa_indexer_topk=64"});
const std::vector<std::string> kGdn = {"model.experimental_attention_variant=gated_delta_net", "model.linear_attention_freq=4"};
const std::vector<std::string> kHybrid = {"model.num_layers=null", "model.hybrid_override_pattern=\"M*M*\""};
const std::vector<std::string> kShared = {"model.moe_shared_expert_intermediate_size=128", "model.add_bias_linear=false"};

std::vector<std::string> moe(const std::vector<std::string>& extra) { return plus(kMoe, extra); }

const std::vector<RuleCase>& runtime_cases() {
  static const std::vector<RuleCase> k = {
      {"moe_tp_needs_sequence_parallel", "model.sequence_parallel", Severity::error, moe({"model.tensor_model_parallel_size=2"}),
       moe({"model.tensor_model_parallel_size=2", "model.sequence_parallel=true"})},
      {"mlp_recompute_with_linear_bias", "model.recompute_modules[0]", Severity::error, plus(kSel, {R"(model.recompute_modules=["mlp"])"}),
       plus(kSel, {R"(model.recompute_modules=["mlp"])", "model.add_bias_linear=false"})},
      {"mlp_recompute_with_linear_bias", "model.recompute_modules[0]", Severity::warning,
       plus(kSel, {R"(model.recompute_modules=["mlp"])", "model.fp8=e4m3", "model.fp8_recipe=tensorwise"}),
       plus(kSel, {R"(model.recompute_modules=["mlp"])", "model.fp8=e4m3", "model.fp8_recipe=tensorwise", "model.add_bias_linear=false"})},
      {"latent_vs_shared_expert_overlap", "model.moe_shared_expert_overlap", Severity::error,
       moe({"model.moe_latent_size=64", "model.moe_shared_expert_overlap=true"}), moe({"model.moe_latent_size=64"})},
      // Latent MoE (docs/research/latent-moe-memory-facts.md section 6): a width of at least one
      // (arguments.py:1895), Transformer Engine (moe_layer.py:266), an MoE model (arguments.py:1896).
      {"value_out_of_range", "model.moe_latent_size", Severity::error, moe({"model.moe_latent_size=0"}), moe({"model.moe_latent_size=1"})},
      {"needs_transformer_engine", "model.moe_latent_size", Severity::error,
       moe({"model.transformer_impl=local", "model.moe_latent_size=64", "cluster.transformer_engine_available=false"}),
       moe({"model.transformer_impl=local", "model.moe_latent_size=64"})},
      {"moe_latent_size_needs_moe", "model.moe_latent_size", Severity::warning, {"model.moe_latent_size=64"}, moe({"model.moe_latent_size=64"})},
      {"local_graph_mlp_scope_unbuildable", "model.cuda_graph_modules", Severity::error, {"model.cuda_graph_impl=local", R"(model.cuda_graph_modules=["mlp"])"}, {"model.cuda_graph_impl=local", R"(model.cuda_graph_modules=["attn","mlp"])"}},
      {"transformer_impl_needs_te", "model.transformer_impl", Severity::error, {"cluster.transformer_engine_available=false"}, {"cluster.transformer_engine_available=false", "model.transformer_impl=local"}},
      {"needs_transformer_engine", "model.apply_rope_fusion", Severity::error, {"model.transformer_impl=local", "model.apply_rope_fusion=true", "model.position_embedding_type=rope", "cluster.transformer_engine_available=false"}, {"model.transformer_impl=local", "model.apply_rope_fusion=true", "model.position_embedding_type=rope"}},
      {"needs_transformer_engine", "model.moe_permute_fusion", Severity::error,
       moe({"model.transformer_impl=local", "model.moe_permute_fusion=true", "cluster.transformer_engine_available=false"}),
       moe({"model.transformer_impl=local", "model.moe_permute_fusion=true"})},
      {"needs_transformer_engine", "model.cuda_graph_impl", Severity::error, {"model.transformer_impl=local", "model.cuda_graph_impl=transformer_engine", "cluster.transformer_engine_available=false"}, {"model.transformer_impl=local", "model.cuda_graph_impl=local", "cluster.transformer_engine_available=false"}},
      {"pipeline_dtype_required", "model.pipeline_dtype", Severity::error, {"model.pipeline_model_parallel_size=2"}, {"model.pipeline_model_parallel_size=2", "model.pipeline_dtype=bf16"}},
      // Bridge's finalize sets pipeline_dtype to params_dtype.
      {"pipeline_dtype_required", "model.pipeline_dtype", Severity::error, {"model.pipeline_model_parallel_size=2"}, {"model.pipeline_model_parallel_size=2", "defaults=bridge"}},
  };
  return k;
}

const std::vector<RuleCase>& mlp_cases() {
  static const std::vector<RuleCase> k = {
      {"bias_activation_fusion_activation", "model.bias_activation_fusion", Severity::error, {"model.bias_activation_fusion=true", "model.activation_func=squared_relu"}, {"model.bias_activation_fusion=true"}},
      {"bias_activation_fusion_activation", "model.bias_activation_fusion", Severity::error, {"model.bias_activation_fusion=true", "model.add_bias_linear=false"}, {"model.bias_activation_fusion=true", "model.add_bias_linear=false", "model.gated_linear_unit=true"}},
      {"bias_activation_fusion_activation", "model.bias_activation_fusion", Severity::error, {"model.bias_activation_fusion=true", "model.activation_func=quick_gelu"}, {"model.bias_activation_fusion=true"}},
      {"bias_activation_fusion_activation", "model.bias_activation_fusion", Severity::error, {"model.bias_activation_fusion=true", "model.glu_linear_offset=0.5"}, {"model.bias_activation_fusion=true"}},
      {"bias_activation_fusion_activation", "model.bias_activation_fusion", Severity::error, {"model.bias_activation_fusion=true", "model.use_te_activation_func=true"}, {"model.use_te_activation_func=true"}},
      // Accepted by the config, refused by the dense MLP's forward (mlp.py:317).
      {"bias_activation_fusion_activation", "model.bias_activation_fusion", Severity::error, {"model.bias_activation_fusion=true", "model.activation_func=silu"}, {"model.bias_activation_fusion=true", "model.activation_func=silu", "model.gated_linear_unit=true"}},
      // SequentialMLP experts scale by their routing probabilities (mlp.py:295).
      {"bias_activation_fusion_activation", "model.bias_activation_fusion", Severity::error,
       moe({"model.transformer_impl=local", "model.bias_activation_fusion=true"}),
       moe({"model.transformer_impl=local", "model.bias_activation_fusion=true", "model.activation_func=silu", "model.gated_linear_unit=true",
            "model.add_bias_linear=false"})},
      {"grouped_mlp_activation_fusion", "model.bias_activation_fusion", Severity::error, moe({"model.bias_activation_fusion=true"}),
       moe({"model.bias_activation_fusion=true", "model.activation_func=silu", "model.gated_linear_unit=true", "model.add_bias_linear=false"})},
      {"weighted_swiglu_no_bias", "model.add_bias_linear", Severity::error,
       moe({"model.bias_activation_fusion=true", "model.activation_func=silu", "model.gated_linear_unit=true"}),
       moe({"model.bias_activation_fusion=true", "model.activation_func=silu", "model.gated_linear_unit=true", "model.add_bias_linear=false"})},
      {"shared_expert_activation_fusion", "model.bias_activation_fusion", Severity::error,
       moe(plus(kShared, {"model.bias_activation_fusion=true", "model.activation_func=quick_gelu", "model.gated_linear_unit=true"})),
       moe(plus(kShared, {"model.bias_activation_fusion=true", "model.activation_func=silu", "model.gated_linear_unit=true"}))},
      {"shared_expert_no_bias", "model.add_bias_linear", Severity::error, moe({"model.moe_shared_expert_intermediate_size=128"}), moe(kShared)},
      {"fused_shared_expert_needs_swiglu", "model.use_grouped_gemm_for_shared_expert", Severity::error,
       moe(plus(kShared, {"model.use_grouped_gemm_for_shared_expert=true"})),
       moe(plus(kShared, {"model.use_grouped_gemm_for_shared_expert=true", "model.activation_func=silu", "model.gated_linear_unit=true"}))},
      {"fused_shared_expert_needs_interleave", "model.moe_shared_expert_glu_interleave_size", Severity::error,
       moe(plus(kShared, {"model.use_grouped_gemm_for_shared_expert=true"})),
       moe(plus(kShared, {"model.use_grouped_gemm_for_shared_expert=true", "model.moe_shared_expert_glu_interleave_size=32"}))},
      {"fused_shared_expert_needs_te_linear", "model.use_grouped_gemm_for_shared_expert", Severity::error,
       moe(plus(kShared, {"model.use_grouped_gemm_for_shared_expert=true", "model.transformer_impl=local"})),
       moe(plus(kShared, {"model.use_grouped_gemm_for_shared_expert=true"}))},
      {"fused_shared_expert_needs_mx_recipe", "model.use_grouped_gemm_for_shared_expert", Severity::error,
       moe(plus(kShared, {"model.use_grouped_gemm_for_shared_expert=true"})),
       moe(plus(kShared, {"model.use_grouped_gemm_for_shared_expert=true", "model.fp8=e4m3", "model.fp8_recipe=mxfp8"}))},
      {"te_activation_func_choices", "model.use_te_activation_func", Severity::error, {"model.use_te_activation_func=true", "model.activation_func=squared_relu"}, {"model.use_te_activation_func=true"}},
      {"te_activation_func_choices", "model.use_te_activation_func", Severity::error, {"model.use_te_activation_func=true", "model.activation_func=relu"}, {"model.use_te_activation_func=true", "model.activation_func=relu", "model.transformer_impl=local"}},
      {"te_activation_func_choices", "model.use_te_activation_func", Severity::warning, {"model.use_te_activation_func=true", "model.activation_func=silu"}, {"model.use_te_activation_func=true", "model.activation_func=silu", "model.gated_linear_unit=true"}},
      {"te_op_fuser_activation", "model.use_transformer_engine_op_fuser", Severity::error, {"model.use_transformer_engine_op_fuser=true", "model.activation_func=squared_relu"}, {"model.use_transformer_engine_op_fuser=true", "model.activation_func=relu"}},
      {"dense_grouped_mlp_constraints", "model.add_bias_linear", Severity::error, {"model.use_transformer_engine_op_fuser=true", "model.use_grouped_gemm_for_dense_mlp=true", "model.activation_func=silu", "model.gated_linear_unit=true"}, {"model.use_transformer_engine_op_fuser=true", "model.use_grouped_gemm_for_dense_mlp=true", "model.activation_func=silu", "model.gated_linear_unit=true", "model.add_bias_linear=false"}},
      {"dense_grouped_mlp_constraints", "model.activation_func", Severity::error, {"model.use_transformer_engine_op_fuser=true", "model.dense_grouped_gemm=true", "model.add_bias_linear=false"}, {"model.use_transformer_engine_op_fuser=true", "model.add_bias_linear=false"}},
      {"kitchen_options", "model.use_kitchen", Severity::error, {"model.use_kitchen=true", "model.use_transformer_engine_op_fuser=true"}, {"model.use_kitchen=true"}},
      {"kitchen_options", "model.use_kitchen", Severity::error, {"model.use_kitchen=true", "model.use_te_activation_func=true"}, {"model.use_te_activation_func=true"}},
      {"fused_residual_rmsnorm_needs_rmsnorm", "model.fused_residual_rmsnorm", Severity::error, {"model.fused_residual_rmsnorm=true"}, {"model.fused_residual_rmsnorm=true", "model.normalization=RMSNorm"}},
      {"grouped_mlp_bias_vs_bias_dropout_fusion", "model.bias_dropout_fusion", Severity::error, moe({"model.bias_dropout_fusion=true"}),
       moe({"model.bias_dropout_fusion=true", "model.add_bias_linear=false"})},
      {"op_fuser_grouped_mlp_unsupported", "model.use_transformer_engine_op_fuser", Severity::error,
       moe({"model.use_transformer_engine_op_fuser=true", "model.add_bias_linear=false"}),
       moe({"model.add_bias_linear=false"})},
      {"op_fuser_grouped_mlp_unsupported", "model.use_transformer_engine_op_fuser", Severity::warning,
       moe({"model.use_transformer_engine_op_fuser=true", "model.add_bias_linear=false", "model.activation_func=silu", "model.gated_linear_unit=true"}),
       moe({"model.add_bias_linear=false", "model.activation_func=silu", "model.gated_linear_unit=true"})},
      {"glu_interleave_unfused_copy", "model.moe_mlp_glu_interleave_size", Severity::warning,
       moe({"model.gated_linear_unit=true", "model.activation_func=silu", "model.moe_mlp_glu_interleave_size=32"}),
       moe({"model.gated_linear_unit=true", "model.activation_func=silu"})},
      {"fused_squared_relu_no_bias", "model.add_bias_linear", Severity::error,
       moe({"model.activation_func=squared_relu", "model.use_fused_weighted_squared_relu=true"}),
       moe({"model.activation_func=squared_relu", "model.use_fused_weighted_squared_relu=true", "model.add_bias_linear=false"})},
      {"single_grouped_weight_constraints", "model.moe_grouped_gemm", Severity::error,
       moe({"model.moe_grouped_gemm=false", "model.moe_single_grouped_weight=true", "model.use_transformer_engine_op_fuser=true"}),
       moe({"model.moe_single_grouped_weight=true", "model.use_transformer_engine_op_fuser=true"})},
      {"single_grouped_weight_constraints", "model.moe_single_grouped_weight", Severity::error,
       moe({"model.moe_single_grouped_weight=true", "model.use_transformer_engine_op_fuser=true", "model.fp8=e4m3", "model.fp8_recipe=tensorwise"}),
       moe({"model.moe_single_grouped_weight=true", "model.use_transformer_engine_op_fuser=true", "model.fp8=e4m3", "model.fp8_recipe=mxfp8"})},
      {"single_grouped_weight_constraints", "model.fp4_param", Severity::error,
       moe({"model.moe_single_grouped_weight=true", "model.use_transformer_engine_op_fuser=true", "model.fp4=e2m1"}),
       moe({"model.moe_single_grouped_weight=true", "model.use_transformer_engine_op_fuser=true", "model.fp4=e2m1", "model.fp4_param=true"})},
      {"single_grouped_weight_constraints", "model.use_transformer_engine_op_fuser", Severity::error, moe({"model.moe_single_grouped_weight=true"}),
       moe({"model.moe_single_grouped_weight=true", "model.use_transformer_engine_op_fuser=true"})},
      {"single_grouped_weight_constraints", "model.moe_single_grouped_bias", Severity::error,
       moe({"model.moe_single_grouped_bias=true", "model.add_bias_linear=false"}), moe({"model.moe_single_grouped_bias=true"})},
      {"gtp_vs_te_op_fuser_mlp", "model.gtp_weight_remat_size", Severity::error, {"model.use_transformer_engine_op_fuser=true", "model.gtp_weight_remat_size=2"}, {"model.use_transformer_engine_op_fuser=true"}},
      {"local_norm_options", "model.persist_layer_norm", Severity::error, {"model.transformer_impl=local", "model.normalization=RMSNorm", "model.persist_layer_norm=true"}, {"model.transformer_impl=local", "model.normalization=RMSNorm"}},
      {"local_norm_options", "model.memory_efficient_layer_norm", Severity::error, {"model.transformer_impl=local", "model.normalization=RMSNorm", "model.memory_efficient_layer_norm=true"}, {"model.memory_efficient_layer_norm=true"}},
      {"local_norm_options", "model.layernorm_zero_centered_gamma", Severity::warning, {"model.transformer_impl=local", "model.layernorm_zero_centered_gamma=true"}, {"model.layernorm_zero_centered_gamma=true"}},
      {"local_norm_vs_sequence_parallel", "model.sequence_parallel", Severity::error, {"model.transformer_impl=local", "model.normalization=RMSNorm", "model.tensor_model_parallel_size=2", "model.sequence_parallel=true"}, {"model.transformer_impl=local", "model.normalization=RMSNorm", "model.tensor_model_parallel_size=2", "model.sequence_parallel=true", "cluster.calibration_harness=true"}},
      {"local_norm_vs_sequence_parallel", "model.sequence_parallel", Severity::warning, {"model.transformer_impl=local", "model.tensor_model_parallel_size=2", "model.sequence_parallel=true"}, {"model.tensor_model_parallel_size=2", "model.sequence_parallel=true"}},
  };
  return k;
}

const std::vector<RuleCase>& attention_cases() {
  static const std::vector<RuleCase> k = {
      {"mla_vs_rotary_interleaved", "model.rotary_interleaved", Severity::error, plus(kMla, {"model.rotary_interleaved=true"}), kMla},
      {"mla_vs_qk_l2_norm", "model.qk_l2_norm", Severity::error, plus(kMla, {"model.qk_l2_norm=true"}), {"model.qk_l2_norm=true"}},
      {"mla_rope_type", "model.rope_type", Severity::error, plus(kMla, {"model.rope_type=bogus"}), plus(kMla, {"model.rope_type=rope"})},
      {"mla_needs_te_attention", "model.multi_latent_attention", Severity::error, plus(kMla, {"model.transformer_impl=local"}),
       plus(kMla, {"model.transformer_impl=local", "cluster.calibration_harness=true"})},
      {"mla_rope_fusion_needs_yarn", "model.apply_rope_fusion", Severity::error, plus(kMla, {"model.apply_rope_fusion=true", "model.rope_type=rope"}),
       plus(kMla, {"model.apply_rope_fusion=true"})},
      {"mla_rope_fusion_emb_dim", "model.qk_pos_emb_head_dim", Severity::error, plus(kMla, {"model.apply_rope_fusion=true", "model.qk_pos_emb_head_dim=66"}),
       plus(kMla, {"model.apply_rope_fusion=true"})},
      {"mla_rope_fusion_experimental", "model.apply_rope_fusion", Severity::warning, plus(kMla, {"model.apply_rope_fusion=true"}), kMla},
      {"cache_mla_latents_training", "model.cache_mla_latents", Severity::error, plus(kMla, {"model.cache_mla_latents=true"}), kMla},
      {"mla_vs_hybrid_context_parallel", "model.hybrid_context_parallel", Severity::error, plus(kMla, {"model.hybrid_context_parallel=true"}), {"model.hybrid_context_parallel=true"}},
      {"mla_down_proj_fusion_needs_q_lora", "model.q_lora_rank", Severity::error, plus(kMla, {"model.mla_down_proj_fusion=true", "model.q_lora_rank=null"}),
       plus(kMla, {"model.mla_down_proj_fusion=true"})},
      {"mla_down_proj_fusion_tp_divisible", "model.q_lora_rank", Severity::error,
       plus(kMla, {"model.mla_down_proj_fusion=true", "model.tensor_model_parallel_size=2", "model.q_lora_rank=255"}),
       plus(kMla, {"model.mla_down_proj_fusion=true", "model.tensor_model_parallel_size=2", "model.q_lora_rank=256"})},
      {"output_gate_vs_mla", "model.attention_output_gate", Severity::error, plus(kMla, {"model.attention_output_gate=true"}), kMla},
      {"yarn_vs_rotary_interleaved", "model.rotary_interleaved", Severity::error, {"model.position_embedding_type=yarn", "model.rotary_interleaved=true"}, {"model.position_embedding_type=yarn"}},
      {"rope_fusion_fallback", "model.apply_rope_fusion", Severity::warning, {"model.position_embedding_type=yarn", "model.apply_rope_fusion=true"}, {"model.position_embedding_type=rope", "model.apply_rope_fusion=true"}},
      {"rope_fusion_needs_rope", "model.apply_rope_fusion", Severity::warning, {"defaults=bridge", "model.position_embedding_type=learned_absolute", "model.apply_rope_fusion=true"}, {"defaults=bridge", "model.position_embedding_type=rope", "model.apply_rope_fusion=true"}},
      {"no_rope_freq_pattern", "model.no_rope_freq", Severity::error, {"model.no_rope_freq=3"}, {"model.no_rope_freq=4"}},
      {"no_rope_freq_pattern", "model.no_rope_freq", Severity::error, {"model.no_rope_freq=[0,1]"}, {"model.no_rope_freq=[0,0,0,1,0,0,0,1]"}},
      {"query_groups_below_tp_local_attention", "model.num_query_groups", Severity::error, {"model.transformer_impl=local", "model.tensor_model_parallel_size=4", "model.num_query_groups=2"}, {"model.tensor_model_parallel_size=4", "model.num_query_groups=2"}},
      {"masked_softmax_fusion_fallback", "model.masked_softmax_fusion", Severity::warning, {"model.transformer_impl=local", "model.masked_softmax_fusion=true", "model.seq_length=8192"}, {"model.transformer_impl=local", "model.masked_softmax_fusion=true"}},
      {"qk_layer_scaling_needs_env", "model.apply_query_key_layer_scaling", Severity::warning, {"model.apply_query_key_layer_scaling=true"}, {"model.apply_query_key_layer_scaling=true", "model.transformer_impl=local"}},
      {"deterministic_needs_env", "model.deterministic_mode", Severity::warning, {"model.deterministic_mode=true"}, {"model.deterministic_mode=true", "model.transformer_impl=local"}},
      {"cp_comm_type_list_length", "model.cp_comm_type", Severity::error, {"model.context_parallel_size=2", R"(model.cp_comm_type=["p2p"])"}, {"model.context_parallel_size=2", "model.cp_comm_type=p2p"}},
      {"cp_comm_type_consistency", "model.hierarchical_context_parallel_sizes", Severity::error, {"defaults=bridge", "model.context_parallel_size=2", "model.cp_comm_type=a2a+p2p"}, {"defaults=bridge", "model.context_parallel_size=2", "model.cp_comm_type=a2a+p2p", "model.hierarchical_context_parallel_sizes=[2,1]"}},
      {"hierarchical_cp_product", "model.hierarchical_context_parallel_sizes", Severity::error, {"model.context_parallel_size=2", "model.hierarchical_context_parallel_sizes=[2,2]"}, {"model.context_parallel_size=2", "model.hierarchical_context_parallel_sizes=[2,1]"}},
      {"hybrid_cp_even_dp_cp", "model.hybrid_context_parallel", Severity::error, {"model.hybrid_context_parallel=true", "cluster.num_gpus=3", "train.global_batch_size=3"}, {"model.hybrid_context_parallel=true", "cluster.num_gpus=4", "train.global_batch_size=4"}},
      {"mup_base_hidden_size_positive", "model.mup_base_hidden_size", Severity::error, {"model.use_mup=true", "model.mup_base_hidden_size=0"}, {"model.use_mup=true", "model.mup_base_hidden_size=256"}},
      {"inference_only_flags", "model.inference_fuse_tp_communication", Severity::error, {"model.inference_fuse_tp_communication=true"}, {}},
      {"inference_only_flags", "model.inference_disable_triton_nvls_kernels", Severity::error, {"model.inference_disable_triton_nvls_kernels=true"}, {}},
      {"batch_invariant_constraints", "model.params_dtype", Severity::error, {"model.batch_invariant_mode=true"}, {"model.batch_invariant_mode=true", "model.params_dtype=bf16", "model.attention_backend=flash", "model.flash_attention_version=3"}},
      {"batch_invariant_moe_unfused_dropless", "model.moe_permute_fusion", Severity::error,
       moe({"model.batch_invariant_mode=true", "model.params_dtype=bf16", "model.attention_backend=flash", "model.flash_attention_version=3",
            "model.moe_token_dispatcher_type=alltoall", "model.moe_permute_fusion=true"}),
       moe({"model.batch_invariant_mode=true", "model.params_dtype=bf16", "model.attention_backend=flash", "model.flash_attention_version=3",
            "model.moe_token_dispatcher_type=alltoall"})},
      {"moe_router_dtype_recommended", "model.moe_router_dtype", Severity::warning, moe({"model.num_moe_experts=32"}),
       moe({"model.num_moe_experts=32", "model.moe_router_dtype=fp32"})},
  };
  return k;
}

const std::vector<RuleCase>& dsa_hybrid_cases() {
  static const std::vector<RuleCase> k = {
      {"experimental_attention_needs_te_spec", "model.transformer_impl", Severity::error, plus(kGdn, {"model.transformer_impl=local"}), kGdn},
      {"dsa_needs_mla", "model.multi_latent_attention", Severity::error, plus(kDsa, {"model.multi_latent_attention=false"}), kDsa},
      {"dsa_no_linear_bias", "model.add_bias_linear", Severity::error, plus(kDsa, {"model.add_bias_linear=true"}), kDsa},
      {"dsa_tp_needs_sequence_parallel", "model.sequence_parallel", Severity::error, plus(kDsa, {"model.tensor_model_parallel_size=2"}),
       plus(kDsa, {"model.tensor_model_parallel_size=2", "model.sequence_parallel=true"})},
      {"dsa_indexer_args", "model.dsa_indexer_topk_freq", Severity::error, plus(kDsa, {"model.dsa_indexer_topk_freq=0"}), kDsa},
      {"dsa_no_rope_fusion", "model.apply_rope_fusion", Severity::error, plus(kDsa, {"model.apply_rope_fusion=true"}), kDsa},
      {"dsa_cp_needs_allgather", "model.cp_comm_type", Severity::error, plus(kDsa, {"model.context_parallel_size=2"}),
       plus(kDsa, {"model.context_parallel_size=2", "model.cp_comm_type=all_gather"})},
      {"dsa_mla_up_proj_no_fp8", "model.recompute_modules[0]", Severity::error,
       plus(kDsa, {"model.recompute_granularity=selective", R"(model.recompute_modules=["mla_up_proj"])", "model.fp8=e4m3", "model.fp8_recipe=tensorwise"}),
       plus(kDsa, {"model.recompute_granularity=selective", R"(model.recompute_modules=["mla_up_proj"])"})},
      {"dsa_no_qk_clip", "model.qk_clip", Severity::error, plus(kDsa, {"model.qk_clip=true"}), {"model.qk_clip=true"}},
      {"dsa_cudnn_scoring_relu", "model.dsa_indexer_scoring_relu", Severity::error,
       plus(kDsa, {"model.dsa_kernel_backend=cudnn", "model.dsa_indexer_scoring_relu=false"}), plus(kDsa, {"model.dsa_kernel_backend=cudnn"})},
      {"dsa_qk_layernorm_needs_q_lora", "model.qk_layernorm", Severity::error, plus(kDsa, {"model.qk_layernorm=true", "model.q_lora_rank=null"}),
       plus(kDsa, {"model.qk_layernorm=true"})},
      // 8 layers on two stages: layer 5 reuses layer 4's top-k (frequency 3), which sits on the first stage.
      {"dsa_index_share_pipeline_split", "model.dsa_indexer_topk_freq", Severity::error,
       plus(kDsa, {"model.pipeline_model_parallel_size=2", "model.pipeline_dtype=bf16", "model.dsa_indexer_topk_freq=3"}),
       plus(kDsa, {"model.pipeline_model_parallel_size=2", "model.pipeline_dtype=bf16", "model.dsa_indexer_topk_freq=4"})},
      {"dsa_indexer_size_missing", "model.dsa_indexer_n_heads", Severity::error, plus(kDsaSim, {"model.dsa_indexer_n_heads=null"}), kDsaSim},
      {"dsa_indexer_size_missing", "model.dsa_indexer_topk", Severity::error, plus(kDsaSim, {"model.dsa_indexer_topk=null"}), kDsaSim},
      {"dsa_indexer_head_dim_below_rope", "model.dsa_indexer_head_dim", Severity::error, plus(kDsaSim, {"model.dsa_indexer_head_dim=32"}), kDsaSim},
      {"dsa_kernel_backend_not_simulated", "model.dsa_kernel_backend", Severity::error, plus(kDsaSim, {"model.dsa_kernel_backend=none"}), kDsaSim},
      {"dsa_kernel_backend_not_simulated", "model.attention_backend", Severity::error, plus(kDsaSim, {"model.attention_backend=unfused"}), kDsaSim},
      {"dsa_dense_indexer_loss_not_simulated", "model.dsa_indexer_use_sparse_loss", Severity::error, plus(kDsaSim, {"model.dsa_indexer_loss_coeff=0.001"}),
       plus(kDsaSim, {"model.dsa_indexer_loss_coeff=0.001", "model.dsa_indexer_use_sparse_loss=true"})},
      {"dsa_cudnn_declines_not_simulated", "model.kv_lora_rank", Severity::error, plus(kDsaSim, {"model.kv_lora_rank=256"}), kDsaSim},
      // 24 heads on one rank: no FlashMLA padding on compute capability 9 (64 is no multiple of 24); 8 pad to 64.
      {"dsa_cudnn_declines_not_simulated", "model.num_attention_heads", Severity::error, plus(kDsaSim, {"model.num_attention_heads=24"}), kDsaSim},
      {"dsa_cudnn_declines_not_simulated", "cluster.gpu", Severity::error, plus(kDsaSim, {"cluster.gpu.compute_capability_major=8"}), kDsaSim},
      {"hybrid_pattern_vs_ratios", "model.hybrid_override_pattern", Severity::error, plus(kHybrid, {"model.hybrid_attention_ratio=0.5"}), kHybrid},
      {"hybrid_pattern_vs_ratios", "model.hybrid_attention_ratio", Severity::error, {"model.hybrid_attention_ratio=0.7", "model.hybrid_mlp_ratio=0.5"}, {"model.hybrid_attention_ratio=0.3", "model.hybrid_mlp_ratio=0.5"}},
      {"hybrid_mtp_patterns_identical", "model.hybrid_override_pattern", Severity::error, {"model.num_layers=null", "model.hybrid_override_pattern=\"M*M*/M*/*M\""}, {"model.num_layers=null", "model.hybrid_override_pattern=\"M*M*/M*/M*\""}},
      {"hybrid_attention_and_mla", "model.hybrid_override_pattern", Severity::error, {"model.num_layers=null", "model.hybrid_override_pattern=\"M*M+\""}, kHybrid},
      {"hybrid_override_pattern_deprecated", "model.hybrid_override_pattern", Severity::warning, kHybrid, {"model.num_layers=null", "model.hybrid_layer_pattern=\"M*M*\""}},
      {"hybrid_pipes_vs_uneven_pp", "model.num_layers_in_first_pipeline_stage", Severity::error, {"model.num_layers=null", "model.hybrid_override_pattern=\"M*|M*\"", "model.pipeline_model_parallel_size=2", "model.pipeline_dtype=bf16", "model.num_layers_in_first_pipeline_stage=1"}, {"model.num_layers=null", "model.hybrid_override_pattern=\"M*|M*\"", "model.pipeline_model_parallel_size=2", "model.pipeline_dtype=bf16"}},
      {"hybrid_segments_vs_vpp", "model.virtual_pipeline_model_parallel_size", Severity::error, {"model.num_layers=null", "model.hybrid_override_pattern=\"M*|M*\"", "model.pipeline_model_parallel_size=2", "model.pipeline_dtype=bf16", "model.virtual_pipeline_model_parallel_size=2"}, {"model.num_layers=null", "model.hybrid_override_pattern=\"M|*|M|*\"", "model.pipeline_model_parallel_size=2", "model.pipeline_dtype=bf16", "model.virtual_pipeline_model_parallel_size=2"}},
      {"hybrid_vpp_needs_pipes", "model.virtual_pipeline_model_parallel_size", Severity::error,
       plus(kHybrid, {"model.pipeline_model_parallel_size=2", "model.pipeline_dtype=bf16", "model.virtual_pipeline_model_parallel_size=2"}),
       plus(kHybrid, {"model.pipeline_model_parallel_size=2", "model.pipeline_dtype=bf16"})},
      {"hybrid_pattern_without_pipes_deprecated", "model.hybrid_override_pattern", Severity::warning, plus(kHybrid, {"model.pipeline_model_parallel_size=2", "model.pipeline_dtype=bf16"}), {"model.num_layers=null", "model.hybrid_override_pattern=\"M*|M*\"", "model.pipeline_model_parallel_size=2", "model.pipeline_dtype=bf16"}},
      {"hybrid_uneven_middle_divisible", "model.num_layers", Severity::error, {"model.num_layers=null", "model.hybrid_override_pattern=\"M*M*M*M*M\"", "model.pipeline_model_parallel_size=4", "model.pipeline_dtype=bf16", "model.num_layers_in_first_pipeline_stage=2"}, {"model.num_layers=null", "model.hybrid_override_pattern=\"M*M*M*M*M\"", "model.pipeline_model_parallel_size=4", "model.pipeline_dtype=bf16", "model.num_layers_in_first_pipeline_stage=3"}},
      {"hybrid_layers_divisible_by_pp", "model.pipeline_model_parallel_size", Severity::error, {"model.num_layers=null", "model.hybrid_override_pattern=\"M*M*M\"", "model.pipeline_model_parallel_size=2", "model.pipeline_dtype=bf16"}, plus(kHybrid, {"model.pipeline_model_parallel_size=2", "model.pipeline_dtype=bf16"})},
      {"mamba_cp_divisibility", "model.context_parallel_size", Severity::error,
       plus(kHybrid, {"model.context_parallel_size=4", "model.mamba_num_heads=6", "model.mamba_num_groups=2"}),
       plus(kHybrid, {"model.context_parallel_size=4", "model.mamba_num_heads=8", "model.mamba_num_groups=2"})},
      {"gdn_activation_silu", "model.activation_func", Severity::error, kGdn, plus(kGdn, {"model.activation_func=silu"})},
      {"gdn_fp8_in_proj_alignment", "model.fp8", Severity::error,
       plus(kGdn, {"model.activation_func=silu", "model.fp8=e4m3", "model.fp8_recipe=tensorwise", "model.linear_num_key_heads=4", "model.linear_num_value_heads=4"}),
       plus(kGdn, {"model.activation_func=silu", "model.fp8=e4m3", "model.fp8_recipe=tensorwise", "model.linear_num_key_heads=4", "model.linear_num_value_heads=8"})},
      {"mamba_chunk_size_positive", "model.mamba_chunk_size", Severity::error, {"defaults=bridge", "model.num_layers=null", "model.hybrid_layer_pattern=\"M*M*\"", "model.mamba_chunk_size=0"}, {"defaults=bridge", "model.num_layers=null", "model.hybrid_layer_pattern=\"M*M*\"", "model.mamba_chunk_size=128"}},
      {"hybrid_no_vpp", "model.virtual_pipeline_model_parallel_size", Severity::error, {"defaults=bridge", "model.num_layers=null", "model.hybrid_layer_pattern=\"M|*|M|*\"", "model.pipeline_model_parallel_size=2", "model.virtual_pipeline_model_parallel_size=2"}, {"defaults=bridge", "model.num_layers=null", "model.hybrid_layer_pattern=\"M*|M*\"", "model.pipeline_model_parallel_size=2"}},
  };
  return k;
}

}  // namespace

TEST_CASE("forward-time refusals and the installation", "[validate][refusals]") { check_rule_cases(runtime_cases()); }
TEST_CASE("MLP activations, shared experts and the local norms", "[validate][refusals]") { check_rule_cases(mlp_cases()); }
TEST_CASE("attention, MLA, RoPE and context-parallel refusals", "[validate][refusals]") { check_rule_cases(attention_cases()); }
TEST_CASE("DSA, GDN and hybrid-pattern refusals", "[validate][refusals]") { check_rule_cases(dsa_hybrid_cases()); }
