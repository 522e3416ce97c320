// Per-op tensor inventories of each module kind. Each builder follows the forward code of the
// pinned Megatron Core module (file references in comments) and records what autograd saves.
#include "peakcast/sim/module_graphs.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "module_blocks.hpp"
#include "peakcast/model/dsa.hpp"

namespace peakcast::sim {

using namespace detail;
using Parallel = GraphBuilder::Parallel;
using model::AttentionBackend;
using model::TransformerImpl;

ShapeContext make_shape_context(const model::RunSpec& spec, const model::Derived& d) {
  ShapeContext c;
  c.seq = spec.model.seq_length / std::max<std::int64_t>(1, d.cp);
  c.batch = spec.train.micro_batch_size;
  c.tokens = c.seq * c.batch;
  c.tp = d.tp;
  c.cp = d.cp;
  c.ep = d.ep;
  c.etp = d.etp;
  c.sequence_parallel = spec.model.sequence_parallel && d.tp > 1;
  c.local_tokens = c.sequence_parallel ? c.tokens / d.tp : c.tokens;
  c.hidden = spec.model.hidden_size;
  c.act_bytes = dtype_bytes(d.act_dtype);
  c.te = spec.model.transformer_impl == TransformerImpl::transformer_engine;
  const auto backend = spec.model.attention_backend;
  const bool dot_product = spec.model.core_attention_module == model::CoreAttentionModule::dot_product;
  c.fused_attention = c.te && backend != AttentionBackend::unfused && backend != AttentionBackend::local && !dot_product;
  // Bridge's provide() swaps the layer spec's core for Megatron's DotProductAttention under attention_backend
  // local (gpt_provider.py:277-279); EXAONE 4's spec names it itself (exaone4_provider.py:79).
  c.megatron_attention = !c.te || backend == AttentionBackend::local || dot_product;
  // Bridge's Gemma 2 core attention ignores attention_backend, except local, which swaps it for Megatron's
  // DotProductAttention (gpt_provider.py:277-279).
  c.flex_attention = spec.model.core_attention_module == model::CoreAttentionModule::gemma2 && backend != AttentionBackend::local;
  c.fp8 = spec.model.fp8.has_value();
  c.padding_mask = spec.model.architecture == model::Architecture::bert;
  c.grad_accumulation_fusion = spec.model.gradient_accumulation_fusion;
  c.moe_routing_imbalance = spec.model.moe_routing_imbalance;
  c.gpu = spec.cluster.gpu;
  if (spec.peft.enabled) {
    c.frozen_base = true;
    c.lora_rank = spec.peft.dim;
    c.lora_targets = spec.peft.target_modules;
    c.lora_dropout = spec.peft.dropout;
    c.lora_dropout_post = spec.peft.dropout_position == "post";
    c.lora_input_regather = spec.peft.sequence_parallel_input_regather;
  }
  return c;
}

ShapeContext t5_decoder_shape_context(const model::RunSpec& spec, const model::Derived& d, const ShapeContext& enc) {
  ShapeContext c = enc;
  c.seq = spec.model.decoder_seq_length.value_or(enc.seq) / std::max<std::int64_t>(1, d.cp);
  c.tokens = c.seq * c.batch;
  c.local_tokens = c.sequence_parallel ? c.tokens / c.tp : c.tokens;
  c.padding_mask = false;  // causal self-attention (t5_spec.py:94, :172)
  c.kv_seq = enc.seq;
  c.causal_mask_given = !c.te;
  return c;
}

namespace {

// attn_norm / mlp_norm: the norm op at `norm_op` runs in the group's hooks (transformer_layer.py:617-626, :750-760);
// the group commits after the bias-dropout-add that just ended the graph and frees the residual's storage
// (forced_released_tensors=[residual], :689-693, :984-991).
void tag_norm_offload(LayerGraph& g, OffloadGroup group, std::size_t norm_op, int residual) {
  g.ops[norm_op].offload_group = group;
  g.offload_commits.push_back({group, static_cast<int>(g.ops.size()) - 1, {residual}});
}

int dense_mlp_block(GraphBuilder& b, const model::RunSpec& spec, const model::Derived& d, int ln) {
  const ShapeContext& c = b.ctx();
  const auto& m = spec.model;
  const std::int64_t N = c.tokens, h = c.hidden, F = d.ffn / c.tp;
  const bool gated = m.gated_linear_unit;
  const int fc1 = b.linear("mlp.linear_fc1", ln, h, (gated ? 2 : 1) * F, Parallel::column, kMlp);
  const bool fused = fused_activation(m);
  ActivationOptions o = activation_options(m, fused);
  o.fc1_bias = m.add_bias_linear;  // fc1 is built with skip_bias_add (mlp.py:226): the activation adds it
  const int a = activation(b, "mlp.activation", fc1, N, F, gated, fused, kMlp, o);
  return row_linear(b, m, "mlp.linear_fc2", a, F, h, kMlp);
}

// mlp_chunks_for_training (transformer_layer.py:857-905): the pre-MLP norm output is split along the
// sequence (torch.chunk, dim 0) and the MLP or MoE layer runs on each chunk in turn; their outputs are
// concatenated. Each chunk saves its share, so the saved total is unchanged while the working memory of
// one MLP call shrinks with the chunk. The selective `mlp` checkpoint takes precedence (no chunking).
int ffn_block(GraphBuilder& b, const model::RunSpec& spec, const model::Derived& d, int ln, const model::LayerSpec& layer,
              LayerGraph& g) {
  const ShapeContext& c = b.ctx();
  const auto& m = spec.model;
  const bool dense = layer.ffn == model::FfnKind::dense;
  const bool mlp_checkpointed = dense && m.recompute_granularity == model::RecomputeGranularity::selective &&
                                std::find(d.selective_tags.begin(), d.selective_tags.end(), model::RecomputeTag::mlp) !=
                                    d.selective_tags.end();
  const std::int64_t seq_rows = c.local_tokens / std::max<std::int64_t>(1, c.batch);  // dim 0 of [s, b, h]
  const std::int64_t chunks = std::min<std::int64_t>(m.mlp_chunks_for_training, seq_rows);
  if (chunks <= 1 || mlp_checkpointed) return dense ? dense_mlp_block(b, spec, d, ln) : moe_block(b, spec, d, ln, g);
  const std::int64_t per = (seq_rows + chunks - 1) / chunks;  // torch.chunk: ceil-sized, the last one smaller
  const std::int64_t gather = c.sequence_parallel ? c.tp : 1;
  std::vector<int> outs;
  std::vector<std::size_t> first_op;  // each chunk's first op index
  for (std::int64_t i = 0, start = 0; start < seq_rows; ++i, start += per) {
    ShapeContext cc = c;
    cc.local_tokens = std::min(per, seq_rows - start) * c.batch;
    cc.tokens = cc.local_tokens * gather;
    GraphBuilder bc(g, cc, g.name + ".chunk" + std::to_string(i) + ".");
    first_op.push_back(g.ops.size());
    outs.push_back(dense ? dense_mlp_block(bc, spec, d, ln) : moe_block(bc, spec, d, ln, g));
  }
  if (dense && !c.grad_accumulation_fusion) {
    // Each weight now has one gradient per chunk. Autograd sums them in the weight's input buffer before
    // the DDP hook takes the sum: the first (last chunk's) gradient is kept there until the first chunk's
    // backward, and later ones add into it in place. Measured on gqa8b: at the peak two fc1 and one fc2
    // weight-sized gradients were alive in the fourth-from-last chunk's fc1 backward.
    const std::int64_t F = d.ffn / c.tp;
    const Bytes fc1_w = b.act((m.gated_linear_unit ? 2 : 1) * F, c.hidden), fc2_w = b.act(c.hidden, F);
    const std::size_t n = first_op.size();
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t end = i + 1 < n ? first_op[i + 1] : g.ops.size();
      for (std::size_t o = first_op[i]; o < end; ++o) {
        if (i + 1 < n) g.ops[o].backward_workspace += fc1_w + fc2_w;  // both sums already held
        else if (o + 1 < end) g.ops[o].backward_workspace += fc2_w;   // last chunk: fc2's sum, before fc1's exists
      }
    }
  }
  const int cat = b.tensor("mlp_chunks.cat", b.act(c.local_tokens, c.hidden));
  const int op = b.op("mlp_chunks.cat", {.in = {outs.front()}, .out = {cat}, .passthrough = true, .movement = true});
  g.ops[static_cast<std::size_t>(op)].inputs = outs;
  g.ops[static_cast<std::size_t>(op)].forward_bytes_moved = 2.0 * static_cast<double>(b.act(c.local_tokens, c.hidden).value);
  return cat;
}

}  // namespace

