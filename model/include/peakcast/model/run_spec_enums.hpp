#pragma once
// The run spec's enumerations (run_spec.hpp): one value set per Megatron string field.
#include <optional>
#include <string>

namespace peakcast::model {

// One enum a line: with ColumnLimit 0, clang-format 14 would put each enumerator on its own line.
// clang-format off
enum class Normalization { layer_norm, rms_norm };
enum class Activation { gelu, silu, squared_relu, relu };  // silu + gated_linear_unit = SwiGLU
enum class PositionEmbedding { rope, yarn, learned_absolute, none };
enum class RecomputeGranularity { none, selective, full };
enum class RecomputeMethod { none, uniform, block };
enum class TransformerImpl { transformer_engine, local };
// attention_backend: auto/flash/fused pick a fused kernel with TE; unfused/local is DotProductAttention.
enum class AttentionBackend { auto_, flash, fused, unfused, local };
enum class Dispatcher { allgather, alltoall, flex };
enum class CrossEntropyImpl { unfused, native, te };  // unfused = cross_entropy_loss_fusion false
enum class CudaGraphImpl { none, local, transformer_engine, full_iteration };
enum class Fp8Recipe { delayed, tensorwise, mxfp8, blockwise };
enum class OptimizerImpl { te_fused_adam, apex_fused_adam, torch_adamw };
// softmax_type (transformer_config.py:163): off-by-one and learnable add a sink column to every softmax row.
enum class SoftmaxType { vanilla, off_by_one, learnable };
// core_attention_module (peakcast): the core attention a Bridge layer spec puts in place of the one
// transformer_impl / attention_backend pick: Gemma 2's FlexAttention module, Gemma 3's windowed TE one,
// Megatron's own DotProductAttention (EXAONE 4's exaone4_layer_spec names it whatever attention_backend says).
enum class CoreAttentionModule { default_, gemma2, gemma3, dot_product };
// Which Megatron Core model the training script builds: GPTModel (or HybridModel under a hybrid pattern),
// BertModel (examples/bert/pretrain_bert.py) or T5Model (examples/t5/pretrain_t5.py).
enum class Architecture { gpt, bert, t5 };

// The eight selective-recompute tags of the pinned TransformerConfig.
enum class RecomputeTag { core_attn, mla_up_proj, layernorm, moe_act, mlp, moe, shared_experts, gdn_norm_out };
// clang-format on

const char* to_string(RecomputeTag t);
std::optional<RecomputeTag> recompute_tag_from_string(const std::string& s);

}  // namespace peakcast::model
