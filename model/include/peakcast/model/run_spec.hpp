#pragma once
// The run spec as plain values: what the parser produces and every later stage reads.
// Field names are Megatron's own (TransformerConfig, MLATransformerConfig, GPT/Hybrid providers,
// OptimizerConfig, DistributedDataParallelConfig), so a reader can map each one to its source.
// Member initializers equal the megatron-core defaults of configs/schema (the one table parsing reads,
// tests/model/test_spec_defaults.cpp keeps them equal); they matter only for specs built in code.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "peakcast/model/run_spec_cluster.hpp"
#include "peakcast/model/run_spec_enums.hpp"
#include "peakcast/model/units.hpp"

namespace peakcast::model {

// Megatron's int-or-list layer fields: an int (a frequency) or an explicit 0/1 entry per layer.
using LayerPattern = std::variant<std::int64_t, std::vector<std::int64_t>>;
// moe_layer_freq: an int k (layer i is MoE when i % k == 0) or an explicit 0/1 list.
using MoeLayerFreq = LayerPattern;

struct ModelSpec {
  std::optional<std::string> preset;  // model.preset, already applied by the parser
  // peakcast: the model class (GPTModel / HybridModel, or BertModel: embedding with token types, padding
  // mask, LM head, pooler and binary head; docs/research/encoder-models-memory-facts.md).
  Architecture architecture = Architecture::gpt;
  // BERT: --bert-no-binary-head clears it (arguments.py:2371-2373); with it the pooler, the binary head and
  // a two-row token-type table exist (pretrain_bert.py:37, :53).
  bool bert_binary_head = true;
  // T5: the decoder's sequence length (--decoder-seq-length); seq_length is the encoder's.
  std::optional<std::int64_t> decoder_seq_length;

  // Shape
  std::int64_t num_layers = 0;
  std::int64_t hidden_size = 0;
  std::optional<std::int64_t> ffn_hidden_size;  // default 4*hidden_size
  std::int64_t num_attention_heads = 0;
  std::optional<std::int64_t> num_query_groups;  // default num_attention_heads
  std::optional<std::int64_t> kv_channels;       // default hidden_size / num_attention_heads
  std::int64_t vocab_size = 0;                   // before padding
  std::int64_t make_vocab_size_divisible_by = 128;
  bool should_pad_vocab = false;  // Bridge: pad vocab_size to make_vocab_size_divisible_by * TP
  std::int64_t seq_length = 0;
  std::int64_t max_position_embeddings = 0;
  bool share_embeddings_and_output_weights = true;
  Normalization normalization = Normalization::layer_norm;
  bool gated_linear_unit = false;
  Activation activation_func = Activation::gelu;
  bool add_bias_linear = true;
  bool add_qkv_bias = false;
  bool qk_layernorm = false;
  bool qk_layernorm_full_width = false;  // OLMoE (Bridge olmoe_layer_spec): q/k norms over all heads' channels
  // Gated attention (Qwen3-Next): linear_qkv also projects a per-head gate; the core output is
  // scaled by its sigmoid before linear_proj (attention.py:1392-1410, :1625-1632).
  bool attention_output_gate = false;
  // The Gemma layer specs (Bridge gemma2_layer_spec / gemma3_layer_spec): TERowParallelLinearLayerNorm as
  // linear_proj and linear_fc2, a TENorm on each output (common/te_layers.py:26-57); the core attention
  // module; the embedding's out-of-place sqrt(hidden) scaling; Gemma 2's output-layer tanh soft-cap.
  bool post_linear_layernorm = false;
  // EXAONE 4's layer spec (Bridge exaone4_layer_spec): linear_qkv and linear_fc1 are plain TEColumnParallelLinear,
  // with no input or pre-MLP norm before them (exaone4_provider.py:78, :87); true: the usual pre-norms.
  bool pre_linear_layernorm = true;
  CoreAttentionModule core_attention_module = CoreAttentionModule::default_;
  bool scale_embeddings_by_hidden_size = false;
  std::optional<double> final_logit_softcapping;  // null or 0: no soft-cap (gemma2_provider.py:420-425)
  PositionEmbedding position_embedding_type = PositionEmbedding::learned_absolute;

