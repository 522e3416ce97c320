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

#include "peakcast/model/units.hpp"

namespace peakcast::model {

enum class Normalization { layer_norm, rms_norm };
enum class Activation { gelu, silu, squared_relu, relu };  // silu + gated_linear_unit = SwiGLU
enum class PositionEmbedding { rope, yarn, learned_absolute, none };
enum class RecomputeGranularity { none, selective, full };
enum class RecomputeMethod { none, uniform, block };
enum class TransformerImpl { transformer_engine, local };
// attention_backend: auto/flash/fused pick a fused kernel with TE; unfused/local is DotProductAttention.
enum class AttentionBackend { auto_, flash, fused, unfused, local };
enum class Dispatcher { allgather, alltoall, flex };
enum class CrossEntropyImpl { unfused, native, te };  // unfused = cross_entropy_loss_fusion false
enum class CudaGraphImpl { none, local, transformer_engine, full_iteration };
enum class Fp8Recipe { delayed, tensorwise, mxfp8, blockwise };
enum class OptimizerImpl { te_fused_adam, apex_fused_adam, torch_adamw };

// The eight selective-recompute tags of the pinned TransformerConfig.
enum class RecomputeTag { core_attn, mla_up_proj, layernorm, moe_act, mlp, moe, shared_experts, gdn_norm_out };

const char* to_string(RecomputeTag t);
std::optional<RecomputeTag> recompute_tag_from_string(const std::string& s);

// Megatron's int-or-list layer fields: an int (a frequency) or an explicit 0/1 entry per layer.
using LayerPattern = std::variant<std::int64_t, std::vector<std::int64_t>>;
// moe_layer_freq: an int k (layer i is MoE when i % k == 0) or an explicit 0/1 list.
using MoeLayerFreq = LayerPattern;

struct ModelSpec {
  std::optional<std::string> preset;  // model.preset, already applied by the parser

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
  // Gated attention (Qwen3-Next): linear_qkv also projects a per-head gate; the core output is
  // scaled by its sigmoid before linear_proj (attention.py:1392-1410, :1625-1632).
  bool attention_output_gate = false;
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
  bool moe_apply_probs_on_input = false;
  std::int64_t mlp_chunks_for_training = 1;  // the MLP / MoE layer runs on this many sequence chunks  // the router probabilities scale the experts' input (top-1 only)
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
  bool use_te_activation_func = false;  // TE's activation op (treated as a fused kernel)

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
  bool deallocate_pipeline_outputs = false;  // Megatron Core's default; Bridge's GPTModelProvider and MLM training set True

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
  bool bias_dropout_fusion = false;
  bool bias_activation_fusion = false;  // fused bias+GLU saves only its input
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

  bool operator==(const ModelSpec&) const = default;
};

struct TrainSpec {
  std::int64_t micro_batch_size = 1;
  std::optional<std::int64_t> global_batch_size;  // default micro_batch_size * DP
  std::int64_t train_iters = 3;  // iterations simulated; >= 2 so the steady state exists

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

  bool operator==(const DdpSpec&) const = default;
};

// One GPU type: usable allocator capacity plus the ceilings the time model needs.
struct GpuSpec {
  std::string name;
  Bytes memory_bytes;             // usable by PyTorch's caching allocator
  double bf16_dense_tflops = 0;   // peak dense bf16 matrix rate, TFLOP/s
  double fp8_dense_tflops = 0;
  double fp32_tflops = 0;
  double hbm_bandwidth_gbps = 0;  // GB/s
  double nvlink_bandwidth_gbps = 0;
  std::string source;             // where the figures come from

  bool operator==(const GpuSpec&) const = default;
};

struct ClusterSpec {
  std::int64_t num_gpus = 1;
  GpuSpec gpu;
  // PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: the caching allocator grows segments instead
  // of caching fixed-size ones; it changes the reserved estimate (not the simulated allocated peak).
  bool expandable_segments = false;

  bool operator==(const ClusterSpec&) const = default;
};

struct RunSpec {
  ModelSpec model;
  TrainSpec train;
  OptimizerSpec optimizer;
  DdpSpec ddp;
  ClusterSpec cluster;

  bool operator==(const RunSpec&) const = default;
};

// Quantities every stage derives the same way; computed once from a validated spec.
struct Derived {
  std::int64_t tp = 1, pp = 1, vpp = 1, cp = 1, ep = 1, etp = 1;
  std::int64_t dp = 1;        // world / (tp * pp * cp)
  std::int64_t edp = 1;       // world / (etp * ep * pp)
  std::int64_t ffn = 0, kv_channels = 0, query_groups = 0;
  std::int64_t moe_ffn = 0;
  std::int64_t padded_vocab = 0;
  std::int64_t num_microbatches = 1;  // global_batch / (micro_batch * dp)
  DType act_dtype = DType::bf16;      // bf16 / fp16 / fp32 from the precision flags
  DType param_dtype = DType::bf16;
  DType grad_dtype = DType::fp32;     // main grad buffer dtype
  bool distributed_optimizer = false;
  std::vector<RecomputeTag> selective_tags;  // effective list (None -> core_attn, moe_layer_recompute -> +moe)
};

Derived derive(const RunSpec& spec);

bool has_tag(const Derived& d, RecomputeTag t);

}  // namespace peakcast::model
