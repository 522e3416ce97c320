// DeepSeek sparse attention (experimental_attention_variant "dsa"): AbsorbedMLASelfAttention around DSAttention with
// its lightning indexer, under the cuDNN / FlashMLA kernels (dsa_kernel_backend "cudnn"); the other paths are refused
// (validate_dsa.cpp). Every tensor below is in docs/research/dsa-memory-facts.md with its line.
#include "module_blocks.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "peakcast/model/dsa.hpp"

namespace peakcast::sim::detail {

using Parallel = GraphBuilder::Parallel;

namespace {

constexpr std::int64_t kInt32 = 4, kInt64 = 8;
constexpr std::int64_t kGiB = std::int64_t{1} << 30;

// Per-rank sizes: `sq` query rows of one sequence (CP-local), `sk` the keys it attends over (CP-gathered),
// `N` = sq x b query rows and `Sk` = sk x b key rows; `np` heads per TP rank padded to `P` for FlashMLA;
// the indexer's `hi` heads of `di`; `K` the top-k it selects.
struct DsaShapes {
  std::int64_t sq, sk, b, N, Sk, np, P, hi, di, K, r, dr, dn, dv;
  std::int64_t rq;  // q_lora_rank, or hidden without q-LoRA (the indexer's qr is then the normed input)
  bool loss, frozen;
};

DsaShapes shapes_of(const model::RunSpec& spec, const ShapeContext& c) {
  const auto& m = spec.model;
  DsaShapes s{};
  s.sq = c.seq;
  s.sk = c.seq * c.cp;
  s.b = c.batch;
  s.N = c.tokens;
  s.Sk = s.sk * s.b;
  s.np = m.num_attention_heads / c.tp;
  s.P = model::flash_mla_head_padding(s.np, c.gpu.compute_capability_major).value_or(s.np);
  s.hi = m.dsa_indexer_n_heads.value_or(0);
  s.di = m.dsa_indexer_head_dim.value_or(0);
  s.K = m.dsa_indexer_topk.value_or(0);
  s.r = m.kv_lora_rank;
  s.dr = m.qk_pos_emb_head_dim;
  s.dn = m.qk_head_dim;
  s.dv = m.v_head_dim;
  s.rq = m.q_lora_rank.value_or(c.hidden);
  // Training with a positive coefficient runs the loss (dsa.py:1890-1894). Frozen (PEFT) the indexer's linears take
  // no gradient and their inputs are detached: under top-k sharing the loss node has no input that needs one, so
  // autograd keeps nothing of it (its gradients are transient).
  s.loss = m.dsa_indexer_loss_coeff.value_or(0.0) > 0;
  s.frozen = c.frozen_base;
  // The path modelled here: cuDNN's kernels with the sparse (top-k) loss or none; validate_dsa.cpp refuses the rest.
  if (m.dsa_kernel_backend != "cudnn" || (s.loss && !m.dsa_indexer_use_sparse_loss))
    throw std::logic_error("DSA is simulated under dsa_kernel_backend cudnn with the sparse indexer loss only (validate_dsa.cpp)");
  return s;
}

// _bytes_to_chunk_rows (dsa_cudnn_kernels.py:402-410): rows fitting `max_bytes`, rounded down to `align`.
std::int64_t chunk_rows(std::int64_t rows, std::int64_t bytes_per_row, std::int64_t max_bytes, std::int64_t align) {
  std::int64_t n = std::max<std::int64_t>(1, max_bytes / std::max<std::int64_t>(1, bytes_per_row));
  if (n >= align) n = (n / align) * align;
  return std::min(rows, n);
}

// _indexer_topk_bshd with its score chunks (dsa_cudnn_kernels.py:1076-1304, :567-673, :463-500): the larger of the
// scoring phase (the BSHD copies for b > 1, one fp32 [b, rows, sk] score chunk of at most 1 GiB, for the global-rows
// path (varlen, or more than one chunk) an fp32 [b, di, sk] key and one head's scores beside it, the top-k wrapper's
// scratch that Megatron bounds at 2 x int32 per key per row in 2 GiB chunks, and the results so far) and the
// compaction (the results and their torch.cat copies, an int64 order key and its argsort, :974-1012).
Bytes indexer_topk_ws(const DsaShapes& s, bool varlen, bool with_scores) {
  const std::int64_t rows = chunk_rows(s.sq, s.b * s.sk * kFp32, kGiB, 512);  // :503-510, :135-136
  const bool global_rows = varlen || rows < s.sq;
  const std::int64_t score = s.b * rows * s.sk * kFp32;
  std::int64_t scoring = score;
  if (global_rows) scoring += score + s.b * s.di * s.sk * kFp32 + s.b * rows * (s.hi * s.di + s.hi) * 2;
  if (s.b > 1) scoring += (s.N * (s.hi * s.di + s.hi) + s.Sk * s.di) * 2;
  const std::int64_t per_row = s.sk * kInt32 * 2;  // :132-134, :468-469
  scoring += chunk_rows(s.b * rows, per_row, 2 * kGiB, 512) * per_row;
  const std::int64_t results = s.N * s.K * (kInt32 + (with_scores ? kFp32 : 0));
  scoring += results;
  const std::int64_t compaction = 2 * results + s.N * s.K * (2 * kInt64 + 1);
  return Bytes{std::max(scoring, compaction)};
}

// FlashMLA's sparse forward beside its outputs (dsa_cudnn_kernels.py:871-924, :1947-1993): the zero-padded query
// when P != np, the top-k padded to a multiple of 512, the dropped fp32 max-logits and, when no top-k length is
// given, the compaction and sort of the top-k for attention (:1040-1044).
Bytes flash_forward_ws(const DsaShapes& s, bool compact) {
  const std::int64_t padded_k = (s.K + 511) / 512 * 512;
  std::int64_t ws = s.N * s.P * kFp32 + (compact ? s.N * s.K * (2 * kInt64 + kInt32) : 0);
  if (s.P != s.np) ws += s.N * s.P * (s.r + s.dr) * 2;
  if (padded_k != s.K) ws += s.N * padded_k * kInt32;
  return Bytes{ws};
}

// _compute_sparse_indexer_loss_and_grads (dsa_cudnn_kernels.py:1757-1867): BSHD copies of query and key for b > 1,
// fp32 [b, sq, K] log-probabilities, probabilities, target and its normalisation, the clamped probabilities and
// int32 indices for the indexer backward, a bool mask; the indexer heads zero-padded to 64 (:1470-1481) and the
// padded gradients before their slice (:1484-1492).
Bytes loss_ws(const DsaShapes& s) {
  std::int64_t ws = s.N * s.K * (6 * kFp32 + kInt32 + 1);
  if (s.hi < 64) ws += 2 * s.N * 64 * (s.di + 1) * 2;
  if (s.b > 1) ws += (s.N * s.np + s.Sk) * (s.r + s.dr) * 2;
  return Bytes{ws};
}

// _run_sparse_attention_backward (dsa_cudnn_kernels.py:1996-2097): the head-padded copies of query, output, output
// gradient and lse when P != np, their `cat` with one extra row and the `index_select` of the valid rows (each
// a copy, with the int32 indices and lengths), cuDNN's dq; and the contiguous copy of the output gradient the
// V einsum hands back as a permuted view (dsa.py:173, cudnn :2016).
Bytes sparse_attention_bws(const DsaShapes& s) {
  const std::int64_t rows = s.N * s.P * ((s.r + s.dr) + 2 * s.r) * 2 + s.N * s.P * kFp32;
  std::int64_t ws = 2 * (rows + s.N * (s.K + 1) * kInt32) + s.N * s.P * (s.r + s.dr) * 2 + s.N * s.np * s.r * 2;
  if (s.P != s.np) ws += rows;
  return Bytes{ws};
}

struct Qkv {
  int query, key, qr;
};

// get_query_key_value_tensors (absorbed_mla.py:390-674): the down projections, the standalone q / kv norms, then the
// mla_up_proj body: the q up projection, the K up-projection absorbed into the query by an einsum that saves q
// (:624-625), RoPE on both positional parts (:631-649) and the two cats (:652-654).
Qkv absorbed_qkv(GraphBuilder& b, const model::RunSpec& spec, const DsaShapes& s, int ln) {
  const ShapeContext& c = b.ctx();
  const auto& m = spec.model;
  const std::int64_t Nl = c.local_tokens, h = c.hidden, N = s.N;
  const bool ln_kind = m.normalization == model::Normalization::layer_norm;
  int qn = ln, q = -1;
  if (m.q_lora_rank) {
    const int qd = b.linear("linear_q_down_proj", ln, h, s.rq, Parallel::none, kNoRegion, Nl);
    qn = m.qk_layernorm ? norm(b, "q_layernorm", qd, Nl, s.rq, ln_kind, kNoRegion) : qd;
    q = b.linear("linear_q_up_proj", qn, s.rq, s.np * (s.dn + s.dr), Parallel::column, kMlaUpProj);
  } else {
    q = b.linear("linear_q_proj", ln, h, s.np * (s.dn + s.dr), Parallel::column, kMlaUpProj);
  }
  const int kvd = b.linear("linear_kv_down_proj", ln, h, s.r + s.dr, Parallel::none, kNoRegion, Nl);
  int kvn = m.qk_layernorm ? norm(b, "kv_layernorm", kvd, Nl, s.r, ln_kind, kNoRegion) : kvd;
  if (c.sequence_parallel) {  // the normed latent and the positional key all-gathered over TP (:495-500, :523-524)
    const int g = b.tensor("kv_sp_gather", b.act(N, s.r + s.dr));
    b.op("kv_sp_gather", {.in = {kvn, kvd}, .out = {g}, .comm = static_cast<double>(b.act(N, s.r + s.dr).value)});
    kvn = g;
  }
  const std::int64_t w_up = s.np * (s.dn + s.dv) * s.r * c.act_bytes;  // SliceBackward's full-weight gradient
  const int q_abs = b.tensor("q_absorbed", b.act(N, s.np * s.r));
  b.op("q_absorb", {.in = {q}, .out = {q_abs}, .save = {q}, .region = kMlaUpProj, .flops = 2.0 * N * s.np * s.dn * s.r, .ws = b.act(N, s.np * s.r), .bws = Bytes{w_up}, .gemm = true});
  const int q_pe = b.tensor("q_pos_emb", b.act(N, s.np * s.dr));
  const int k_pe = b.tensor("k_pos_emb", b.act(N, s.dr));
  // _apply_rotary_pos_emb_bshd (rope_utils.py:92-137): cos_ and sin_ [s, 1, 1, rot] per call, saved by the products.
  const int cs = b.tensor("rope.cos_sin", Bytes{4 * s.sq * s.dr * c.act_bytes}, false);
  b.op("rope_q", {.in = {q}, .out = {q_pe, cs}, .save = {cs}, .region = kMlaUpProj, .flops = 6.0 * N * s.np * s.dr, .ws = b.act(N, 3 * s.np * s.dr)});
  b.op("rope_k", {.in = {kvd}, .out = {k_pe}, .region = kMlaUpProj, .flops = 6.0 * N * s.dr});
  const int query = b.tensor("query", b.act(N, s.np * (s.r + s.dr)));
  const int key = b.tensor("key", b.act(N, s.r + s.dr));
  b.op("query_cat", {.in = {q_abs, q_pe}, .out = {query}, .region = kMlaUpProj, .movement = true});
  b.op("key_cat", {.in = {kvn, k_pe}, .out = {key}, .region = kMlaUpProj, .movement = true});
  return {query, key, qn};
}

struct Indexer {
  int q, k, w;
};

// A duplicated indexer TELinear on detached, TP-gathered rows: only its weight gradient runs.
int indexer_linear(GraphBuilder& b, const std::string& name, int in, std::int64_t k, std::int64_t n, const DsaShapes& s) {
  const int out = b.linear(name, in, k, n, Parallel::none, kCoreAttn, s.N);
  auto& g = b.graph();
  g.ops.back().backward_flops = s.frozen ? 0 : g.ops.back().forward_flops;
  g.tensors[static_cast<std::size_t>(out)].requires_grad = !s.frozen;
  return out;
}

// DSAIndexer.forward_before_topk (dsa.py:1248-1322) on the detached x and qr (:1887-1888), all-gathered over TP with
// SP (:1273-1275): q = RoPE(linear_wq_b(qr)), k = RoPE(LayerNorm(linear_wk(x))), the scaled linear_weights_proj(x);
// with CP the key is all-gathered and reordered (:1981-1990).
Indexer indexer(GraphBuilder& b, const model::RunSpec& spec, const DsaShapes& s, int ln, int qr) {
  const ShapeContext& c = b.ctx();
  const auto& m = spec.model;
  const int x = b.tensor("indexer.x_detached", Bytes{}, false), qd = b.tensor("indexer.qr_detached", Bytes{}, false);
  b.op("indexer.detach", {.in = {ln, qr}, .out = {x, qd}, .region = kCoreAttn});
  int xi = x, qi = qd;
  if (c.sequence_parallel) {
    xi = b.tensor("indexer.x_gathered", b.act(s.N, c.hidden), false);
    qi = b.tensor("indexer.qr_gathered", b.act(s.N, s.rq), false);
    b.op("indexer.sp_gather", {.in = {x, qd}, .out = {xi, qi}, .region = kCoreAttn, .comm = static_cast<double>(b.act(s.N, c.hidden + s.rq).value)});
  }
  const bool grad = !s.frozen;
  const auto fresh = [&](const std::string& n, Bytes bytes) { return b.tensor(n, bytes, grad); };
  const int q_lin = indexer_linear(b, "indexer.linear_wq_b", qi, s.rq, s.hi * s.di, s);
  int q = fresh("indexer.q", b.act(s.N, s.hi * s.di));
  b.op("indexer.rope_q", {.in = {q_lin}, .out = {q}, .region = kCoreAttn, .flops = 6.0 * s.N * s.hi * s.dr, .ws = b.act(s.N, 3 * s.hi * s.dr)});
  int k = indexer_linear(b, "indexer.linear_wk", xi, c.hidden, s.di, s);
  if (m.dsa_indexer_k_norm_fp32) {  // k.float() before the norm, cast back after (:1297-1299)
    const int k32 = fresh("indexer.k_fp32", b.fp32(s.N, s.di));
    b.op("indexer.k_to_fp32", {.in = {k}, .out = {k32}, .region = kCoreAttn});
    k = k32;
  }
  k = norm(b, "indexer.k_norm", k, s.N, s.di, /*layer_norm=*/true, kCoreAttn);  // LayerNorm (:1183-1192)
  const int k_rot = fresh("indexer.k", b.act(s.N, s.di));
  b.op("indexer.rope_k", {.in = {k}, .out = {k_rot}, .region = kCoreAttn, .flops = 6.0 * s.N * s.dr});
  k = k_rot;
  if (m.dsa_indexer_rotate_activation) {  // Hadamard-rotated copies (:1311-1313)
    const int qh = fresh("indexer.q_rotated", b.act(s.N, s.hi * s.di)), kh = fresh("indexer.k_rotated", b.act(s.N, s.di));
    b.op("indexer.rotate_activation", {.in = {q, k}, .out = {qh, kh}, .region = kCoreAttn, .flops = 2.0 * s.N * (s.hi + 1) * s.di * 7});
    q = qh;
    k = kh;
  }
  const int w_lin = indexer_linear(b, "indexer.linear_weights_proj", xi, c.hidden, s.hi, s);
  const int w = fresh("indexer.weights", b.act(s.N, s.hi));
  b.op("indexer.weights_scale", {.in = {w_lin}, .out = {w}, .region = kCoreAttn, .flops = 1.0 * s.N * s.hi});
  if (c.cp > 1) {
    const int kf = fresh("indexer.k_cp_gathered", b.act(s.Sk, s.di));
    b.op("indexer.k_cp_gather", {.in = {k}, .out = {kf}, .region = kCoreAttn, .ws = b.act(s.Sk, s.di), .comm = static_cast<double>(b.act(s.Sk, s.di).value)});
    k = kf;
  }
  return {q, k, w};
}

// FLOPs for the time model: the indexer's causal scores over the keys, FlashMLA over min(K, sk) keys per query
// (QK over r + dr channels, PV over r), the loss target's recomputation and the indexer backward over the top-k.
double scoring_flops(const DsaShapes& s) { return 2.0 * s.N * s.hi * s.di * s.sk * 0.5; }
double sparse_flops(const DsaShapes& s) { return 2.0 * s.N * s.np * std::min(s.K, s.sk) * (2 * s.r + s.dr); }
double loss_flops(const DsaShapes& s) {
  return 2.0 * s.N * s.np * std::min(s.K, s.sk) * (s.r + s.dr) + 4.0 * s.N * s.hi * s.di * std::min(s.K, s.sk);
}

// FlashMLA's outputs and what the attention backward needs: out [N, P, r] (a view of the padded result when
// P != np, so the saved storage is P wide), lse fp32 [N, P], the clamped top-k copy int32 [N, K], the sink [np].
struct SparseOut {
  int out, lse, idx, sink;
};
SparseOut sparse_outputs(GraphBuilder& b, const DsaShapes& s) {
  SparseOut o{};
  o.out = b.tensor("sparse_attention.out", b.act(s.N * s.P, s.r));
  b.graph().tensors[static_cast<std::size_t>(o.out)].grad_block = b.act(s.N * s.np, s.r);
  o.lse = b.tensor("sparse_attention.lse", b.fp32(s.N, s.P), false);
  o.idx = b.tensor("sparse_attention.global_idxs", b.fp32(s.N, s.K), false);
  o.sink = b.tensor("sparse_attention.attn_sink", b.fp32(1, s.np), false);
  return o;
}

// The indexer's gradients the loss computes in the forward (dsa_cudnn_kernels.py:1856-1867): saved for backward
// ([N, hi, di], [Sk, di], [N, hi]), or, frozen, transient.
std::vector<int> precomputed_grads(GraphBuilder& b, const DsaShapes& s) {
  return {b.tensor("indexer_loss.grad_q", b.act(s.N, s.hi * s.di), false), b.tensor("indexer_loss.grad_k", b.act(s.Sk, s.di), false),
          b.tensor("indexer_loss.grad_weights", b.act(s.N, s.hi), false)};
}

// The keys and values attended over: with CP all-gathered and reordered into sequence order (dsa.py:1831-1863),
// the gather's result transient beside the reordered copy; its backward scatters the gradient back (a zeroed
// [Sk, r + dr] for index_select's backward) before the reduce-scatter.
int keys_for_attention(GraphBuilder& b, const DsaShapes& s, int key) {
  if (b.ctx().cp <= 1) return key;
  const Bytes full = b.act(s.Sk, s.r + s.dr);
  const int kf = b.tensor("key_cp_gathered", full);
  b.op("key_cp_gather", {.in = {key}, .out = {kf}, .region = kCoreAttn, .ws = full, .bws = full, .comm = static_cast<double>(full.value)});
  return kf;
}

// Path A, no top-k sharing: FusedIndexerSparseAttnFunc (dsa_cudnn_kernels.py:2100-2373), one autograd node that
// scores, selects, runs FlashMLA, computes the loss and the indexer's gradients, and saves query, key, the sink,
// the top-k, out, lse and those gradients (:2264-2274).
SparseOut fused_path(GraphBuilder& b, const DsaShapes& s, int query, int kv, const Indexer& ix, bool varlen) {
  SparseOut o = sparse_outputs(b, s);
  std::vector<int> out = {o.out, o.lse, o.idx, o.sink}, save = {query, kv, o.sink, o.idx, o.out, o.lse};
  Bytes ws = indexer_topk_ws(s, varlen, s.loss) + flash_forward_ws(s, s.loss);
  double flops = scoring_flops(s) + sparse_flops(s);
  if (s.loss) {
    const std::vector<int> grads = precomputed_grads(b, s);
    out.insert(out.end(), grads.begin(), grads.end());
    // Saved whatever needs a gradient: the node is recorded as long as the query does (dsa_cudnn_kernels.py:2264).
    save.insert(save.end(), grads.begin(), grads.end());
    ws += loss_ws(s);
    flops += loss_flops(s);
  }
  const int op = b.op("dsa_fused_indexer_sparse_attention", {query, kv, ix.q, ix.k, ix.w}, out,
                      {.region = kCoreAttn, .flops = flops, .backward_flops = 2.5 * sparse_flops(s), .ws = ws, .bws = sparse_attention_bws(s), .attention = true, .fused_attention = true});
  b.graph().ops[static_cast<std::size_t>(op)].saves = save;
  return o;
}

// Path B, a computing layer under top-k sharing: FusedQKTopKWithSparseLossFunc (dsa_cudnn_kernels.py:2376-2522) with
// the loss (a FlashMLA forward for its lse alone, :2443-2445; saves only the indexer's gradients), run_fused_qk_topk
// without (:1317-1373). Its top-k indices and lengths go to the holder (dsa.py:2214-2218): on the config for the
// rest of the run (LayerGraph::persistent), or on the micro-batch's packed_seq_params (escaping the checkpoint).
std::pair<int, int> shared_topk(GraphBuilder& b, const model::RunSpec& spec, const DsaShapes& s, int query, int kv, const Indexer& ix,
                                bool varlen) {
  const int topk = b.tensor("indexer.topk_indices", Bytes{s.N * s.K * kInt32}, false);
  const int len = b.tensor("indexer.topk_length", Bytes{s.N * kInt32}, false);
  std::vector<int> out = {topk, len}, save;
  Bytes ws = indexer_topk_ws(s, varlen, s.loss);
  double flops = scoring_flops(s);
  if (s.loss) {
    const std::vector<int> grads = precomputed_grads(b, s);
    out.insert(out.end(), grads.begin(), grads.end());
    if (!s.frozen) save = grads;
    ws += b.act(s.N * s.P, s.r) + b.fp32(s.N, s.P) + flash_forward_ws(s, true) + loss_ws(s);
    flops += sparse_flops(s) + loss_flops(s);
  }
  const int op = b.op("indexer_topk", {query, kv, ix.q, ix.k, ix.w}, out, {.region = kCoreAttn, .flops = flops, .ws = ws, .attention = true, .fused_attention = true});
  b.graph().ops[static_cast<std::size_t>(op)].saves = save;
  const Bytes holder = b.graph().tensors[static_cast<std::size_t>(topk)].bytes + b.graph().tensors[static_cast<std::size_t>(len)].bytes;
  if (model::dsa_topk_holder(spec) == model::DsaTopkHolder::per_rank) b.graph().persistent += holder;
  if (model::dsa_topk_holder(spec) == model::DsaTopkHolder::per_microbatch) {
    b.graph().tensors[static_cast<std::size_t>(topk)].escapes = true;
    b.graph().tensors[static_cast<std::size_t>(len)].escapes = true;
  }
  return {topk, len};
}

// FusedSparseAttentionFunc (dsa_cudnn_kernels.py:2525-2582): FlashMLA on given top-k (the holder's, for a layer that
// reuses another's), saving query, key, the sink, a clamped top-k copy, out and lse (:2547).
SparseOut sparse_attention(GraphBuilder& b, const DsaShapes& s, int query, int kv, std::vector<int> topk) {
  SparseOut o = sparse_outputs(b, s);
  std::vector<int> in = {query, kv};
  in.insert(in.end(), topk.begin(), topk.end());
  const int op = b.op("sparse_attention", in, {o.out, o.lse, o.idx, o.sink},
                      {.region = kCoreAttn, .flops = sparse_flops(s), .backward_flops = 2.5 * sparse_flops(s), .ws = flash_forward_ws(s, false), .bws = sparse_attention_bws(s), .attention = true, .fused_attention = true});
  b.graph().ops[static_cast<std::size_t>(op)].saves = {query, kv, o.sink, o.idx, o.out, o.lse};
  return o;
}

}  // namespace

// AbsorbedMLASelfAttention with DSAttention (docs/research/dsa-memory-facts.md sections 4-5): the input norm, the
// absorbed query and the latent key, the V up-projection weight made contiguous (dsa.py:1665), the CP gather, the
// indexer on a layer that computes its top-k, the cuDNN path, the V einsum (dsa.py:173-175, cudnn :302-304) and
// linear_proj. mla_up_proj discards query and key after core attention; they come back when core_attn_out's
// gradient arrives (absorbed_mla.py:894-897).
int dsa_block(GraphBuilder& b, const model::RunSpec& spec, int x, bool computes_topk, LayerGraph& g) {
  const ShapeContext& c = b.ctx();
  const auto& m = spec.model;
  const DsaShapes s = shapes_of(spec, c);
  const int ln = norm(b, "input_layernorm", x, c.local_tokens, c.hidden, m.normalization == model::Normalization::layer_norm, kInputNorm);
  const Qkv qkv = absorbed_qkv(b, spec, s, ln);
  const int up_v = b.tensor("up_v_weight", b.act(s.np * s.dv, s.r));
  b.op("up_v_contiguous", {.out = {up_v}, .region = kCoreAttn, .movement = true});
  const int kv = keys_for_attention(b, s, qkv.key);
  const bool varlen = c.cp > 1 || spec.train.packed_sequence;
  // The global-rows score path serves varlen rows except a single packed sequence split over CP
  // (dsa_cudnn_kernels.py:1156-1205; use_local_indexer_varlen, dsa.py:1927-1934).
  const bool global_rows = varlen && !(spec.train.packed_sequence && c.cp > 1);
  SparseOut o{};
  if (!computes_topk) {
    o = sparse_attention(b, s, qkv.query, kv, {});
  } else {
    const Indexer ix = indexer(b, spec, s, ln, qkv.qr);
    if (m.dsa_indexer_topk_freq <= 1) {
      o = fused_path(b, s, qkv.query, kv, ix, global_rows);
    } else {
      const auto [topk, len] = shared_topk(b, spec, s, qkv.query, kv, ix, global_rows);
      o = sparse_attention(b, s, qkv.query, kv, {topk, len});
    }
  }
  const int ctx = b.tensor("core_attention.out", b.act(s.N, s.np * s.dv));
  const std::int64_t w_up = s.np * (s.dn + s.dv) * s.r * c.act_bytes;  // SliceBackward's full-weight gradient
  const int v_up = b.op("v_up_projection", {.in = {o.out, up_v}, .out = {ctx}, .save = {o.out, up_v}, .region = kCoreAttn, .flops = 2.0 * s.N * s.np * s.r * s.dv, .ws = b.act(s.N, s.np * s.dv), .bws = Bytes{w_up}, .gemm = true});
  g.discards.push_back({kMlaUpProj, {qkv.query, qkv.key}, v_up});
  // Under FP8 with a recipe other than delayed scaling linear_proj saves its bf16 input (absorbed_mla.py:247-263).
  const bool original = c.te && c.fp8 && m.fp8_recipe != model::Fp8Recipe::delayed;
  return row_linear(b, m, "linear_proj", ctx, s.np * s.dv, c.hidden, kNoRegion, original);
}

}  // namespace peakcast::sim::detail