  // Multi-latent attention
  bool multi_latent_attention = false;
  std::optional<std::int64_t> q_lora_rank = 512;  // MLATransformerConfig; None: no query compression
  std::int64_t kv_lora_rank = 512;
  std::int64_t qk_head_dim = 128;
  std::int64_t qk_pos_emb_head_dim = 64;
  std::int64_t v_head_dim = 128;

  // Mixture of experts
  std::optional<std::int64_t> num_moe_experts;
  bool moe_apply_probs_on_input = false;            // the router probabilities scale the experts' input (top-1 only)
  std::int64_t mlp_chunks_for_training = 1;         // the MLP / MoE layer runs on this many sequence chunks
  std::optional<std::int64_t> moe_ffn_hidden_size;  // default ffn_hidden_size
  std::int64_t moe_router_topk = 2;
  std::optional<std::int64_t> moe_shared_expert_intermediate_size;
  bool moe_shared_expert_gate = false;
  MoeLayerFreq moe_layer_freq = std::int64_t{1};
  bool moe_grouped_gemm = false;
  Dispatcher moe_token_dispatcher_type = Dispatcher::allgather;
  DType moe_router_dtype = DType::fp32;  // None in Megatron means the activation dtype; we store what it becomes
  bool moe_router_dtype_set = false;
  bool moe_shared_expert_overlap = false;
  bool moe_router_enable_expert_bias = false;
  std::optional<double> moe_expert_capacity_factor;
  bool moe_pad_expert_input_to_capacity = false;
  bool moe_permute_fusion = false;
  std::optional<double> moe_input_jitter_eps;
  bool moe_layer_recompute = false;  // deprecated, converted to selective + moe
  bool overlap_moe_expert_parallel_comm = false;
  bool delay_wgrad_compute = false;
  std::optional<std::int64_t> moe_latent_size;
  // peakcast: rows this rank's local experts receive over the balanced share (tokens x top-k);
  // dropless routing makes expert activations follow the actual load, which training decides.
  double moe_routing_imbalance = 1.0;
  std::string moe_router_score_function = "softmax";  // softmax | sigmoid | sqrtsoftplus
  // Benchmark routing: random router logits (router.py:859-861), so expert loads are balanced
  // up to sampling noise and the untrained router's spread does not apply.
  bool moe_router_force_load_balancing = false;
  // TopKRouter's routing (router.py:744-835, moe_utils.py:766-1016): what it computes decides what
  // autograd keeps. The load-balancing type and the aux-loss coefficient are Union[str, List[str]] /
  // Union[float, List[float]] in Megatron, and the two forms behave differently (router.py:388-401).
  bool moe_router_pre_softmax = false;
  std::optional<std::int64_t> moe_router_num_groups;
  std::optional<std::int64_t> moe_router_group_topk;
  std::optional<std::int64_t> moe_router_topk_limited_devices;  // deprecated: group_topk with EP groups
  std::variant<std::string, std::vector<std::string>> moe_router_load_balancing_type = std::string("aux_loss");
  std::variant<double, std::vector<double>> moe_aux_loss_coeff = 0.0;
  std::optional<double> moe_z_loss_coeff;  // set (0.0 included): the z-loss runs
  std::optional<double> moe_router_topk_scaling_factor;
  bool moe_router_fusion = false;                 // Transformer Engine's fused router kernels
  std::optional<double> moe_router_force_biased;  // benchmark: a shared random bias on random logits
  bool use_te_activation_func = false;            // TE's activation op (treated as a fused kernel)