std::int64_t rotary_dim(const model::RunSpec& spec, const model::Derived& d) {
  const auto& m = spec.model;
  const bool rope = m.position_embedding_type == model::PositionEmbedding::rope ||
                    m.position_embedding_type == model::PositionEmbedding::yarn;
  if (!rope) return 0;
  if (m.multi_latent_attention) return m.qk_pos_emb_head_dim;
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(static_cast<double>(d.kv_channels) * m.rotary_percent));
}

LayerGraph build_layer_graph(const model::RunSpec& spec, const model::Derived& d, const ShapeContext& c,
                             const model::LayerSpec& layer, bool hybrid) {
  LayerGraph g;
  g.name = "L";  // appended, not "L" + ...: GCC 12 warns falsely on that (-Wrestrict, PR 105329)
  g.name += std::to_string(layer.index);
  GraphBuilder b(g, c, g.name + ".");
  const auto& m = spec.model;
  const std::int64_t Nl = c.local_tokens, h = c.hidden;
  const bool layer_norm = m.normalization == model::Normalization::layer_norm;
  const int x = b.input("input", b.act(Nl, h));
  int hidden = x;
  using model::FfnKind;
  using model::MixerKind;

  if (layer.mixer != MixerKind::none) {
    // Under the TE spec the input norm is fused into the first linear (IdentityOp), except for
    // MLA without q-LoRA where it is a separate TENorm; the local spec always has separate norms.
    // DSA's layer spec has its own input TENorm (experimental_attention_variant_module_specs.py:127, :245-249).
    const bool separate = !c.te || (layer.mixer == MixerKind::mla && !m.q_lora_rank) || layer.mixer == MixerKind::dsa;
    const std::size_t mixer_first = g.ops.size();
    int branch = -1;
    switch (layer.mixer) {
      case MixerKind::attention: branch = attention_block(b, spec, d, hidden, separate); break;
      case MixerKind::mla: branch = mla_block(b, spec, hidden, separate, g); break;
      case MixerKind::dsa: branch = dsa_block(b, spec, hidden, model::dsa_computes_topk(m, layer), g); break;
      case MixerKind::mamba: branch = mamba_block(b, spec, norm(b, "norm", hidden, Nl, h, layer_norm, kNoRegion)); break;
      case MixerKind::gdn: branch = gdn_block(b, spec, norm(b, "norm", hidden, Nl, h, layer_norm, kNoRegion), g); break;
      case MixerKind::none: break;
    }
    const int hook = static_cast<int>(g.ops.size()) - 1;  // linear_proj: its output's gradient arrives first
    if (separate && (layer.mixer == MixerKind::attention || layer.mixer == MixerKind::mla || layer.mixer == MixerKind::dsa)) {
      // layernorm tag: the input-norm output is discarded and comes back at the attention backward.
      for (const auto& op : g.ops) {
        if (op.regions & kInputNorm) {
          g.discards.push_back({kInputNorm, {op.outputs.front()}, hook});
          break;
        }
      }
    }
    // linear_proj is built with skip_bias_add (attention.py:420, multi_latent_attention.py:228): its bias
    // is added, and its gradient summed, by the bias-dropout-add.
    const bool proj_bias = m.add_bias_linear && (layer.mixer == MixerKind::attention || layer.mixer == MixerKind::mla);
    const int residual = hidden;
    hidden = residual_add(b, "self_attn_bda", hidden, branch, Nl, m.hidden_dropout, proj_bias, m.bias_dropout_fusion);
    // attn_norm offloads the input norm's saves unless the norm is an IdentityOp (transformer_layer.py:1428-1430):
    // the TE spec fuses it into linear_qkv for standard attention; MLA keeps a TENorm unless mla_down_proj_fusion
    // (gpt_layer_specs.py:257-266, :296), DSA its own (experimental_attention_variant_module_specs.py:127).
    const bool norm_module = (layer.mixer == MixerKind::attention && separate) || (layer.mixer == MixerKind::mla && !m.mla_down_proj_fusion) ||
                             layer.mixer == MixerKind::dsa;
    if (norm_module && m.pre_linear_layernorm && mixer_first < g.ops.size()) tag_norm_offload(g, kOffAttnNorm, mixer_first, residual);
  }
  if (layer.cross_attention) {
    // T5's decoder (transformer_layer.py:695-728): pre_cross_attn_layernorm (TENorm or LNImpl, never fused), the
    // cross-attention, and its bias-dropout-add with linear_proj's bias (skip_bias_add, attention.py:420).
    const int ln = norm(b, "pre_cross_attn_layernorm", hidden, Nl, h, layer_norm, kNoRegion);
    const int branch = cross_attention_block(b, spec, d, ln);
    hidden = residual_add(b, "cross_attn_bda", hidden, branch, Nl, m.hidden_dropout, m.add_bias_linear, m.bias_dropout_fusion);
  }
  if (layer.ffn != FfnKind::none) {
    // Dense MLPs fuse the pre-MLP norm into fc1 under TE; MoE layers keep a separate TENorm.
    const bool separate = !c.te || layer.ffn == FfnKind::moe;
    const std::uint32_t norm_region = separate ? kPreMlpNorm : (layer.ffn == FfnKind::dense ? kMlp : kNoRegion);
    // Without a pre-MLP norm (EXAONE 4: IdentityOp, transformer_layer.py:278, :759) fc1 takes the residual itself.
    const bool pre_norm = m.pre_linear_layernorm;
    const std::size_t norm_op = g.ops.size();
    const int ln = pre_norm ? norm(b, separate ? "pre_mlp_layernorm" : "pre_mlp_layernorm(fused)", hidden, Nl, h, layer_norm, norm_region) : hidden;
    const int branch = ffn_block(b, spec, d, ln, layer, g);
    const int hook = static_cast<int>(g.ops.size()) - 1;
    if (separate && pre_norm) g.discards.push_back({kPreMlpNorm, {ln}, hook});
    // fc2 likewise (mlp.py:249); an MoE layer's bias-dropout-add gets no bias (moe_layer.py returns None).
    const int residual = hidden;
    hidden = residual_add(b, "mlp_bda", hidden, branch, Nl, m.hidden_dropout, m.add_bias_linear && layer.ffn == FfnKind::dense,
                          m.bias_dropout_fusion);
    // mlp_norm: the separate pre-MLP norm (not the IdentityOp of a fused one, transformer_layer.py:1434-1436).
    if (separate && pre_norm) tag_norm_offload(g, kOffMlpNorm, norm_op, residual);
  }
  (void)hybrid;
  g.output = hidden;
  return g;
}

