#pragma once
// Parameter tensors of each Megatron Core module, with the shapes the pinned code builds
// (TE layer specs: megatron/core/models/gpt/gpt_layer_specs.py, hybrid_layer_specs.py at 24bad8e6).
// One list serves both the whole-model count (no sharding) and the per-rank count (TP/EP/ETP
// sharding), so the two can never disagree.
#include <cstdint>
#include <string>
#include <vector>

#include "peakcast/model/layer_plan.hpp"
#include "peakcast/model/run_spec.hpp"

namespace peakcast::model::detail {

// How a linear is split over its tensor-parallel group (TP, or ETP for routed experts).
enum class GemmMode { none,
                      column,        // output dimension split (ColumnParallelLinear)
                      row,           // input dimension split (RowParallelLinear)
                      duplicated };  // replicated (TELinear parallel_mode="duplicated")

// One nn.Parameter as registered on a rank (after sharding).
struct ParamTensor {
  std::string name;
  std::int64_t numel = 0;
  std::int64_t out_local = 0, in_local = 0;  // a GEMM weight's [out, in] on this rank (0 for others)
  GemmMode mode = GemmMode::none;
  bool frozen = false;            // requires_grad False (PEFT): no DDP buffer entry, grad or optimizer state
  bool expert = false;            // routed-expert weight: lives in the expert-parallel DDP buffer
  bool gemm_weight = false;       // a TE linear weight: FP8-quantised when FP8 compute/params are on
  bool shared_embedding = false;  // gets its own DDP bucket (language_module.py:270-276)
  // Built twice at model build, the first copy freed when the second replaces it: MLA's linear_proj,
  // which Attention.__init__ builds (attention.py:413) and MultiLatentAttention.__init__ builds again
  // (multi_latent_attention.py:221), as the H200 allocator stream of moe_moonlight4_none shows.
  bool rebuilt = false;
};

// How a rank's copy is cut. {1,1,1} gives the full, unsharded model.
struct Sharding {
  std::int64_t tp = 1;   // dense tensor parallel (attention, dense MLP, shared experts, vocab)
  std::int64_t ep = 1;   // expert parallel: E/ep local experts
  std::int64_t etp = 1;  // expert tensor parallel: each expert's FFN dim / etp
};

using ParamList = std::vector<ParamTensor>;

// The tensors of one decoder (or MTP inner) layer, in registration order.
ParamList layer_params(const LayerSpec& layer, const ModelSpec& m, const Derived& d, const Sharding& s);

// Input embedding (word + learned absolute position table when used).
ParamList embedding_params(const ModelSpec& m, const Derived& d, const Sharding& s, bool shared_embedding);
// LM head weight (tensor_parallel.ColumnParallelLinear, gpt_model.py:269-286).
ParamList output_layer_params(const ModelSpec& m, const Derived& d, const Sharding& s);
// BERT's LM head before the output layer (dense, layer_norm); empty for other models.
ParamList bert_lm_head_params(const ModelSpec& m);
// What the model registers after the output weight: BERT's output bias, binary head and pooler; T5's output bias
// (tied weights); nothing for GPT.
ParamList params_after_output_weight(const ModelSpec& m, const Derived& d, const Sharding& s);
// Final layernorm of the decoder (or of one MTP depth).
ParamList final_norm_params(const ModelSpec& m, const std::string& name);
// MTP depth wrapper: enorm, hnorm, eh_proj (multi_token_prediction.py:983-1053). Inner layers
// and the final layernorm are added by the caller.
ParamList mtp_wrapper_params(const ModelSpec& m, const Sharding& s);

// Norm parameter count: RMSNorm has a weight, LayerNorm a weight and a bias.
std::int64_t norm_numel(const ModelSpec& m, std::int64_t width);

// Router buffers that are not parameters: fp32 expert_bias and local_tokens_per_expert
// (router.py:181-198). Elements per MoE layer.
std::int64_t router_buffer_numel_per_moe_layer(const ModelSpec& m);
// Of those, the ones saved in checkpoints (expert_bias, persistent=True).
std::int64_t router_checkpointed_buffer_numel_per_moe_layer(const ModelSpec& m);

std::int64_t sum_numel(const ParamList& list);

// The LoRA adapters Bridge adds beside the targeted linears of one layer's tensors (param_count_lora.cpp).
// `grouped_experts`: the routed experts are one TEGroupedMLP (moe_grouped_gemm), not SequentialMLP.
ParamList lora_adapters(const ParamList& layer, const PeftSpec& p, const Sharding& s, bool grouped_experts);

}  // namespace peakcast::model::detail
