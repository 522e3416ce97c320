#pragma once
// Builders of the per-micro-batch lifetime graph of each module kind, at the per-rank shapes that
// TP/SP/CP/EP/ETP give, for the Transformer Engine stack and for the local (torch-only) stack.
#include <cstdint>
#include <string>
#include <vector>

#include "peakcast/model/layer_plan.hpp"
#include "peakcast/model/run_spec.hpp"
#include "peakcast/sim/layer_graph.hpp"

namespace peakcast::sim {

// Per-rank sizes shared by all module builders.
struct ShapeContext {
  std::int64_t seq = 0;           // tokens of one sequence on this CP rank (seq_length / cp)
  std::int64_t batch = 1;         // micro-batch size
  std::int64_t tokens = 0;        // seq * batch: rows of a full (TP-gathered) activation
  std::int64_t local_tokens = 0;  // tokens / tp under sequence parallelism, else tokens
  std::int64_t hidden = 0;
  std::int64_t tp = 1, cp = 1, ep = 1, etp = 1;
  std::int64_t act_bytes = 2;   // activation dtype size
  bool te = true;               // Transformer Engine modules (fused LN-linear, fused attention)
  bool fused_attention = true;  // flash/fused attention kernel (no s*s tensors)
  bool flex_attention = false;  // Gemma 2's FlexAttention core (Bridge Gemma2FlexDotProductAttention)
  // The unfused core is Megatron's DotProductAttention (dot_product_attention.py) rather than TE's
  // UnfusedDotProductAttention: the local stack, attention_backend local, or a layer spec naming it (EXAONE 4).
  bool megatron_attention = false;
  bool fp8 = false;  // FP8 GEMM inputs saved as 1-byte copies
  bool sequence_parallel = false;
  // The self-attention mask is a padding mask, not a causal one (BERT: bert_layer_specs.py:60, :113; T5's encoder:
  // t5_spec.py:64, :137).
  bool padding_mask = false;
  // The causal self-attention is given the batch's mask instead of building one (T5's decoder, local spec:
  // pretrain_t5.py:158-165, fused_softmax.py:323-327).
  bool causal_mask_given = false;
  // Cross-attention (T5's decoder): the encoder's sequence on this rank, the keys' length; 0 without.
  std::int64_t kv_seq = 0;
  bool grad_accumulation_fusion = false;  // wgrad written straight into main_grad
  double moe_routing_imbalance = 1.0;     // received tokens / balanced share (1 = balanced)
  // PEFT (LoRA, the spec's peft section): every base weight frozen; adapters of rank lora_rank beside
  // the linears whose attribute name is in lora_targets (GraphBuilder::lora_adapter).
  bool frozen_base = false;
  std::int64_t lora_rank = 0;
  std::vector<std::string> lora_targets;
  double lora_dropout = 0.0;
  bool lora_dropout_post = false;
  bool lora_input_regather = false;  // sequence_parallel_input_regather
  model::GpuSpec gpu;                // its multiprocessors size torch's reduction grids (torch_reduce.hpp)
};

ShapeContext make_shape_context(const model::RunSpec& spec, const model::Derived& d);

// T5's decoder (pretrain_t5.py:140-194) beside the encoder's context `enc`: decoder_seq_length tokens a sequence, the
// encoder's sequence as the cross-attention's keys, and under the local spec the batch's causal mask given to its
// self-attention.
ShapeContext t5_decoder_shape_context(const model::RunSpec& spec, const model::Derived& d, const ShapeContext& enc);

// Channels of each head RoPE rotates: kv_channels x rotary_percent (at least 1) for standard
// attention, qk_pos_emb_head_dim for MLA; 0 without rotary embeddings.
std::int64_t rotary_dim(const model::RunSpec& spec, const model::Derived& d);

// A decoder layer (GPT: mixer + FFN with two norms; hybrid: one mixer or one FFN with its norm).
LayerGraph build_layer_graph(const model::RunSpec& spec, const model::Derived& d, const ShapeContext& c,
                             const model::LayerSpec& layer, bool hybrid);

// Embedding lookup on the first stage (token ids in, hidden out).
LayerGraph build_embedding_graph(const model::RunSpec& spec, const model::Derived& d, const ShapeContext& c);

// What an MTP depth adds before its transformer layer (multi_token_prediction.py:1086-1158): the
// shifted tokens' embedding, enorm / hnorm, their concatenation and eh_proj (hidden in, hidden out).
LayerGraph build_mtp_wrapper_graph(const model::RunSpec& spec, const model::Derived& d, const ShapeContext& c);

// Final norm, output layer and cross-entropy loss on the last stage (hidden in, loss out).
LayerGraph build_output_graph(const model::RunSpec& spec, const model::Derived& d, const ShapeContext& c);

// Largest request ever made of Megatron's global ("mpu", dtype) scratch buffer on this rank:
// the local attention's scores scratch and the SP all-gather target of Megatron's own linears.
Bytes global_memory_buffer_bytes(const model::RunSpec& spec, const model::Derived& d, const ShapeContext& c);

}  // namespace peakcast::sim