LayerGraph build_embedding_graph(const model::RunSpec& spec, const model::Derived& d, const ShapeContext& c) {
  if (spec.model.architecture != model::Architecture::gpt) return language_model_embedding_graph(spec, d, c);
  LayerGraph g;
  g.name = "embedding";
  GraphBuilder b(g, c, "embedding.");
  const int ids = b.input("input_ids", Bytes{c.tokens * 8});
  g.tensors[ids].requires_grad = false;
  const int out = b.tensor("out", b.act(c.local_tokens, c.hidden));
  // VocabParallelEmbedding: full [tokens, h] lookup, then reduce-scatter (SP) or all-reduce.
  const Bytes full = c.sequence_parallel ? b.act(c.tokens, c.hidden) : Bytes{};
  // Its backward builds the dense [V/tp, h] weight gradient whatever the wgrad fusion: only linear
  // layers accumulate into main_grad directly. Frozen (PEFT), it has no backward at all.
  const Bytes wgrad = c.frozen_base ? Bytes{} : b.act(d.padded_vocab / c.tp, c.hidden);
  const Bytes bws = c.frozen_base ? Bytes{} : full + wgrad;
  b.op("word_embeddings", {.in = {ids}, .out = {out}, .save = {ids}, .ws = full, .bws = bws, .param_grad = wgrad});
  int emb = out;
  if (spec.model.hidden_dropout > 0) {
    const int dropped = b.tensor("dropout.out", b.act(c.local_tokens, c.hidden));
    const int mask = b.tensor("dropout.mask", Bytes{c.local_tokens * c.hidden}, false);
    b.op("embedding_dropout", {.in = {out}, .out = {dropped, mask}, .save = {mask}});
    emb = dropped;
  }
  if (spec.model.scale_embeddings_by_hidden_size) {
    // Gemma: embeddings * sqrt(hidden_size) out of place, after the SP scatter and dropout (Bridge
    // gemma/modules.py:39-40, gemma3_provider.py:280-281). The product by a scalar keeps nothing, so the
    // lookup's output lives beside the product only while it runs.
    const int scaled = b.tensor("scaled", b.act(c.local_tokens, c.hidden));
    b.op("embedding_scale", {.in = {emb}, .out = {scaled}, .flops = 1.0 * static_cast<double>(c.local_tokens * c.hidden)});
    emb = scaled;
  }
  g.output = emb;
  return g;
}

