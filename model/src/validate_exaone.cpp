// EXAONE 4's layer spec (Bridge exaone4_provider.py:54-93): plain TE column-parallel linears with no
// input or pre-MLP norm, Megatron's DotProductAttention as the core, post-norm row-parallel linears.
// What Megatron and Bridge do with it beyond that, and what peakcast does not simulate under it.
// Facts and lines: docs/research/exaone-qwen35-memory-facts.md.
#include <string>

#include "validate_detail.hpp"

namespace peakcast::model::detail {

namespace {

// exaone4_layer_spec builds TEColumnParallelLinear and TERowParallelLinearLayerNorm whatever transformer_impl
// says (exaone4_provider.py:78-88), and a self-attention plus a dense MLP in every layer.
void exaone4_layer_spec(const ModelSpec& m, RuleSink& sink) {
  const bool exaone_spec = !m.pre_linear_layernorm || m.core_attention_module == CoreAttentionModule::dot_product;
  if (exaone_spec && m.transformer_impl == TransformerImpl::local)
    sink.error("model.transformer_impl", "exaone4_layer_spec_needs_te",
               "EXAONE 4's layer spec builds Transformer Engine linears (TEColumnParallelLinear, TERowParallelLinearLayerNorm) "
               "whatever transformer_impl says (exaone4_provider.py:78-88); transformer_impl local with pre_linear_layernorm false "
               "or core_attention_module dot_product is not simulated");
  const bool other_layers = m.num_moe_experts.has_value() || m.multi_latent_attention || m.hybrid_override_pattern.has_value() ||
                            m.experimental_attention_variant.has_value();
  if (!m.pre_linear_layernorm && other_layers)
    sink.error("model.pre_linear_layernorm", "pre_layernorm_dense_only",
               "layers without pre-norms come with EXAONE 4's layer spec, which builds self-attention and a dense MLP in every layer "
               "(exaone4_provider.py:71-93); with MoE, MLA, hybrid or gated-delta-net layers they are not simulated");
  if (m.core_attention_module == CoreAttentionModule::dot_product && other_layers)
    sink.error("model.core_attention_module", "dot_product_attention_dense_only",
               "core_attention_module dot_product stands for EXAONE 4's layer spec (self-attention and a dense MLP in every layer, "
               "exaone4_provider.py:71-93); with MoE, MLA, hybrid or gated-delta-net layers it is not simulated "
               "(attention_backend local gives those Megatron's DotProductAttention)");
}

// TransformerLayer recomputes the input norm only when it is not an IdentityOp (transformer_layer.py:450-452), and the
// pre-MLP norm likewise (:498-502): without norms the layernorm tag does nothing.
void exaone4_recompute(const ModelSpec& m, RuleSink& sink) {
  if (m.pre_linear_layernorm || m.recompute_granularity != RecomputeGranularity::selective || !m.recompute_modules) return;
  for (const auto t : *m.recompute_modules)
    if (t == RecomputeTag::layernorm)
      sink.warning("model.recompute_modules", "layernorm_recompute_without_norms",
                   "recompute_modules has layernorm, but the layer has no input or pre-MLP norm (pre_linear_layernorm false): "
                   "TransformerLayer checkpoints a norm only when it is not an IdentityOp (transformer_layer.py:451, :499), "
                   "so the tag has no effect");
}

}  // namespace

void validate_exaone(const RunSpec& spec, RuleSink& sink) {
  exaone4_layer_spec(spec.model, sink);
  exaone4_recompute(spec.model, sink);
}

}  // namespace peakcast::model::detail
