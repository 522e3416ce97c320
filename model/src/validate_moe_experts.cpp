// Routed experts' modules: TEGroupedMLP (the TE spec with moe_grouped_gemm, moe/experts.py) and the
// single grouped weights of TransformerConfig.__post_init__ (transformer_config.py:1576-1613).
#include <algorithm>

#include "validate_detail.hpp"

namespace peakcast::model::detail {

namespace {

// Offloaded only when fine-grained offloading is on (the list alone does nothing).
bool offloaded(const ModelSpec& m, const char* module) { return m.fine_grained_activation_offloading && offloads(m, module); }

// TEGroupedMLP.__init__ (experts.py:201-300) and its first forward (:848-856).
void grouped_mlp(const ModelSpec& m, RuleSink& sink) {
  if (!is_moe_model(m) || m.transformer_impl != TransformerImpl::transformer_engine || !m.moe_grouped_gemm) return;
  if (m.add_bias_linear && m.bias_dropout_fusion)
    sink.error("model.bias_dropout_fusion", "grouped_mlp_bias_vs_bias_dropout_fusion",
               "bias_dropout_fusion is not supported in TEGroupedMLP when add_bias_linear=True (experts.py:204)");
  const std::string& act = m.activation_func_name;
  const bool glu_fusion = m.gated_linear_unit && (act == "silu" || act == "quick_gelu");
  const bool srelu_fusion = act == "squared_relu" && m.use_fused_weighted_squared_relu && !m.gated_linear_unit;
  if (m.use_transformer_engine_op_fuser) {
    // _is_fused_impl_supported (experts.py:332-400); a Transformer Engine older than 2.14 fails it too.
    std::string why;
    if (m.expert_tensor_parallel_size.value_or(m.tensor_model_parallel_size) > 1) why = "expert_tensor_parallel_size > 1";
    else if (offloaded(m, "expert_fc1") || offloaded(m, "moe_act")) why = "expert_fc1 / moe_act offloading";
    else if (m.moe_apply_probs_on_input) why = "moe_apply_probs_on_input";
    else if (!glu_fusion && !srelu_fusion) why = "activation " + act + (m.gated_linear_unit ? " with" : " without") + " gated_linear_unit";
    if (!why.empty())
      sink.error("model.use_transformer_engine_op_fuser", "op_fuser_grouped_mlp_unsupported",
                 "Fused GroupedMLP is not supported for this configuration. (experts.py:287): " + why);
    else if (glu_fusion)
      sink.warning("model.use_transformer_engine_op_fuser", "op_fuser_grouped_mlp_unsupported",
                   "the fused grouped SwiGLU / GeGLU MLP also needs NVTE_CUTEDSL_FUSED_GROUPED_MLP=1 in the environment, else "
                   "\"Fused GroupedMLP is not supported for this configuration.\" (experts.py:287, :398)");
  } else if (m.gated_linear_unit && m.moe_mlp_glu_interleave_size) {
    sink.warning("model.moe_mlp_glu_interleave_size", "glu_interleave_unfused_copy",
                 "`moe_mlp_glu_interleave_size` is enabled, but fused MoE MLP implementation is not supported for this "
                 "configuration. The non-fused path may incur extra tensor reordering/copy overhead each forward pass. "
                 "(experts.py:297); that copy is not simulated");
  }
  if (act == "squared_relu" && m.use_fused_weighted_squared_relu && !m.bias_activation_fusion && !m.use_te_activation_func &&
      m.add_bias_linear)
    sink.error("model.add_bias_linear", "fused_squared_relu_no_bias", "Bias is not supported with fused weighted squared relu. (experts.py:852)");
}

void single_grouped_weights(const ModelSpec& m, RuleSink& sink) {
  const char* rule = "single_grouped_weight_constraints";
  if ((m.moe_single_grouped_weight || m.moe_single_grouped_bias) && !m.moe_grouped_gemm)
    sink.error("model.moe_grouped_gemm", rule, "moe_single_grouped_weight and moe_single_grouped_bias require moe_grouped_gemm=True. (transformer_config.py:1578)");
  if (m.moe_single_grouped_weight) {
    if ((m.fp8 && m.fp8_recipe != Fp8Recipe::mxfp8) || (m.fp4 && m.fp4_recipe != std::optional<std::string>("nvfp4")))
      sink.error("model.moe_single_grouped_weight", rule,
                 "moe_single_grouped_weight is currently supported with high-precision primary weights, fp8_recipe='mxfp8', or "
                 "fp4_recipe='nvfp4'. (transformer_config.py:1595)");
    if (m.fp4 && !m.fp4_param)
      sink.error("model.fp4_param", rule, "moe_single_grouped_weight with FP4 compute requires fp4_param=True (--fp4-param-gather). (transformer_config.py:1600)");
    if (!m.use_transformer_engine_op_fuser)
      sink.error("model.use_transformer_engine_op_fuser", rule, "moe_single_grouped_weight requires use_transformer_engine_op_fuser=True. (transformer_config.py:1606)");
    // GTP shards per-expert weights; a coalesced weight has none (generalized_tensor_parallelism.py:645-647).
    if (m.expert_gtp_weight_remat_size > 1 || m.gtp_weight_remat_size > 1)
      sink.error("model.moe_single_grouped_weight", rule,
                 "GTP grouped module requires single_grouped_weight=False. (generalized_tensor_parallelism.py:646)");
  }
  if (m.moe_single_grouped_bias && !m.add_bias_linear)
    sink.error("model.moe_single_grouped_bias", rule, "moe_single_grouped_bias requires add_bias_linear=True. (transformer_config.py:1613)");
}

}  // namespace

void validate_moe_experts(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  grouped_mlp(m, sink);
  single_grouped_weights(m, sink);
  // MLP.as_mlp_submodule (mlp.py:405-410): the TE op-fused dense MLP ignores GTP shards.
  if (m.use_transformer_engine_op_fuser && m.transformer_impl == TransformerImpl::transformer_engine && m.gtp_weight_remat_size > 1 &&
      !all_layers_moe(m))
    sink.error("model.gtp_weight_remat_size", "gtp_vs_te_op_fuser_mlp",
               "GTP sharding of the dense MLP is not supported with the TE fused MLP / GroupedLinear path (_make_fused_impl "
               "ignores GTP shards). (mlp.py:407)");
}

}  // namespace peakcast::model::detail
