// Self-attention (attention.py SelfAttention): the fused and the unfused cores, RoPE, the output gate; the softmax
// and RoPE pieces multi-latent attention shares (mla_graphs.cpp).
#include "module_blocks.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

namespace peakcast::sim::detail {

using Parallel = GraphBuilder::Parallel;

namespace {

// The causal mask the unfused path builds on every forward when none is passed: an fp32 [s, s]
// scratch turned into a bool [s, s] mask, which masked_fill_ saves.
// Bytes of the bool [s, s] causal mask the softmax reads.
std::int64_t c_seq_sq(const GraphBuilder& b) { return b.ctx().seq * b.ctx().seq; }

// `cols` is seq + 1 where TE pads the mask for a sink column (backends.py:626-638).
int causal_mask(GraphBuilder& b, std::int64_t seq, std::int64_t cols) {
  const int mask = b.tensor("causal_mask", Bytes{checked_mul(seq, cols)}, false, 1);
  b.op("make_causal_mask", {.out = {mask}, .region = kCoreAttn, .ws = Bytes{checked_mul(checked_mul(seq, seq), kFp32)}});
  return mask;
}

// Megatron's get_default_causal_mask (utils.py:37-39, called by FusedScaleMaskSoftmax, fused_softmax.py:327):
// torch.triu(torch.ones(sq, sq), diagonal=1).bool(): the fp32 ones, triu's fp32 copy of them (the ones go
// when triu returns), and the bool mask made from the copy (traced on layout_fake_ep8_moonlight4_moe_r0:
// +64 +64 -64 +16 -64 MiB at s 4096). The time model still counts them as the one call writing the bool mask that
// the local stack's step terms were fitted with (configs/calibration/time.json): refitted with the three kernels'
// calls and traffic, the local fit moved and the Transformer Engine stack's host fit, built on it, left its bounds
// (tests/calibration/test_stack_host_fit.cpp).
int default_causal_mask(GraphBuilder& b, std::int64_t seq) {
  const Bytes square{checked_mul(checked_mul(seq, seq), kFp32)};
  const Bytes mask_bytes{checked_mul(seq, seq)};
  const int ones = b.tensor("causal_mask.ones", square, false, kFp32);
  b.op("causal_mask.ones", {.out = {ones}, .region = kCoreAttn, .bytes_moved = static_cast<double>(mask_bytes.value)});
  const int upper = b.tensor("causal_mask.triu", square, false, kFp32);
  b.op("causal_mask.triu", {.in = {ones}, .out = {upper}, .region = kCoreAttn, .bytes_moved = 0, .calls = 0});
  const int mask = b.tensor("causal_mask", mask_bytes, false, 1);
  b.op("causal_mask.bool", {.in = {upper}, .out = {mask}, .region = kCoreAttn, .bytes_moved = 0, .calls = 0});
  return mask;
}

// forward_torch_softmax (fused_softmax.py:299-342) with softmax_in_fp32: an fp32 copy of the
// scores (kept by a local until the function returns), the mask filled in place, the fp32 softmax
// (saved), and the cast back to the activation dtype (saved by the context bmm). Each cast is an
// autograd node, so the backward holds fp32 and bf16 gradients of size E in turn.
int torch_fp32_softmax(GraphBuilder& b, int scores, double E, std::int64_t act_bytes, int mask) {
  const auto e = [&](std::int64_t bytes) { return Bytes{checked_count(E)} * bytes; };
  const int s32 = b.tensor("softmax.input_fp32", e(kFp32), true, kFp32);
  b.op("softmax.to_fp32", {.in = {scores}, .out = {s32}, .region = kCoreAttn});
  const int p32 = b.tensor("softmax.fp32", e(kFp32), true, kFp32);
  // masked_fill_ runs in place and saves the mask; its backward writes a new masked gradient.
  // Two kernels: masked_fill_ (read and write the fp32 scores) and softmax (read, write).
  b.op("softmax", {.in = {s32, mask}, .out = {p32}, .save = {p32, mask}, .region = kCoreAttn, .flops = 5.0 * E, .bws = e(kFp32), .bytes_moved = 4.0 * E * kFp32 + double(c_seq_sq(b))});
  const int probs = b.tensor("softmax.out", e(act_bytes));
  b.op("softmax.to_act_dtype", {.in = {p32}, .out = {probs}, .keep = {s32}, .region = kCoreAttn});
  return probs;
}

// The rows of one CUDA block of the fused softmax kernels: 128 threads, a warp per row (two rows per
// warp up to 128 keys), the warp no wider than the keys' next power of two (TE v2.9
// attention/dot_product_attention/softmax.py:278-285; Apex's scaled_masked_softmax.h, which Megatron's
// kernels import, computes the same).
std::int64_t softmax_batch_per_block(std::int64_t sk) {
  std::int64_t pow2 = 1;
  while (pow2 < sk) pow2 *= 2;
  const std::int64_t warp = std::min<std::int64_t>(pow2, 32);
  return (128 / warp) * (pow2 <= 128 ? 2 : 1);
}

// Whether the causal self-attention softmax runs as one fused kernel, as the module the layer uses
// decides it for its shapes [b, np, sq, sk]:
// - Megatron's DotProductAttention (local spec, attention_backend local, EXAONE 4's layer spec):
//   FusedScaleMaskSoftmax.is_kernel_available
//   (fused_softmax.py:238-270): masked_softmax_fusion (TransformerConfig default False, Megatron-LM's
//   CLI default True), fp16/bf16 input, 16 < sk <= 4096, sq, sk and b x np multiples of 4, and b x np a
//   multiple of the kernel's rows per block.
// - TE's UnfusedDotProductAttention (attention_backend unfused): TE's own is_kernel_available (TE v2.9
//   softmax.py:188-221), on unless NVTE_MASKED_SOFTMAX_FUSION=0 (softmax.py:159): 16 < sk < 16384, sk a
//   multiple of 8, sq == sk for the causal kernel, sq and b x np multiples of 4, sq a multiple of the rows
//   per block.
// A padding or arbitrary mask (BERT, T5's encoder and cross-attention) takes the masked kernel: Megatron's asks sq,
// not b x np, to be a multiple of the rows per block (fused_softmax.py:267-269); TE's asks the same as for the causal
// one once get_full_mask made the mask [b, 1, sq, sk] (softmax.py:212-219). `padded`: a padding mask, queries sq,
// keys sk (the self-attention's when 0).
bool fused_softmax_kernel(const model::RunSpec& spec, const ShapeContext& c, std::int64_t np, bool padded, std::int64_t sq = 0,
                          std::int64_t sk = 0) {
  if (sq == 0) sq = sk = c.seq;
  const std::int64_t batches = c.batch * np;
  if (c.act_bytes != 2) return false;  // input_in_float16: fp16 or bf16
  const std::int64_t per_block = softmax_batch_per_block(sk);
  if (c.megatron_attention) {
    return spec.model.masked_softmax_fusion && sk > 16 && sk <= 4096 && sq % 4 == 0 && sk % 4 == 0 && batches % 4 == 0 &&
           (padded ? sq : batches) % per_block == 0;
  }
  return sk > 16 && sk < 16384 && sk % 8 == 0 && sq % 4 == 0 && batches % 4 == 0 && sq % per_block == 0;
}

// The fused causal softmax (ScaledUpperTriangMaskedSoftmax, fused_softmax.py:11-57; TE's
// ScaledAlignedCausalMaskedSoftmax): one kernel masks, scales and normalises in fp32 registers and
// writes the probabilities in the input dtype, which is all it saves; no mask tensor is built, and the
// backward writes the input gradient over the incoming one (the kernels' backward runs in place on
// output_grads), so it needs no second buffer.
int fused_softmax(GraphBuilder& b, int scores, double E) {
  const ShapeContext& c = b.ctx();
  const Bytes probs_bytes = Bytes{checked_count(E)} * c.act_bytes;
  const int probs = b.tensor("softmax.out", probs_bytes);
  b.op("fused_softmax", {.in = {scores}, .out = {probs}, .save = {probs}, .region = kCoreAttn, .flops = 5.0 * E, .bytes_moved = 2.0 * E * double(c.act_bytes)});
  return probs;
}

// The softmax with a sink column (softmax_type off-by-one / learnable), which no fused kernel takes:
// - Megatron's DotProductAttention: FusedScaleMaskSoftmax skips the kernel whenever an offset is given
//   (fused_softmax.py:233-236); forward_torch_softmax masks the (fp32) scores in place, SoftmaxOne
//   concatenates the sink, [b, np, sq, sk+1], saves the softmax of that and hands on a view without
//   the sink column (:154-176, :330-342), which the cast back to bf16 copies into [b, np, sq, sk].
// - TE's UnfusedDotProductAttention concatenates the sink before its softmax (TE v2.16 backends.py:626-653);
//   sk+1 is no multiple of 8, so TE's torch softmax runs (softmax.py:198-201, :248-277), and the cast back
//   keeps the sink column: the context bmm saves a view of the bf16 [b, np, sq, sk+1].
// Without softmax_in_fp32 one activation-dtype softmax output of sk+1 columns is saved either way.
int sink_softmax(GraphBuilder& b, const model::RunSpec& spec, int scores, double E, std::int64_t np) {
  const ShapeContext& c = b.ctx();
  const double E1 = E + double(c.batch) * np * c.seq;  // one more column a row
  const auto e = [](double n, std::int64_t bytes) { return Bytes{checked_count(n)} * bytes; };
  const int mask = c.megatron_attention ? default_causal_mask(b, c.seq) : causal_mask(b, c.seq, c.seq + 1);
  const bool fp32 = spec.model.attention_softmax_in_fp32;
  const std::int64_t sm_bytes = fp32 ? kFp32 : c.act_bytes;
  int in = scores;
  if (fp32) {
    in = b.tensor("softmax.input_fp32", e(E, kFp32), true, kFp32);
    b.op("softmax.to_fp32", {.in = {scores}, .out = {in}, .region = kCoreAttn});
  }
  const int with_sink = b.tensor("softmax.with_sink", e(E1, sm_bytes), true, static_cast<std::int32_t>(sm_bytes));
  b.op("softmax.cat_sink", {.in = {in, mask}, .out = {with_sink}, .save = {mask}, .region = kCoreAttn, .bytes_moved = 2.0 * E1 * double(sm_bytes), .movement = true});
  const int p = b.tensor("softmax.out_with_sink", e(E1, sm_bytes), true, static_cast<std::int32_t>(sm_bytes));
  b.op("softmax", {.in = {with_sink}, .out = {p}, .save = {p}, .region = kCoreAttn, .flops = 5.0 * E1, .bws = e(E1, sm_bytes), .bytes_moved = 2.0 * E1 * double(sm_bytes)});
  if (!fp32) return p;  // the bmm saves a view of it
  const int probs = b.tensor("softmax.out", !c.megatron_attention ? e(E1, c.act_bytes) : e(E, c.act_bytes));
  b.op("softmax.to_act_dtype", {.in = {p}, .out = {probs}, .keep = {in}, .region = kCoreAttn});
  return probs;
}

// forward_torch_softmax (fused_softmax.py:299-342) over the scores with `mask` filled in place; returns the
// probabilities the context bmm saves. `mask_bytes`: what reading the mask moves.
int torch_softmax(GraphBuilder& b, const model::RunSpec& spec, int scores, double E, int mask, double mask_bytes) {
  const ShapeContext& c = b.ctx();
  if (spec.model.attention_softmax_in_fp32) return torch_fp32_softmax(b, scores, E, c.act_bytes, mask);
  const Bytes probs_bytes = Bytes{checked_count(E)} * c.act_bytes;
  const int probs = b.tensor("softmax.out", probs_bytes);
  // Two kernels: masked_fill_ in place on the scores (read, write) and softmax (read, write).
  b.op("softmax", {.in = {scores, mask}, .out = {probs}, .save = {probs, mask}, .region = kCoreAttn, .flops = 5.0 * E, .bws = probs_bytes, .bytes_moved = 4.0 * E * double(c.act_bytes) + mask_bytes});
  if (c.megatron_attention) {
    // Megatron's scores are a view of the baddbmm result (dot_product_attention.py:194-203) and the mask
    // is filled into that view in place (transformer/utils.py:53-55), so autograd reaches the baddbmm
    // through the view's regenerated AsStridedBackward0 (as_strided_backward: a zeroed base-sized
    // gradient) and CopySlices (torch/csrc/autograd/functions/tensor.cpp: a new base-sized result, a
    // contiguous clone of its slice, and MaskedFillBackward0's grad.masked_fill(mask, 0)): three more
    // score-sized blocks live beside the gradient that flows on. Measured (H200 traces, session 16:
    // trace_dense_gqa8b_none, fam_gpt3_pp2_sel_empty_r1): seven score-sized requests in each layer's
    // attention backward, four of them live at once after the softmax's.
    auto& qk = b.graph().ops[static_cast<std::size_t>(b.graph().tensors[static_cast<std::size_t>(scores)].producer)];
    qk.backward_workspace += probs_bytes * 3;
    qk.backward_blocks.insert(qk.backward_blocks.end(), {probs_bytes, probs_bytes, probs_bytes});
    qk.backward_scratch_first = true;  // before the baddbmm's own query and key gradients
    // Traced (layout_fake_ep8_moonlight4_moe_r0, alloc_traces_s16): the zeroed gradient is made while the
    // softmax's gradient lives, which then goes; CopySlices' result is the gradient the baddbmm takes.
    qk.backward_renews_output_grad = true;
  }
  return probs;
}

// TE's get_full_mask for a padding mask with bottom-right alignment (utils.py:1526-1674, called at backends.py:459):
// the [b, 1, 1, s] mask OR-ed into a new [b, 1, sq, sk] bool mask (:1627-1629), its negation (:1634), the
// sliding-window terms built anyway: an int32 [1, 1, sq, sk] difference (:1639-1641), two int64 [b, 1, sq, sk]
// bounds (:1657-1663) and the bool comparisons of :1664, three of them alive at once, then the final OR (:1666).
// Only the final mask outlives the call; returns it. For cross-attention the pair of masks is OR-ed the same way
// (:1630-1633).
int full_padding_mask(GraphBuilder& b, std::int64_t sq, std::int64_t sk) {
  const ShapeContext& c = b.ctx();
  const std::int64_t m = checked_mul(checked_mul(c.batch, sq), sk);  // [b, 1, sq, sk] elements
  const int mask = b.tensor("full_mask", Bytes{m}, false, 1);
  const Bytes ws{checked_mul(m, 2 * 8 + 1 + 1 + 2) + checked_mul(checked_mul(sq, sk), 4)};
  b.op("get_full_mask", {.out = {mask}, .region = kCoreAttn, .ws = ws, .bytes_moved = double(ws.value)});
  return mask;
}

// The softmax under a padding mask (BERT). TE's UnfusedDotProductAttention builds the full mask for every layer,
// runs the masked softmax, then masks the probabilities again out of place (backends.py:648-649): a new
// [b, np, sq, sk] tensor whose MaskedFillBackward0 saves the mask. Megatron's DotProductAttention takes the model's
// [b, 1, s, s] mask (bert_model.py:265-279) or the batch's (pretrain_t5.py:158-165), allocated once a forward: a
// stand-in of no bytes here.
}  // namespace

int padding_softmax(GraphBuilder& b, const model::RunSpec& spec, int scores, double E, std::int64_t np, std::int64_t sq, std::int64_t sk) {
  const ShapeContext& c = b.ctx();
  const double mask_bytes = double(c.batch) * double(sq) * double(sk);
  const int mask = !c.megatron_attention ? full_padding_mask(b, sq, sk) : b.tensor("given_attention_mask", Bytes{}, false);
  const int probs = fused_softmax_kernel(spec, c, np, true, sq, sk) ? fused_softmax(b, scores, E) : torch_softmax(b, spec, scores, E, mask, mask_bytes);
  if (c.megatron_attention) return probs;
  const int masked = b.tensor("softmax.masked", Bytes{checked_count(E)} * c.act_bytes);
  b.op("probs_masked_fill", {.in = {probs, mask}, .out = {masked}, .save = {mask}, .region = kCoreAttn, .flops = 1.0 * E, .bytes_moved = 2.0 * E * double(c.act_bytes) + mask_bytes});
  return masked;
}

// The unfused attention's softmax over the scores: the fused kernel when the module's rules allow it
// for these shapes, else forward_torch_softmax (fused_softmax.py:299-342) with the causal mask it
// builds; returns the probabilities the context bmm saves.
int attention_softmax(GraphBuilder& b, const model::RunSpec& spec, int scores, double E, std::int64_t np) {
  const ShapeContext& c = b.ctx();
  if (spec.model.softmax_type != model::SoftmaxType::vanilla) return sink_softmax(b, spec, scores, E, np);
  if (c.padding_mask) return padding_softmax(b, spec, scores, E, np, c.seq, c.seq);
  if (fused_softmax_kernel(spec, c, np, false)) return fused_softmax(b, scores, E);
  // T5's decoder under the local spec is given the batch's causal mask, so none is built (fused_softmax.py:323-327).
  // TE's UnfusedDotProductAttention keeps one bool mask per shape in a dict (TE 2.16 softmax.py:21-35); it is
  // still modelled as the per-forward fp32 scratch here.
  const int mask = c.causal_mask_given    ? b.tensor("given_attention_mask", Bytes{}, false)
                   : c.megatron_attention ? default_causal_mask(b, c.seq)
                                          : causal_mask(b, c.seq, c.seq);
  return torch_softmax(b, spec, scores, E, mask, double(c_seq_sq(b)));
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

namespace {

// Query and key as get_query_key_value_tensors leaves them (attention.py:1863-1924): views of the fused
// QKV output split per query group, except that reshaping the query from [s, b, groups, heads/group x hd]
// to [s, b, heads, hd] (:1908) cannot merge the split view when the rank has more than one group and
// more than one query head per group, so then it is a copy (measured: the Qwen3-style families runs,
// calibration/data/h200_families.jsonl). With qk_layernorm each goes through its norm over one head
// (:1921-1925), which saves its input: the query copy, or a view that keeps the whole QKV output.
std::pair<int, int> query_and_key(GraphBuilder& b, const model::ModelSpec& m, int qkv, std::int64_t hq, std::int64_t hkv,
                                  std::int64_t hd) {
  const std::int64_t N = b.ctx().tokens;
  int q = qkv, k = qkv;
  if (hkv > 1 && hq / hkv > 1) {
    q = b.tensor("query_reshape", b.act(N, hq * hd));
    b.op("query_reshape", {.in = {qkv}, .out = {q}, .bytes_moved = 2.0 * static_cast<double>(b.act(N, hq * hd).value), .movement = true});
  }
  if (m.qk_layernorm && m.qk_layernorm_full_width) {
    // OLMoESelfAttention.get_query_key_value_tensors (Bridge olmoe_provider.py:168-186): the split query and
    // key views are reshaped to [s, b, heads x hd], which cannot merge a strided split: copies, each
    // normalized over its whole width (the norm saves the copy).
    const bool layer_norm = m.normalization == model::Normalization::layer_norm;
    const int qc = b.tensor("query_flat", b.act(N, hq * hd));
    const int kc = b.tensor("key_flat", b.act(N, hkv * hd));
    b.op("qk_flatten", {.in = {q, k}, .out = {qc, kc}, .bytes_moved = 2.0 * static_cast<double>(b.act(N, (hq + hkv) * hd).value), .movement = true});
    return {norm(b, "q_layernorm", qc, N, hq * hd, layer_norm, kNoRegion), norm(b, "k_layernorm", kc, N, hkv * hd, layer_norm, kNoRegion)};
  }
  if (m.qk_layernorm) {
    const bool layer_norm = m.normalization == model::Normalization::layer_norm;
    q = norm(b, "q_layernorm", q, N * hq, hd, layer_norm, kNoRegion);
    k = norm(b, "k_layernorm", k, N * hkv, hd, layer_norm, kNoRegion);
  }
  return {q, k};
}

// Gemma2FlexDotProductAttention's FlexAttention path (Bridge gemma2_provider.py:385-403), which the pretrain
// recipes take (no attention mask, no dropout; docs/research/gemma-memory-facts.md section 2): query, key and
// value permuted to [b, heads, s, d] (views) into one compiled flex_attention kernel whose score_mod applies the
// tanh soft-cap (:85-88) and whose block mask the sliding window, so no score-sized tensor exists. torch's
// lowering (_inductor/kernel/flex/flex_attention.py) writes the output in the query's fill order, so the
// permute back to [s, b, heads x d] and its .contiguous() (:403) are no copy: linear_proj saves this output.
// It also writes the fp32 logsumexp [b, hq, s] and an fp32 max_scores of that shape nothing keeps. The
// backward takes query, key, value, output and logsumexp, so those are saved, the value as the view of the
// fused QKV output it is (all of it stays); it adds an fp32 delta [b, hq, s]. GQA indexes the shared heads.
void flex_core(GraphBuilder& b, int q, int k, int qkv, int ctx, std::int64_t hq, double flops) {
  const ShapeContext& c = b.ctx();
  const Bytes stats{checked_mul(checked_mul(c.batch, hq), c.seq) * kFp32};
  const int lse = b.tensor("core_attention.logsumexp", stats, false, kFp32);
  b.op("core_attention(flex)", {.in = {q, k, qkv}, .out = {ctx, lse}, .save = {q, k, qkv, ctx, lse}, .region = kCoreAttn, .flops = flops, .backward_flops = 2.5 * flops, .ws = stats, .bws = stats, .attention = true, .fused_attention = true});
}

}  // namespace

// Standard / GQA self-attention with RoPE (attention.py SelfAttention).
int attention_block(GraphBuilder& b, const model::RunSpec& spec, const model::Derived& d, int x,
                    bool separate_norm) {
  const ShapeContext& c = b.ctx();
  const auto& m = spec.model;
  const std::int64_t N = c.tokens, Nl = c.local_tokens, h = c.hidden;
  const std::int64_t hq = m.num_attention_heads / c.tp;
  const std::int64_t hkv = std::max<std::int64_t>(1, d.query_groups / c.tp);
  const std::int64_t hd = d.kv_channels;
  // EXAONE 4's spec has no input norm: TransformerLayer's IdentityOp hands linear_qkv the layer input itself
  // (transformer_layer.py:270, :626; exaone4_provider.py:78), which the column-parallel linear saves.
  int ln = x;
  if (m.pre_linear_layernorm && separate_norm) ln = norm(b, "input_layernorm", x, Nl, h, m.normalization == model::Normalization::layer_norm, kInputNorm);
  // qkv_linear's hooks cover get_query_key_value_tensors (attention.py:1386-1395): TE's fused norm and linear_qkv, the
  // split and the q / k norms; it commits right after and force-frees nothing.
  const std::size_t qkv_first = b.graph().ops.size();
  if (m.pre_linear_layernorm && !separate_norm) ln = norm(b, "input_layernorm(fused)", x, Nl, h, m.normalization == model::Normalization::layer_norm, kNoRegion);
  // With the output gate the fused projection also yields a query-sized gate (a view of its output).
  const std::int64_t gate_cols = m.attention_output_gate ? hq * hd : 0;
  const std::size_t qkv_op = b.graph().ops.size();
  const int qkv = b.linear("linear_qkv", ln, h, (hq + 2 * hkv) * hd + gate_cols, Parallel::column);
  // Its bias (add_bias_linear or add_qkv_bias, attention.py:1688, no skip_bias_add) is Megatron's own
  // linear's grad_output.sum(dim=0) after the wgrad (tensor_parallel/layers.py:725). Transformer Engine's
  // linears take a bias they add themselves into their GEMMs' epilogues instead (not measured here).
  // Forward, that linear adds the bias out of place after its GEMM (`output = output + bias`,
  // layers.py:575-577): the GEMM's result is a second output-sized block until the sum exists.
  if (!c.te && (m.add_bias_linear || m.add_qkv_bias)) {
    auto& op = b.graph().ops[qkv_op];
    op.forward_workspace += b.act(N, (hq + 2 * hkv) * hd + gate_cols);
    op.backward_workspace += bias_grad_transient(b, N, (hq + 2 * hkv) * hd + gate_cols);
  }
  // The gate is reshaped from [s, b, groups, heads/group x hd] to [s, b, heads, hd]
  // (get_query_key_value_tensors, attention.py:1933): with more than one query group on the rank the
  // split view cannot be merged, so that is a copy (measured: one query-sized block per layer, and the
  // fused QKV output freed as without the gate); with one group it stays a view of the QKV output.
  int gate = qkv;
  if (m.attention_output_gate && hkv > 1) {
    gate = b.tensor("output_gate.gate", b.act(N, hq * hd));
    b.op("gate_reshape", {.in = {qkv}, .out = {gate}, .bytes_moved = 2.0 * static_cast<double>(b.act(N, hq * hd).value), .movement = true});
  }
  auto [q, k] = query_and_key(b, m, qkv, hq, hkv, hd);
  b.offload_group(kOffQkvLinear, qkv_first);
  // RoPE makes new Q and K; V stays a view of the fused QKV output, so saving V keeps all of it (the
  // local core's); TE's fused attention copies it (below).
  if (const std::int64_t rot = rotary_dim(spec, d); rot > 0) {
    const int q_rope = b.tensor("q_rope", b.act(N, hq * hd));
    const int k_rope = b.tensor("k_rope", b.act(N, hkv * hd));
    const int cs = rope_cos_sin(b, m, rot);
    b.op("rotary", {.in = {q, k}, .out = {q_rope, k_rope, cs}, .save = {cs}, .flops = 6.0 * N * (hq + hkv) * rot});
    q = q_rope;
    k = k_rope;
  }
  const int ctx = b.tensor("core_attention.out", b.act(N, hq * hd));
  const double causal_flops = 2.0 * 2.0 * c.batch * hq * double(c.seq) * c.seq * hd * 0.5;
  const std::size_t core_first = b.graph().ops.size();
  if (c.flex_attention) {
    flex_core(b, q, k, qkv, ctx, hq, causal_flops);
  } else if (c.fused_attention) {
    // TE fused/flash attention saves Q, K, V, its output and the fp32 softmax statistics. When Q and K
    // are new tensors (RoPE, qk_layernorm, the query copy) and V is still a strided view of the fused
    // QKV output, TE's get_qkv_layout finds no layout it supports and makes all three contiguous, which
    // copies V alone (utils.py:2321-2324 at v2.16.1); the QKV output is then freed with the forward.
    // Measured: one V-sized block per layer from utils.py:2324 and no QKV GEMM output alive at the loss
    // (calibration/data/diagnostics/te_fixed_history_s18.jsonl).
    int v = qkv;
    if (q != qkv && k != qkv) {
      v = b.tensor("value_contiguous", b.act(N, hkv * hd));
      b.op("value_contiguous", {.in = {qkv}, .out = {v}, .region = kCoreAttn, .bytes_moved = 2.0 * static_cast<double>(b.act(N, hkv * hd).value), .movement = true});
    }
    const int lse = b.tensor("core_attention.softmax_lse", Bytes{c.batch * hq * c.seq * kFp32}, false, kFp32);
    Bytes cp_ws{};
    if (c.cp > 1) cp_ws = b.act(N, 2 * hkv * hd) * 2;  // KV ring: the chunk in flight and the next
    const int core = b.op("core_attention", {.in = {q, k, v}, .out = {ctx, lse}, .save = {q, k, v, ctx, lse}, .region = kCoreAttn, .flops = causal_flops, .backward_flops = 2.5 * causal_flops, .ws = cp_ws, .bws = cp_ws, .attention = true, .fused_attention = true});
    (void)core;
  } else {
    // Local DotProductAttention (dot_product_attention.py): scores and probabilities of size E.
    const double E = double(c.batch) * hq * c.seq * c.seq;
    const auto e = [&](std::int64_t bytes) { return Bytes{checked_count(E)} * bytes; };
    int kx = k, vx = qkv;
    if (hq / hkv > 1) {
      kx = b.tensor("gqa_expand.k", b.act(N, hq * hd));
      vx = b.tensor("gqa_expand.v", b.act(N, hq * hd));
      b.op("gqa_expand", {.in = {k, qkv}, .out = {kx, vx}, .region = kCoreAttn});
    }
    const int scores = b.tensor("scores", e(c.act_bytes));
    // The unfused core's batched GEMMs: the microbenchmark's "attention" class (time.json).
    b.op("baddbmm", {.in = {q, kx}, .out = {scores}, .save = {q, kx}, .region = kCoreAttn, .flops = causal_flops, .backward_flops = 2 * causal_flops, .attention = true});
    int probs = attention_softmax(b, spec, scores, E, hq);
    if (m.attention_dropout > 0) {
      const int mask = b.tensor("attention_dropout.mask", e(1), false, 1);
      const int dropped = b.tensor("attention_dropout.out", e(c.act_bytes));
      b.op("attention_dropout", {.in = {probs}, .out = {dropped, mask}, .save = {mask}, .region = kCoreAttn, .flops = 2.0 * E});
      probs = dropped;
    }
    const int ctx_raw = b.tensor("context", b.act(N, hq * hd));
    b.op("bmm", {.in = {probs, vx}, .out = {ctx_raw}, .save = {probs, vx}, .region = kCoreAttn, .flops = causal_flops, .backward_flops = 2 * causal_flops, .attention = true});
    // The raw scores stay referenced by locals until the attention forward returns.
    b.op("context_permute", {.in = {ctx_raw}, .out = {ctx}, .keep = {scores, probs}, .region = kCoreAttn});
  }
  // core_attn's hooks cover the core attention call; it commits right after and force-frees query, key and value
  // (attention.py:1542-1598): value is a view of the fused QKV output, whose storage goes with it.
  b.offload_group(kOffCoreAttn, core_first, -1, {q, k, qkv});
  int proj_in = ctx;
  if (m.attention_output_gate) {
    // _apply_output_gate (attention.py:1625-1632, torch.compile'd): x * sigmoid(gate.float()) cast back.
    // Its backward needs both inputs, saved as they are (measured: the core output and the reshaped
    // gate, nothing else); the sigmoid is recomputed. It sits outside the core_attn checkpoint.
    proj_in = b.tensor("output_gate.out", b.act(N, hq * hd));
    b.op("output_gate", {.in = {ctx, gate}, .out = {proj_in}, .save = {ctx, gate}, .flops = 5.0 * N * hq * hd, .bytes_moved = 3.0 * static_cast<double>(b.act(N, hq * hd).value)});
  }
  // attn_proj's hooks cover linear_proj; it commits right after and force-frees its input (attention.py:1616-1619).
  const std::size_t proj_first = b.graph().ops.size();
  const int out = row_linear(b, m, "linear_proj", proj_in, hq * hd, h, kNoRegion, proj_saves_original_input(spec, c));
  b.offload_group(kOffAttnProj, proj_first, -1, {proj_in});
  return out;
}

}  // namespace peakcast::sim::detail
