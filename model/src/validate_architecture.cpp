// What the model class the training script builds refuses, or does not build: BertModel
// (mcore:megatron/core/models/bert/, examples/bert/pretrain_bert.py) and T5Model (megatron/core/models/T5/,
// examples/t5/pretrain_t5.py). docs/research/encoder-models-memory-facts.md.
#include "validate_detail.hpp"

namespace peakcast::model::detail {

namespace {

// The layer specs BERT and T5 are built from (bert_layer_specs.py:45-134, t5_spec.py:56-207) hold self-attention, a
// dense MLP and, in T5's decoder, cross-attention: nothing else.
void encoder_model_layers(const ModelSpec& m, RuleSink& sink, const char* rule, const std::string& where) {
  const auto refuse = [&](const char* key, const std::string& what) {
    sink.error(std::string("model.") + key, rule, what + " is not what " + where + " builds: its layer specs hold self-attention and a dense MLP");
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
  // asserts LayerNorm (fusions/fused_layer_norm.py:66-68); without apex it is WrappedTorchNorm, which takes RMSNorm.
  // The run spec does not say whether apex is installed (docs/megatron-refusals/README.md), so a warning.
  if (m.normalization != Normalization::layer_norm)
    sink.warning("model.normalization", "bert_lm_head_layer_norm",
                 "(RMSNorm) is not supported in FusedLayerNorm (mcore:megatron/core/fusions/fused_layer_norm.py:66-68): with apex "
                 "installed BERT's LM head builds FusedLayerNorm (mcore:megatron/core/models/bert/bert_lm_head.py:10-16, :38-40) and "
                 "fails; peakcast models the torch RMSNorm it builds without apex");
  // pretrain_bert.py's get_batch (:63-86) never splits the sequence over context-parallel ranks.
  if (m.context_parallel_size > 1)
    sink.error("model.context_parallel_size", "bert_context_parallel_not_modelled",
               "context parallelism with BERT: examples/bert/pretrain_bert.py:63-86 gives every rank the whole sequence "
               "(no get_batch_on_this_cp_rank); not modelled");
}

// What T5Model and pretrain_t5.py refuse, and what peakcast does not model of them.
void t5_model(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  if (m.pipeline_model_parallel_size > 1)
    sink.error("model.pipeline_model_parallel_size", "t5_pipeline_parallel",
               "Pipeline parallelism is not supported for T5. (mcore:examples/t5/pretrain_t5.py:97-98)");
  if (!m.decoder_seq_length)
    sink.error("model.decoder_seq_length", "t5_decoder_seq_length_required",
               "T5's decoder sequence length is required (--decoder-seq-length, the data's decoder length, "
               "mcore:examples/t5/pretrain_t5.py:210-211); seq_length is the encoder's");
  else if (*m.decoder_seq_length < 1 || *m.decoder_seq_length > m.max_position_embeddings)
    sink.error("model.decoder_seq_length", "decoder_seq_length_range",
               "decoder_seq_length must be at least 1 and at most max_position_embeddings " + str(m.max_position_embeddings) +
                   " (assert args.max_position_embeddings >= args.decoder_seq_length, mcore:megatron/training/arguments.py:1305-1306)");
  if (m.num_query_groups && *m.num_query_groups != m.num_attention_heads)
    sink.error("model.num_query_groups", "t5_cross_attention_gqa",
               "Group query attention is not currently supported in cross attention. "
               "(mcore:megatron/core/transformer/attention.py:2095-2096)");
  if (m.position_embedding_type != PositionEmbedding::learned_absolute)
    sink.error("model.position_embedding_type", "t5_position_embedding_not_modelled",
               "T5 with rotary or relative position embeddings (t5_model.py:208-234) is not modelled; learned_absolute is");
  const auto not_modelled = [&](const char* key, const char* rule, const std::string& what) {
    sink.error(std::string("model.") + key, rule, what + " with T5 is not modelled");
  };
  if (m.context_parallel_size > 1) not_modelled("context_parallel_size", "t5_context_parallel_not_modelled", "context parallelism");
  if (m.recompute_granularity != RecomputeGranularity::none) not_modelled("recompute_granularity", "t5_recompute_not_modelled", "activation recompute");
  if (m.cuda_graph_impl != CudaGraphImpl::none) not_modelled("cuda_graph_impl", "t5_cuda_graphs_not_modelled", "CUDA graphs");
  if (m.cpu_offloading) not_modelled("cpu_offloading", "t5_offloading_not_modelled", "CPU offloading");
}

// Megatron-Bridge builds neither model (its providers are GPT / Mamba / hybrid families), so neither its training loop
// nor its PEFT applies.
void not_bridge(const RunSpec& spec, RuleSink& sink, const char* model) {
  if (spec.bridge_training)
    sink.error("defaults", "architecture_without_bridge",
               std::string(model) +
                   " is trained by Megatron-LM's own script; Megatron-Bridge has no provider for it, so \"defaults\": "
                   "\"bridge\" does not apply");
  if (spec.peft.enabled)
    sink.error("peft", "architecture_without_bridge",
               std::string("PEFT is Megatron-Bridge's (bridge:src/megatron/bridge/peft/lora.py), which has no provider for ") + model);
}

}  // namespace

void validate_architecture(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  if (m.architecture != Architecture::bert && !m.bert_binary_head)
    sink.error("model.bert_binary_head", "bert_binary_head_without_bert",
               "bert_binary_head is read with architecture \"bert\" only (--bert-no-binary-head is pretrain_bert.py's)");
  if (m.architecture != Architecture::t5 && m.decoder_seq_length)
    sink.error("model.decoder_seq_length", "decoder_seq_length_without_t5",
               "decoder_seq_length is read with architecture \"t5\" only (the decoder of pretrain_t5.py's T5Model)");
  if (m.architecture == Architecture::bert) {
    encoder_model_layers(m, sink, "bert_layer_spec", "BertModel (mcore:examples/bert/pretrain_bert.py:39-45)");
    bert_model(spec, sink);
    not_bridge(spec, sink, "BertModel");
  } else if (m.architecture == Architecture::t5) {
    encoder_model_layers(m, sink, "t5_layer_spec", "T5Model (mcore:examples/t5/pretrain_t5.py:105-114)");
    t5_model(spec, sink);
    not_bridge(spec, sink, "T5Model");
  }
}

}  // namespace peakcast::model::detail
