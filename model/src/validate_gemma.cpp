// The Gemma layer specs' own refusals (Bridge gemma2_provider.py, gemma3_provider.py, common/te_layers.py)
// and what peakcast does not simulate under them. Facts and lines: docs/research/gemma-memory-facts.md.
#include <string>

#include "validate_detail.hpp"

namespace peakcast::model::detail {

namespace {

// Gemma2FlexDotProductAttention is the core attention unless attention_backend local swaps it for Megatron's
// DotProductAttention (bridge:src/megatron/bridge/models/gpt_provider.py:277-279).
bool gemma2_core(const ModelSpec& m) {
  return m.core_attention_module == CoreAttentionModule::gemma2 && m.attention_backend != AttentionBackend::local;
}

void gemma2_attention(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  if (!gemma2_core(m)) return;
  if (m.context_parallel_size != 1)
    sink.error("model.context_parallel_size", "gemma2_attention_context_parallel",
               "Context parallelism is only supported by TEDotProductAttention! (Gemma2DotProductAttention.__init__, "
               "gemma2_provider.py:122-123)");
  if (spec.train.packed_sequence)
    sink.error("train.packed_sequence", "gemma2_attention_packed_sequence",
               "Packed sequence is not supported by DotProductAttention. Use TEDotProductAttention instead. "
               "(Gemma2FlexDotProductAttention.forward raises on packed_seq_params at the first forward, gemma2_provider.py:377-380)");
  if (m.attention_dropout > 0)
    sink.error("model.attention_dropout", "gemma2_unfused_attention_not_simulated",
               "with attention dropout Gemma2FlexDotProductAttention takes its unfused fallback (gemma2_provider.py:382-385, "
               ":405-407: soft-capped [b, np, s, s] scores and their tanh saved), which peakcast does not simulate; "
               "the FlexAttention path it simulates needs attention_dropout 0");
}

// TERowParallelLinearLayerNorm and the Gemma layer specs (te_layers.py, gemma2_layer_spec, gemma3_layer_spec).
void gemma_layer_spec(const ModelSpec& m, RuleSink& sink) {
  const bool gemma_spec = m.post_linear_layernorm || m.core_attention_module == CoreAttentionModule::gemma2 ||
                          m.core_attention_module == CoreAttentionModule::gemma3;
  if (gemma_spec && m.transformer_impl == TransformerImpl::local)
    sink.error("model.transformer_impl", "gemma_layer_spec_needs_te",
               "the Gemma layer specs build Transformer Engine linears and norms whatever transformer_impl says "
               "(gemma2_provider.py:448-458, gemma3_provider.py:153-165); transformer_impl local with them is not simulated");
  if (m.post_linear_layernorm && m.add_bias_linear)
    sink.error("model.add_bias_linear", "post_layernorm_linear_bias",
               "TERowParallelLinearLayerNorm assumes add_bias_linear=False. Post-LN before deferred bias addition is incorrect "
               "when bias is present. (te_layers.py:52-56, at the first forward)");
  const bool other_layers = m.num_moe_experts.has_value() || m.multi_latent_attention || m.hybrid_override_pattern.has_value() ||
                            m.experimental_attention_variant.has_value();
  if (m.post_linear_layernorm && other_layers)
    sink.error("model.post_linear_layernorm", "post_layernorm_dense_only",
               "the post-norm linears come with the Gemma layer specs, which build self-attention and a dense MLP in every "
               "layer (gemma2_provider.py:438-463, gemma3_provider.py:143-170); with MoE, MLA or hybrid layers they are not simulated");
}

// Gemma3TEDotProductAttention: window_size - 1 on the local layers of interleaved_attn_pattern
// (gemma3_provider.py:241-255, _is_local_attn_layer :349-357).
void gemma3_attention(const ModelSpec& m, RuleSink& sink) {
  if (m.is_vision_language)
    sink.error("model.is_vision_language", "gemma3_vision_language_not_simulated",
               "is_vision_language gives Gemma 3 no-mask attention with the vision-language model's attention biases "
               "(gemma3_provider.py:145, :244-260), which peakcast does not simulate");
  if (m.core_attention_module != CoreAttentionModule::gemma3) {
    if (m.window_size_is_int)
      sink.error("model.window_size", "window_size_int",
                 "window_size is a (left, right) pair for Megatron's attention (transformer_config.py:240); an int is Gemma 3's "
                 "provider form, which only Gemma3TEDotProductAttention turns into (window_size - 1, 0) (gemma3_provider.py:251-252)");
    return;
  }
  if (m.attention_backend == AttentionBackend::local) return;  // Megatron's DotProductAttention instead (gpt_provider.py:277-279)
  const auto& p = m.interleaved_attn_pattern;
  if (!p || p->size() < 2 || (*p)[0] + (*p)[1] == 0) {
    sink.error("model.interleaved_attn_pattern", "gemma3_attn_pattern",
               "Gemma 3's core attention reads interleaved_attn_pattern as (local, global) layer counts and takes the layer "
               "number modulo their sum (gemma3_provider.py:355-357): it needs two counts with a positive sum");
    return;
  }
  if ((*p)[0] > 0 && !m.window_size_is_int)
    sink.error("model.window_size", "gemma3_window_size_int",
               "Gemma3TEDotProductAttention computes config.window_size - 1 on its local layers (gemma3_provider.py:251): "
               "window_size must be an int (Gemma3ModelProvider's 512, gemma3_provider.py:72)");
}

}  // namespace

void validate_gemma(const RunSpec& spec, RuleSink& sink) {
  gemma2_attention(spec, sink);
  gemma_layer_spec(spec.model, sink);
  gemma3_attention(spec.model, sink);
}

}  // namespace peakcast::model::detail