LayerGraph build_mtp_wrapper_graph(const model::RunSpec& spec, const model::Derived& d, const ShapeContext& c) {
  LayerGraph g;
  g.name = "mtp_wrapper";
  GraphBuilder b(g, c, "mtp.");
  const auto& m = spec.model;
  const bool layer_norm = m.normalization == model::Normalization::layer_norm;
  const std::int64_t Nl = c.local_tokens, h = c.hidden;
  const int x = b.input("input", b.act(Nl, h));
  // The depth looks up the rolled token ids in the shared embedding (its own dense weight gradient in
  // backward, as the decoder's lookup).
  const int emb = b.tensor("embedding.out", b.act(Nl, h));
  const Bytes full = c.sequence_parallel ? b.act(c.tokens, h) : Bytes{};
  b.op("embedding", {.out = {emb}, .ws = full, .bws = full + b.act(d.padded_vocab / c.tp, h)});
  const int en = norm(b, "enorm", emb, Nl, h, layer_norm, kNoRegion);
  const int hn = norm(b, "hnorm", x, Nl, h, layer_norm, kNoRegion);
  const int cat = b.tensor("concat", b.act(Nl, 2 * h));
  b.op("concat", {.in = {en, hn}, .out = {cat}, .movement = true});
  // eh_proj is column-parallel without output gather; the [s, h/TP] result is gathered along the
  // hidden dimension and scattered back to sequence parallel (:1144-1157).
  const int proj = b.linear("eh_proj", cat, 2 * h, h / c.tp, Parallel::column);
  if (c.tp == 1) {
    g.output = proj;
  } else {
    const int out = b.tensor("eh_proj.gathered", b.act(Nl, h));
    b.op("gather_scatter", {.in = {proj}, .out = {out}, .ws = b.act(c.tokens, h), .movement = true, .comm = static_cast<double>(b.act(c.tokens, h).value) * (c.tp - 1) / c.tp});
    g.output = out;
  }
  return g;
}

