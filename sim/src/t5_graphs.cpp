// T5Model's own pieces (mcore:megatron/core/models/T5/ at 24bad8e6): the decoder layers' cross-attention over the
// encoder's output, and the step between the stacks (the encoder's final norm, the decoder tokens' embedding).
// The encoder layers are GPT's with a padding mask, the decoder's self-attention GPT's causal one.
// docs/research/encoder-models-memory-facts.md.
#include "module_blocks.hpp"

namespace peakcast::sim::detail {

using Parallel = GraphBuilder::Parallel;

namespace {

// Megatron's own ColumnParallelLinear adds its bias out of place after the GEMM (tensor_parallel/layers.py:575-577):
// the GEMM's result is a second output-sized block until the sum exists, and the backward sums the bias gradient
// (:725). Transformer Engine's linears add it in the GEMM's epilogue.
void local_bias(GraphBuilder& b, std::size_t op, std::int64_t rows, std::int64_t cols) {
  if (b.ctx().te || rows <= 0) return;
  OpNode& o = b.graph().ops[op];
  o.forward_workspace += b.act(rows, cols);
  o.backward_workspace += bias_grad_transient(b, rows, cols);
}

// The unfused core over Q [s_dec] and K, V [s_enc] (TE's UnfusedDotProductAttention or Megatron's
// DotProductAttention): no causal half, a padding (TE) or arbitrary (local) mask (t5_spec.py:107, :185).
int unfused_cross_core(GraphBuilder& b, const model::RunSpec& spec, int q, int kv, std::int64_t hq, std::int64_t hd) {
  const ShapeContext& c = b.ctx();
  const std::int64_t sq = c.seq, sk = c.kv_seq;
  const double E = double(c.batch) * double(hq) * double(sq) * double(sk);
  const double flops = 2.0 * double(c.batch) * double(hq) * double(sq) * double(sk) * double(hd);
  const int scores = b.tensor("cross_attention.scores", Bytes{checked_count(E)} * c.act_bytes);
  b.op("cross_attention.baddbmm", {.in = {q, kv}, .out = {scores}, .save = {q, kv}, .region = kCoreAttn, .flops = flops, .backward_flops = 2 * flops, .attention = true});
  int probs = padding_softmax(b, spec, scores, E, hq, sq, sk);
  if (spec.model.attention_dropout > 0) {
    const int mask = b.tensor("cross_attention.dropout_mask", Bytes{checked_count(E)}, false);
    const int dropped = b.tensor("cross_attention.dropout_out", Bytes{checked_count(E)} * c.act_bytes);
    b.op("cross_attention.dropout", {.in = {probs}, .out = {dropped, mask}, .save = {mask}, .region = kCoreAttn, .flops = 2.0 * E});
    probs = dropped;
  }
  const int ctx_raw = b.tensor("cross_attention.context", b.act(c.tokens, hq * hd));
  b.op("cross_attention.bmm", {.in = {probs, kv}, .out = {ctx_raw}, .save = {probs, kv}, .region = kCoreAttn, .flops = flops, .backward_flops = 2 * flops, .attention = true});
  const int out = b.tensor("cross_attention.core_out", b.act(c.tokens, hq * hd));
  // The raw scores stay referenced by locals until the attention forward returns.
  b.op("cross_attention.context_permute", {.in = {ctx_raw}, .out = {out}, .keep = {scores}, .region = kCoreAttn});
  return out;
}

}  // namespace

int cross_attention_block(GraphBuilder& b, const model::RunSpec& spec, const model::Derived& d, int x) {
  const ShapeContext& c = b.ctx();
  const auto& m = spec.model;
  const std::int64_t h = c.hidden, hq = m.num_attention_heads / c.tp, hd = d.kv_channels;
  const std::int64_t enc_rows = c.kv_seq * c.batch;  // the encoder's [s_enc, b] tokens
  const std::int64_t enc_local = c.sequence_parallel ? enc_rows / c.tp : enc_rows;
  // The encoder's output: held by the step between the stacks (t5_bridge_graph), so no bytes here; what this layer's
  // backward adds to its gradient is a block of its own until summed into the one the stacks share.
  const int context = b.input("context", Bytes{});
  b.graph().tensors[static_cast<std::size_t>(context)].grad_block = b.act(enc_local, h);
  // get_query_key_value_tensors (attention.py:2122-2160): linear_kv over the context, then linear_q; K and V are
  // views of the KV output, Q of the Q output.
  const std::size_t kv_op = b.graph().ops.size();
  const int kv = b.linear("cross_attention.linear_kv", context, h, 2 * hq * hd, Parallel::column, kNoRegion, enc_rows);
  if (m.add_bias_linear) local_bias(b, kv_op, enc_rows, 2 * hq * hd);
  const std::size_t q_op = b.graph().ops.size();
  const int q = b.linear("cross_attention.linear_q", x, h, hq * hd, Parallel::column);
  if (m.add_bias_linear) local_bias(b, q_op, c.tokens, hq * hd);
  int core = -1;
  if (c.fused_attention) {
    // TE's fused attention saves Q, K, V (views: the Q and KV outputs stay), its output and the fp32 softmax statistics.
    core = b.tensor("cross_attention.core_out", b.act(c.tokens, hq * hd));
    const int lse = b.tensor("cross_attention.softmax_lse", Bytes{c.batch * hq * c.seq * kFp32}, false);
    const double flops = 2.0 * 2.0 * double(c.batch) * double(hq) * double(c.seq) * double(c.kv_seq) * double(hd);
    b.op("cross_attention.core_attention", {.in = {q, kv}, .out = {core, lse}, .save = {q, kv, core, lse}, .region = kCoreAttn, .flops = flops, .backward_flops = 2.5 * flops, .attention = true, .fused_attention = true});
  } else {
    core = unfused_cross_core(b, spec, q, kv, hq, hd);
  }
  return b.linear("cross_attention.linear_proj", core, hq * hd, h, Parallel::row);
}

LayerGraph t5_bridge_graph(const model::RunSpec& spec, const model::Derived& d, const ShapeContext& enc, const ShapeContext& dec) {
  LayerGraph g;
  g.name = "t5_bridge";
  GraphBuilder b(g, enc, "encoder.");
  const int x = b.input("input", b.act(enc.local_tokens, enc.hidden));
  const int context = norm(b, "final_layernorm", x, enc.local_tokens, enc.hidden,
                           spec.model.normalization == model::Normalization::layer_norm, kNoRegion);
  // The decoder's tokens (the batch's [b, s_dec] int64 row), looked up in the shared embedding (t5_model.py:377-380).
  GraphBuilder db(g, dec, "decoder_embedding.");
  const int ids = db.tensor("input_ids", Bytes{dec.tokens * 8}, false);
  db.op("input_ids", {.out = {ids}});
  g.output = language_model_embedding(db, spec, d, ids);
  // Every decoder layer's linear_kv saves the encoder's output; its gradient, summed over the layers, reaches the
  // norm after the decoder embedding's backward (autograd takes the later nodes first). Last in forward order so
  // that gradient is here through the embedding's backward.
  b.op("output_for_cross_attention", {.in = {context}, .save = {context}});
  return g;
}

}  // namespace peakcast::sim::detail