  // Hybrid Mamba / GDN
  std::optional<std::string> hybrid_override_pattern;  // also accepted as hybrid_layer_pattern
  std::int64_t mamba_state_dim = 128;
  std::int64_t mamba_head_dim = 64;
  std::int64_t mamba_num_groups = 8;
  std::optional<std::int64_t> mamba_num_heads;
  std::int64_t mamba_d_conv = 4;
  std::optional<std::string> experimental_attention_variant;  // "gated_delta_net"
  std::int64_t linear_key_head_dim = 128;
  std::int64_t linear_value_head_dim = 128;
  std::int64_t linear_num_key_heads = 16;
  std::int64_t linear_num_value_heads = 32;
  std::int64_t linear_conv_kernel_dim = 4;
  // GPT models with experimental_attention_variant "gated_delta_net" (Qwen3-Next): an int N puts a
  // standard attention layer at every N-th layer and GDN elsewhere; a list gives 1 (GDN) / 0 per layer
  // (experimental_attention_variant_module_specs.py:402-420). Ignored by hybrid patterns.
  std::optional<LayerPattern> linear_attention_freq;

  std::int64_t mtp_num_layers = 0;  // None and 0 both mean no MTP
  // One MTP layer (wrapper, inner layer, final norm) applied at every depth: one set of weights
  // (multi_token_prediction.py:1630-1631, :1771-1782, :1831).
  bool mtp_use_repeated_layer = false;

  // Parallel layout
  std::int64_t tensor_model_parallel_size = 1;
  std::int64_t pipeline_model_parallel_size = 1;
  std::optional<std::int64_t> virtual_pipeline_model_parallel_size;
  std::int64_t context_parallel_size = 1;
  std::int64_t expert_model_parallel_size = 1;
  std::optional<std::int64_t> expert_tensor_parallel_size;  // default TP
  bool sequence_parallel = false;
  std::optional<std::string> pipeline_model_parallel_layout;
  std::optional<std::int64_t> num_layers_in_first_pipeline_stage;
  std::optional<std::int64_t> num_layers_in_last_pipeline_stage;
  bool account_for_embedding_in_pipeline_split = false;
  bool account_for_loss_in_pipeline_split = false;
  std::optional<std::int64_t> microbatch_group_size_per_vp_stage;  // default PP
  bool deallocate_pipeline_outputs = false;                        // Megatron Core's default; Bridge's GPTModelProvider and MLM training set True

  // Recompute and offloading
  RecomputeGranularity recompute_granularity = RecomputeGranularity::none;
  std::optional<std::vector<RecomputeTag>> recompute_modules;  // None becomes [core_attn]
  RecomputeMethod recompute_method = RecomputeMethod::none;
  std::optional<std::int64_t> recompute_num_layers;
  bool distribute_saved_activations = false;
  bool cpu_offloading = false;
  std::int64_t cpu_offloading_num_layers = 0;
  bool cpu_offloading_activations = true;
  bool cpu_offloading_weights = false;
  bool fine_grained_activation_offloading = false;

  // Precision
  bool bf16 = false;
  bool fp16 = false;
  std::optional<std::string> fp8;  // "e4m3" | "hybrid"
  Fp8Recipe fp8_recipe = Fp8Recipe::delayed;
  bool fp8_param = false;  // fp8_param_gather: params held as FP8 (uint8 buffers)
  // Under FP8, the first / last decoder layers run (and keep their weights) in BF16
  // (fp8_utils.py is_first_last_bf16_layer, transformer_config.py:628-637).
  bool first_last_layers_bf16 = false;
  std::int64_t num_layers_at_start_in_bf16 = 1;
  std::int64_t num_layers_at_end_in_bf16 = 1;