namespace {

// Gemma2OutputLayer (Bridge gemma2_provider.py:410-425): scale * tanh(logits / scale). Dividing and multiplying
// by a Python scalar keep nothing; TanhBackward keeps its output. The layer's `output` references the
// linear's logits until the expression returns (:415-416), so they live through the product.
int logit_softcap(GraphBuilder& b, int logits, std::int64_t rows, std::int64_t cols) {
  const Bytes e = b.act(rows, cols);
  const double n = static_cast<double>(rows) * static_cast<double>(cols);
  const int divided = b.tensor("softcap.div", e);
  b.op("softcap.div", {.in = {logits}, .out = {divided}, .flops = n});
  const int t = b.tensor("softcap.tanh", e);
  b.op("softcap.tanh", {.in = {divided}, .out = {t}, .save = {t}, .flops = 2.0 * n});
  const int out = b.tensor("softcap.out", e);
  b.op("softcap.mul", {.in = {t}, .out = {out}, .keep = {logits}, .flops = n});
  return out;
}

// Whether a "major.minor[.patch]" release (validated by the spec's reader) is at least major.minor.
bool te_release_at_least(const std::string& version, int major, int minor) {
  const auto dot = version.find('.');
  if (dot == std::string::npos) return false;
  const int ma = std::stoi(version.substr(0, dot)), mi = std::stoi(version.substr(dot + 1));
  return ma > major || (ma == major && mi >= minor);
}

}  // namespace

