#pragma once
// The module builders behind build_layer_graph (module_graphs.cpp), one file per family:
// module_common.cpp (norms, residual add, activations), attention_graphs.cpp, moe_graphs.cpp,
// ssm_graphs.cpp. Each appends one module's ops and tensors to the builder's layer graph and returns
// the id of its output tensor. Private to peakcast_sim.
#include <cstdint>
#include <string>

#include "graph_builder.hpp"
#include "peakcast/model/run_spec.hpp"
#include "peakcast/sim/module_graphs.hpp"

namespace peakcast::sim::detail {

constexpr std::int64_t kFp32 = 4;

// A norm module: RMSNorm saves its input and the fp32 inverse RMS per row; LayerNorm also the mean.
int norm(GraphBuilder& b, const std::string& name, int x, std::int64_t rows, std::int64_t cols, bool layer_norm,
         std::uint32_t region);

// A row-parallel linear (linear_proj, linear_fc2). Under the Gemma layer specs it is
// TERowParallelLinearLayerNorm, whose TENorm runs on its output; a LoRA adapter wraps that whole module.
int row_linear(GraphBuilder& b, const model::ModelSpec& m, const std::string& name, int input, std::int64_t k, std::int64_t n,
               std::uint32_t region, bool keep_original_input = false);

// The bias-dropout-add after a mixer or MLP (a 1-byte mask per element when dropout is on). With
// `branch_bias` it also adds the skip_bias_add linear's bias, whose gradient its backward sums; unless
// `fused` (bias_dropout_fusion), the biased branch is a tensor of its own.
int residual_add(GraphBuilder& b, const std::string& name, int residual, int branch, std::int64_t rows, double dropout,
                 bool branch_bias = false, bool fused = false);

// What summing a [rows, cols] gradient into a bias's gradient holds while it runs: torch's CUDA sum over
// the rows, grad_output.sum(dim=0) in Megatron's own linears (tensor_parallel/layers.py:725) or the
// broadcast bias's sum_to_size in autograd, stages fp32 partials when it splits the rows over blocks
// (peakcast/sim/torch_reduce.hpp). Part of the backward workspace of the op that adds the bias.
Bytes bias_grad_transient(const GraphBuilder& b, std::int64_t rows, std::int64_t cols);

// How an MLP's activation runs beyond gated / fused: `probs` are the router probabilities the experts'
// activation multiplies by (-1: none); `clamped`: activation_func_clamp_value clamps both GLU halves.
struct ActivationOptions {
  int probs = -1;
  bool fp8_input_store = false;
  bool probs_need_grad = true;
  bool clamped = false;
  bool fc1_bias = false;  // the activation adds fc1's bias (skip_bias_add) and its backward sums the gradient
};

// Activation of an MLP whose fc1 output has `width` columns per rank (2x for gated units).
int activation(GraphBuilder& b, const std::string& name, int fc1, std::int64_t rows, std::int64_t ffn, bool gated,
               bool fused, std::uint32_t region, ActivationOptions o = {});

// The options a module's activation takes from the spec, given whether it runs fused.
ActivationOptions activation_options(const model::ModelSpec& m, bool fused);

// mlp.py / experts.py: the activation is one fused kernel only with bias_activation_fusion or TE's
// activation op; Transformer Engine linears alone leave the GLU to the unfused Python path.
bool fused_activation(const model::ModelSpec& m);

// The loss over the [tokens, V/TP] logits (language_module.py:161-206): vocab_parallel_cross_entropy, or the
// fused native / TE kernels. Returns the fp32 [tokens] loss.
int vocab_cross_entropy(GraphBuilder& b, const model::RunSpec& spec, int logits, std::int64_t V);

// LanguageModelEmbedding.forward as BertModel and T5Model run it (language_model_embedding.py:115-156): word, position
// and token-type lookups, their sums, the [b, s] -> [s, b] copy and the dropout over the token ids `ids`; returns the
// embedding (bert_graphs.cpp). The graph of it alone, the token ids its input:
int language_model_embedding(GraphBuilder& b, const model::RunSpec& spec, const model::Derived& d, int ids);
LayerGraph language_model_embedding_graph(const model::RunSpec& spec, const model::Derived& d, const ShapeContext& c);

// T5's encoder-to-decoder step (t5_model.py:357-380): the encoder block's final norm, whose output every decoder
// layer's cross-attention saves, then the decoder tokens' embedding (t5_graphs.cpp). `dec` is the decoder's context.
LayerGraph t5_bridge_graph(const model::RunSpec& spec, const model::Derived& d, const ShapeContext& enc, const ShapeContext& dec);

// BertModel's last-stage head (bert_model.py:363-404): final norm, pooler, LM head, output layer with its bias,
// binary head and the loss (bert_graphs.cpp).
LayerGraph bert_output_graph(const model::RunSpec& spec, const model::Derived& d, const ShapeContext& c);

// The softmax of an unfused attention under a padding (or arbitrary) mask over [b, np, sq, sk] scores of E elements:
// TE builds the full mask, masks, and masks the probabilities again out of place; Megatron's takes the given mask
// (attention_graphs.cpp). Returns the probabilities the context bmm takes.
int padding_softmax(GraphBuilder& b, const model::RunSpec& spec, int scores, double E, std::int64_t np, std::int64_t sq, std::int64_t sk);

// T5's decoder cross-attention over the encoder's output (attention.py CrossAttention; t5_graphs.cpp): `x` is the
// pre-cross-attention norm's output; returns linear_proj's output (its bias left to the bias-dropout-add).
int cross_attention_block(GraphBuilder& b, const model::RunSpec& spec, const model::Derived& d, int x);

// The unfused core's softmax over the scores (the fused kernel where the module's rules allow it, else
// forward_torch_softmax with its causal mask); returns the probabilities the context bmm saves.
int attention_softmax(GraphBuilder& b, const model::RunSpec& spec, int scores, double E, std::int64_t np);
// The unfused RoPE's saved cos and sin, [s, 1, 1, rot] in the activation dtype, four per layer (0 bytes fused).
int rope_cos_sin(GraphBuilder& b, const model::ModelSpec& m, std::int64_t rot_dim);
// Under FP8 with a recipe other than delayed scaling linear_proj saves its bf16 input.
bool proj_saves_original_input(const model::RunSpec& spec, const ShapeContext& c);
int attention_block(GraphBuilder& b, const model::RunSpec& spec, const model::Derived& d, int x, bool separate_norm);
int mla_block(GraphBuilder& b, const model::RunSpec& spec, int x, bool separate_norm, LayerGraph& g);
// DeepSeek sparse attention (dsa_graphs.cpp): its own input norm, AbsorbedMLA and DSAttention; `computes_topk`: the
// layer builds an indexer (else it reuses another layer's top-k).
int dsa_block(GraphBuilder& b, const model::RunSpec& spec, int x, bool computes_topk, LayerGraph& g);
int moe_block(GraphBuilder& b, const model::RunSpec& spec, const model::Derived& d, int ln, LayerGraph& g);
int mamba_block(GraphBuilder& b, const model::RunSpec& spec, int ln);
int gdn_block(GraphBuilder& b, const model::RunSpec& spec, int ln, LayerGraph& g);

}  // namespace peakcast::sim::detail
