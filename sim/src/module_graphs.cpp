// Per-op tensor inventories of each module kind. Each builder follows the forward code of the
// pinned Megatron Core module (file references in comments) and records what autograd saves.
#include "peakcast/sim/module_graphs.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "graph_builder.hpp"

namespace peakcast::sim {

using detail::GraphBuilder;
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
  c.fused_attention = c.te && backend != AttentionBackend::unfused && backend != AttentionBackend::local;
  c.fp8 = spec.model.fp8.has_value();
  c.grad_accumulation_fusion = spec.model.gradient_accumulation_fusion;
  c.moe_routing_imbalance = spec.model.moe_routing_imbalance;
  return c;
}

namespace {

constexpr std::int64_t kFp32 = 4;

// A norm module: RMSNorm saves its input and the fp32 inverse RMS per row; LayerNorm also the mean.
int norm(GraphBuilder& b, const std::string& name, int x, std::int64_t rows, std::int64_t cols,
         bool layer_norm, std::uint32_t region) {
  const int out = b.tensor(name + ".out", b.act(rows, cols));
  const int stats = b.tensor(name + ".rstd", Bytes{rows * kFp32 * (layer_norm ? 2 : 1)}, false);
  b.op(name, {.in = {x}, .out = {out, stats}, .save = {x, stats}, .region = region,
              .flops = 5.0 * rows * cols});
  return out;
}

int residual_add(GraphBuilder& b, const std::string& name, int residual, int branch, std::int64_t rows,
                 double dropout) {
  const ShapeContext& c = b.ctx();
  const int out = b.tensor(name + ".out", b.act(rows, c.hidden));
  if (dropout > 0) {
    // Bias-dropout-add keeps a 1-byte mask per element for its backward.
    const int mask = b.tensor(name + ".dropout_mask", Bytes{rows * c.hidden}, false);
    b.op(name, {.in = {residual, branch}, .out = {out, mask}, .save = {mask}, .flops = 3.0 * rows * c.hidden});
  } else {
    b.op(name, {.in = {residual, branch}, .out = {out}, .flops = 1.0 * rows * c.hidden, .passthrough = true});
  }
  return out;
}

// Activation of an MLP whose fc1 output has `width` columns per rank (2x for gated units).
int activation(GraphBuilder& b, const std::string& name, int fc1, std::int64_t rows, std::int64_t ffn,
               bool gated, bool fused, std::uint32_t region, int probs = -1, bool fp8_input_store = false,
               bool probs_need_grad = true) {
  const int out = b.tensor(name + ".out", b.act(rows, ffn));
  const double flops = (gated ? 6.0 : 3.0) * rows * ffn;
  if (fused || !gated) {
    // bias_swiglu / weighted_swiglu / squared ReLU fusions save only their inputs. With
    // activation_func_fp8_input_store the SwiGLU saves an FP8 copy of its input instead
    // (fused_bias_swiglu.py:117, :195): one byte an element, and fc1's bf16 output is let go.
    int saved = fc1;
    if (fused && gated && fp8_input_store) {
      saved = b.tensor(name + ".input_fp8", Bytes{rows * 2 * ffn}, false);
      b.op(name + ".to_fp8", {.in = {fc1}, .out = {saved}, .region = region, .flops = 2.0 * rows * ffn});
    }
    if (probs >= 0) {
      b.op(name, {.in = {saved, probs}, .out = {out}, .save = {saved, probs}, .region = region, .flops = flops});
    } else {
      b.op(name, {.in = {saved}, .out = {out}, .save = {saved}, .region = region, .flops = flops});
    }
    return out;
  }
  // Unfused GLU (mlp.py glu, experts.py): chunk views, silu(x0) saves x0 (so all of fc1's output
  // stays), and act(x0) * (x1 + glu_linear_offset): the addition makes a new tensor even for the
  // default offset 0.0, and the product saves both of its operands.
  // Each of the two reads one half of fc1's output and writes a tensor of that half's size.
  const double half_traffic = 2.0 * static_cast<double>(b.act(rows, ffn).value);
  const int act0 = b.tensor(name + ".silu", b.act(rows, ffn));
  b.op(name + ".silu", {.in = {fc1}, .out = {act0}, .save = {fc1}, .region = region, .flops = 4.0 * rows * ffn,
                        .bytes_moved = half_traffic});
  const int lin = b.tensor(name + ".linear_plus_offset", b.act(rows, ffn));
  b.op(name + ".linear_offset", {.in = {fc1}, .out = {lin}, .region = region, .flops = 1.0 * rows * ffn,
                                 .bytes_moved = half_traffic});
  if (probs < 0) {
    b.op(name + ".glu_mul", {.in = {act0, lin}, .out = {out}, .save = {act0, lin}, .region = region,
                             .flops = 1.0 * rows * ffn});
    return out;
  }
  const int glu = b.tensor(name + ".glu", b.act(rows, ffn));
  b.op(name + ".glu_mul", {.in = {act0, lin}, .out = {glu}, .save = {act0, lin}, .region = region,
                           .flops = 1.0 * rows * ffn});
  // MLP.forward(per_token_scale=probs) multiplies by the router probabilities and saves both; probs of
  // ones (moe_apply_probs_on_input) need no gradient, so the product keeps only them (measured).
  if (probs_need_grad) {
    b.op(name + ".prob_mul", {.in = {glu, probs}, .out = {out}, .save = {glu, probs}, .region = region,
                              .flops = 1.0 * rows * ffn});
  } else {
    b.op(name + ".prob_mul", {.in = {glu, probs}, .out = {out}, .save = {probs}, .region = region,
                              .flops = 1.0 * rows * ffn});
  }
  return out;
}

// The causal mask the unfused path builds on every forward when none is passed: an fp32 [s, s]
// scratch turned into a bool [s, s] mask, which masked_fill_ saves.
// Bytes of the bool [s, s] causal mask the softmax reads.
std::int64_t c_seq_sq(const GraphBuilder& b) { return b.ctx().seq * b.ctx().seq; }

int causal_mask(GraphBuilder& b, std::int64_t seq) {
  const int mask = b.tensor("causal_mask", Bytes{seq * seq}, false);
  b.op("make_causal_mask", {.out = {mask}, .region = kCoreAttn, .ws = Bytes{seq * seq * kFp32}});
  return mask;
}

// forward_torch_softmax (fused_softmax.py:299-342) with softmax_in_fp32: an fp32 copy of the
// scores (kept by a local until the function returns), the mask filled in place, the fp32 softmax
// (saved), and the cast back to the activation dtype (saved by the context bmm). Each cast is an
// autograd node, so the backward holds fp32 and bf16 gradients of size E in turn.
int torch_fp32_softmax(GraphBuilder& b, int scores, double E, std::int64_t act_bytes, int mask) {
  const auto e = [&](std::int64_t bytes) { return Bytes{static_cast<std::int64_t>(E) * bytes}; };
  const int s32 = b.tensor("softmax.input_fp32", e(kFp32));
  b.op("softmax.to_fp32", {.in = {scores}, .out = {s32}, .region = kCoreAttn});
  const int p32 = b.tensor("softmax.fp32", e(kFp32));
  // masked_fill_ runs in place and saves the mask; its backward writes a new masked gradient.
  // Two kernels: masked_fill_ (read and write the fp32 scores) and softmax (read, write).
  b.op("softmax", {.in = {s32, mask}, .out = {p32}, .save = {p32, mask}, .region = kCoreAttn, .flops = 5.0 * E,
                   .bws = e(kFp32), .bytes_moved = 4.0 * E * kFp32 + double(c_seq_sq(b))});
  const int probs = b.tensor("softmax.out", e(act_bytes));
  b.op("softmax.to_act_dtype", {.in = {p32}, .out = {probs}, .keep = {s32}, .region = kCoreAttn});
  return probs;
}

// The unfused attention's softmax over the scores (fused_softmax.py forward_torch_softmax), with the
// causal mask it builds; returns the probabilities the context bmm saves.
int local_softmax(GraphBuilder& b, int scores, double E, bool in_fp32) {
  const ShapeContext& c = b.ctx();
  const int mask = causal_mask(b, c.seq);
  if (in_fp32) return torch_fp32_softmax(b, scores, E, c.act_bytes, mask);
  const Bytes probs_bytes{static_cast<std::int64_t>(E) * c.act_bytes};
  const int probs = b.tensor("softmax.out", probs_bytes);
  // Two kernels: masked_fill_ in place on the scores (read, write) and softmax (read, write).
  b.op("softmax", {.in = {scores, mask}, .out = {probs}, .save = {probs, mask}, .region = kCoreAttn,
                   .flops = 5.0 * E, .bws = probs_bytes,
                   .bytes_moved = 4.0 * E * double(c.act_bytes) + double(c_seq_sq(b))});
  return probs;
}

// The unfused RoPE (rope_utils.py _apply_rotary_pos_emb_bshd) makes cos and sin of the frequencies
// in the activation dtype on every call, [s, 1, 1, rot], and the two products save them: four per
// layer (Q and K). The fused kernel (apply_rope_fusion) saves only the shared frequencies: 0 bytes.
int rope_cos_sin(GraphBuilder& b, const model::ModelSpec& m, std::int64_t rot_dim) {
  const ShapeContext& c = b.ctx();
  return b.tensor("rope.cos_sin", Bytes{m.apply_rope_fusion ? 0 : 4 * c.seq * rot_dim * c.act_bytes}, false);
}

// Under FP8 with a recipe other than delayed scaling, Megatron makes TE's linear_proj save its bf16
// input (attention.py:428-444, set_save_original_input; TE linear.py keeps `inp` when
// save_original_input): the attention output fused attention saves anyway, not a second FP8 copy.
bool proj_saves_original_input(const model::RunSpec& spec, const ShapeContext& c) {
  return c.te && c.fp8 && spec.model.fp8_recipe != model::Fp8Recipe::delayed;
}

// Standard / GQA self-attention with RoPE (attention.py SelfAttention).
int attention_block(GraphBuilder& b, const model::RunSpec& spec, const model::Derived& d, int x,
                    bool separate_norm) {
  const ShapeContext& c = b.ctx();
  const auto& m = spec.model;
  const std::int64_t N = c.tokens, Nl = c.local_tokens, h = c.hidden;
  const std::int64_t hq = m.num_attention_heads / c.tp;
  const std::int64_t hkv = std::max<std::int64_t>(1, d.query_groups / c.tp);
  const std::int64_t hd = d.kv_channels;
  int ln = x;
  if (separate_norm) ln = norm(b, "input_layernorm", x, Nl, h, m.normalization == model::Normalization::layer_norm, kInputNorm);
  else ln = norm(b, "input_layernorm(fused)", x, Nl, h, m.normalization == model::Normalization::layer_norm, kNoRegion);
  // With the output gate the fused projection also yields a query-sized gate (a view of its output).
  const std::int64_t gate_cols = m.attention_output_gate ? hq * hd : 0;
  const int qkv = b.linear("linear_qkv", ln, h, (hq + 2 * hkv) * hd + gate_cols, Parallel::column);
  // The gate is reshaped from [s, b, groups, heads/group x hd] to [s, b, heads, hd]
  // (get_query_key_value_tensors, attention.py:1933): with more than one query group on the rank the
  // split view cannot be merged, so that is a copy (measured: one query-sized block per layer, and the
  // fused QKV output freed as without the gate); with one group it stays a view of the QKV output.
  int gate = qkv;
  if (m.attention_output_gate && hkv > 1) {
    gate = b.tensor("output_gate.gate", b.act(N, hq * hd));
    b.op("gate_reshape", {.in = {qkv}, .out = {gate}, .bytes_moved = 2.0 * static_cast<double>(b.act(N, hq * hd).value),
                          .movement = true});
  }
  // RoPE makes new Q and K; V stays a view of the fused QKV output, so saving V keeps all of it.
  const int q = b.tensor("q_rope", b.act(N, hq * hd));
  const int k = b.tensor("k_rope", b.act(N, hkv * hd));
  if (const std::int64_t rot = rotary_dim(spec, d); rot > 0) {
    const int cs = rope_cos_sin(b, m, rot);
    b.op("rotary", {.in = {qkv}, .out = {q, k, cs}, .save = {cs}, .flops = 6.0 * N * (hq + hkv) * rot});
  } else {
    b.op("rotary", {.in = {qkv}, .out = {q, k}});
  }
  const int ctx = b.tensor("core_attention.out", b.act(N, hq * hd));
  const double causal_flops = 2.0 * 2.0 * c.batch * hq * double(c.seq) * c.seq * hd * 0.5;
  if (c.fused_attention) {
    // TE fused/flash attention saves Q, K, V, its output and the fp32 softmax statistics.
    const int lse = b.tensor("core_attention.softmax_lse", Bytes{c.batch * hq * c.seq * kFp32}, false);
    Bytes cp_ws{};
    if (c.cp > 1) cp_ws = b.act(N, 2 * hkv * hd) * 2;  // KV ring: the chunk in flight and the next
    const int core = b.op("core_attention", {.in = {q, k, qkv}, .out = {ctx, lse}, .save = {q, k, qkv, ctx, lse},
                                             .region = kCoreAttn, .flops = causal_flops,
                                             .backward_flops = 2.5 * causal_flops, .ws = cp_ws, .bws = cp_ws,
                                             .attention = true, .fused_attention = true});
    (void)core;
  } else {
    // Local DotProductAttention (dot_product_attention.py): scores and probabilities of size E.
    const double E = double(c.batch) * hq * c.seq * c.seq;
    const auto e = [&](std::int64_t bytes) { return Bytes{static_cast<std::int64_t>(E) * bytes}; };
    int kx = k, vx = qkv;
    if (hq / hkv > 1) {
      kx = b.tensor("gqa_expand.k", b.act(N, hq * hd));
      vx = b.tensor("gqa_expand.v", b.act(N, hq * hd));
      b.op("gqa_expand", {.in = {k, qkv}, .out = {kx, vx}, .region = kCoreAttn});
    }
    const int scores = b.tensor("scores", e(c.act_bytes));
    // The unfused core's batched GEMMs: the microbenchmark's "attention" class (time.json).
    b.op("baddbmm", {.in = {q, kx}, .out = {scores}, .save = {q, kx}, .region = kCoreAttn,
                     .flops = causal_flops, .backward_flops = 2 * causal_flops, .attention = true});
    int probs = local_softmax(b, scores, E, m.attention_softmax_in_fp32);
    if (m.attention_dropout > 0) {
      const int mask = b.tensor("attention_dropout.mask", e(1), false);
      const int dropped = b.tensor("attention_dropout.out", e(c.act_bytes));
      b.op("attention_dropout", {.in = {probs}, .out = {dropped, mask}, .save = {mask}, .region = kCoreAttn,
                                 .flops = 2.0 * E});
      probs = dropped;
    }
    const int ctx_raw = b.tensor("context", b.act(N, hq * hd));
    b.op("bmm", {.in = {probs, vx}, .out = {ctx_raw}, .save = {probs, vx}, .region = kCoreAttn,
                 .flops = causal_flops, .backward_flops = 2 * causal_flops, .attention = true});
    // The raw scores stay referenced by locals until the attention forward returns.
    b.op("context_permute", {.in = {ctx_raw}, .out = {ctx}, .keep = {scores}, .region = kCoreAttn});
  }
  int proj_in = ctx;
  if (m.attention_output_gate) {
    // _apply_output_gate (attention.py:1625-1632, torch.compile'd): x * sigmoid(gate.float()) cast back.
    // Its backward needs both inputs, saved as they are (measured: the core output and the reshaped
    // gate, nothing else); the sigmoid is recomputed. It sits outside the core_attn checkpoint.
    proj_in = b.tensor("output_gate.out", b.act(N, hq * hd));
    b.op("output_gate", {.in = {ctx, gate}, .out = {proj_in}, .save = {ctx, gate}, .flops = 5.0 * N * hq * hd,
                         .bytes_moved = 3.0 * static_cast<double>(b.act(N, hq * hd).value)});
  }
  return b.linear("linear_proj", proj_in, hq * hd, h, Parallel::row, kNoRegion, -1, true, proj_saves_original_input(spec, c));
}

// Multi-latent attention (multi_latent_attention.py MLASelfAttention).
int mla_block(GraphBuilder& b, const model::RunSpec& spec, int x, bool separate_norm, LayerGraph& g) {
  const ShapeContext& c = b.ctx();
  const auto& m = spec.model;
  const std::int64_t N = c.tokens, Nl = c.local_tokens, h = c.hidden;
  const std::int64_t hq = m.num_attention_heads / c.tp;
  const std::int64_t qk = m.qk_head_dim, rope = m.qk_pos_emb_head_dim, vd = m.v_head_dim;
  const bool ln_kind = m.normalization == model::Normalization::layer_norm;
  const int ln = norm(b, separate_norm ? "input_layernorm" : "input_layernorm(fused)", x, Nl, h, ln_kind,
                      separate_norm ? kInputNorm : kNoRegion);
  int q = -1;
  if (m.q_lora_rank) {
    const std::int64_t r = *m.q_lora_rank;
    const int qd = b.linear("linear_q_down_proj", ln, h, r, Parallel::none, kNoRegion, Nl);
    const int qn = norm(b, "q_layernorm", qd, Nl, r, ln_kind, kNoRegion);
    q = b.linear("linear_q_up_proj", qn, r, hq * (qk + rope), Parallel::column, kMlaUpProj);
  } else {
    q = b.linear("linear_q_proj", ln, h, hq * (qk + rope), Parallel::column, kMlaUpProj);
  }
  const int kvd = b.linear("linear_kv_down_proj", ln, h, m.kv_lora_rank + rope, Parallel::none, kNoRegion, Nl);
  const int kvn = norm(b, "kv_layernorm", kvd, Nl, m.kv_lora_rank, ln_kind, kNoRegion);
  const int kv = b.linear("linear_kv_up_proj", kvn, m.kv_lora_rank, hq * (qk + vd), Parallel::column, kMlaUpProj);
  const int query = b.tensor("query", b.act(N, hq * (qk + rope)));
  const int key = b.tensor("key", b.act(N, hq * (qk + rope)));
  const int value = b.tensor("value", b.act(N, hq * vd));
  const int cs = rope_cos_sin(b, m, rope);  // for the Q and the K rotation
  b.op("rope_q", {.in = {q}, .out = {query, cs}, .save = {cs}, .region = kMlaUpProj, .flops = 6.0 * N * hq * rope});
  // The positional key is gathered under SP, rotated, expanded per head and concatenated.
  b.op("rope_k_cat", {.in = {kv, kvd}, .out = {key}, .region = kMlaUpProj, .flops = 6.0 * N * rope});
  b.op("value_contiguous", {.in = {kv}, .out = {value}, .region = kMlaUpProj});
  const int ctx = b.tensor("core_attention.out", b.act(N, hq * vd));
  const double flops = 2.0 * c.batch * hq * double(c.seq) * c.seq * (qk + rope + vd) * 0.5;
  int core = -1;
  if (c.fused_attention) {
    const int lse = b.tensor("core_attention.softmax_lse", Bytes{c.batch * hq * c.seq * kFp32}, false);
    core = b.op("core_attention", {.in = {query, key, value}, .out = {ctx, lse}, .save = {query, key, value, ctx, lse},
                                   .region = kCoreAttn, .flops = flops, .backward_flops = 2.5 * flops,
                                   .attention = true, .fused_attention = true});
  } else {
    const double E = double(c.batch) * hq * c.seq * c.seq;
    const auto e = [&](std::int64_t bytes) { return Bytes{static_cast<std::int64_t>(E) * bytes}; };
    const int scores = b.tensor("scores", e(c.act_bytes));
    // The unfused batched GEMMs compute every (q, k) pair, masked or not: no causal halving.
    const double qk_flops = 2.0 * c.batch * hq * double(c.seq) * c.seq * (qk + rope);
    const double pv_flops = 2.0 * c.batch * hq * double(c.seq) * c.seq * vd;
    core = b.op("baddbmm", {.in = {query, key}, .out = {scores}, .save = {query, key}, .region = kCoreAttn,
                            .flops = qk_flops, .backward_flops = 2 * qk_flops, .attention = true});
    int probs = local_softmax(b, scores, E, m.attention_softmax_in_fp32);
    const int ctx_raw = b.tensor("context", b.act(N, hq * vd));
    b.op("bmm", {.in = {probs, value}, .out = {ctx_raw}, .save = {probs, value}, .region = kCoreAttn,
                 .flops = pv_flops, .backward_flops = 2 * pv_flops, .attention = true});
    b.op("context_permute", {.in = {ctx_raw}, .out = {ctx}, .keep = {scores}, .region = kCoreAttn});
  }
  // mla_up_proj discards Q, K, V after core attention; they come back after linear_proj's dgrad.
  g.discards.push_back({kMlaUpProj, {query, key, value}, core});
  return b.linear("linear_proj", ctx, hq * vd, h, Parallel::row, kNoRegion, -1, true, proj_saves_original_input(spec, c));
}

// mlp.py / experts.py: the activation is one fused kernel only with bias_activation_fusion or TE's
// activation op; Transformer Engine linears alone leave the GLU to the unfused Python path.
bool fused_activation(const model::ModelSpec& m) { return m.bias_activation_fusion || m.use_te_activation_func; }

int dense_mlp_block(GraphBuilder& b, const model::RunSpec& spec, const model::Derived& d, int ln) {
  const ShapeContext& c = b.ctx();
  const auto& m = spec.model;
  const std::int64_t N = c.tokens, h = c.hidden, F = d.ffn / c.tp;
  const bool gated = m.gated_linear_unit;
  const int fc1 = b.linear("mlp.linear_fc1", ln, h, (gated ? 2 : 1) * F, Parallel::column, kMlp);
  const bool fused = fused_activation(m);
  const int a = activation(b, "mlp.activation", fc1, N, F, gated, fused, kMlp, -1, m.activation_func_fp8_input_store);
  return b.linear("mlp.linear_fc2", a, F, h, Parallel::row, kMlp);
}

// MoE layer (moe_layer.py): shared experts, router, dispatch, experts, combine.
int moe_block(GraphBuilder& b, const model::RunSpec& spec, const model::Derived& d, int ln, LayerGraph& g) {
  const ShapeContext& c = b.ctx();
  const auto& m = spec.model;
  const std::int64_t T = c.local_tokens, h = c.hidden;
  const std::int64_t E = m.num_moe_experts.value_or(1), k = m.moe_router_topk;
  const std::int64_t local_experts = std::max<std::int64_t>(1, E / c.ep);
  const std::int64_t Fe = d.moe_ffn / c.etp;
  const bool gated = m.gated_linear_unit;
  // Dropless routing: each routed token-expert pair becomes one row on the receiving rank.
  std::int64_t R_ep = static_cast<std::int64_t>(std::ceil(double(T) * k * c.moe_routing_imbalance));
  if (m.moe_expert_capacity_factor && m.moe_pad_expert_input_to_capacity) {
    const auto cap = static_cast<std::int64_t>(std::ceil(double(T) * k / E * *m.moe_expert_capacity_factor));
    R_ep = cap * E;  // every rank sends full capacity to every expert
  }
  // Under expert tensor parallelism the dispatcher all-gathers the received rows over the ETP group
  // (dispatch_postprocess, token_dispatcher.py:738): every ETP rank runs its slice of the experts
  // on the rows of all of them, and reduce-scatters the output back (combine_preprocess).
  const std::int64_t R = R_ep * c.etp;
  const std::uint32_t moe_region = kMoe;

  int shared_out = -1;
  if (m.moe_shared_expert_intermediate_size) {
    const std::int64_t Fs = *m.moe_shared_expert_intermediate_size / c.tp;
    const std::uint32_t region = moe_region | (m.moe_shared_expert_overlap ? 0u : kSharedExperts);
    int fc1_in = ln;
    if (m.moe_shared_expert_overlap && c.sequence_parallel) {
      // Overlapped shared experts gather their input inside the dispatcher (cached_fc1_input,
      // shared_experts.py pre_forward_comm) and run fc1 on the gathered copy, which fc1 saves.
      fc1_in = b.tensor("shared_experts.gathered_input", b.act(c.tokens, h));
      const double gathered = static_cast<double>(b.act(c.tokens, h).value) * (c.tp - 1) / c.tp;
      // A collective's time is its wire time (comm); its HBM traffic overlaps it, so no bytes_moved.
      b.op("shared_experts.all_gather", {.in = {ln}, .out = {fc1_in}, .region = region, .bytes_moved = 0, .comm = gathered});
      ShapeContext no_sp = c;
      no_sp.sequence_parallel = false;
      GraphBuilder gb(g, no_sp, g.name + ".");
      const int f1 = gb.linear("shared_experts.linear_fc1", fc1_in, h, (gated ? 2 : 1) * Fs, Parallel::column, region);
      const int a = activation(gb, "shared_experts.activation", f1, c.tokens, Fs, gated, fused_activation(m), region, -1,
                               m.activation_func_fp8_input_store);
      const int full = gb.linear("shared_experts.linear_fc2", a, Fs, h, Parallel::row, region);
      // The output is reduce-scattered back to the sequence-parallel shard in the combine.
      shared_out = b.tensor("shared_experts.output", b.act(c.local_tokens, h));
      b.op("shared_experts.reduce_scatter", {.in = {full}, .out = {shared_out}, .region = region, .bytes_moved = 0,
                                             .comm = gathered});
    }
  }
  if (m.moe_shared_expert_intermediate_size && !(m.moe_shared_expert_overlap && c.sequence_parallel)) {
    const std::int64_t Fs = *m.moe_shared_expert_intermediate_size / c.tp;
    const std::uint32_t region = moe_region | (m.moe_shared_expert_overlap ? 0u : kSharedExperts);
    const int f1 = b.linear("shared_experts.linear_fc1", ln, h, (gated ? 2 : 1) * Fs, Parallel::column, region);
    const int a = activation(b, "shared_experts.activation", f1, c.tokens, Fs, gated, fused_activation(m), region, -1,
                             m.activation_func_fp8_input_store);
    shared_out = b.linear("shared_experts.linear_fc2", a, Fs, h, Parallel::row, region);
  }

  const DType router_dtype = m.moe_router_dtype;
  const std::int64_t rb = dtype_bytes(router_dtype);
  const int logits = b.tensor("router.logits", Bytes{T * E * rb});
  b.op("router.gating", {.in = {ln}, .out = {logits}, .save = {ln}, .region = moe_region, .flops = 2.0 * T * h * E,
                         .gemm = true});
  const int scores = b.tensor("router.scores", Bytes{T * E * kFp32});
  const int probs = b.tensor("router.probs", Bytes{T * E * kFp32});
  const int routing_map = b.tensor("router.routing_map", Bytes{T * E}, false);
  b.op("router.topk", {.in = {logits}, .out = {scores, probs, routing_map}, .save = {scores, routing_map},
                       .region = moe_region, .flops = 10.0 * T * E});
  const int permuted = b.tensor("dispatch.permuted_tokens", b.act(T * k, h));
  const int permuted_probs = b.tensor("dispatch.permuted_probs", Bytes{T * k * kFp32});
  const int row_map = b.tensor("dispatch.row_id_map", Bytes{T * E * 4}, false);
  b.op("dispatch.permute", {.in = {ln, probs, routing_map}, .out = {permuted, permuted_probs, row_map},
                            .save = {row_map}, .region = moe_region, .movement = true});
  Bytes gather_ws{};
  if (m.moe_token_dispatcher_type == model::Dispatcher::allgather) {
    gather_ws = b.act(T * c.ep * c.etp, h);  // hidden states gathered over the EP x ETP group (tp_ep_group)
  }
  const int received = b.tensor("dispatch.received", b.act(R, h));
  const int recv_probs = b.tensor("dispatch.received_probs", Bytes{R * kFp32});
  // Wire bytes per rank: alltoall sends the (ep-1)/ep of its routed rows that leave the rank;
  // allgather gathers the hidden states of the EP x TP group (and reduce-scatters them back).
  double dispatch_comm = 0;
  if (m.moe_token_dispatcher_type == model::Dispatcher::allgather) {
    const std::int64_t group = c.ep * c.tp;
    if (group > 1) dispatch_comm = static_cast<double>(gather_ws.value) * (group - 1) / group;
  } else if (c.ep > 1 && m.moe_token_dispatcher_type == model::Dispatcher::flex) {
    // DeepEP / HybridEP send a token once to each rank that holds one of its experts, not once per
    // expert: with E experts over ep ranks and top-k routing spread evenly, a token reaches
    // ep (1 - C(E - E/ep, k) / C(E, k)) ranks, (ep - 1) / ep of them remote.
    const double E_ = static_cast<double>(E), per_rank = E_ / static_cast<double>(c.ep);
    double miss = 1.0;  // C(E - E/ep, k) / C(E, k): no expert of a given rank among the k
    for (std::int64_t i = 0; i < k; ++i) miss *= std::max(0.0, (E_ - per_rank - static_cast<double>(i)) / (E_ - static_cast<double>(i)));
    const double ranks_hit = static_cast<double>(c.ep) * (1.0 - miss);
    const double tokens_sent = static_cast<double>(R) / static_cast<double>(k) * ranks_hit;
    dispatch_comm = static_cast<double>(b.act(1, h).value) * tokens_sent * (c.ep - 1) / c.ep;
  } else if (c.ep > 1) {
    dispatch_comm = static_cast<double>(b.act(R_ep, h).value) * (c.ep - 1) / c.ep;
  }
  // The ETP all-gather after the all-to-all (and its reduce-scatter in the combine): a ring moves
  // (etp - 1) of the etp shares to each rank.
  if (m.moe_token_dispatcher_type != model::Dispatcher::allgather && c.etp > 1)
    dispatch_comm += static_cast<double>(b.act(R_ep, h).value) * static_cast<double>(c.etp - 1);
  // The token counts per expert go to the host before the experts run (alltoall splits,
  // SequentialMLP's and the grouped GEMM's per-expert row counts): one blocking sync per layer.
  b.op("dispatch.all_to_all", {.in = {permuted, permuted_probs}, .out = {received, recv_probs}, .region = moe_region,
                               .ws = gather_ws, .bws = gather_ws, .bytes_moved = 0, .sync = true, .comm = dispatch_comm});
  int expert_in = received;
  // Rows arrive grouped by source rank (EP, then ETP); more than one local expert needs them
  // regrouped by expert, a copy (sort_chunks_by_idxs, token_dispatcher.py:779).
  const bool sorts = (c.ep > 1 || c.etp > 1) && local_experts > 1;
  if (sorts) {
    expert_in = b.tensor("dispatch.sorted", b.act(R, h));
    b.op("dispatch.sort_chunks", {.in = {received}, .out = {expert_in}, .region = moe_region, .movement = true});
  }
  const bool grouped = m.moe_grouped_gemm && c.te;
  if (m.moe_apply_probs_on_input) {
    // experts.py:782-790 (grouped) and :1329-1338 (SequentialMLP): the probabilities scale the rows before
    // fc1 (measured: a new activation-dtype block per layer); the multiply saves both its inputs, so the
    // unscaled rows stay beside fc1's saved, scaled ones. The experts then get probs of ones.
    const int scaled = b.tensor("experts.probs_on_input", b.act(R, h));
    b.op("experts.apply_probs_on_input", {.in = {expert_in, recv_probs}, .out = {scaled}, .save = {expert_in, recv_probs},
                                          .region = moe_region, .flops = 2.0 * R * h});
    expert_in = scaled;
  }
  const std::size_t first_expert_op = g.ops.size();
  const int f1 = b.linear("experts.linear_fc1", expert_in, h, (gated ? 2 : 1) * Fe, Parallel::none, moe_region, R);
  int a = -1;
  if (grouped) {
    // TEGroupedMLP applies the probs inside the weighted activation (experts.py:728-900).
    a = activation(b, "experts.activation", f1, R, Fe, gated, fused_activation(m),
                   moe_region | kMoeAct, recv_probs, m.activation_func_fp8_input_store);
  } else {
    a = activation(b, "experts.activation", f1, R, Fe, gated, m.bias_activation_fusion, moe_region, recv_probs,
                   m.activation_func_fp8_input_store, !m.moe_apply_probs_on_input);
  }
  const int f2 = b.linear("experts.linear_fc2", a, Fe, h, Parallel::none, moe_region, R);
  // SequentialMLP runs each local expert's MLP in a Python loop (experts.py SequentialMLP.forward).
  if (!grouped) for (std::size_t i = first_expert_op; i < g.ops.size(); ++i) g.ops[i].host_calls = static_cast<double>(local_experts);
  if (grouped) g.discards.push_back({kMoeAct, {a}, static_cast<int>(g.ops.size()) - 1});
  int expert_out = f2;
  if (!grouped) {
    // SequentialMLP concatenates the per-expert outputs into one tensor.
    expert_out = b.tensor("experts.cat", b.act(R, h));
    b.op("experts.cat", {.in = {f2}, .out = {expert_out}, .region = moe_region, .movement = true});
  }
  int back = expert_out;
  if (sorts) {
    back = b.tensor("combine.unsorted", b.act(R, h));
    b.op("combine.sort_chunks", {.in = {expert_out}, .out = {back}, .region = moe_region, .movement = true});
  }
  const int returned = b.tensor("combine.returned", b.act(T * k, h));
  b.op("combine.all_to_all", {.in = {back}, .out = {returned}, .region = moe_region, .ws = gather_ws, .bws = gather_ws, .bytes_moved = 0,
                              .comm = dispatch_comm});
  const int out = b.tensor("combine.unpermuted", b.act(T, h));
  b.op("combine.unpermute", {.in = {returned}, .out = {out}, .region = moe_region, .flops = 1.0 * T * k * h,
                              .movement = true});
  if (shared_out < 0) return out;
  const int sum = b.tensor("moe.output", b.act(T, h));
  b.op("moe.add_shared", {.in = {out, shared_out}, .out = {sum}, .region = moe_region, .passthrough = true});
  return sum;
}

// Mamba mixer (ssm/mamba_mixer.py, training path with the fused split-conv1d-scan kernel).
int mamba_block(GraphBuilder& b, const model::RunSpec& spec, int ln) {
  const ShapeContext& c = b.ctx();
  const auto& m = spec.model;
  const std::int64_t N = c.tokens, h = c.hidden;
  const std::int64_t heads = m.mamba_num_heads.value_or((2 * h) / m.mamba_head_dim) / c.tp;
  const std::int64_t d_in = heads * m.mamba_head_dim;
  const std::int64_t groups = std::max<std::int64_t>(1, m.mamba_num_groups / c.tp);
  const std::int64_t ds = m.mamba_state_dim;
  const std::int64_t width = 2 * d_in + 2 * groups * ds + heads;
  const int zx = b.linear("mixer.in_proj", ln, h, width, Parallel::column);
  // rearrange(zxBCdt, "l b d -> b l d").contiguous() (mamba_mixer.py:686) and its inverse on y
  // (:722) copy only when b > 1: with one sequence per micro-batch the permuted tensor is already
  // contiguous (dimensions of size 1 do not count), so .contiguous() returns it as it is.
  const bool copies = c.batch > 1;
  int zx_t = zx;
  if (copies) {
    zx_t = b.tensor("mixer.zxbcdt_contiguous", b.act(N, width));
    b.op("mixer.transpose", {.in = {zx}, .out = {zx_t}, .movement = true});
  }
  const int y = b.tensor("mixer.scan_out", b.act(N, d_in));
  const int out_x = b.tensor("mixer.out_x", b.act(N, d_in), false);
  const std::int64_t chunks = (c.seq + 127) / 128;
  const Bytes scan_ws = b.act(N, d_in + 2 * groups * ds) +                     // conv output
                        Bytes{c.batch * heads * c.seq * kFp32 * 2} +          // dt, dA_cumsum
                        Bytes{c.batch * chunks * heads * m.mamba_head_dim * ds * kFp32};  // chunk states
  b.op("mixer.split_conv1d_scan", {.in = {zx_t}, .out = {y, out_x}, .save = {zx_t, out_x},
                                   .flops = 2.0 * N * d_in * ds * 3 + 2.0 * N * (d_in + 2 * groups * ds) * m.mamba_d_conv,
                                   .backward_flops = 2.0 * (2.0 * N * d_in * ds * 3), .ws = scan_ws, .bws = scan_ws});
  int y_t = y;
  if (copies) {
    y_t = b.tensor("mixer.y_contiguous", b.act(N, d_in));
    b.op("mixer.y_transpose", {.in = {y}, .out = {y_t}, .movement = true});
  }
  const int yn = b.tensor("mixer.norm.out", b.act(N, d_in));
  b.op("mixer.norm", {.in = {y_t, zx_t}, .out = {yn}, .save = {y_t}, .flops = 8.0 * N * d_in});
  return b.linear("mixer.out_proj", yn, d_in, h, Parallel::row);
}

// Gated DeltaNet (ssm/gated_delta_net): in_proj, causal conv, FLA chunked delta rule, gated norm.
int gdn_block(GraphBuilder& b, const model::RunSpec& spec, int ln, LayerGraph& g) {
  const ShapeContext& c = b.ctx();
  const auto& m = spec.model;
  const std::int64_t N = c.tokens, h = c.hidden;
  const std::int64_t nk = m.linear_num_key_heads / c.tp, nv = m.linear_num_value_heads / c.tp;
  const std::int64_t qk_dim = nk * m.linear_key_head_dim, v_dim = nv * m.linear_value_head_dim;
  const int proj = b.linear("gdn.in_proj", ln, h, 2 * qk_dim + 2 * v_dim + 2 * nv, Parallel::column);
  const int conv = b.tensor("gdn.conv_out", b.act(N, 2 * qk_dim + v_dim));
  b.op("gdn.conv1d", {.in = {proj}, .out = {conv}, .save = {proj}, .flops = 2.0 * N * (2 * qk_dim + v_dim) * m.linear_conv_kernel_dim});
  const int qkv = b.tensor("gdn.qkv", b.act(N, 2 * nv * m.linear_key_head_dim + v_dim));
  const int gates = b.tensor("gdn.g_beta", Bytes{N * nv * kFp32 * 2});
  b.op("gdn.prepare", {.in = {conv, proj}, .out = {qkv, gates}, .save = {conv}});
  const int core = b.tensor("gdn.core_out", b.act(N, v_dim));
  b.op("gdn.chunk_delta_rule", {.in = {qkv, gates}, .out = {core}, .save = {qkv, gates},
                                .flops = 4.0 * N * nv * m.linear_key_head_dim * m.linear_value_head_dim,
                                .attention = true});
  const int normed = b.tensor("gdn.norm_out", b.act(N, v_dim));
  b.op("gdn.gated_norm", {.in = {core, proj}, .out = {normed}, .save = {core}, .region = kGdnNormOut,
                          .flops = 8.0 * N * v_dim});
  const int out = b.linear("gdn.out_proj", normed, v_dim, h, Parallel::row);
  g.discards.push_back({kGdnNormOut, {normed}, static_cast<int>(g.ops.size()) - 1});
  return out;
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
        if (i + 1 < n) g.ops[o].backward_workspace += fc1_w + fc2_w;       // both sums already held
        else if (o + 1 < end) g.ops[o].backward_workspace += fc2_w;        // last chunk: fc2's sum, before fc1's exists
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
    const bool separate = !c.te || (layer.mixer == MixerKind::mla && !m.q_lora_rank);
    int branch = -1;
    switch (layer.mixer) {
      case MixerKind::attention: branch = attention_block(b, spec, d, hidden, separate); break;
      case MixerKind::mla: branch = mla_block(b, spec, hidden, separate, g); break;
      case MixerKind::mamba: branch = mamba_block(b, spec, norm(b, "norm", hidden, Nl, h, layer_norm, kNoRegion)); break;
      case MixerKind::gdn: branch = gdn_block(b, spec, norm(b, "norm", hidden, Nl, h, layer_norm, kNoRegion), g); break;
      case MixerKind::none: break;
    }
    const int hook = static_cast<int>(g.ops.size()) - 1;  // linear_proj: its output's gradient arrives first
    if (separate && (layer.mixer == MixerKind::attention || layer.mixer == MixerKind::mla)) {
      // layernorm tag: the input-norm output is discarded and comes back at the attention backward.
      for (const auto& op : g.ops) {
        if (op.regions & kInputNorm) { g.discards.push_back({kInputNorm, {op.outputs.front()}, hook}); break; }
      }
    }
    hidden = residual_add(b, "self_attn_bda", hidden, branch, Nl, m.hidden_dropout);
  }
  if (layer.ffn != FfnKind::none) {
    // Dense MLPs fuse the pre-MLP norm into fc1 under TE; MoE layers keep a separate TENorm.
    const bool separate = !c.te || layer.ffn == FfnKind::moe;
    const std::uint32_t norm_region = separate ? kPreMlpNorm : (layer.ffn == FfnKind::dense ? kMlp : kNoRegion);
    const int ln = norm(b, separate ? "pre_mlp_layernorm" : "pre_mlp_layernorm(fused)", hidden, Nl, h, layer_norm, norm_region);
    const int branch = ffn_block(b, spec, d, ln, layer, g);
    const int hook = static_cast<int>(g.ops.size()) - 1;
    if (separate) g.discards.push_back({kPreMlpNorm, {ln}, hook});
    hidden = residual_add(b, "mlp_bda", hidden, branch, Nl, m.hidden_dropout);
  }
  (void)hybrid;
  g.output = hidden;
  return g;
}