// The language model's loss over the [tokens, V/TP] logits (language_module.py:161-206).
int detail::vocab_cross_entropy(GraphBuilder& b, const model::RunSpec& spec, int logits, std::int64_t V) {
  const auto& m = spec.model;
  const std::int64_t N = b.ctx().tokens;
  const int loss = b.tensor("loss", Bytes{N * kFp32});
  const bool te_ce = m.cross_entropy_loss_fusion && m.cross_entropy_fusion_impl == model::CrossEntropyImpl::te;
  if (te_ce && te_release_at_least(spec.cluster.transformer_engine_version, 2, 18)) {
    // TE's Triton cross-entropy from 2.18 (TE 01bbe3eea, 2026-07-09): the forward writes the logits'
    // gradient into a new fp32 [tokens, V/TP] tensor and saves only that (triton/cross_entropy.py:58,
    // cross_entropy.py:62), so the bf16 logits are freed after the loss; its backward returns the fp32
    // gradient, which autograd casts to the logits' bf16 (a new tensor) before the saved one is freed.
    const int stats = b.tensor("cross_entropy.stats", Bytes{N * kFp32 * 3}, false);
    const int grad = b.tensor("cross_entropy.grad_fp32", Bytes{N * V * kFp32}, false);
    b.op("cross_entropy", {.in = {logits}, .out = {loss, stats, grad}, .save = {grad}, .flops = 6.0 * N * V});
  } else if (te_ce) {
    // Before 2.18 TE's Triton cross-entropy keeps the logits and writes their gradient in place.
    const int stats = b.tensor("cross_entropy.stats", Bytes{N * kFp32 * 3}, false);
    b.op("cross_entropy", {.in = {logits}, .out = {loss, stats}, .save = {logits, stats}, .flops = 6.0 * N * V, .passthrough = true});
  } else {
    // vocab_parallel_cross_entropy: an fp32 copy turned into the softmax in place and saved; its
    // backward writes the fp32 gradient in place and casts it to a bf16 gradient of the logits.
    // The fused native path (fused_cross_entropy.py) runs the same steps as torch.compile'd helpers
    // (jit_fuser), and compiled calculate_gradients does not write into the saved softmax: it builds
    // the fp32 gradient in a new [tokens, V/tp] buffer (cross_entropy.py:111) before the bf16 cast.
    // Measured: exactly one fp32 logits more at that backward, at TP1, TP2 and micro-batch 2
    // (calibration/data/h200_cross_entropy.jsonl).
    const bool fused_native = m.cross_entropy_loss_fusion;
    const int softmax = b.tensor("cross_entropy.softmax_fp32", Bytes{N * V * kFp32}, false);
    const int mask = b.tensor("cross_entropy.target_mask", Bytes{N * 9}, false);
    b.op("cross_entropy", {.in = {logits}, .out = {loss, softmax, mask}, .save = {softmax, mask}, .flops = 6.0 * N * V, .bws = fused_native ? Bytes{N * V * kFp32} : Bytes{}});
  }
  return loss;
}