  // Implementation choices that change what is saved
  TransformerImpl transformer_impl = TransformerImpl::transformer_engine;
  AttentionBackend attention_backend = AttentionBackend::auto_;
  bool masked_softmax_fusion = false;
  bool attention_softmax_in_fp32 = true;
  SoftmaxType softmax_type = SoftmaxType::vanilla;    // attention sinks (gpt-oss): learnable is a [np] parameter a layer
  std::optional<double> activation_func_clamp_value;  // clamped GLU (gpt-oss): both halves clamped out of place
  bool bias_dropout_fusion = false;
  bool bias_activation_fusion = false;           // fused bias+GLU saves only its input
  bool activation_func_fp8_input_store = false;  // the fused SwiGLU saves its input as FP8 (1 byte)
  bool apply_rope_fusion = false;
  double rotary_percent = 1.0;  // fraction of each head's channels RoPE rotates (rotary_pos_embedding.py)
  bool cross_entropy_loss_fusion = false;
  CrossEntropyImpl cross_entropy_fusion_impl = CrossEntropyImpl::native;
  double attention_dropout = 0.1;
  double hidden_dropout = 0.1;
  CudaGraphImpl cuda_graph_impl = CudaGraphImpl::none;
  std::vector<std::string> cuda_graph_modules;  // empty = whole layer
  // Eager training iterations before Transformer Engine captures its graphs (training.py:3824-3832).
  std::int64_t cuda_graph_warmup_steps = 3;
  bool gradient_accumulation_fusion = false;
  // The output layer's weight-gradient GEMMs wait for the pipeline flush: its input and output
  // gradient of the first wgrad_deferral_limit micro-batches (0: all) stay until then
  // (model_parallel_config.py:410-419, tensor_parallel/layers.py, utils.py drain_embedding_wgrad_compute).
  // Tensor-parallel communication overlap: Transformer Engine's userbuffers (initialize_ub), device
  // memory allocated outside PyTorch's caching allocator. Per-GEMM overrides of the object form of
  // tp_comm_overlap_cfg (name -> method / fp8_buf); a path form is not read.
  bool tp_comm_overlap = false;
  struct UserbufferOverride {
    std::optional<std::string> method;  // "ring_exchange" | "pipeline" | "bulk" | "external"
    std::optional<bool> fp8_buf;
    bool operator==(const UserbufferOverride&) const = default;
  };
  std::map<std::string, UserbufferOverride> tp_comm_overlap_cfg;
  bool tp_comm_overlap_cfg_is_path = false;
  bool defer_embedding_wgrad_compute = false;
  std::int64_t wgrad_deferral_limit = 0;

