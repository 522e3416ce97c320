// BertModel's own modules (mcore:megatron/core/models/bert/ at 24bad8e6): the embedding with positions and token
// types, and the last stage's head (final norm, pooler, LM head, output layer with a bias, binary head, loss).
// The encoder layers are GPT's with a padding mask (attention_graphs.cpp padding_softmax).
// docs/research/encoder-models-memory-facts.md.
#include "module_blocks.hpp"

namespace peakcast::sim::detail {

using Parallel = GraphBuilder::Parallel;

namespace {

// A torch.nn.Linear of BertModel (get_linear_layer, transformer/utils.py:27-34): replicated over TP, on this
// rank's rows, outside Transformer Engine and Megatron's wgrad fusion, so its weight gradient is a plain
// param.grad; the bias rides in the GEMM (addmm) and its gradient is a sum over the rows.
int torch_linear(GraphBuilder& b, const std::string& name, int input, std::int64_t k, std::int64_t n, std::int64_t rows) {
  const std::size_t op = b.graph().ops.size();
  const int out = b.linear(name, input, k, n, Parallel::none, kNoRegion, rows);
  b.graph().ops[op].backward_workspace += bias_grad_transient(b, rows, n);
  return out;
}

// The ShapeContext of those torch modules: no TE, no fusion into main_grad, no FP8, no sequence-parallel gather.
ShapeContext torch_module_context(const ShapeContext& c) {
  ShapeContext t = c;
  t.te = false;
  t.grad_accumulation_fusion = false;
  t.fp8 = false;
  t.sequence_parallel = false;
  return t;
}

// Pooler (pooler.py:38-52): under SP the hidden states are gathered into a new [s, b, h]; hidden_states[0] is a
// [b, h] view that dense saves (keeping what it views), tanh saves its output. Returns the pooled [b, h].
int pooler(GraphBuilder& b, GraphBuilder& tb, int hidden) {
  const ShapeContext& c = b.ctx();
  int base = hidden;
  if (c.sequence_parallel) {
    base = b.tensor("pooler.gathered", b.act(c.tokens, c.hidden));
    const double comm = double(b.act(c.tokens, c.hidden).value) * double(c.tp - 1) / double(c.tp);
    b.op("pooler.gather", {.in = {hidden}, .out = {base}, .movement = true, .comm = comm, .bcomm = 0});
  }
  const int dense = torch_linear(tb, "pooler.dense", base, c.hidden, c.hidden, c.batch);
  const int pooled = b.tensor("pooler.tanh", b.act(c.batch, c.hidden));
  b.op("pooler.tanh", {.in = {dense}, .out = {pooled}, .save = {pooled}, .flops = 4.0 * double(c.batch * c.hidden)});
  return pooled;
}

// BertLMHead (bert_lm_head.py:44-50): dense, gelu (saves its input), apex's FusedLayerNorm (its input and the
// fp32 row statistics; a torch RMSNorm without apex under RMSNorm), each output new, on this rank's [s(/TP), b, h] rows.
int lm_head(GraphBuilder& b, GraphBuilder& tb, int hidden, bool layer_norm) {
  const ShapeContext& c = b.ctx();
  const std::int64_t Nl = c.local_tokens, h = c.hidden;
  const int dense = torch_linear(tb, "lm_head.dense", hidden, h, h, Nl);
  const int gelu = b.tensor("lm_head.gelu", b.act(Nl, h));
  b.op("lm_head.gelu", {.in = {dense}, .out = {gelu}, .save = {dense}, .flops = 8.0 * double(Nl * h)});
  return norm(b, "lm_head.layer_norm", gelu, Nl, h, layer_norm, kNoRegion);
}

}  // namespace

int language_model_embedding(GraphBuilder& b, const model::RunSpec& spec, const model::Derived& d, int ids) {
  const auto& m = spec.model;
  const ShapeContext& c = b.ctx();
  const std::int64_t N = c.tokens, h = c.hidden;
  const bool trained = !c.frozen_base;
  // VocabParallelEmbedding: the [b, s, h] lookup, all-reduced over TP (the position and token-type tables keep it
  // from reduce-scattering, language_model_embedding.py:51-56); its backward builds the dense [V/TP, h] gradient.
  int x = b.tensor("word_embeddings.out", b.act(N, h));
  b.op("word_embeddings", {.in = {ids}, .out = {x}, .save = {ids}, .bws = trained ? b.act(d.padded_vocab / c.tp, h) : Bytes{}});
  if (m.position_embedding_type == model::PositionEmbedding::learned_absolute) {
    // bert_position_ids / t5_position_ids (bert_model.py:283-290, t5_model.py:528-540): arange(s) expanded to [b, s];
    // the lookup saves it (language_model_embedding.py:116-118).
    const int pos = b.tensor("position_ids", Bytes{c.seq * 8}, false);
    b.op("position_ids", {.out = {pos}});
    const int pe = b.tensor("position_embeddings.out", b.act(N, h));
    b.op("position_embeddings", {.in = {pos}, .out = {pe}, .save = {pos}, .bws = trained ? b.act(m.max_position_embeddings, h) : Bytes{}});
    const int sum = b.tensor("add_position", b.act(N, h));
    b.op("add_position", {.in = {x, pe}, .out = {sum}, .flops = double(N * h), .passthrough = true});
    x = sum;
  }
  // [b, s, h] -> [s, b, h]: transpose(0, 1).contiguous() copies (:122-124).
  const int sbh = b.tensor("transpose", b.act(N, h));
  b.op("transpose_contiguous", {.in = {x}, .out = {sbh}, .passthrough = true, .movement = true});
  x = sbh;
  if (const std::int64_t types = model::bert_num_tokentypes(m); types > 0) {
    // The token types are the batch's [b, s] int64 row; the lookup saves them, the sum is new (:126-130).
    const int type_ids = b.tensor("tokentype_ids", Bytes{N * 8}, false);
    b.op("tokentype_ids", {.out = {type_ids}});
    const int te = b.tensor("tokentype_embeddings.out", b.act(N, h));
    b.op("tokentype_embeddings", {.in = {type_ids}, .out = {te}, .save = {type_ids}, .bws = trained ? b.act(types, h) : Bytes{}});
    const int sum = b.tensor("add_tokentype", b.act(N, h));
    b.op("add_tokentype", {.in = {x, te}, .out = {sum}, .flops = double(N * h), .passthrough = true});
    x = sum;
  }
  if (c.sequence_parallel) {
    // scatter_to_sequence_parallel_region gives a view of this rank's rows, cloned so the whole can go (:143-152).
    const int mine = b.tensor("scatter_clone", b.act(c.local_tokens, h));
    b.op("scatter_clone", {.in = {x}, .out = {mine}, .passthrough = true, .movement = true});
    x = mine;
  }
  if (m.hidden_dropout > 0) {
    const int dropped = b.tensor("dropout.out", b.act(c.local_tokens, h));
    const int mask = b.tensor("dropout.mask", Bytes{c.local_tokens * h}, false);
    b.op("embedding_dropout", {.in = {x}, .out = {dropped, mask}, .save = {mask}});
    x = dropped;
  }
  return x;
}

LayerGraph language_model_embedding_graph(const model::RunSpec& spec, const model::Derived& d, const ShapeContext& c) {
  LayerGraph g;
  g.name = "embedding";
  GraphBuilder b(g, c, "embedding.");
  const int ids = b.input("input_ids", Bytes{c.tokens * 8});
  g.tensors[static_cast<std::size_t>(ids)].requires_grad = false;
  g.output = language_model_embedding(b, spec, d, ids);
  return g;
}

LayerGraph bert_output_graph(const model::RunSpec& spec, const model::Derived& d, const ShapeContext& c) {
  const auto& m = spec.model;
  LayerGraph g;
  g.name = "output";
  GraphBuilder b(g, c, "output.");
  const ShapeContext plain = torch_module_context(c);
  GraphBuilder tb(g, plain, "output.");
  const std::int64_t N = c.tokens, h = c.hidden, V = d.padded_vocab / c.tp;
  const int x = b.input("input", b.act(c.local_tokens, h));
  // The encoder's final layernorm (TENorm with TE installed, transformer_block.py:54-56).
  const bool layer_norm = m.normalization == model::Normalization::layer_norm;
  const int hidden = norm(b, "final_layernorm", x, c.local_tokens, h, layer_norm, kNoRegion);
  const int pooled = m.bert_binary_head ? pooler(b, tb, hidden) : -1;  // bert_model.py:366-367
  const int head = lm_head(b, tb, hidden, layer_norm);                 // :389-391
  // The output layer, Megatron's ColumnParallelLinear with a bias (:145-158, :392): `output + bias` is a new
  // [s, b, V/TP] beside the GEMM's (tensor_parallel/layers.py:575-577), and the backward sums the bias gradient
  // over the rows (:725).
  ShapeContext local = c;
  local.te = false;
  GraphBuilder lb(g, local, "output.");
  const std::size_t output_op = g.ops.size();
  const int logits = lb.linear("output_layer", head, h, V, Parallel::column);
  OpNode& out = g.ops[output_op];
  out.backward_takes_workspaces = true;
  out.forward_workspace += b.act(N, V);
  out.backward_workspace += bias_grad_transient(b, N, V);
  g.deferred_input = head;
  g.deferred_output = logits;
  const int sop = pooled >= 0 ? torch_linear(tb, "binary_head", pooled, h, 2, c.batch) : -1;  // :395-396
  const int loss = vocab_cross_entropy(b, spec, logits, V);
  // The [s, b] loss transposed back to [b, s] (language_module.py:205), a copy.
  const int lm_loss = b.tensor("lm_loss", Bytes{N * kFp32});
  b.op("lm_loss.transpose", {.in = {loss}, .out = {lm_loss}, .passthrough = true, .movement = true});
  // loss_func (pretrain_bert.py:89-111): the masked mean of the MLM loss (an fp32 [b*s] product) plus the
  // sentence-order loss over an fp32 copy of the [b, 2] logits (log_softmax saves its output).
  const int total = b.tensor("loss_func.loss", Bytes{kFp32});
  if (sop >= 0) {
    const int sop_fp32 = b.tensor("sop_loss.log_softmax", Bytes{c.batch * 2 * kFp32});
    b.op("sop_loss", {.in = {sop}, .out = {sop_fp32}, .save = {sop_fp32}, .flops = 10.0 * double(c.batch)});
    b.op("loss_func", {.in = {lm_loss, sop_fp32}, .out = {total}, .flops = 2.0 * double(N), .ws = Bytes{N * kFp32}});
  } else {
    b.op("loss_func", {.in = {lm_loss}, .out = {total}, .flops = 2.0 * double(N), .ws = Bytes{N * kFp32}});
  }
  g.output = total;
  return g;
}

}  // namespace peakcast::sim::detail