LayerGraph build_embedding_graph(const model::RunSpec& spec, const model::Derived& d, const ShapeContext& c) {
  LayerGraph g;
  g.name = "embedding";
  GraphBuilder b(g, c, "embedding.");
  const int ids = b.input("input_ids", Bytes{c.tokens * 8});
  g.tensors[ids].requires_grad = false;
  const int out = b.tensor("out", b.act(c.local_tokens, c.hidden));
  // VocabParallelEmbedding: full [tokens, h] lookup, then reduce-scatter (SP) or all-reduce.
  const Bytes full = c.sequence_parallel ? b.act(c.tokens, c.hidden) : Bytes{};
  // Its backward builds the dense [V/tp, h] weight gradient whatever the wgrad fusion: only linear
  // layers accumulate into main_grad directly.
  b.op("word_embeddings", {.in = {ids}, .out = {out}, .save = {ids}, .ws = full,
                           .bws = full + b.act(d.padded_vocab / c.tp, c.hidden)});
  if (spec.model.hidden_dropout > 0) {
    const int dropped = b.tensor("dropout.out", b.act(c.local_tokens, c.hidden));
    const int mask = b.tensor("dropout.mask", Bytes{c.local_tokens * c.hidden}, false);
    b.op("embedding_dropout", {.in = {out}, .out = {dropped, mask}, .save = {mask}});
    g.output = dropped;
  } else {
    g.output = out;
  }
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
    b.op("gather_scatter", {.in = {proj}, .out = {out}, .ws = b.act(c.tokens, h), .movement = true,
                            .comm = static_cast<double>(b.act(c.tokens, h).value) * (c.tp - 1) / c.tp});
    g.output = out;
  }
  return g;
}

