#pragma once
// Model architectures built directly as RunSpecs (the same values as configs/models/*.json), so the
// parameter and static-memory tests do not depend on the parser.
#include <vector>

#include "peakcast/model/run_spec.hpp"

namespace peakcast::test_models {

// The model definitions keep one line per concern (shape, attention, MoE, routing), not one statement a line.
// clang-format off

using model::RunSpec;

inline void llama_common(model::ModelSpec& m) {
  m.normalization = model::Normalization::rms_norm;
  m.gated_linear_unit = true;
  m.activation_func = model::Activation::silu;
  m.add_bias_linear = false;
  m.position_embedding_type = model::PositionEmbedding::rope;
  m.share_embeddings_and_output_weights = false;
  m.bf16 = true;
}

// The sizes of a small decoder whose expectations a test derives by hand.
inline void small_sizes(model::ModelSpec& m, std::int64_t layers, std::int64_t hidden, std::int64_t ffn, std::int64_t heads,
                        std::int64_t kv_channels, std::int64_t vocab) {
  m.num_layers = layers; m.hidden_size = hidden; m.ffn_hidden_size = ffn;
  m.num_attention_heads = heads; m.kv_channels = kv_channels; m.vocab_size = vocab;
}

inline RunSpec llama3_8b() {
  RunSpec s;
  auto& m = s.model;
  llama_common(m);
  m.num_layers = 32; m.hidden_size = 4096; m.ffn_hidden_size = 14336;
  m.num_attention_heads = 32; m.num_query_groups = 8; m.kv_channels = 128; m.vocab_size = 128256;
  return s;
}

inline RunSpec llama3_70b() {
  RunSpec s;
  auto& m = s.model;
  llama_common(m);
  m.num_layers = 80; m.hidden_size = 8192; m.ffn_hidden_size = 28672;
  m.num_attention_heads = 64; m.num_query_groups = 8; m.kv_channels = 128; m.vocab_size = 128256;
  return s;
}

inline RunSpec qwen3_30b_a3b() {
  RunSpec s;
  auto& m = s.model;
  llama_common(m);
  m.qk_layernorm = true;
  m.num_layers = 48; m.hidden_size = 2048; m.ffn_hidden_size = 6144;
  m.num_attention_heads = 32; m.num_query_groups = 4; m.kv_channels = 128; m.vocab_size = 151936;
  m.num_moe_experts = 128; m.moe_ffn_hidden_size = 768; m.moe_router_topk = 8; m.moe_grouped_gemm = true;
  return s;
}

inline RunSpec moonlight_16b() {
  RunSpec s;
  auto& m = s.model;
  llama_common(m);
  m.num_layers = 27; m.hidden_size = 2048; m.ffn_hidden_size = 11264;
  m.num_attention_heads = 16; m.num_query_groups = 16; m.kv_channels = 128;
  m.vocab_size = 163840; m.make_vocab_size_divisible_by = 1280;
  m.multi_latent_attention = true; m.qk_layernorm = true;
  m.q_lora_rank.reset(); m.kv_lora_rank = 512; m.qk_head_dim = 128; m.qk_pos_emb_head_dim = 64; m.v_head_dim = 128;
  m.num_moe_experts = 64; m.moe_ffn_hidden_size = 1408; m.moe_router_topk = 6;
  m.moe_shared_expert_intermediate_size = 2816; m.moe_router_enable_expert_bias = true; m.moe_grouped_gemm = true;
  std::vector<std::int64_t> freq(27, 1);
  freq[0] = 0;
  m.moe_layer_freq = freq;
  return s;
}

inline RunSpec deepseek_v3() {
  RunSpec s;
  auto& m = s.model;
  llama_common(m);
  m.num_layers = 61; m.hidden_size = 7168; m.ffn_hidden_size = 18432;
  m.num_attention_heads = 128; m.num_query_groups = 128; m.kv_channels = 56;
  m.vocab_size = 129280; m.make_vocab_size_divisible_by = 1280;
  m.position_embedding_type = model::PositionEmbedding::yarn;
  m.multi_latent_attention = true; m.qk_layernorm = true;
  m.q_lora_rank = 1536; m.kv_lora_rank = 512; m.qk_head_dim = 128; m.qk_pos_emb_head_dim = 64; m.v_head_dim = 128;
  m.num_moe_experts = 256; m.moe_ffn_hidden_size = 2048; m.moe_router_topk = 8;
  m.moe_shared_expert_intermediate_size = 2048; m.moe_router_enable_expert_bias = true; m.moe_grouped_gemm = true;
  std::vector<std::int64_t> freq(61, 1);
  freq[0] = freq[1] = freq[2] = 0;
  m.moe_layer_freq = freq;
  m.mtp_num_layers = 1;
  return s;
}

inline RunSpec nemotron3_nano() {
  RunSpec s;
  auto& m = s.model;
  m.bf16 = true;
  m.normalization = model::Normalization::rms_norm;
  m.gated_linear_unit = false;
  m.activation_func = model::Activation::squared_relu;
  m.add_bias_linear = false;
  m.position_embedding_type = model::PositionEmbedding::none;
  m.share_embeddings_and_output_weights = false;
  m.num_layers = 52; m.hidden_size = 2688; m.ffn_hidden_size = 1856;
  m.num_attention_heads = 32; m.num_query_groups = 2; m.kv_channels = 128; m.vocab_size = 131072;
  m.hybrid_override_pattern = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME";
  m.mamba_num_heads = 64; m.mamba_head_dim = 64; m.mamba_state_dim = 128; m.mamba_num_groups = 8; m.mamba_d_conv = 4;
  m.num_moe_experts = 128; m.moe_ffn_hidden_size = 1856; m.moe_router_topk = 6;
  m.moe_shared_expert_intermediate_size = 3712; m.moe_router_enable_expert_bias = true; m.moe_grouped_gemm = true;
  return s;
}

// clang-format on

}  // namespace peakcast::test_models
