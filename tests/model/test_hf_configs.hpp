#pragma once
// The public config.json of each shipped preset's model, as its Hugging Face repository publishes it
// (huggingface.co/<repo>/blob/main/config.json; the same values as the transcriptions in configs/hf/,
// whose index.json says where each was found). Written here so the test does not read the files it checks.
#include <string>
#include <vector>

namespace hf_test {

struct PresetConfig {
  const char* preset;  // configs/models/<preset>.json
  const char* repo;    // the Hugging Face repository
  std::string config;  // its config.json
};

inline const std::vector<PresetConfig>& preset_configs() {
  static const std::vector<PresetConfig> c = {
      {"llama3-8b", "meta-llama/Meta-Llama-3-8B",
       R"({"architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
"bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 4096,
"initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 8192, "model_type":
"llama", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "pretraining_tp":
1, "rms_norm_eps": 1e-05, "rope_scaling": null, "rope_theta": 500000.0, "tie_word_embeddings": false,
"torch_dtype": "bfloat16", "transformers_version": "4.40.0.dev0", "use_cache": true, "vocab_size":
128256})"},
      {"llama3-70b", "meta-llama/Meta-Llama-3-70B",
       R"({"architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
"bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 8192,
"initializer_range": 0.02, "intermediate_size": 28672, "max_position_embeddings": 8192, "model_type":
"llama", "num_attention_heads": 64, "num_hidden_layers": 80, "num_key_value_heads": 8, "pretraining_tp":
1, "rms_norm_eps": 1e-05, "rope_scaling": null, "rope_theta": 500000.0, "tie_word_embeddings": false,
"torch_dtype": "bfloat16", "transformers_version": "4.40.0.dev0", "use_cache": true, "vocab_size":
128256})"},
      {"llama3-405b", "meta-llama/Llama-3.1-405B",
       R"({"architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
"bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 16384,
"initializer_range": 0.02, "intermediate_size": 53248, "max_position_embeddings": 131072, "mlp_bias":
false, "model_type": "llama", "num_attention_heads": 128, "num_hidden_layers": 126,
"num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": {"factor": 8.0,
"low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192, "rope_type":
"llama3"}, "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
"transformers_version": "4.43.0.dev0", "use_cache": true, "vocab_size": 128256})"},
      {"deepseek-v3", "deepseek-ai/DeepSeek-V3",
       R"({"architectures": ["DeepseekV3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
"auto_map": {"AutoConfig": "configuration_deepseek.DeepseekV3Config", "AutoModel":
"modeling_deepseek.DeepseekV3Model", "AutoModelForCausalLM": "modeling_deepseek.DeepseekV3ForCausalLM"},
"bos_token_id": 0, "eos_token_id": 1, "ep_size": 1, "first_k_dense_replace": 3, "hidden_act": "silu",
"hidden_size": 7168, "initializer_range": 0.02, "intermediate_size": 18432, "kv_lora_rank": 512,
"max_position_embeddings": 163840, "model_type": "deepseek_v3", "moe_intermediate_size": 2048,
"moe_layer_freq": 1, "n_group": 8, "n_routed_experts": 256, "n_shared_experts": 1, "norm_topk_prob":
true, "num_attention_heads": 128, "num_experts_per_tok": 8, "num_hidden_layers": 61,
"num_key_value_heads": 128, "num_nextn_predict_layers": 1, "q_lora_rank": 1536, "qk_nope_head_dim": 128,
"qk_rope_head_dim": 64, "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3",
"quant_method": "fp8", "weight_block_size": [128, 128]}, "rms_norm_eps": 1e-06, "rope_scaling":
{"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
"original_max_position_embeddings": 4096, "type": "yarn"}, "rope_theta": 10000, "routed_scaling_factor":
2.5, "scoring_func": "sigmoid", "tie_word_embeddings": false, "topk_group": 4, "topk_method":
"noaux_tc", "torch_dtype": "bfloat16", "transformers_version": "4.33.1", "use_cache": true,
"v_head_dim": 128, "vocab_size": 129280})"},
      {"moonlight-16b", "moonshotai/Moonlight-16B-A3B",
       R"({"architectures": ["DeepseekV3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
"auto_map": {"AutoConfig": "configuration_deepseek.DeepseekV3Config", "AutoModel":
"modeling_deepseek.DeepseekV3Model", "AutoModelForCausalLM": "modeling_deepseek.DeepseekV3ForCausalLM"},
"aux_loss_alpha": 0.001, "bos_token_id": 163584, "eos_token_id": 163585, "ep_size": 1,
"first_k_dense_replace": 1, "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
"intermediate_size": 11264, "kv_lora_rank": 512, "max_position_embeddings": 8192, "model_type":
"deepseek_v3", "moe_intermediate_size": 1408, "moe_layer_freq": 1, "n_group": 1, "n_routed_experts": 64,
"n_shared_experts": 2, "norm_topk_prob": true, "num_attention_heads": 16, "num_experts_per_tok": 6,
"num_hidden_layers": 27, "num_key_value_heads": 16, "num_nextn_predict_layers": 0, "pretraining_tp": 1,
"q_lora_rank": null, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "rms_norm_eps": 1e-05,
"rope_scaling": null, "rope_theta": 50000.0, "routed_scaling_factor": 2.446, "scoring_func": "sigmoid",
"seq_aux": true, "tie_word_embeddings": false, "topk_group": 1, "topk_method": "noaux_tc",
"torch_dtype": "bfloat16", "use_cache": true, "v_head_dim": 128, "vocab_size": 163840})"},
      {"qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B",
       R"({"architectures": ["Qwen3MoeForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
"bos_token_id": 151643, "decoder_sparse_step": 1, "eos_token_id": 151645, "head_dim": 128, "hidden_act":
"silu", "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 6144,
"max_position_embeddings": 40960, "max_window_layers": 48, "mlp_only_layers": [], "model_type":
"qwen3_moe", "moe_intermediate_size": 768, "norm_topk_prob": true, "num_attention_heads": 32,
"num_experts": 128, "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_key_value_heads": 4,
"output_router_logits": false, "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000.0,
"router_aux_loss_coef": 0.001, "sliding_window": null, "tie_word_embeddings": false, "torch_dtype":
"bfloat16", "transformers_version": "4.51.0", "use_cache": true, "use_sliding_window": false,
"vocab_size": 151936})"},
      {"qwen3-235b-a22b", "Qwen/Qwen3-235B-A22B",
       R"({"architectures": ["Qwen3MoeForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
"bos_token_id": 151643, "decoder_sparse_step": 1, "eos_token_id": 151645, "head_dim": 128, "hidden_act":
"silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 12288,
"max_position_embeddings": 40960, "max_window_layers": 94, "mlp_only_layers": [], "model_type":
"qwen3_moe", "moe_intermediate_size": 1536, "norm_topk_prob": true, "num_attention_heads": 64,
"num_experts": 128, "num_experts_per_tok": 8, "num_hidden_layers": 94, "num_key_value_heads": 4,
"output_router_logits": false, "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000.0,
"router_aux_loss_coef": 0.001, "sliding_window": null, "tie_word_embeddings": false, "torch_dtype":
"bfloat16", "transformers_version": "4.51.0", "use_cache": true, "use_sliding_window": false,
"vocab_size": 151936})"},
      {"qwen2.5-7b", "Qwen/Qwen2.5-7B",
       R"({"architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
"eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 3584, "initializer_range": 0.02,
"intermediate_size": 18944, "max_position_embeddings": 131072, "max_window_layers": 28, "model_type":
"qwen2", "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4, "rms_norm_eps":
1e-06, "rope_theta": 1000000.0, "sliding_window": 131072, "tie_word_embeddings": false, "torch_dtype":
"bfloat16", "transformers_version": "4.40.1", "use_cache": true, "use_mrope": false,
"use_sliding_window": false, "vocab_size": 152064})"},
      {"qwen3-8b", "Qwen/Qwen3-8B",
       R"({"architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
"bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu", "hidden_size":
4096, "initializer_range": 0.02, "intermediate_size": 12288, "max_position_embeddings": 40960,
"max_window_layers": 36, "model_type": "qwen3", "num_attention_heads": 32, "num_hidden_layers": 36,
"num_key_value_heads": 8, "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000,
"sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version":
"4.51.0", "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})"},
      {"nemotron-3-nano-30b-a3b", "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
       R"({"architectures": ["NemotronHForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
"auto_map": {"AutoConfig": "configuration_nemotron_h.NemotronHConfig", "AutoModel":
"modeling_nemotron_h.NemotronHForCausalLM", "AutoModelForCausalLM": "modeling_nemotron_h.NemotronHForCausalLM"},
"bos_token_id": 1, "chunk_size": 128, "conv_kernel": 4, "eos_token_id": 2, "expand": 2, "head_dim": 128,
"hidden_dropout": 0.0, "hidden_size": 2688, "hybrid_override_pattern":
"MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME", "initializer_range": 0.02, "intermediate_size":
1856, "layer_norm_epsilon": 1e-05, "mamba_head_dim": 64, "mamba_hidden_act": "silu", "mamba_num_heads": 64,
"mamba_proj_bias": false, "mamba_ssm_cache_dtype": "float32", "max_position_embeddings": 262144,
"mlp_bias": false, "mlp_hidden_act": "relu2", "model_type": "nemotron_h", "moe_intermediate_size": 1856,
"moe_shared_expert_intermediate_size": 3712, "n_group": 1, "n_groups": 8, "n_routed_experts": 128,
"n_shared_experts": 1, "norm_eps": 1e-05, "norm_topk_prob": true, "num_attention_heads": 32,
"num_experts_per_tok": 6, "num_hidden_layers": 52, "num_key_value_heads": 2, "num_logits_to_keep": 1,
"pad_token_id": 0, "partial_rotary_factor": 1.0, "rescale_prenorm_residual": true, "residual_in_fp32": false,
"rope_theta": 10000, "routed_scaling_factor": 2.5, "sliding_window": null, "ssm_state_size": 128,
"tie_word_embeddings": false, "time_step_floor": 0.0001, "time_step_max": 0.1, "time_step_min": 0.001,
"topk_group": 1, "torch_dtype": "bfloat16", "transformers_version": "4.55.4", "use_bias": false,
"use_cache": true, "use_conv_bias": true, "use_mamba_kernels": true, "vocab_size": 131072})"},
  };
  return c;
}

}  // namespace hf_test