LayerGraph build_output_graph(const model::RunSpec& spec, const model::Derived& d, const ShapeContext& c) {
  if (spec.model.architecture == model::Architecture::bert) return bert_output_graph(spec, d, c);
  LayerGraph g;
  g.name = "output";
  GraphBuilder b(g, c, "output.");
  const auto& m = spec.model;
  const int x = b.input("input", b.act(c.local_tokens, c.hidden));
  const int ln = norm(b, "final_layernorm", x, c.local_tokens, c.hidden,
                      m.normalization == model::Normalization::layer_norm, kNoRegion);
  const std::int64_t V = d.padded_vocab / c.tp;
  // The output layer is Megatron's ColumnParallelLinear even under TE (its SP gather uses the global buffer).
  ShapeContext local = c;
  local.te = false;
  GraphBuilder lb(g, local, "output.");
  const std::size_t output_op = g.ops.size();
  const int logits = lb.linear("output_layer", ln, c.hidden, V, Parallel::column);
  g.ops[output_op].backward_takes_workspaces = true;
  if (m.architecture == model::Architecture::t5 && m.share_embeddings_and_output_weights) {
    // T5LMHead: tied, the output layer has a bias it adds out of place (t5_model.py:55-69; tensor_parallel/layers.py
    // :575-577, the GEMM's result beside the sum) and whose gradient it sums (:725).
    g.ops[output_op].forward_workspace += b.act(c.tokens, V);
    g.ops[output_op].backward_workspace += bias_grad_transient(b, c.tokens, V);
  }
  g.deferred_input = ln;
  g.deferred_output = logits;
  // Gemma 2 soft-caps the logits on the last stage when final_logit_softcapping is set (:413-417, :520-524).
  const bool softcap = m.final_logit_softcapping && *m.final_logit_softcapping != 0.0;
  const int head = softcap ? logit_softcap(b, logits, c.tokens, V) : logits;
  g.output = vocab_cross_entropy(b, spec, head, V);
  return g;
}

Bytes global_memory_buffer_bytes(const model::RunSpec& spec, const model::Derived&, const ShapeContext& c) {
  std::int64_t elements = 0;
  // SP all-gather of Megatron-native column-parallel linears (the output layer always; every
  // linear of the local spec): [tokens, k] for the widest input.
  // SP all-gather target of Megatron-native column-parallel linears (the output layer always,
  // every linear of the local spec): [tokens, hidden], the widest gathered input.
  if (c.sequence_parallel) elements = c.tokens * c.hidden;
  if (!c.fused_attention && !c.flex_attention) {
    // Local DotProductAttention's baddbmm scratch: b * heads_per_rank * s * s.
    const std::int64_t hq = spec.model.num_attention_heads / c.tp;
    elements = std::max(elements, c.batch * hq * c.seq * c.seq);
  }
  return Bytes{elements * c.act_bytes};
}

}  // namespace peakcast::sim