LayerGraph build_output_graph(const model::RunSpec& spec, const model::Derived& d, const ShapeContext& c) {
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
  const int logits = lb.linear("output_layer", ln, c.hidden, V, Parallel::column);
  const std::int64_t N = c.tokens;
  const int loss = b.tensor("loss", Bytes{N * kFp32});
  const bool te_ce = m.cross_entropy_loss_fusion && m.cross_entropy_fusion_impl == model::CrossEntropyImpl::te;
  if (te_ce) {
    // TE's Triton cross-entropy keeps the logits and writes their gradient in place.
    const int stats = b.tensor("cross_entropy.stats", Bytes{N * kFp32 * 3}, false);
    b.op("cross_entropy", {.in = {logits}, .out = {loss, stats}, .save = {logits, stats}, .flops = 6.0 * N * V,
                           .passthrough = true});
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
    b.op("cross_entropy", {.in = {logits}, .out = {loss, softmax, mask}, .save = {softmax, mask},
                           .flops = 6.0 * N * V, .bws = fused_native ? Bytes{N * V * kFp32} : Bytes{}});
  }
  g.output = loss;
  return g;
}

Bytes global_memory_buffer_bytes(const model::RunSpec& spec, const model::Derived&, const ShapeContext& c) {
  std::int64_t elements = 0;
  // SP all-gather of Megatron-native column-parallel linears (the output layer always; every
  // linear of the local spec): [tokens, k] for the widest input.
  // SP all-gather target of Megatron-native column-parallel linears (the output layer always,
  // every linear of the local spec): [tokens, hidden], the widest gathered input.
  if (c.sequence_parallel) elements = c.tokens * c.hidden;
  if (!c.fused_attention) {
    // Local DotProductAttention's baddbmm scratch: b * heads_per_rank * s * s.
    const std::int64_t hq = spec.model.num_attention_heads / c.tp;
    elements = std::max(elements, c.batch * hq * c.seq * c.seq);
  }
  return Bytes{elements * c.act_bytes};
}

}  // namespace peakcast::sim
