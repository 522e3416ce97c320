// The MLP's activation paths and the local spec's norms: TransformerConfig.__post_init__
// (transformer_config.py:2140-2189) and what the MLP, expert and norm modules refuse when they are
// built or first run (transformer/mlp.py, moe/experts.py, moe/shared_experts.py, torch_norm.py,
// extensions/transformer_engine.py).
#include "validate_detail.hpp"

namespace peakcast::model::detail {

namespace {

bool swiglu(const ModelSpec& m) { return m.activation_func_name == "silu" && m.gated_linear_unit; }
bool quick_geglu(const ModelSpec& m) { return m.activation_func_name == "quick_gelu" && m.gated_linear_unit; }
bool te_spec(const ModelSpec& m) { return m.transformer_impl == TransformerImpl::transformer_engine; }
bool has_dense_mlp(const ModelSpec& m) { return !all_layers_moe(m); }
// Experts are TEGroupedMLP with the TE spec and moe_grouped_gemm, SequentialMLP otherwise
// (gpt_layer_specs.py; the local spec always builds SequentialMLP).
bool grouped_experts(const ModelSpec& m) { return is_moe_model(m) && te_spec(m) && m.moe_grouped_gemm; }
bool sequential_experts(const ModelSpec& m) { return is_moe_model(m) && !grouped_experts(m); }

// Returns whether the config passes (the first forward's checks come after it).
bool fusion_config(const ModelSpec& m, RuleSink& sink) {
  bool ok = true;
  const auto fail = [&](const char* p, const char* r, const std::string& msg) {
    sink.error(p, r, msg);
    ok = false;
  };
  const char* path = "model.bias_activation_fusion";
  const char* rule = "bias_activation_fusion_activation";
  const std::string& act = m.activation_func_name;
  if (act != "gelu" && act != "silu" && act != "quick_gelu")
    fail(path, rule,
         "When bias_activation_fusion is True, activation function should be either gelu, swiglu, or "
         "quick_geglu (transformer_config.py:2142); activation_func is " +
             act);
  if (act == "gelu" && !m.gated_linear_unit && !m.add_bias_linear)
    fail(path, rule,
         "When bias_activation_fusion is True, gated_linear_unit is False and activation function is gelu, "
         "add_bias_linear must also be True. (transformer_config.py:2151)");
  if (act == "quick_gelu" && !m.gated_linear_unit)
    fail(path, rule,
         "When bias_activation_fusion is True and activation function is quick_gelu, gated_linear_unit must "
         "be True. (transformer_config.py:2156)");
  if (m.glu_linear_offset != 0.0 && act != "quick_gelu")
    fail(path, rule,
         "When bias_activation_fusion is True and glu_linear_offset is non-zero, activation function must be "
         "quick_gelu. (transformer_config.py:2161)");
  if (m.use_te_activation_func)
    fail(path, rule, "bias_activation_fusion and use_te_activation_func cannot be both true. (transformer_config.py:2167)");
  return ok;
}

// What each MLP kind fuses at its first forward (use_te_activation_func takes another branch).
void fusion_runtime(const ModelSpec& m, RuleSink& sink) {
  const char* path = "model.bias_activation_fusion";
  const bool gelu = m.activation_func_name == "gelu";
  // Dense MLP without a per-token scale (mlp.py:303-317): gelu or SwiGLU.
  if (has_dense_mlp(m) && !gelu && !swiglu(m))
    sink.error(path, "bias_activation_fusion_activation",
               "Only support fusion of gelu and swiglu (mlp.py:317): the dense MLP fuses gelu and SwiGLU only, not " +
                   m.activation_func_name + (m.gated_linear_unit ? " with" : " without") + " gated_linear_unit");
  // SequentialMLP experts always pass the routing probabilities as per_token_scale (experts.py:1341-1366, mlp.py:280-297).
  if (sequential_experts(m) && !swiglu(m) && !quick_geglu(m))
    sink.error(path, "bias_activation_fusion_activation",
               "Only support fusion of swiglu and quick_gelu with per_token_scale in MLP. (mlp.py:295): SequentialMLP experts "
               "pass their routing probabilities as per_token_scale");
  // TEGroupedMLP (experts.py:827-846), unless GLU interleaving takes the unfused path.
  if (grouped_experts(m) && !m.moe_mlp_glu_interleave_size && !swiglu(m) && !quick_geglu(m))
    sink.error(path, "grouped_mlp_activation_fusion", "Only support fusion of swiglu and quick_gelu in TEGroupedMLP. (experts.py:846)");
  // The weighted SwiGLU kernel has no bias (fused_bias_swiglu.py:246-247): expert paths with a bias.
  if (is_moe_model(m) && swiglu(m) && m.add_bias_linear && (sequential_experts(m) || !m.moe_mlp_glu_interleave_size))
    sink.error("model.add_bias_linear", "weighted_swiglu_no_bias",
               "Bias is not supported for weighted swiglu fusion (fused_bias_swiglu.py:247): the experts' fused SwiGLU is "
               "weighted by the routing probabilities, and add_bias_linear gives fc1 a bias");
  // SequentialMLP experts on the local spec add the fc2 bias in place, weighted by the probabilities
  // (mlp.py:350-354). Without explicit expert communication (expert TP 1 and EP 1, layers.py:1325)
  // RowParallelLinear's output is the input _ReduceFromModelParallelRegion returned as-is (mappings.py:26-28),
  // a view autograd forbids modifying in place: the first forward raises (measured on the H200:
  // calibration/data/h200_gpt_oss_s19.jsonl, case s19_gptoss_local_moe). TE's linears return new tensors.
  const std::int64_t etp = m.expert_tensor_parallel_size.value_or(m.tensor_model_parallel_size);
  if (sequential_experts(m) && !te_spec(m) && m.add_bias_linear && etp == 1 && m.expert_model_parallel_size == 1)
    sink.error("model.add_bias_linear", "sequential_mlp_bias_in_place",
               "Output 0 of _ReduceFromModelParallelRegionBackward is a view and is being modified inplace (mlp.py:353): "
               "local-spec SequentialMLP experts with add_bias_linear, expert_tensor_parallel_size 1 and "
               "expert_model_parallel_size 1 add the fc2 bias in place to a view at the first forward");
  // Shared experts (shared_experts.py:272-292, mlp.py:303-317).
  if (is_moe_model(m) && m.moe_shared_expert_intermediate_size && !gelu && !swiglu(m))
    sink.error(path, "shared_expert_activation_fusion", "Only support fusion of gelu and swiglu (shared_experts.py:292)");
}

void te_activations(const ModelSpec& m, RuleSink& sink) {
  const std::string& act = m.activation_func_name;
  if (m.use_te_activation_func) {
    if (act != "gelu" && act != "silu" && act != "relu")
      sink.error("model.use_te_activation_func", "te_activation_func_choices",
                 "TransformerEngine only support gelu, geglu, silu, swiglu, relu, reglu. If you don't want to use "
                 "TransformerEngine activation function, set use_te_activation_func to False (transformer_config.py:2181)");
    // TEActivationOp (extensions/transformer_engine.py:596-613): relu is never mapped; non-GLU silu becomes ReLU.
    else if (te_spec(m) && act == "relu")
      sink.error("model.use_te_activation_func", "te_activation_func_choices",
                 "Only SwiGLU, GEGLU, ReGLU, GELU, ReLU are supported by transformer engine. Please set "
                 "use_te_activation_func=False (extensions/transformer_engine.py:610): TEActivationOp maps no relu branch");
    else if (te_spec(m) && act == "silu" && !m.gated_linear_unit)
      sink.warning("model.use_te_activation_func", "te_activation_func_choices",
                   "TEActivationOp builds te.pytorch.ops.ReLU for silu without gated_linear_unit "
                   "(extensions/transformer_engine.py:607-608): the model trains with ReLU, not SiLU");
  }
  // TEFusedMLP builds its activation op at the first forward (extensions/transformer_engine.py:928-952).
  if (m.use_transformer_engine_op_fuser && te_spec(m) && has_dense_mlp(m) && act != "gelu" && act != "silu" && act != "relu")
    sink.error("model.use_transformer_engine_op_fuser", "te_op_fuser_activation",
               "Transformer Engine operation-based API does not support activation_func=" + act +
                   " (extensions/transformer_engine.py:949)");
  // TEFusedMLPWithGroupedLinear (extensions/transformer_engine.py:3085-3100; gpt_layer_specs.py:536-537).
  if (m.use_transformer_engine_op_fuser && te_spec(m) && (m.dense_grouped_gemm || m.use_grouped_gemm_for_dense_mlp) && has_dense_mlp(m)) {
    if (m.add_bias_linear)
      sink.error("model.add_bias_linear", "dense_grouped_mlp_constraints",
                 "TEFusedMLPWithGroupedLinear does not support add_bias_linear=True; the CuTeGEMM fused kernel requires "
                 "bias-free linear layers. (extensions/transformer_engine.py:3093)");
    if (!swiglu(m))
      sink.error("model.activation_func", "dense_grouped_mlp_constraints",
                 "TEFusedMLPWithGroupedLinear requires SwiGLU activation (activation_func=F.silu, gated_linear_unit=True) "
                 "(extensions/transformer_engine.py:3098)");
  }
  // gpt_layer_specs.py:227-232
  if (m.use_kitchen && m.use_transformer_engine_op_fuser)
    sink.error("model.use_kitchen", "kitchen_options", "use_te_op_fuser not compatible with using kitchen in mlp. (gpt_layer_specs.py:229)");
  if (m.use_kitchen && m.use_te_activation_func)
    sink.error("model.use_kitchen", "kitchen_options", "use_te_activation_func not compatible with using kitchen. (gpt_layer_specs.py:231)");
}

// The local spec's norms: WrappedTorchNorm for every RMSNorm (models/backends.py:122-126), and for
// LayerNorm when Apex is not installed (backends.py:26-37). Its constructor refuses (torch_norm.py:44-54).
void local_norms(const ModelSpec& m, const ClusterSpec& c, RuleSink& sink) {
  if (m.transformer_impl != TransformerImpl::local) return;
  const bool rms = m.normalization == Normalization::rms_norm;
  const auto refuse = [&](const char* key, const char* rule, const std::string& msg) {
    if (rms) sink.error(std::string("model.") + key, rule, msg + " (RMSNorm with the local spec is always WrappedTorchNorm)");
    else sink.warning(std::string("model.") + key, rule, msg + " (LayerNorm with the local spec is WrappedTorchNorm unless Apex is installed)");
  };
  if (m.layernorm_zero_centered_gamma) refuse("layernorm_zero_centered_gamma", "local_norm_options", "zero_centered_gamma not supported by torch LayerNorm (torch_norm.py:44)");
  if (m.persist_layer_norm) refuse("persist_layer_norm", "local_norm_options", "persist_layer_norm not supported by torch LayerNorm (torch_norm.py:48)");
  if (m.memory_efficient_layer_norm)
    refuse("memory_efficient_layer_norm", "local_norm_options", "memory_efficient_layer_norm not supported by torch LayerNorm (torch_norm.py:52)");
  // peakcast's calibration harness lifts this one (megatron_env.py patch_torch_norm_sequence_parallel, Gap 4).
  if (m.sequence_parallel && !c.calibration_harness)
    refuse("sequence_parallel", "local_norm_vs_sequence_parallel", "sequence parallel not supported by torch LayerNorm (torch_norm.py:50)");
}

}  // namespace

void validate_mlp(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  if (m.bias_activation_fusion && fusion_config(m, sink)) fusion_runtime(m, sink);
  te_activations(m, sink);
  // transformer_config.py:2173-2177 (and TENorm, extensions/transformer_engine.py:1048)
  if (m.fused_residual_rmsnorm && m.normalization != Normalization::rms_norm)
    sink.error("model.fused_residual_rmsnorm", "fused_residual_rmsnorm_needs_rmsnorm",
               "fused_residual_rmsnorm is only supported when normalization is RMSNorm. (transformer_config.py:2175)");
  local_norms(m, spec.cluster, sink);
  // Shared experts (shared_experts.py:124, :398-431); FusedSharedExpertMLP with use_grouped_gemm_for_shared_expert.
  if (is_moe_model(m) && m.moe_shared_expert_intermediate_size) {
    if (m.add_bias_linear)
      sink.error("model.add_bias_linear", "shared_expert_no_bias",
                 "bias is not supported in the shared experts, please set '--disable-bias-linear' instead. (shared_experts.py:124)");
    if (m.use_grouped_gemm_for_shared_expert) {
      if (!swiglu(m))
        sink.error("model.use_grouped_gemm_for_shared_expert", "fused_shared_expert_needs_swiglu",
                   "FusedSharedExpertMLP requires SwiGLU activation (activation_func=F.silu, gated_linear_unit=True) for the "
                   "CuTeGEMM fused kernel (shared_experts.py:413)");
      if (!m.moe_shared_expert_glu_interleave_size)
        sink.error("model.moe_shared_expert_glu_interleave_size", "fused_shared_expert_needs_interleave",
                   "FusedSharedExpertMLP requires moe_shared_expert_glu_interleave_size to be set when "
                   "use_grouped_gemm_for_shared_expert=True. (shared_experts.py:420)");
      if (!te_spec(m))
        sink.error("model.use_grouped_gemm_for_shared_expert", "fused_shared_expert_needs_te_linear",
                   "FusedSharedExpertMLP expects FC1 to be Transformer Engine Linear, but the local spec builds "
                   "ColumnParallelLinear (shared_experts.py:426)");
      const bool nvfp4 = m.fp4 && m.fp4_recipe == std::optional<std::string>("nvfp4");
      if (!nvfp4 && !(m.fp8 && m.fp8_recipe == Fp8Recipe::mxfp8))
        sink.error("model.use_grouped_gemm_for_shared_expert", "fused_shared_expert_needs_mx_recipe",
                   "FusedSharedExpertMLP requires fp4_recipe='nvfp4' or fp8_recipe='mxfp8' (shared_experts.py:446)");
    }
  }
}

}  // namespace peakcast::model::detail
