// Sizes and counts: positive where Megatron divides by them or builds that many things, and small
// enough that byte counts stay exact in 64-bit integers.
#include <cmath>
#include <limits>

#include "validate_detail.hpp"

namespace peakcast::model::detail {

namespace {

// Generous ceilings: far beyond any real run, low enough that products of a few of them fit int64.
constexpr std::int64_t kMaxDim = std::int64_t{1} << 24;    // hidden, ffn, heads, head dims
constexpr std::int64_t kMaxCount = std::int64_t{1} << 20;  // layers, GPUs, parallel sizes, experts
constexpr std::int64_t kMaxVocab = std::int64_t{1} << 26;
constexpr std::int64_t kMaxTokens = std::int64_t{1} << 26;  // seq_length, batch sizes

void at_least(RuleSink& sink, const std::string& path, std::int64_t v, std::int64_t lo, std::int64_t hi,
              const std::string& why = "") {
  if (v < lo) {
    sink.error(path, "value_out_of_range", "must be >= " + str(lo) + ", got " + str(v) + (why.empty() ? "" : " (" + why + ")"));
  } else if (v > hi) {
    sink.error(path, "value_out_of_range", "is " + str(v) + ", larger than peakcast accepts (" + str(hi) + ")");
  }
}

void optional_at_least(RuleSink& sink, const std::string& path, const std::optional<std::int64_t>& v, std::int64_t lo,
                       std::int64_t hi, const std::string& why = "") {
  if (v) at_least(sink, path, *v, lo, hi, why);
}

void probability(RuleSink& sink, const std::string& path, double p) {
  if (!(p >= 0.0 && p <= 1.0)) sink.error(path, "value_out_of_range", "a dropout probability must lie in [0, 1]");
}

// The model's dimensions (and the MLA ranks): Megatron divides by them or builds that many.
void shape_sizes(const ModelSpec& m, RuleSink& sink) {
  at_least(sink, "model.num_layers", m.num_layers, 1, kMaxCount);
  at_least(sink, "model.hidden_size", m.hidden_size, 1, kMaxDim);
  at_least(sink, "model.num_attention_heads", m.num_attention_heads, 1, kMaxDim);
  at_least(sink, "model.vocab_size", m.vocab_size, 1, kMaxVocab, "the vocabulary size must be given, by the spec or its preset");
  at_least(sink, "model.seq_length", m.seq_length, 1, kMaxTokens, "the sequence length must be given; model presets leave it to the run");
  at_least(sink, "model.max_position_embeddings", m.max_position_embeddings, 1, kMaxTokens);
  at_least(sink, "model.make_vocab_size_divisible_by", m.make_vocab_size_divisible_by, 1, kMaxVocab);
  optional_at_least(sink, "model.ffn_hidden_size", m.ffn_hidden_size, 1, kMaxDim);
  optional_at_least(sink, "model.num_query_groups", m.num_query_groups, 1, kMaxDim);
  optional_at_least(sink, "model.kv_channels", m.kv_channels, 1, kMaxDim);
  if (!m.kv_channels && m.num_attention_heads > 0 && m.hidden_size > 0 && m.hidden_size < m.num_attention_heads) {
    sink.error("model.kv_channels", "value_out_of_range",
               "kv_channels defaults to hidden_size // num_attention_heads, which is 0 here; set kv_channels");
  }
  if (m.multi_latent_attention) {
    optional_at_least(sink, "model.q_lora_rank", m.q_lora_rank, 1, kMaxDim);
    at_least(sink, "model.kv_lora_rank", m.kv_lora_rank, 1, kMaxDim);
    at_least(sink, "model.qk_head_dim", m.qk_head_dim, 1, kMaxDim);
    at_least(sink, "model.qk_pos_emb_head_dim", m.qk_pos_emb_head_dim, 0, kMaxDim);
    at_least(sink, "model.v_head_dim", m.v_head_dim, 1, kMaxDim);
  }
  optional_at_least(sink, "model.dsa_indexer_n_heads", m.dsa_indexer_n_heads, 1, kMaxDim);
  optional_at_least(sink, "model.dsa_indexer_head_dim", m.dsa_indexer_head_dim, 1, kMaxDim);
  optional_at_least(sink, "model.dsa_indexer_topk", m.dsa_indexer_topk, 1, kMaxTokens);
}

// Experts: counts, widths and the per-layer pattern (transformer_config.py:1551-1668).
void moe_sizes(const ModelSpec& m, RuleSink& sink) {
  // num_moe_experts <= 0 is Megatron's own rule (transformer_config.py:1551-1552).
  if (m.num_moe_experts && *m.num_moe_experts <= 0) {
    sink.error("model.num_moe_experts", "num_moe_experts_positive", "num_moe_experts must be non-negative. (transformer_config.py:1552)");
  }
  optional_at_least(sink, "model.num_moe_experts", m.num_moe_experts, 1, kMaxCount);
  optional_at_least(sink, "model.moe_ffn_hidden_size", m.moe_ffn_hidden_size, 1, kMaxDim);
  if (m.num_moe_experts) at_least(sink, "model.moe_router_topk", m.moe_router_topk, 1, kMaxCount);
  // moe_shared_expert_intermediate_size <= 0 (transformer_config.py:1663-1668)
  if (m.moe_shared_expert_intermediate_size && *m.moe_shared_expert_intermediate_size <= 0) {
    sink.error("model.moe_shared_expert_intermediate_size", "shared_expert_size_positive",
               "moe_shared_expert_intermediate_size must be num_shared_experts * ffn_size_of_each_shared_expert, but got " +
                   str(*m.moe_shared_expert_intermediate_size) + " (transformer_config.py:1665)");
  } else {
    optional_at_least(sink, "model.moe_shared_expert_intermediate_size", m.moe_shared_expert_intermediate_size, 1, kMaxDim);
  }
  optional_at_least(sink, "model.moe_latent_size", m.moe_latent_size, 1, kMaxDim, "MoE latent projection dimension has to be greater than zero. (arguments.py:1895)");
  if (const auto* freq = std::get_if<std::int64_t>(&m.moe_layer_freq)) {
    at_least(sink, "model.moe_layer_freq", *freq, 1, kMaxCount);
  } else {
    const auto& pattern = std::get<std::vector<std::int64_t>>(m.moe_layer_freq);
    for (std::size_t i = 0; i < pattern.size(); ++i) {
      if (pattern[i] != 0 && pattern[i] != 1)
        sink.error("model.moe_layer_freq[" + std::to_string(i) + "]", "value_out_of_range",
                   "moe_layer_freq lists 0 (dense layer) or 1 (expert layer) per layer, got " + str(pattern[i]));
    }
  }
}

// Mamba and Gated DeltaNet dimensions, and the linear-attention layer pattern (transformer_config.py:1347-1381).
void hybrid_sizes(const ModelSpec& m, RuleSink& sink) {
  if (m.hybrid_override_pattern) {
    at_least(sink, "model.mamba_state_dim", m.mamba_state_dim, 1, kMaxDim);
    at_least(sink, "model.mamba_head_dim", m.mamba_head_dim, 1, kMaxDim);
    at_least(sink, "model.mamba_num_groups", m.mamba_num_groups, 1, kMaxDim);
    optional_at_least(sink, "model.mamba_num_heads", m.mamba_num_heads, 1, kMaxDim);
    at_least(sink, "model.mamba_d_conv", m.mamba_d_conv, 1, kMaxDim);
  }
  if (m.experimental_attention_variant == std::optional<std::string>("gated_delta_net")) {
    at_least(sink, "model.linear_key_head_dim", m.linear_key_head_dim, 1, kMaxDim);
    at_least(sink, "model.linear_value_head_dim", m.linear_value_head_dim, 1, kMaxDim);
    at_least(sink, "model.linear_num_key_heads", m.linear_num_key_heads, 1, kMaxDim);
    at_least(sink, "model.linear_num_value_heads", m.linear_num_value_heads, 1, kMaxDim);
    at_least(sink, "model.linear_conv_kernel_dim", m.linear_conv_kernel_dim, 1, kMaxDim);
    // transformer_config.py:1347-1381
    if (!m.linear_attention_freq) {
      sink.error("model.linear_attention_freq", "linear_attention_freq_required",
                 "linear_attention_freq must be set for linear gated_delta_net. (transformer_config.py:1350)");
    }
    if (m.linear_num_key_heads > 0 && m.linear_num_value_heads % m.linear_num_key_heads != 0) {
      sink.error("model.linear_num_value_heads", "gdn_value_heads_multiple_of_key_heads",
                 "linear_num_value_heads (" + str(m.linear_num_value_heads) + ") must be a multiple of linear_num_key_heads (" +
                     str(m.linear_num_key_heads) + "). (transformer_config.py:1367)");
    }
    const std::int64_t tp_cp = m.tensor_model_parallel_size * m.context_parallel_size;
    if (tp_cp > 0) {
      if (m.linear_num_key_heads % tp_cp != 0)
        sink.error("model.linear_num_key_heads", "gdn_heads_divisible_by_tp_cp",
                   "linear_num_key_heads (" + str(m.linear_num_key_heads) +
                       ") must be a multiple of tensor_model_parallel_size * context_parallel_size (" + str(tp_cp) +
                       "). (transformer_config.py:1374)");
      if (m.linear_num_value_heads % tp_cp != 0)
        sink.error("model.linear_num_value_heads", "gdn_heads_divisible_by_tp_cp",
                   "linear_num_value_heads (" + str(m.linear_num_value_heads) +
                       ") must be a multiple of tensor_model_parallel_size * context_parallel_size (" + str(tp_cp) +
                       "). (transformer_config.py:1378)");
    }
  }
  if (m.linear_attention_freq && !m.hybrid_override_pattern) {
    if (const auto* k = std::get_if<std::int64_t>(&*m.linear_attention_freq); k && *k < 1) {
      sink.error("model.linear_attention_freq", "value_out_of_range",
                 "must be >= 1, got " + str(*k) +
                     " (layer i is standard attention when (i + 1) % linear_attention_freq == 0, "
                     "experimental_attention_variant_module_specs.py:411)");
    }
    if (const auto* list = std::get_if<std::vector<std::int64_t>>(&*m.linear_attention_freq);
        list && static_cast<std::int64_t>(list->size()) != m.num_layers) {
      sink.error("model.linear_attention_freq", "linear_attention_freq_length",
                 "Invalid length of linear_attention_pattern: " + std::to_string(list->size()) + ", expected " +
                     str(m.num_layers) + " (experimental_attention_variant_module_specs.py:416)");
    }
  }
}

// MTP and MLP chunking, the parallel sizes, dropout and RoPE shares.
void layer_and_parallel_sizes(const ModelSpec& m, RuleSink& sink) {
  at_least(sink, "model.mtp_num_layers", m.mtp_num_layers, 0, kMaxCount);
  at_least(sink, "model.mlp_chunks_for_training", m.mlp_chunks_for_training, 1, kMaxTokens,
           "torch.chunk needs at least one chunk");

  at_least(sink, "model.tensor_model_parallel_size", m.tensor_model_parallel_size, 1, kMaxCount);
  at_least(sink, "model.pipeline_model_parallel_size", m.pipeline_model_parallel_size, 1, kMaxCount);
  optional_at_least(sink, "model.virtual_pipeline_model_parallel_size", m.virtual_pipeline_model_parallel_size, 1, kMaxCount);
  at_least(sink, "model.context_parallel_size", m.context_parallel_size, 1, kMaxCount);
  at_least(sink, "model.expert_model_parallel_size", m.expert_model_parallel_size, 1, kMaxCount);
  optional_at_least(sink, "model.expert_tensor_parallel_size", m.expert_tensor_parallel_size, 1, kMaxCount);
  optional_at_least(sink, "model.microbatch_group_size_per_vp_stage", m.microbatch_group_size_per_vp_stage, 1, kMaxTokens);
  optional_at_least(sink, "model.recompute_num_layers", m.recompute_num_layers, 1, kMaxCount,
                    "Megatron asks for a value between 1 and num_layers_per_pipeline_rank");
  at_least(sink, "model.cpu_offloading_num_layers", m.cpu_offloading_num_layers, 0, kMaxCount);
  probability(sink, "model.attention_dropout", m.attention_dropout);
  probability(sink, "model.hidden_dropout", m.hidden_dropout);
  // RotaryEmbedding rotates int(kv_channels x rotary_percent) channels (rotary_pos_embedding.py).
  if (!(m.rotary_percent > 0.0 && m.rotary_percent <= 1.0))
    sink.error("model.rotary_percent", "value_out_of_range", "rotary_percent must lie in (0, 1]: the share of each head's channels RoPE rotates");
  if (m.moe_input_jitter_eps && !(*m.moe_input_jitter_eps >= 0.0))
    sink.error("model.moe_input_jitter_eps", "value_out_of_range", "must be >= 0");
}

// The run: batch sizes, iterations, buckets, GPUs; and every byte count exact in int64.
void run_sizes(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  at_least(sink, "train.micro_batch_size", spec.train.micro_batch_size, 1, kMaxTokens);
  optional_at_least(sink, "train.global_batch_size", spec.train.global_batch_size, 1, kMaxTokens);
  // The run's length: peakcast walks iteration 1 and, when there is a second, the steady state.
  at_least(sink, "train.train_iters", spec.train.train_iters, 1, std::numeric_limits<std::int64_t>::max(), "the run's iterations");
  if (spec.ddp.bucket_size) at_least(sink, "ddp.bucket_size", *spec.ddp.bucket_size, 1, std::int64_t{1} << 50);
  at_least(sink, "ddp.num_distributed_optimizer_instances", spec.ddp.num_distributed_optimizer_instances, 1, kMaxCount);
  at_least(sink, "cluster.num_gpus", spec.cluster.num_gpus, 1, kMaxCount);
  if (spec.cluster.gpu.memory_bytes.value <= 0)
    sink.error("cluster.gpu.memory_bytes", "value_out_of_range", "GPU memory must be a positive number of bytes");

  // Tokens per micro-batch and the largest weight matrix must stay exact in int64 byte counts.
  const double tokens = static_cast<double>(m.seq_length) * static_cast<double>(spec.train.micro_batch_size);
  const double widest = std::max<double>({static_cast<double>(m.hidden_size), m.ffn_hidden_size ? static_cast<double>(*m.ffn_hidden_size) : 4.0 * static_cast<double>(m.hidden_size),
                                          static_cast<double>(m.vocab_size)});
  if (tokens * widest * 8.0 > 9.0e18 || widest * widest * 8.0 * static_cast<double>(m.num_layers) > 9.0e18) {
    sink.error("model.seq_length", "size_out_of_range",
               "the tensors of this run would exceed 2^63 bytes; peakcast cannot count them exactly");
  }
}

}  // namespace

void validate_sizes(const RunSpec& spec, RuleSink& sink) {
  shape_sizes(spec.model, sink);
  moe_sizes(spec.model, sink);
  hybrid_sizes(spec.model, sink);
  layer_and_parallel_sizes(spec.model, sink);
  run_sizes(spec, sink);
}

}  // namespace peakcast::model::detail