  // ---- Read only by the validation rules (model/src/spec_fill_checks.cpp; validate_*.cpp): Megatron
  // refuses or changes a run on them, the simulation does not use them. Initializers are the
  // schema's megatron-core defaults (configs/schema), as above.
  std::string activation_func_name = "gelu";  // the exact function: quick_gelu, fast_gelu, ... are not F.gelu
  bool fused_residual_rmsnorm = false;
  bool use_transformer_engine_op_fuser = false;
  bool rotary_interleaved = false;
  std::string rope_type = "yarn";  // MLATransformerConfig.rope_type
  bool qk_l2_norm = false;
  bool cache_mla_latents = false;
  bool mla_down_proj_fusion = false;
  std::optional<std::string> fp4;  // "e2m1"
  std::optional<std::string> fp4_recipe = std::string("nvfp4");
  bool fp4_param = false;  // also ddp.fp4_param_gather
  std::optional<std::string> fp4_quantizer_factory;
  bool fp8_output_proj = false;
  std::int64_t fp8_interval = 1;
  bool moe_single_grouped_weight = false;
  bool moe_single_grouped_bias = false;
  double glu_linear_offset = 0.0;
  bool use_kitchen = false;
  std::vector<std::string> offload_modules;
  std::int64_t min_offloaded_tensor_size = 1024 * 1024;  // transformer_config.py:1247 (an expression in the schema)
  double activation_offload_fraction = 1.0;
  std::int64_t delta_offload_bytes_across_pp_ranks = 0;
  std::optional<std::int64_t> fine_grained_offloading_max_inflight_offloads;
  // cp_comm_type: one string for every layer, or one per layer (a list).
  std::optional<std::vector<std::string>> cp_comm_type;
  bool cp_comm_type_is_list = false;
  std::optional<LayerPattern> no_rope_freq;
  std::optional<std::vector<std::int64_t>> hierarchical_context_parallel_sizes;
  bool hybrid_context_parallel = false;
  bool deterministic_mode = false;
  bool batch_invariant_mode = false;
  DType params_dtype = DType::fp32;
  std::optional<DType> pipeline_dtype;
  bool apply_query_key_layer_scaling = false;
  bool dense_grouped_gemm = false;  // Bridge GPTModelProvider
  bool use_grouped_gemm_for_dense_mlp = false;
  // DeepSeek sparse attention (experimental_attention_variant "dsa", hybrid 'D'): docs/research/dsa-memory-facts.md.
  std::optional<std::int64_t> dsa_indexer_n_heads, dsa_indexer_head_dim, dsa_indexer_topk;
  std::int64_t dsa_indexer_topk_freq = 1, dsa_indexer_skip_topk_offset = 0;
  std::optional<double> dsa_indexer_loss_coeff;
  bool dsa_indexer_use_sparse_loss = false, dsa_indexer_rotate_activation = true, dsa_indexer_k_norm_fp32 = false;
  std::string dsa_kernel_backend = "none";
  bool dsa_indexer_scoring_relu = true;
  bool qk_clip = false;
  double qk_clip_alpha = 0.5;
  double qk_clip_threshold = 100;
  bool layernorm_zero_centered_gamma = false;
  bool persist_layer_norm = false;
  bool memory_efficient_layer_norm = false;
  double hybrid_attention_ratio = 0.0;
  double hybrid_mlp_ratio = 0.0;
  bool hybrid_pattern_from_deprecated_key = false;  // the spec named it hybrid_override_pattern
  std::int64_t mamba_chunk_size = 128;              // Bridge hybrid_provider.py:46 DEFAULT_MAMBA_CHUNK_SIZE (an expression in the schema)
  std::optional<std::string> mtp_hybrid_override_pattern;
  std::int64_t gtp_weight_remat_size = 1;
  std::int64_t expert_gtp_weight_remat_size = 1;
  std::optional<std::int64_t> tensor_parallel_num_weight_shards;
  bool moe_paged_stash = false;
  // moe_router_padding_for_quantization, or its alias moe_router_padding_for_fp8 (transformer_config.py:2334-2340).
  bool moe_router_padding_for_quantization = false;
  std::optional<double> moe_expert_rank_capacity_factor;
  bool moe_enable_deepep = false;
  std::string moe_flex_dispatcher_backend = "deepep";
  bool moe_flex_dispatcher_backend_set = false;  // the spec names a backend itself
  bool moe_ncclep_static_shape = false;
  bool moe_ncclep_zero_copy = false;
  std::optional<std::int64_t> moe_deepep_num_sms;
  std::optional<std::int64_t> moe_hybridep_num_sms;
  std::optional<std::int64_t> moe_flex_dispatcher_num_sms;
  bool use_grouped_gemm_for_shared_expert = false;
  std::optional<std::int64_t> moe_shared_expert_glu_interleave_size;
  std::optional<std::int64_t> moe_mlp_glu_interleave_size;
  bool use_fused_weighted_squared_relu = false;
  bool cuda_graph_modules_full_with_others = false;  // "full" listed beside other scopes
  bool cuda_graph_modules_full_iteration_inference = false;
  bool cuda_graph_modules_full_listed = true;  // the deprecated "full" scope named at all (the default scope is "full")
  bool use_te_rng_tracker = false;
  bool overlap_p2p_comm = false;
  bool batch_p2p_comm = true;
  bool use_mup = false;
  std::optional<std::int64_t> mup_base_hidden_size;
  bool inference_fuse_tp_communication = false;
  bool inference_disable_triton_nvls_kernels = false;
  std::optional<std::int64_t> flash_attention_version;
  bool calculate_per_token_loss = false;
  bool restore_modelopt_state = false;
  bool fused_single_qkv_rope = false;
  bool variable_seq_lengths = false;
  bool overlap_dispatch_backward_with_experts_wgrad = false;
  bool ep_overlap_early_attn_memory_release = false;
  std::optional<std::int64_t> num_microbatches_with_partial_activation_checkpoints;
  bool fp16_lm_cross_entropy = false;
  bool fp32_residual_connection = false;
  bool is_vision_language = false;                                    // Gemma 3 (gemma3_provider.py:87): the VL model's masks and biases
  bool window_size_is_int = false;                                    // window_size given as Gemma 3's int, not Megatron's (left, right) pair
  std::optional<std::vector<std::int64_t>> interleaved_attn_pattern;  // Gemma 3: (local, global) layers a period

