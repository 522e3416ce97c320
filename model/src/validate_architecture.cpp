// What the model class the training script builds refuses, or does not build: BertModel
// (mcore:megatron/core/models/bert/, examples/bert/pretrain_bert.py). docs/research/encoder-models-memory-facts.md.
#include "validate_detail.hpp"

namespace peakcast::model::detail {

namespace {

// pretrain_bert.py builds bert_layer_specs' layers (:39-45): self-attention and a dense MLP, nothing else.
void bert_layers(const ModelSpec& m, RuleSink& sink) {
  const auto refuse = [&](const char* key, const std::string& what) {
    sink.error(std::string("model.") + key, "bert_layer_spec",
               what +
                   " is not what BertModel builds: examples/bert/pretrain_bert.py:39-45 takes bert_layer_specs' "
                   "self-attention and dense MLP layers (mcore:megatron/core/models/bert/bert_layer_specs.py:45-134)");
  };
  if (m.num_moe_experts) refuse("num_moe_experts", "MoE layers (num_moe_experts)");
  if (m.hybrid_override_pattern) refuse("hybrid_layer_pattern", "a hybrid layer pattern");
  if (m.multi_latent_attention) refuse("multi_latent_attention", "multi-latent attention");
  if (m.mtp_num_layers > 0) refuse("mtp_num_layers", "multi-token prediction");
  if (m.experimental_attention_variant) refuse("experimental_attention_variant", "experimental_attention_variant " + *m.experimental_attention_variant);
  if (m.softmax_type != SoftmaxType::vanilla) refuse("softmax_type", "an attention sink (softmax_type)");
}

// What BertModel itself asserts or cannot take.
void bert_model(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  // Under the local spec the core attention is Megatron's DotProductAttention (bert_model.py:205-213).
  if (m.transformer_impl == TransformerImpl::local && m.attention_backend != AttentionBackend::local &&
      m.attention_backend != AttentionBackend::auto_)
    sink.error("model.attention_backend", "bert_local_spec_attention_backend",
               "Expected AttnBackend to be local or auto while using mcore self attention "
               "(mcore:megatron/core/models/bert/bert_model.py:209-212): the local BERT layer spec needs attention_backend "
               "local or auto");
  // BertModel takes learned_absolute or rope (bert_model.py:72-73, :122-129); pretrain_bert.py passes neither, so
  // Megatron-LM's BERT is always learned_absolute.
  if (m.position_embedding_type != PositionEmbedding::learned_absolute && m.position_embedding_type != PositionEmbedding::rope)
    sink.error("model.position_embedding_type", "bert_position_embedding_type",
               "BertModel's position_embedding_type is 'learned_absolute' or 'rope' (mcore:megatron/core/models/bert/bert_model.py:72-73)");
  // The LM head's layer norm is apex's FusedLayerNorm when apex is installed (bert_lm_head.py:10-16), which
  // asserts LayerNorm (fusions/fused_layer_norm.py:66-68).
  if (m.normalization != Normalization::layer_norm)
    sink.error("model.normalization", "bert_lm_head_layer_norm",
               "(RMSNorm) is not supported in FusedLayerNorm (mcore:megatron/core/fusions/fused_layer_norm.py:66-68): BERT's "
               "LM head builds FusedLayerNorm (mcore:megatron/core/models/bert/bert_lm_head.py:10-16, :38-40)");
  // pretrain_bert.py's get_batch (:63-86) never splits the sequence over context-parallel ranks.
  if (m.context_parallel_size > 1)
    sink.error("model.context_parallel_size", "bert_context_parallel_not_modelled",
               "context parallelism with BERT: examples/bert/pretrain_bert.py:63-86 gives every rank the whole sequence "
               "(no get_batch_on_this_cp_rank); not modelled");
}

}  // namespace

void validate_architecture(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  if (m.architecture != Architecture::bert) {
    if (!m.bert_binary_head)
      sink.error("model.bert_binary_head", "bert_binary_head_without_bert",
                 "bert_binary_head is read with architecture \"bert\" only (--bert-no-binary-head is pretrain_bert.py's)");
    return;
  }
  bert_layers(m, sink);
  bert_model(spec, sink);
}

}  // namespace peakcast::model::detail
