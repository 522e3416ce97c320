// Multi-latent attention (multi_latent_attention.py MLASelfAttention): the down and up projections, RoPE on the
// positional parts, the fused or the unfused core, the output projection.
#include <string>
#include <tuple>

#include "module_blocks.hpp"

namespace peakcast::sim::detail {

using Parallel = GraphBuilder::Parallel;

namespace {

// MLA's projections in Megatron's order: _qkv_down_projection (multi_latent_attention.py:638-664) makes the down
// projections first, the norms come next (:772-779), then qkv_up_proj_and_rope_apply the up projections (:855-878).
// The norms exist only with qk_layernorm: without it the local spec's q_layernorm and kv_layernorm are IdentityOp
// (gpt_layer_specs.py:428-429) and TE's up projections are plain linears (:100-114), so kv_up_proj reads
// kv_compressed, a split view that keeps the whole down projection. Returns {q, kv_down, kv}.
std::tuple<int, int, int> mla_projections(GraphBuilder& b, const model::ModelSpec& m, int ln, std::int64_t hq) {
  const ShapeContext& c = b.ctx();
  const std::int64_t Nl = c.local_tokens, h = c.hidden;
  const std::int64_t qk = m.qk_head_dim, rope = m.qk_pos_emb_head_dim, vd = m.v_head_dim;
  const bool ln_kind = m.normalization == model::Normalization::layer_norm;
  const std::int64_t r = m.q_lora_rank.value_or(0);
  int qd = m.q_lora_rank ? b.linear("linear_q_down_proj", ln, h, r, Parallel::none, kNoRegion, Nl) : -1;
  const int kvd = b.linear("linear_kv_down_proj", ln, h, m.kv_lora_rank + rope, Parallel::none, kNoRegion, Nl);
  int kvn = kvd;
  if (m.qk_layernorm) {
    if (qd >= 0) qd = norm(b, "q_layernorm", qd, Nl, r, ln_kind, kNoRegion);
    kvn = norm(b, "kv_layernorm", kvd, Nl, m.kv_lora_rank, ln_kind, kNoRegion);
  }
  const int q = qd >= 0 ? b.linear("linear_q_up_proj", qd, r, hq * (qk + rope), Parallel::column, kMlaUpProj)
                        : b.linear("linear_q_proj", ln, h, hq * (qk + rope), Parallel::column, kMlaUpProj);
  const int kv = b.linear("linear_kv_up_proj", kvn, m.kv_lora_rank, hq * (qk + vd), Parallel::column, kMlaUpProj);
  return {q, kvd, kv};
}

// _apply_rotary_pos_emb_bshd with mla_rotary_interleaved (rope_utils.py:95-131) on the last `rot` channels of `heads`
// heads of `in`: the de-interleaving cat, t * cos_, rotate_half(t) (-x2, then its cat) * sin_, their sum (`t` is
// rebound only then), and the cat with the empty pass-through part. The products save cos_ and sin_ (`cs`). Timed as
// the one call it was modelled as before (`time` on the first op: flops, bytes moved), the rest silent for the
// time model (the step terms were fitted with that count).
struct RopeTime {
  double flops = 0, bytes_moved = 0, calls = 0;
};
int mla_rope_unfused(GraphBuilder& b, const std::string& name, int in, std::int64_t heads, std::int64_t rot, int cs,
                     RopeTime time) {
  const std::int64_t N = b.ctx().tokens;
  const Bytes full = b.act(N, heads * rot), half = b.act(N, heads * rot / 2);
  const int t = b.tensor(name + ".interleaved", full);
  b.op(name + ".interleave", {.in = {in}, .out = {t}, .region = kMlaUpProj, .flops = time.flops, .bytes_moved = time.bytes_moved, .calls = time.calls});
  const int a = b.tensor(name + ".cos_product", full);
  if (b.graph().tensors[static_cast<std::size_t>(cs)].producer < 0)  // the first call makes the saved cos_ and sin_
    b.op(name + ".mul_cos", {.in = {t}, .out = {a, cs}, .save = {cs}, .region = kMlaUpProj, .bytes_moved = 0, .calls = 0});
  else
    b.op(name + ".mul_cos", {.in = {t}, .out = {a}, .save = {cs}, .region = kMlaUpProj, .bytes_moved = 0, .calls = 0});
  const int rh = b.tensor(name + ".rotate_half", full);
  b.op(name + ".rotate_half", {.in = {t}, .out = {rh}, .region = kMlaUpProj, .ws = half, .bytes_moved = 0, .calls = 0});
  const int sp = b.tensor(name + ".sin_product", full);
  b.op(name + ".mul_sin", {.in = {rh}, .out = {sp}, .save = {cs}, .region = kMlaUpProj, .bytes_moved = 0, .calls = 0});
  const int sum = b.tensor(name + ".sum", full);
  b.op(name + ".add", {.in = {a, sp}, .out = {sum}, .keep = {t}, .region = kMlaUpProj, .bytes_moved = 0, .passthrough = true, .calls = 0});
  const int out = b.tensor(name + ".out", full);
  b.op(name + ".cat", {.in = {sum}, .out = {out}, .region = kMlaUpProj, .bytes_moved = 0, .calls = 0});
  return out;
}

}  // namespace

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
  const std::size_t qkv_first = b.graph().ops.size();
  const auto [q, kvd, kv] = mla_projections(b, m, ln, hq);
  const int query = b.tensor("query", b.act(N, hq * (qk + rope)));
  const int key = b.tensor("key", b.act(N, hq * (qk + rope)));
  const int value = b.tensor("value", b.act(N, hq * vd));
  const int cs = rope_cos_sin(b, m, rope);  // for the Q and the K rotation
  if (m.apply_rope_fusion) {
    b.op("rope_q", {.in = {q}, .out = {query, cs}, .save = {cs}, .region = kMlaUpProj, .flops = 6.0 * N * hq * rope});
    // The positional key is gathered under SP, rotated, expanded per head and concatenated.
    b.op("rope_k_cat", {.in = {kv, kvd}, .out = {key}, .region = kMlaUpProj, .flops = 6.0 * N * rope});
    b.op("value_contiguous", {.in = {kv}, .out = {value}, .region = kMlaUpProj});
  } else {
    // qkv_up_proj_and_rope_apply (multi_latent_attention.py:908-970): the positional parts of Q and K rotated
    // (rope_utils.py), the query and the key concatenated, the value made contiguous; q, kv and the rotated
    // parts are its locals until it returns (measured: freed after the value's copy, alloc_traces_s16).
    // Timed as the three calls they were modelled as (rope_q, rope_k_cat, value_contiguous above).
    const auto bytes = [&](int t) { return static_cast<double>(b.graph().tensors[static_cast<std::size_t>(t)].bytes.value); };
    const int q_rot = mla_rope_unfused(b, "rope_q", q, hq, rope, cs, {6.0 * N * hq * rope, bytes(q) + bytes(query) + bytes(cs), 1});
    const int k_rot = mla_rope_unfused(b, "rope_k", kvd, 1, rope, cs, {});
    b.op("query_cat", {.in = {q, q_rot}, .out = {query}, .region = kMlaUpProj, .bytes_moved = 0, .calls = 0});
    b.op("key_cat", {.in = {kv, k_rot}, .out = {key}, .region = kMlaUpProj, .flops = 6.0 * N * rope, .bytes_moved = bytes(kv) + bytes(kvd) + bytes(key)});
    b.op("value_contiguous", {.in = {kv}, .out = {value}, .keep = {q, q_rot, k_rot}, .region = kMlaUpProj});
  }
  // qkv_linear's hooks cover get_query_key_value_tensors, the down and up projections with their norms and RoPE (or
  // the mla_up_proj checkpoint); it commits right after, force-freeing the norm output (multi_latent_attention.py:343-352).
  b.offload_group(kOffQkvLinear, qkv_first, -1, {ln});
  const int ctx = b.tensor("core_attention.out", b.act(N, hq * vd));
  const double flops = 2.0 * c.batch * hq * double(c.seq) * c.seq * (qk + rope + vd) * 0.5;
  const std::size_t core_first = b.graph().ops.size();
  int core = -1;
  if (c.fused_attention) {
    const int lse = b.tensor("core_attention.softmax_lse", Bytes{c.batch * hq * c.seq * kFp32}, false, kFp32);
    core = b.op("core_attention", {.in = {query, key, value}, .out = {ctx, lse}, .save = {query, key, value, ctx, lse}, .region = kCoreAttn, .flops = flops, .backward_flops = 2.5 * flops, .attention = true, .fused_attention = true});
  } else {
    const double E = double(c.batch) * hq * c.seq * c.seq;
    const auto e = [&](std::int64_t bytes) { return Bytes{checked_count(E)} * bytes; };
    const int scores = b.tensor("scores", e(c.act_bytes));
    // The unfused batched GEMMs compute every (q, k) pair, masked or not: no causal halving.
    const double qk_flops = 2.0 * c.batch * hq * double(c.seq) * c.seq * (qk + rope);
    const double pv_flops = 2.0 * c.batch * hq * double(c.seq) * c.seq * vd;
    core = b.op("baddbmm", {.in = {query, key}, .out = {scores}, .save = {query, key}, .region = kCoreAttn, .flops = qk_flops, .backward_flops = 2 * qk_flops, .attention = true});
    int probs = attention_softmax(b, spec, scores, E, hq);
    const int ctx_raw = b.tensor("context", b.act(N, hq * vd));
    b.op("bmm", {.in = {probs, value}, .out = {ctx_raw}, .save = {probs, value}, .region = kCoreAttn, .flops = pv_flops, .backward_flops = 2 * pv_flops, .attention = true});
    b.op("context_permute", {.in = {ctx_raw}, .out = {ctx}, .keep = {scores, probs}, .region = kCoreAttn});
  }
  // core_attn: the core call, force-freeing query, key and value at its commit (multi_latent_attention.py:380-432).
  b.offload_group(kOffCoreAttn, core_first, -1, {query, key, value});
  // mla_up_proj discards Q, K, V after core attention; they come back after linear_proj's dgrad.
  g.discards.push_back({kMlaUpProj, {query, key, value}, core});
  // attn_proj: linear_proj, force-freeing its input (multi_latent_attention.py:463-466).
  const std::size_t proj_first = b.graph().ops.size();
  const int out = b.linear("linear_proj", ctx, hq * vd, h, Parallel::row, kNoRegion, -1, true, proj_saves_original_input(spec, c));
  b.offload_group(kOffAttnProj, proj_first, -1, {ctx});
  return out;
}

}  // namespace peakcast::sim::detail