  bool operator==(const ModelSpec&) const = default;
};

struct TrainSpec {
  std::int64_t micro_batch_size = 1;
  std::optional<std::int64_t> global_batch_size;  // default micro_batch_size * DP
  std::int64_t train_iters = 3;                   // iterations simulated; >= 2 so the steady state exists

  // Read only by the validation rules (spec_fill_checks.cpp).
  std::optional<std::vector<std::int64_t>> rampup_batch_size;
  std::optional<std::string> step_batch_size_schedule;
  bool decrease_batch_size_if_needed = false;
  bool manual_gc = false;
  std::int64_t manual_gc_interval = 0;
  std::optional<std::int64_t> train_samples;
  std::optional<double> num_epochs;
  bool train_iters_given = false;  // the spec states train_iters itself
  // Bridge: the dataset packs sequences, so the model runs with packed_seq_params (gpt_step.py:109-117).
  bool packed_sequence = false;

  bool operator==(const TrainSpec&) const = default;
};

struct OptimizerSpec {
  std::string optimizer = "adam";  // adam | sgd
  bool use_distributed_optimizer = false;
  bool use_precision_aware_optimizer = false;
  DType main_grads_dtype = DType::fp32;
  DType main_params_dtype = DType::fp32;
  DType exp_avg_dtype = DType::fp32;
  DType exp_avg_sq_dtype = DType::fp32;
  bool store_param_remainders = true;
  OptimizerImpl implementation = OptimizerImpl::te_fused_adam;
  bool overlap_param_gather_with_optimizer_step = false;
  bool optimizer_cpu_offload = false;
  std::optional<double> loss_scale;  // None: dynamic loss scaling under fp16
  // Read only by the validation rules (spec_fill_checks.cpp).
  double initial_loss_scale = 4294967296.0;  // 2 ** 32, optimizer_config.py:221 (an expression in the schema)
  double min_loss_scale = 1.0;
  double loss_scale_window = 1000;
  std::int64_t hysteresis = 2;
  bool decoupled_weight_decay = true;
  bool reuse_grad_buf_for_mxfp8_param_ag = false;
  std::optional<std::string> fp8_recipe;
  bool overlap_param_gather = false;
  bool bf16 = false;
  bool fp16 = false;
  bool use_layer_wise_distributed_optimizer = false;  // emerging optimizers only (optimizer/__init__.py:742)
  double clip_grad = 1.0;                             // 0: no clipping (optimizer.py:830); the schema's default is the one read

