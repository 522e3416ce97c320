// Parameter tensors of each decoder-layer module. Shapes follow the TE specs of the pinned
// Megatron Core (24bad8e6); each block cites the constructor that allocates it.
#include <stdexcept>

#include "param_count.hpp"
#include "peakcast/model/dsa.hpp"

namespace peakcast::model::detail {

namespace {

// Split a dimension over a parallel group; validation guarantees divisibility, so a remainder
// here means the spec was not validated.
std::int64_t split(std::int64_t dim, std::int64_t parts) {
  if (parts <= 0 || dim % parts != 0) {
    throw std::invalid_argument("dimension " + std::to_string(dim) + " does not split over " + std::to_string(parts));
  }
  return dim / parts;
}

// fc1 of a gated MLP (SwiGLU etc.) packs gate and up projections: 2F outputs (mlp.py:120-140).
std::int64_t fc1_width(const ModelSpec& m, std::int64_t ffn) { return m.gated_linear_unit ? 2 * ffn : ffn; }

bool has_norm_bias(const ModelSpec& m) { return m.normalization == Normalization::layer_norm; }

void add(ParamList& out, std::string name, std::int64_t numel, bool gemm = false, bool expert = false) {
  if (numel <= 0) return;
  ParamTensor t;
  t.name = std::move(name);
  t.numel = numel;
  t.gemm_weight = gemm;
  t.expert = expert;
  out.push_back(std::move(t));
}

// A linear's weight [out_local, in_local] as this rank holds it, with how the layer is split (what a
// LoRA adapter beside it is shaped by).
void add_gemm(ParamList& out, std::string name, std::int64_t out_local, std::int64_t in_local, GemmMode mode, bool expert = false) {
  add(out, std::move(name), out_local * in_local, true, expert);
  if (out.empty() || out.back().numel != out_local * in_local) return;
  out.back().out_local = out_local;
  out.back().in_local = in_local;
  out.back().mode = mode;
}

// A norm as TE registers it: weight, plus bias for LayerNorm. Norms are replicated over TP.
void add_norm(ParamList& out, const std::string& name, const ModelSpec& m, std::int64_t width) {
  add(out, name + ".weight", width);
  if (has_norm_bias(m)) add(out, name + ".bias", width);
}

// Standard (GQA) self-attention: TELayerNormColumnParallelLinear qkv with the fused input norm,
// optional q/k layernorm over one head, TERowParallelLinear proj (attention.py SelfAttention). Listed in
// registration order, which sets the DDP buffer layout and the order the optimizer creates its state:
// Attention.__init__ builds core_attention (:382) and linear_proj (:413) before SelfAttention.__init__
// builds linear_qkv (:1682) and the q/k norms (:1724-1733), as the H200 allocator streams show (the
// proj weight is requested before the qkv weight at model build and at the first optimizer step).
void add_attention(ParamList& out, const ModelSpec& m, const Derived& d, const Sharding& s) {
  const std::int64_t h = m.hidden_size;
  const std::int64_t q_width = m.num_attention_heads * d.kv_channels;
  const std::int64_t kv_width = 2 * d.query_groups * d.kv_channels;
  // The output gate adds one more query-sized block to the fused projection (attention.py:1818-1820).
  const std::int64_t gate_width = m.attention_output_gate ? q_width : 0;
  const std::int64_t qkv_local = split(q_width + kv_width + gate_width, s.tp);
  // Learnable attention sinks: one logit per local head, a Parameter of TE's DotProductAttention (TE v2.16
  // dot_product_attention.py:464-476) or of Megatron's (dot_product_attention.py:126-138); off-by-one is
  // a constant, no parameter.
  if (m.softmax_type == SoftmaxType::learnable) add(out, "self_attention.core_attention.softmax_offset", split(m.num_attention_heads, s.tp));
  add_gemm(out, "self_attention.linear_proj.weight", h, split(q_width, s.tp), GemmMode::row);
  if (m.add_bias_linear) add(out, "self_attention.linear_proj.bias", h);
  // TERowParallelLinearLayerNorm's TENorm(config, output_size) (te_layers.py:47), replicated over TP.
  if (m.post_linear_layernorm) add_norm(out, "self_attention.linear_proj.post_layernorm", m, h);
  // EXAONE 4's linear_qkv is a plain TEColumnParallelLinear, no fused input norm (exaone4_provider.py:78).
  if (m.pre_linear_layernorm) add_norm(out, "self_attention.linear_qkv.layer_norm", m, h);
  add_gemm(out, "self_attention.linear_qkv.weight", qkv_local, h, GemmMode::column);
  if (m.add_bias_linear || m.add_qkv_bias) add(out, "self_attention.linear_qkv.bias", qkv_local);
  if (m.qk_layernorm) {
    // OLMoE's norms span every head's channels, q and k alike (olmoe_provider.py:120-135).
    const std::int64_t width = m.qk_layernorm_full_width ? q_width : d.kv_channels;
    add_norm(out, "self_attention.q_layernorm", m, width);
    add_norm(out, "self_attention.k_layernorm", m, width);
  }
}

// Multi-latent attention (multi_latent_attention.py:508-630). The down projections are TELinear
// with parallel_mode="duplicated" (:526-527, :573-574), i.e. replicated over TP; the up
// projections are column-parallel and, with qk_layernorm, carry the fused q/kv layernorm
// (gpt_layer_specs.py: linear_q_up_proj/linear_kv_up_proj = TELayerNormColumnParallelLinear).
// The input layernorm is a separate TENorm, registered by TransformerLayer before the attention; then
// MultiLatentAttention.__init__ builds linear_proj (:221) before MLASelfAttention's projections.
void add_mla(ParamList& out, const ModelSpec& m, const Sharding& s) {
  const std::int64_t h = m.hidden_size;
  const std::int64_t heads = m.num_attention_heads;
  const std::int64_t q_head_dim = m.qk_head_dim + m.qk_pos_emb_head_dim;
  add_norm(out, "input_layernorm", m, h);
  add_gemm(out, "self_attention.linear_proj.weight", h, split(heads * m.v_head_dim, s.tp), GemmMode::row);
  out.back().rebuilt = true;
  if (!m.q_lora_rank) {
    add_gemm(out, "self_attention.linear_q_proj.weight", split(heads * q_head_dim, s.tp), h, GemmMode::column);
  } else {
    const std::int64_t q_lora = *m.q_lora_rank;
    add_gemm(out, "self_attention.linear_q_down_proj.weight", q_lora, h, GemmMode::duplicated);
    if (m.qk_layernorm) add_norm(out, "self_attention.linear_q_up_proj.layer_norm", m, q_lora);
    add_gemm(out, "self_attention.linear_q_up_proj.weight", split(heads * q_head_dim, s.tp), q_lora, GemmMode::column);
  }
  add_gemm(out, "self_attention.linear_kv_down_proj.weight", m.kv_lora_rank + m.qk_pos_emb_head_dim, h, GemmMode::duplicated);
  if (m.qk_layernorm) add_norm(out, "self_attention.linear_kv_up_proj.layer_norm", m, m.kv_lora_rank);
  add(out, "self_attention.linear_kv_up_proj.weight",
      split(heads * (m.qk_head_dim + m.v_head_dim), s.tp) * m.kv_lora_rank, true);
}

// T5's cross-attention (t5_spec.py:104-114, :182-192; attention.py:2063-2121): its own pre-norm (TENorm or LNImpl),
// linear_q and linear_kv column-parallel with biases (no fused norm), and linear_proj. GQA is refused there, so
// both projections are heads x kv_channels wide.
void add_cross_attention(ParamList& out, const ModelSpec& m, const Derived& d, const Sharding& s) {
  const std::int64_t h = m.hidden_size, width = m.num_attention_heads * d.kv_channels;
  add_norm(out, "pre_cross_attn_layernorm", m, h);
  add_gemm(out, "cross_attention.linear_q.weight", split(width, s.tp), h, GemmMode::column);
  if (m.add_bias_linear) add(out, "cross_attention.linear_q.bias", split(width, s.tp));
  add_gemm(out, "cross_attention.linear_kv.weight", split(2 * width, s.tp), h, GemmMode::column);
  if (m.add_bias_linear) add(out, "cross_attention.linear_kv.bias", split(2 * width, s.tp));
  add_gemm(out, "cross_attention.linear_proj.weight", h, split(width, s.tp), GemmMode::row);
  if (m.add_bias_linear) add(out, "cross_attention.linear_proj.bias", h);
}

// DeepSeek sparse attention (docs/research/dsa-memory-facts.md section 3): the TransformerLayer's own input TENorm,
// then AbsorbedMLASelfAttention. Attention.__init__ builds core_attention and linear_proj (attention.py:382, :413);
// AbsorbedMLA builds both again (absorbed_mla.py:218-245), the first copies freed, the attributes keeping their first
// place; then the q / kv projections (:265-373) and the standalone q / kv norms (:375-388; TENorm with qk_layernorm,
// mla_qk_norm_config.py:108-130, else IdentityOp). core_attention is DSAttention, whose indexer only a layer that
// computes its top-k builds (dsa.py:1580-1584): linear_wq_b, linear_wk, a LayerNorm k_norm whatever the model's
// normalization, linear_weights_proj, all duplicated over TP (dsa.py:1159-1204). linear_kv_up_proj's forward never
// runs (its weight is sliced into the absorbed einsums, absorbed_mla.py:681-695), but a LoRA adapter still wraps it.
void add_dsa(ParamList& out, const ModelSpec& m, const Sharding& s, bool indexer) {
  const std::int64_t h = m.hidden_size, heads = m.num_attention_heads;
  const std::int64_t q_head_dim = m.qk_head_dim + m.qk_pos_emb_head_dim;
  add_norm(out, "input_layernorm", m, h);
  if (indexer) {
    const std::int64_t n = m.dsa_indexer_n_heads.value_or(0), d = m.dsa_indexer_head_dim.value_or(0);
    const std::string p = "self_attention.core_attention.indexer.";
    add_gemm(out, p + "linear_wq_b.weight", n * d, m.q_lora_rank.value_or(h), GemmMode::duplicated);
    out.back().rebuilt = true;
    add_gemm(out, p + "linear_wk.weight", d, h, GemmMode::duplicated);
    out.back().rebuilt = true;
    add(out, p + "k_norm.weight", d);
    out.back().rebuilt = true;
    add(out, p + "k_norm.bias", d);
    out.back().rebuilt = true;
    add_gemm(out, p + "linear_weights_proj.weight", n, h, GemmMode::duplicated);
    out.back().rebuilt = true;
  }
  add_gemm(out, "self_attention.linear_proj.weight", h, split(heads * m.v_head_dim, s.tp), GemmMode::row);
  out.back().rebuilt = true;
  if (!m.q_lora_rank) {
    add_gemm(out, "self_attention.linear_q_proj.weight", split(heads * q_head_dim, s.tp), h, GemmMode::column);
  } else {
    add_gemm(out, "self_attention.linear_q_down_proj.weight", *m.q_lora_rank, h, GemmMode::duplicated);
    add_gemm(out, "self_attention.linear_q_up_proj.weight", split(heads * q_head_dim, s.tp), *m.q_lora_rank, GemmMode::column);
  }
  add_gemm(out, "self_attention.linear_kv_down_proj.weight", m.kv_lora_rank + m.qk_pos_emb_head_dim, h, GemmMode::duplicated);
  add_gemm(out, "self_attention.linear_kv_up_proj.weight", split(heads * (m.qk_head_dim + m.v_head_dim), s.tp), m.kv_lora_rank,
           GemmMode::column);
  if (m.qk_layernorm) {
    if (m.q_lora_rank) add_norm(out, "self_attention.q_layernorm", m, *m.q_lora_rank);
    add_norm(out, "self_attention.kv_layernorm", m, m.kv_lora_rank);
  }
}

// Dense MLP with the pre-MLP norm fused into fc1 (TELayerNormColumnParallelLinear, mlp.py).
void add_dense_mlp(ParamList& out, const std::string& prefix, const ModelSpec& m, std::int64_t ffn,
                   std::int64_t tp, bool fused_norm) {
  const std::int64_t h = m.hidden_size;
  if (fused_norm) add_norm(out, prefix + ".linear_fc1.layer_norm", m, h);
  const std::int64_t fc1_local = split(fc1_width(m, ffn), tp);
  add_gemm(out, prefix + ".linear_fc1.weight", fc1_local, h, GemmMode::column);
  if (m.add_bias_linear) add(out, prefix + ".linear_fc1.bias", fc1_local);
  add_gemm(out, prefix + ".linear_fc2.weight", h, split(ffn, tp), GemmMode::row);
  if (m.add_bias_linear) add(out, prefix + ".linear_fc2.bias", h);
  // The Gemma layer specs' fc2 is TERowParallelLinearLayerNorm (gemma2_provider.py:458, gemma3_provider.py:165).
  if (m.post_linear_layernorm && prefix == "mlp") add_norm(out, prefix + ".linear_fc2.post_layernorm", m, h);
}

// MoE block (moe_layer.py): separate pre-MLP TENorm, router (router.py:64-70, fp32 at creation
// but cast to the model dtype by Float16Module, module.py:464), routed experts (TEGroupedMLP:
// one weight per local expert per GEMM, experts.py), shared experts (shared_experts.py, TP-sharded
// like a dense MLP, optional 1 x h gate at :139). MoELayer.__init__ builds the router (moe_layer.py:259),
// the latent projections (:264-296), the experts (:326) and the shared experts (:338), in that order.
void add_moe(ParamList& out, const ModelSpec& m, const Derived& d, const Sharding& s) {
  const std::int64_t h = m.hidden_size;
  const std::int64_t experts = m.num_moe_experts.value_or(0);
  add_norm(out, "pre_mlp_layernorm", m, h);
  add(out, "mlp.router.weight", experts * h);
  if (m.add_bias_linear) add(out, "mlp.router.bias", experts);
  // Latent MoE: TELinear(h, latent) and TELinear(latent, h) with parallel_mode="duplicated": the whole
  // weight on every TP rank, not an expert parameter (moe_layer.py:273-296; transformer_engine.py:1197-1226,
  // :1276-1285), bias when add_bias_linear. The routed experts then run latent wide (experts.py:216-251,
  // mlp.py:215-255).
  const std::int64_t routed_width = m.moe_latent_size.value_or(h);
  if (m.moe_latent_size) {
    add_gemm(out, "mlp.fc1_latent_proj.weight", routed_width, h, GemmMode::duplicated);
    if (m.add_bias_linear) add(out, "mlp.fc1_latent_proj.bias", routed_width);
    add_gemm(out, "mlp.fc2_latent_proj.weight", h, routed_width, GemmMode::duplicated);
    if (m.add_bias_linear) add(out, "mlp.fc2_latent_proj.bias", h);
  }
  const std::int64_t local_experts = split(experts, s.ep);
  const std::int64_t fc1_local = split(fc1_width(m, d.moe_ffn), s.etp);
  const std::int64_t fc2_in_local = split(d.moe_ffn, s.etp);
  const auto fc1 = [&](std::int64_t e) {
    const std::string p = "mlp.experts.linear_fc1";
    add_gemm(out, p + ".weight" + std::to_string(e), fc1_local, routed_width, GemmMode::column, true);
    if (m.add_bias_linear) add(out, p + ".bias" + std::to_string(e), fc1_local, false, true);
  };
  const auto fc2 = [&](std::int64_t e) {
    const std::string p = "mlp.experts.linear_fc2";
    add_gemm(out, p + ".weight" + std::to_string(e), routed_width, fc2_in_local, GemmMode::row, true);
    if (m.add_bias_linear) add(out, p + ".bias" + std::to_string(e), routed_width, false, true);
  };
  if (m.moe_grouped_gemm) {
    // Grouped experts register every fc1 weight, then every fc2 weight.
    for (std::int64_t e = 0; e < local_experts; ++e) fc1(e);
    for (std::int64_t e = 0; e < local_experts; ++e) fc2(e);
  } else {
    // SequentialMLP: one MLP module per local expert, each with its fc1 then its fc2 (experts.py).
    for (std::int64_t e = 0; e < local_experts; ++e) {
      fc1(e);
      fc2(e);
    }
  }
  if (m.moe_shared_expert_intermediate_size && *m.moe_shared_expert_intermediate_size > 0) {
    add_dense_mlp(out, "mlp.shared_experts", m, *m.moe_shared_expert_intermediate_size, s.tp, false);
    if (m.moe_shared_expert_gate) add(out, "mlp.shared_experts.gate_weight", h);
  }
}

// Mamba-2 mixer (ssm/mamba_mixer.py:173-420): in_proj packs z, x, B, C, dt with the layer norm
// fused (hybrid_layer_specs.py: TELayerNormColumnParallelLinear); depthwise conv1d with bias over
// x, B, C; A_log, D, dt_bias per head; gated RMSNorm over d_inner; out_proj. All TP-sharded by
// heads/groups.
void add_mamba(ParamList& out, const ModelSpec& m, const Sharding& s) {
  const std::int64_t h = m.hidden_size;
  const std::int64_t heads = m.mamba_num_heads.value_or(2 * h / m.mamba_head_dim);  // expand = 2
  const std::int64_t d_inner = heads * m.mamba_head_dim;
  const std::int64_t groups_state = m.mamba_num_groups * m.mamba_state_dim;
  const std::int64_t in_proj_local = split(2 * d_inner + 2 * groups_state + heads, s.tp);
  const std::int64_t conv_local = split(d_inner + 2 * groups_state, s.tp);
  const std::int64_t heads_local = split(heads, s.tp);
  add_norm(out, "mixer.in_proj.layer_norm", m, h);
  add_gemm(out, "mixer.in_proj.weight", in_proj_local, h, GemmMode::column);
  add(out, "mixer.conv1d_weight", conv_local * m.mamba_d_conv);
  add(out, "mixer.conv1d_bias", conv_local);
  add(out, "mixer.dt_bias", heads_local);
  add(out, "mixer.A_log", heads_local);
  add(out, "mixer.D", heads_local);
  add(out, "mixer.norm.weight", split(d_inner, s.tp));
  add_gemm(out, "mixer.out_proj.weight", h, split(d_inner, s.tp), GemmMode::row);
}

// Gated DeltaNet (ssm/gated_delta_net/common.py:190-280, gdn.py:32-62): in_proj packs q, k, v,
// z, beta, alpha (fused norm), conv over q, k, v without bias, dt_bias and A_log per value head,
// out_norm over one value head (TENorm, replicated), out_proj.
void add_gdn(ParamList& out, const ModelSpec& m, const Sharding& s) {
  const std::int64_t h = m.hidden_size;
  const std::int64_t qk_dim = m.linear_key_head_dim * m.linear_num_key_heads;
  const std::int64_t v_dim = m.linear_value_head_dim * m.linear_num_value_heads;
  add_norm(out, "self_attention.in_proj.layer_norm", m, h);
  add_gemm(out, "self_attention.in_proj.weight", split(2 * qk_dim + 2 * v_dim + 2 * m.linear_num_value_heads, s.tp), h, GemmMode::column);
  add(out, "self_attention.conv1d.weight", split(2 * qk_dim + v_dim, s.tp) * m.linear_conv_kernel_dim);
  add(out, "self_attention.dt_bias", split(m.linear_num_value_heads, s.tp));
  add(out, "self_attention.A_log", split(m.linear_num_value_heads, s.tp));
  add_norm(out, "self_attention.out_norm", m, m.linear_value_head_dim);
  add_gemm(out, "self_attention.out_proj.weight", h, split(v_dim, s.tp), GemmMode::row);
}

}  // namespace

std::int64_t norm_numel(const ModelSpec& m, std::int64_t width) { return has_norm_bias(m) ? 2 * width : width; }

std::int64_t sum_numel(const ParamList& list) {
  std::int64_t n = 0;
  for (const auto& t : list) n += t.numel;
  return n;
}

ParamList layer_params(const LayerSpec& layer, const ModelSpec& m, const Derived& d, const Sharding& s) {
  ParamList out;
  switch (layer.mixer) {
    case MixerKind::attention: add_attention(out, m, d, s); break;
    case MixerKind::mla: add_mla(out, m, s); break;
    case MixerKind::dsa: add_dsa(out, m, s, dsa_computes_topk(m, layer)); break;
    case MixerKind::mamba: add_mamba(out, m, s); break;
    case MixerKind::gdn: add_gdn(out, m, s); break;
    case MixerKind::none: break;
  }
  if (layer.cross_attention) add_cross_attention(out, m, d, s);
  switch (layer.ffn) {
    case FfnKind::dense: add_dense_mlp(out, "mlp", m, d.ffn, s.tp, m.pre_linear_layernorm); break;  // exaone4_provider.py:87
    case FfnKind::moe: add_moe(out, m, d, s); break;
    case FfnKind::none: break;
  }
  return out;
}

ParamList embedding_params(const ModelSpec& m, const Derived& d, const Sharding& s, bool shared_embedding) {
  ParamList out;
  // VocabParallelEmbedding splits rows over TP (tensor_parallel/layers.py).
  add(out, "embedding.word_embeddings.weight", split(d.padded_vocab, s.tp) * m.hidden_size);
  out.back().shared_embedding = shared_embedding;
  // Learned absolute positions: a replicated torch.nn.Embedding (language_model_embedding.py).
  if (m.position_embedding_type == PositionEmbedding::learned_absolute) {
    add(out, "embedding.position_embeddings.weight", m.max_position_embeddings * m.hidden_size);
  }
  // BERT with its binary head: num_tokentypes = 2 (pretrain_bert.py:37), a replicated torch.nn.Embedding
  // (language_model_embedding.py:79-82).
  add(out, "embedding.tokentype_embeddings.weight", bert_num_tokentypes(m) * m.hidden_size);
  return out;
}

ParamList bert_lm_head_params(const ModelSpec& m) {
  ParamList out;
  if (m.architecture != Architecture::bert) return out;
  // BertLMHead (bert_lm_head.py:31-40): dense a torch.nn.Linear(h, h) (transformer/utils.py:27-34), layer_norm
  // apex's FusedLayerNorm (a LayerNorm's weight and bias; WrappedTorchNorm without apex), both replicated over TP.
  const std::int64_t h = m.hidden_size;
  add(out, "lm_head.dense.weight", h * h);
  add(out, "lm_head.dense.bias", h);
  add_norm(out, "lm_head.layer_norm", m, h);
  return out;
}

ParamList params_after_output_weight(const ModelSpec& m, const Derived& d, const Sharding& s) {
  ParamList out;
  // T5LMHead's output layer has a bias when the weight is tied (t5_model.py:55-69), split over TP.
  if (m.architecture == Architecture::t5 && m.share_embeddings_and_output_weights) add(out, "output_layer.bias", split(d.padded_vocab, s.tp));
  if (m.architecture != Architecture::bert) return out;
  const std::int64_t h = m.hidden_size;
  // The output layer's bias (bert_model.py:145-158, output_layer_bias True): ColumnParallelLinear splits it
  // over TP; registered after the weight, and allocated on the first stage too when the weight is skipped.
  add(out, "output_layer.bias", split(d.padded_vocab, s.tp));
  if (!m.bert_binary_head) return out;
  // binary_head, then pooler.dense (bert_model.py:161-169): torch.nn.Linear layers, replicated over TP.
  add(out, "binary_head.weight", 2 * h);
  add(out, "binary_head.bias", 2);
  add(out, "pooler.dense.weight", h * h);
  add(out, "pooler.dense.bias", h);
  return out;
}

ParamList output_layer_params(const ModelSpec& m, const Derived& d, const Sharding& s) {
  ParamList out;
  add(out, "output_layer.weight", split(d.padded_vocab, s.tp) * m.hidden_size);
  return out;
}

ParamList final_norm_params(const ModelSpec& m, const std::string& name) {
  ParamList out;
  add_norm(out, name, m, m.hidden_size);
  return out;
}

ParamList mtp_wrapper_params(const ModelSpec& m, const Sharding& s) {
  ParamList out;
  const std::int64_t h = m.hidden_size;
  add_norm(out, "mtp.enorm", m, h);
  add_norm(out, "mtp.hnorm", m, h);
  // eh_proj: column-parallel 2h -> h (multi_token_prediction.py:1000-1014).
  add_gemm(out, "mtp.eh_proj.weight", split(h, s.tp), 2 * h, GemmMode::column);
  return out;
}

std::int64_t router_buffer_numel_per_moe_layer(const ModelSpec& m) {
  return m.moe_router_enable_expert_bias ? 2 * m.num_moe_experts.value_or(0) : 0;
}

std::int64_t router_checkpointed_buffer_numel_per_moe_layer(const ModelSpec& m) {
  return m.moe_router_enable_expert_bias ? m.num_moe_experts.value_or(0) : 0;
}

}  // namespace peakcast::model::detail
