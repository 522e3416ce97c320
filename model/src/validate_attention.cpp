// Attention: MLA, RoPE, query/key norms, the local core attention, context-parallel communication and
// the config-only modes (TransformerConfig / MLATransformerConfig.__post_init__, multi_latent_attention.py,
// dot_product_attention.py, extensions/transformer_engine.py TEDotProductAttention).
#include <algorithm>
#include <functional>
#include <numeric>

#include "validate_detail.hpp"

namespace peakcast::model::detail {

namespace {

bool dsa(const ModelSpec& m) {
  return m.experimental_attention_variant == std::optional<std::string>("dsa") ||
         (m.hybrid_override_pattern && m.hybrid_override_pattern->find('D') != std::string::npos);
}
bool mla_like(const ModelSpec& m) { return m.multi_latent_attention || dsa(m); }
// Megatron's DotProductAttention is the core: the local stack, attention_backend local (Bridge's provide()
// swaps it in, gpt_provider.py:277-279), or a layer spec naming it (EXAONE 4, exaone4_provider.py:79).
bool local_core_attention(const ModelSpec& m) {
  return m.transformer_impl == TransformerImpl::local || m.attention_backend == AttentionBackend::local ||
         m.core_attention_module == CoreAttentionModule::dot_product;
}

void mla(const ModelSpec& m, const ClusterSpec& c, RuleSink& sink) {
  if (m.attention_output_gate && m.multi_latent_attention)
    sink.error("model.attention_output_gate", "output_gate_vs_mla", "Output gate is not supported for MLA yet. (transformer_config.py:3029)");
  if (m.multi_latent_attention && m.rotary_interleaved)
    sink.error("model.rotary_interleaved", "mla_vs_rotary_interleaved",
               "rotary_interleaved does not work with multi_latent_attention. (transformer_config.py:2220)");
  if (mla_like(m) && m.qk_l2_norm)
    sink.error("model.qk_l2_norm", "mla_vs_qk_l2_norm", "qk_l2_norm is not supported with MLA. (mla_qk_norm_config.py:60, gpt_layer_specs.py:245)");
  if (mla_like(m) && m.rope_type != "rope" && m.rope_type != "yarn")
    sink.error("model.rope_type", "mla_rope_type",
               "Unsupported RoPE type: " + m.rope_type.substr(0, 40) +
                   ", supported types are 'rope' and 'yarn' "
                   "(multi_latent_attention.py:202)");
  if (!m.multi_latent_attention) return;
  // MLA hands k_channels / v_channels to its core attention (multi_latent_attention.py:207-218); the
  // local DotProductAttention takes neither (dot_product_attention.py:42-52). The harness patches it (Gap 2).
  if (local_core_attention(m) && !c.calibration_harness)
    sink.error("model.multi_latent_attention", "mla_needs_te_attention",
               "multi_latent_attention with the local core attention (transformer_impl local or attention_backend local) fails "
               "at construction: TypeError: DotProductAttention.__init__() got an unexpected keyword argument 'k_channels' "
               "(multi_latent_attention.py:207-218, dot_product_attention.py:42-52)");
  if (m.apply_rope_fusion) {
    if (m.rope_type != "yarn")
      sink.error("model.apply_rope_fusion", "mla_rope_fusion_needs_yarn",
                 "apply_rope_fusion for MLA only works with YARN RoPE. (transformer_config.py:3026)");
    else if (m.qk_pos_emb_head_dim % 4 != 0)
      sink.error("model.qk_pos_emb_head_dim", "mla_rope_fusion_emb_dim",
                 "the fused MLA YaRN RoPE kernel asserts emb_dim % 4 == 0 (fused_mla_yarn_rope_apply.py:255, :631); "
                 "qk_pos_emb_head_dim is " +
                     str(m.qk_pos_emb_head_dim));
    sink.warning("model.apply_rope_fusion", "mla_rope_fusion_experimental",
                 "apply_rope_fusion for multi-latent attention only supports training. It is experimental and may change in "
                 "future versions. (transformer_config.py:2193)");
  }
  // cache_mla_latents is an inference cache (MLATransformerConfig :3031-3033; MLASelfAttention asserts not training).
  if (m.cache_mla_latents)
    sink.error("model.cache_mla_latents", "cache_mla_latents_training",
               std::string("cache_mla_latents conflicts with training. (multi_latent_attention.py:322; absorbed_mla.py:191 for DSA)") +
                   (m.apply_rope_fusion ? "; Rope Fusion is not compatible with caching latents (transformer_config.py:3032)" : ""));
  if (m.hybrid_context_parallel)
    sink.error("model.hybrid_context_parallel", "mla_vs_hybrid_context_parallel",
               "hybrid_context_parallel is not supported with MLA yet and is planned for future. Please disable "
               "hybrid_context_parallel. (multi_latent_attention.py:685, in the hybrid-CP data path)");
  if (m.mla_down_proj_fusion) {
    if (!m.q_lora_rank)
      sink.error("model.q_lora_rank", "mla_down_proj_fusion_needs_q_lora",
                 "FusedMLASelfAttention requires q_lora_rank to be set; fallback to MLASelfAttention for q_lora_rank=None. "
                 "(multi_latent_attention.py:1261)");
    const std::int64_t tp = m.tensor_model_parallel_size;
    if (tp > 1 && m.q_lora_rank && *m.q_lora_rank % tp != 0)
      sink.error("model.q_lora_rank", "mla_down_proj_fusion_tp_divisible",
                 "q_lora_rank must be divisible by tensor model parallel size when using MLA down projection fusion "
                 "(multi_latent_attention.py:1353)");
    if (tp > 1 && (m.kv_lora_rank + m.qk_pos_emb_head_dim) % tp != 0)
      sink.error("model.kv_lora_rank", "mla_down_proj_fusion_tp_divisible",
                 "kv_lora_rank + qk_pos_emb_head_dim must be divisible by tensor model parallel size when using MLA down "
                 "projection fusion (multi_latent_attention.py:1357)");
  }
}

void rope_and_norms(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  if (m.attention_output_gate && m.fused_single_qkv_rope)
    sink.error("model.fused_single_qkv_rope", "output_gate_vs_fused_single_qkv_rope",
               "fused_single_qkv_rope does not support gated attention for now. (transformer_config.py:2217)");
  if (!m.multi_latent_attention && m.position_embedding_type == PositionEmbedding::yarn) {
    if (m.rotary_interleaved)
      sink.error("model.rotary_interleaved", "yarn_vs_rotary_interleaved",
                 "Yarn RoPE does not support interleaved rotary embeddings (yarn_rotary_pos_embedding.py:116)");
    if (m.apply_rope_fusion)
      sink.warning("model.apply_rope_fusion", "rope_fusion_fallback",
                   "apply_rope_fusion with YaRN RoPE: whenever the YaRN mscale is not 1 the fused RoPE is skipped (\"mscale=... "
                   "is not supported by TE's fused RoPE. Using unfused implementation.\", rope_utils.py:304) and the unfused "
                   "RoPE saves more than the fused kernel peakcast counts");
  }
  // Bridge's GPTModelProvider.provide turns the fusion off for other embeddings (gpt_provider.py:229-230).
  if (m.apply_rope_fusion && m.position_embedding_type != PositionEmbedding::rope && !m.hybrid_override_pattern &&
      !m.multi_latent_attention && spec.bridge_training)
    sink.warning("model.apply_rope_fusion", "rope_fusion_needs_rope",
                 "apply_rope_fusion is only compatible with RoPE position embeddings: Bridge's provide() turns it off "
                 "(gpt_provider.py:229, fusions.py:85)");
  if (m.no_rope_freq) {
    if (const auto* k = std::get_if<std::int64_t>(&*m.no_rope_freq); k && (*k <= 0 || m.num_layers % *k != 0))
      sink.error("model.no_rope_freq", "no_rope_freq_pattern",
                 "no_rope_freq=" + str(*k) + " should be divisible by num_layers=" + str(m.num_layers) + ". (transformer_config.py:2842)");
    if (const auto* v = std::get_if<std::vector<std::int64_t>>(&*m.no_rope_freq); v && static_cast<std::int64_t>(v->size()) != m.num_layers)
      sink.error("model.no_rope_freq", "no_rope_freq_pattern",
                 "Length of no_rope list (" + std::to_string(v->size()) + ") must match the number of layers (" + str(m.num_layers) +
                     ") (transformer_config.py:2851)");
  }
}

// The local DotProductAttention splits the query groups over TP (dot_product_attention.py:81), which
// transformer_config.py:1342 lets be fewer than TP (Attention then gives each rank one KV head, attention.py:355-360).
void core_attention(const ModelSpec& m, const TrainSpec& t, RuleSink& sink) {
  const std::int64_t tp = m.tensor_model_parallel_size, mbs = t.micro_batch_size;
  // Packed batches reach the core attention as packed_seq_params (attention.py:1544-1574), which
  // DotProductAttention.forward asserts away at the first forward.
  if (local_core_attention(m) && t.packed_sequence)
    sink.error("train.packed_sequence", "dot_product_attention_packed_sequence",
               "Packed sequence is not supported by DotProductAttention.Please use TEDotProductAttention instead. "
               "(dot_product_attention.py:153-156, at the first forward; the core is Megatron's DotProductAttention under "
               "transformer_impl local, attention_backend local or a layer spec that names it, e.g. exaone4_layer_spec)");
  const std::int64_t groups = m.num_query_groups.value_or(m.num_attention_heads);
  if (local_core_attention(m) && !m.multi_latent_attention && groups > 0 && groups % tp != 0 && tp % groups == 0)
    sink.error("model.num_query_groups", "query_groups_below_tp_local_attention",
               "num_query_groups (" + str(groups) + ") below tensor_model_parallel_size (" + str(tp) +
                   ") with the local DotProductAttention: divide(num_query_groups, TP) asserts \"" + str(groups) +
                   " is not divisible by " + str(tp) +
                   "\" at construction (dot_product_attention.py:81, utils.py:558); "
                   "TEDotProductAttention takes it");
  // FusedScaleMaskSoftmax.is_kernel_available (fused_softmax.py:251-270): otherwise the torch softmax.
  if (local_core_attention(m) && m.masked_softmax_fusion) {
    const std::int64_t s = m.seq_length, heads = m.num_attention_heads / std::max<std::int64_t>(1, tp);
    const bool half = m.bf16 || m.fp16;
    if (!half || s <= 16 || s > 4096 || s % 4 != 0 || (mbs * heads) % 4 != 0)
      sink.warning("model.masked_softmax_fusion", "masked_softmax_fusion_fallback",
                   "masked_softmax_fusion is on, but the fused softmax kernel's constraints fail (fp16/bf16 input, 16 < key length "
                   "<= 4096, lengths and micro-batch x heads per rank divisible by 4; fused_softmax.py:253-270): the local "
                   "attention silently uses the torch softmax, which is what peakcast simulates");
  }
  const bool te_attention = !local_core_attention(m);
  // TEDotProductAttention reads two environment variables (extensions/transformer_engine.py:2034-2041, :2109-2115).
  if (te_attention && m.apply_query_key_layer_scaling)
    sink.warning("model.apply_query_key_layer_scaling", "qk_layer_scaling_needs_env",
                 "apply_query_key_layer_scaling with Transformer Engine's attention raises unless the environment sets "
                 "NVTE_APPLY_QK_LAYER_SCALING=1 (extensions/transformer_engine.py:2037)");
  if (te_attention && m.deterministic_mode)
    sink.warning("model.deterministic_mode", "deterministic_needs_env",
                 "deterministic_mode with Transformer Engine's attention raises unless the environment sets "
                 "NVTE_ALLOW_NONDETERMINISTIC_ALGO=0 (extensions/transformer_engine.py:2111)");
}

void context_parallel(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  const std::int64_t cp = m.context_parallel_size;
  // transformer_config.py:2804-2813; Bridge checks the same and the a2a+p2p sizes (config.py:1668-1695).
  if (cp > 1 && m.cp_comm_type && m.cp_comm_type_is_list && static_cast<std::int64_t>(m.cp_comm_type->size()) != m.num_layers)
    sink.error("model.cp_comm_type", "cp_comm_type_list_length",
               "Length of cp_comm_type (" + std::to_string(m.cp_comm_type->size()) +
                   ") should equal to the total number of transformer layers (" + str(m.num_layers) + ")! (transformer_config.py:2806)");
  if (cp > 1 && spec.bridge_training && m.cp_comm_type && !m.hierarchical_context_parallel_sizes &&
      std::find(m.cp_comm_type->begin(), m.cp_comm_type->end(), "a2a+p2p") != m.cp_comm_type->end())
    sink.error("model.hierarchical_context_parallel_sizes", "cp_comm_type_consistency",
               "hierarchical_context_parallel_sizes must be set when cp_comm_type contains 'a2a+p2p'. (Bridge config.py:1681)");
  if (m.hierarchical_context_parallel_sizes && !m.hierarchical_context_parallel_sizes->empty()) {
    const auto& s = *m.hierarchical_context_parallel_sizes;
    const std::int64_t product = std::accumulate(s.begin(), s.end(), std::int64_t{1}, std::multiplies<>());
    if (product != cp)
      sink.error("model.hierarchical_context_parallel_sizes", "hierarchical_cp_product",
                 "the product of hierarchical_context_parallel_sizes (" + str(product) + ") must equal context_parallel_size (" +
                     str(cp) + ") (parallel_state.py:1128)");
  }
  // parallel_state.py:1040-1045: every DP x CP group of a hybrid-CP run has an even size.
  const std::int64_t tp_pp = m.tensor_model_parallel_size * m.pipeline_model_parallel_size;
  if (m.hybrid_context_parallel && tp_pp > 0 && (spec.cluster.num_gpus / tp_pp) % 2 != 0)
    sink.error("model.hybrid_context_parallel", "hybrid_cp_even_dp_cp",
               "Hybrid context parallel requires an even number of ranks (parallel_state.py:1043): each data-parallel x "
               "context-parallel group has " +
                   str(spec.cluster.num_gpus / tp_pp));
}

// OLMoESelfAttention builds its q and k norms with hidden_size kv_channels x num_attention_heads (Bridge
// olmoe_provider.py:120-135) and applies them to this rank's query and key: a width mismatch, and the
// first forward raises, unless the rank holds every head and the key as many as the query.
void full_width_qk_norms(const ModelSpec& m, RuleSink& sink) {
  if (!m.qk_layernorm || !m.qk_layernorm_full_width) return;
  const std::int64_t groups = m.num_query_groups.value_or(m.num_attention_heads);
  if (m.tensor_model_parallel_size != 1)
    sink.error("model.tensor_model_parallel_size", "olmoe_qk_norm_width",
               "OLMoE's q/k norms are built over all " + str(m.num_attention_heads) +
                   " heads' channels (olmoe_provider.py:120-135), "
                   "but tensor parallelism gives a rank " +
                   str(m.num_attention_heads / std::max<std::int64_t>(1, m.tensor_model_parallel_size)) +
                   ": the norm's weight does not match its input at the first forward");
  if (groups != m.num_attention_heads)
    sink.error("model.num_query_groups", "olmoe_qk_norm_width",
               "OLMoE's key norm is built over num_attention_heads x kv_channels (olmoe_provider.py:128-135), but the key has " +
                   str(groups) + " query groups: the norm's weight does not match its input at the first forward");
}

// Attention sinks (softmax_type off-by-one / learnable) and TE's backend filter (TE v2.16
// attention/dot_product_attention/utils.py:922-964): FlashAttention never takes them, FusedAttention
// takes them without CP or with a2a CP, the unfused backend never with CP (:975-981). Megatron's own
// DotProductAttention takes them (the torch softmax, fused_softmax.py:233-236).
void attention_sinks(const ModelSpec& m, RuleSink& sink) {
  if (m.softmax_type == SoftmaxType::vanilla || local_core_attention(m)) return;
  const std::string type = m.softmax_type == SoftmaxType::learnable ? "learnable" : "off-by-one";
  if (m.attention_backend == AttentionBackend::flash)
    sink.error("model.attention_backend", "softmax_type_no_backend",
               "attention_backend flash with softmax_type " + type +
                   ": Transformer Engine disables FlashAttention for it (TE v2.16 "
                   "dot_product_attention/utils.py:931-933) and the flash setting turns the other backends off: no backend is left");
  const bool a2a = m.cp_comm_type && std::all_of(m.cp_comm_type->begin(), m.cp_comm_type->end(), [](const std::string& t) { return t == "a2a"; });
  if (m.context_parallel_size > 1 && !a2a)
    sink.error("model.cp_comm_type", "softmax_type_no_backend",
               "context parallelism with softmax_type " + type +
                   " needs cp_comm_type a2a: otherwise Transformer Engine disables "
                   "FusedAttention (TE v2.16 dot_product_attention/utils.py:957-964) and the unfused backend does not support context "
                   "parallelism (:975-981): no backend is left");
  if (m.attention_backend == AttentionBackend::auto_ || m.attention_backend == AttentionBackend::fused)
    sink.warning("model.softmax_type", "softmax_type_needs_cudnn",
                 "softmax_type " + type +
                     " runs in TE's fused attention only with cuDNN >= 9.13.1 (TE v2.16 common/fused_attn/"
                     "fused_attn.cpp:452-457); with an older cuDNN TE falls back to UnfusedDotProductAttention, which saves the scores "
                     "with a sink column, [b, heads, s, s+1], twice. peakcast simulates the fused kernel; attention_backend unfused "
                     "simulates the fallback");
}

// Modes with their own post-init checks (transformer_config.py:2222-2227, :2878-2960).
void modes(const ModelSpec& m, RuleSink& sink) {
  if (m.use_mup && m.mup_base_hidden_size && *m.mup_base_hidden_size <= 0)
    sink.error("model.mup_base_hidden_size", "mup_base_hidden_size_positive", "--mup-base-hidden-size must be positive. (transformer_config.py:2227)");
  // transformer_impl inference_optimized is refused when the spec is read, so these never hold.
  if (m.inference_fuse_tp_communication)
    sink.error("model.inference_fuse_tp_communication", "inference_only_flags",
               "inference_fuse_tp_communication is only supported for inference_optimized transformer implementation. "
               "(transformer_config.py:2881)");
  if (m.inference_disable_triton_nvls_kernels)
    sink.error("model.inference_disable_triton_nvls_kernels", "inference_only_flags",
               "inference_disable_triton_nvls_kernels is only supported for inference_optimized transformer implementation. "
               "(transformer_config.py:2890)");
  if (!m.batch_invariant_mode) return;
  const auto refuse = [&](const char* key, const std::string& msg) { sink.error(std::string("model.") + key, "batch_invariant_constraints", msg); };
  if (m.params_dtype != DType::bf16) refuse("params_dtype", "Batch invariant mode supports BF16 model parameters only (transformer_config.py:2902)");
  if (m.attention_backend != AttentionBackend::flash)
    refuse("attention_backend", "Batch invariant mode only supports FlashAttention (--attention-backend flash) (transformer_config.py:2906)");
  if (m.flash_attention_version != std::optional<std::int64_t>(3) && m.flash_attention_version != std::optional<std::int64_t>(4))
    refuse("flash_attention_version", "Batch invariant mode requires --flash-attention-version 3 or 4 (transformer_config.py:2913)");
  if (m.context_parallel_size != 1) refuse("context_parallel_size", "Batch invariant mode does not support context parallelism (transformer_config.py:2920)");
  if (m.attention_dropout != 0.0) refuse("attention_dropout", "Batch invariant mode does not support attention dropout (transformer_config.py:2923)");
  if (!is_moe_model(m)) return;
  if (m.moe_token_dispatcher_type != Dispatcher::alltoall)
    refuse("moe_token_dispatcher_type", "Batch-invariant MoE training requires moe_token_dispatcher_type='alltoall'. (transformer_config.py:2932)");
  if (m.fp8 || m.fp4) refuse("fp8", "Batch-invariant MoE is bf16-only. Disable fp8/fp4 to use it. (transformer_config.py:2941)");
  if (m.moe_permute_fusion)
    sink.error("model.moe_permute_fusion", "batch_invariant_moe_unfused_dropless",
               "Batch-invariant MoE requires the unfused permute/unpermute path (transformer_config.py:2944; moe_utils.py:401)");
  if (m.moe_pad_expert_input_to_capacity)
    sink.error("model.moe_pad_expert_input_to_capacity", "batch_invariant_moe_unfused_dropless",
               "Batch-invariant MoE supports dynamic dropless routing only. Disable MoE capacity/expert padding. "
               "(transformer_config.py:2948; moe_utils.py:402)");
}

}  // namespace

void validate_attention(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  mla(m, spec.cluster, sink);
  rope_and_norms(spec, sink);
  core_attention(m, spec.train, sink);
  context_parallel(spec, sink);
  attention_sinks(m, sink);
  full_width_qk_norms(m, sink);
  modes(m, sink);
}

}  // namespace peakcast::model::detail