  bool operator==(const OptimizerSpec&) const = default;
};

struct DdpSpec {
  bool grad_reduce_in_fp32 = false;
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
  bool use_distributed_optimizer = false;
  std::optional<std::int64_t> bucket_size;
  std::int64_t num_distributed_optimizer_instances = 1;
  bool pad_buckets_for_high_nccl_busbw = false;
  // Read only by the validation rules (spec_fill_checks.cpp).
  std::optional<std::int64_t> num_buckets;
  bool use_megatron_fsdp = false;
  std::int64_t megatron_fsdp_version = 1;
  bool reuse_grad_buf_for_mxfp8_param_ag = false;
  bool fp8_param_gather = false;
  bool nccl_ub = false;
  bool fp32_local_accumulation_patterns = false;  // param_name_patterns_for_fp32_local_accumulation non-empty
  bool average_in_collective = false;
  bool reduce_scatter_with_fp32_accumulation = false;
  bool fsdp_double_buffer = false;
  bool fsdp_manual_registration = false;
  // Megatron-FSDP v1 (docs/research/megatron-fsdp-memory-facts.md): which buffers are sharded, the
  // all-gather / reduce-scatter window, the buffers' dtypes (null: "auto", the parameter dtype).
  std::string data_parallel_sharding_strategy = "no_shard";  // distributed_data_parallel_config.py:103
  std::string outer_dp_sharding_strategy = "no_shard";       // distributed_data_parallel_config.py:165
  std::optional<std::int64_t> suggested_communication_unit_size;
  std::optional<DType> megatron_fsdp_main_params_dtype = DType::fp32;  // distributed_data_parallel_config.py:188
  std::optional<DType> megatron_fsdp_main_grads_dtype;                 // :195
  std::optional<DType> megatron_fsdp_grad_comm_dtype;                  // :201
  bool megatron_fsdp_use_decoupled_grad = false;
  bool megatron_fsdp_cuda_graph_mode = false;

  bool operator==(const DdpSpec&) const = default;
};

struct RunSpec {
  ModelSpec model;
  TrainSpec train;
  OptimizerSpec optimizer;
  DdpSpec ddp;
  ClusterSpec cluster;
  PeftSpec peft;
  // "defaults": "bridge": Megatron-Bridge's training loop runs the spec, so its ConfigContainer.validate
  // and model-provider checks apply (and Megatron Core's alone do not decide).
  bool bridge_training = false;

  bool operator==(const RunSpec&) const = default;
};

// Quantities every stage derives the same way; computed once from a validated spec.
struct Derived {
  std::int64_t tp = 1, pp = 1, vpp = 1, cp = 1, ep = 1, etp = 1;
  std::int64_t dp = 1;   // world / (tp * pp * cp)
  std::int64_t edp = 1;  // world / (etp * ep * pp)
  std::int64_t ffn = 0, kv_channels = 0, query_groups = 0;
  std::int64_t moe_ffn = 0;
  std::int64_t padded_vocab = 0;
  std::int64_t num_microbatches = 1;  // global_batch / (micro_batch * dp)
  DType act_dtype = DType::bf16;      // bf16 / fp16 / fp32 from the precision flags
  DType param_dtype = DType::bf16;
  DType grad_dtype = DType::fp32;  // main grad buffer dtype
  bool distributed_optimizer = false;
  std::vector<RecomputeTag> selective_tags;  // effective list (None -> core_attn, moe_layer_recompute -> +moe)
};

Derived derive(const RunSpec& spec);

// TopKRouter.get_aux_loss_coeff (router.py:388-401): the coefficient of one aux-loss type under the
// run's moe_router_load_balancing_type, 0 when that type is not selected. A list of types pairs with a
// list of coefficients (transformer_config.py:1678-1684); a single name with a list of coefficients
// has no number to give (validate_moe.cpp refuses it) and reads as 0.
inline double moe_aux_loss_coeff_for(const ModelSpec& m, const std::string& type) {
  const auto* coeffs = std::get_if<std::vector<double>>(&m.moe_aux_loss_coeff);
  if (const auto* name = std::get_if<std::string>(&m.moe_router_load_balancing_type)) {
    const auto* coeff = std::get_if<double>(&m.moe_aux_loss_coeff);
    return *name == type && coeff ? *coeff : 0.0;
  }
  const auto& names = std::get<std::vector<std::string>>(m.moe_router_load_balancing_type);
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == type) return coeffs && i < coeffs->size() ? (*coeffs)[i] : 0.0;
  return 0.0;
}

bool has_tag(const Derived& d, RecomputeTag t);

// BERT's token-type rows: 2 with the binary head, else 0 (examples/bert/pretrain_bert.py:37); 0 for other models.
inline std::int64_t bert_num_tokentypes(const ModelSpec& m) { return m.architecture == Architecture::bert && m.bert_binary_head ? 2 : 0; }

}  // namespace peakcast::model
