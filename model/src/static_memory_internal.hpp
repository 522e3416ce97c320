#pragma once
// Pieces of static_memory_per_rank: the parameters of one model chunk, the DDP buffers built from
// them, and the optimizer's bytes per element.
#include <cstdint>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "param_count.hpp"
#include "peakcast/model/layer_plan.hpp"
#include "peakcast/model/run_spec.hpp"
#include "peakcast/model/static_memory.hpp"

namespace peakcast::model::detail {

// Parameters one rank holds for one model chunk, in GPTModel registration order (embedding,
// decoder layers, final norm, MTP, output layer; gpt_model.py:167-286). `tensors` point into
// `storage`, where layers of the same kind share one list.
struct ChunkParams {
  std::deque<ParamList> storage;  // a deque: adding a list never moves the ones already pointed to
  std::vector<const ParamTensor*> tensors;
  // Per tensor: the index of the TransformerLayer / MambaLayer (decoder or MTP inner layer) that
  // registers it, in registration order, or -1 (embedding, norms, MTP wrapper, output layer). These
  // layers are Megatron-FSDP's default units (mcore_fsdp_adapter.py:171-172).
  std::vector<std::int32_t> layer_of;
};
ChunkParams chunk_params(const ModelChunk& chunk, const RunSpec& spec, const Derived& d);

// One contiguous _ParamAndGradBuffer (param_and_grad_buffer.py:1160-1196).
struct DdpBuffer {
  DType param_dtype = DType::bf16;
  DType grad_dtype = DType::fp32;
  bool expert = false;
  std::int64_t numel = 0;                                      // with DistOpt padding
  std::int64_t numel_unpadded = 0;                             // sum of parameter sizes
  std::int64_t gemm_numel = 0;                                 // of which TE GEMM weights
  std::int64_t shard_count = 1;                                // DistOpt shards per bucket (intra DP x CP, or intra expert DP)
  std::vector<std::pair<std::int64_t, std::int64_t>> params;   // [start, end) of each parameter
  std::vector<std::pair<std::int64_t, std::int64_t>> buckets;  // [start, end) of each bucket
};

struct DdpSettings {
  bool distributed_optimizer = false;
  std::optional<std::int64_t> bucket_size;  // None: one bucket
  std::int64_t dense_shards = 1;
  std::int64_t expert_shards = 1;
  bool pad_for_high_nccl_busbw = false;
  bool fp8_params = false;  // TE GEMM weights held as FP8 (uint8 buffer)
  DType param_dtype = DType::bf16;
  DType grad_dtype = DType::fp32;
};

// The run's DDP settings (bucket size, shards, dtypes), and those of one chunk of a stage (no
// bucketing off the first pipeline rank or after its first chunk).
DdpSettings ddp_settings(const RunSpec& spec, const Derived& d);
DdpSettings chunk_ddp_settings(const PipelineStage& stage, const ModelChunk& chunk, const RunSpec& spec, const Derived& d);

// Buffers of one chunk's DDP wrapper, in creation order (first appearance of each key).
std::vector<DdpBuffer> ddp_buffers(const std::vector<const ParamTensor*>& params, const DdpSettings& settings);

// Parameter elements (not padding) that shard `shard_index` of every bucket covers: what the
// distributed optimizer keeps state for on that rank (distrib_optimizer.py:200-256).
std::int64_t owned_elements(const DdpBuffer& buffer, std::int64_t shard_index);
// owned_elements for every shard index 0 .. shard_count - 1 in one pass over the parameters.
std::vector<std::int64_t> owned_elements_by_shard(const DdpBuffer& buffer);

// owned_elements as a step function of the shard index: shards [starts[k], starts[k + 1]) (the last
// piece up to shard_count) each own owned[k] elements. Every shard owns its whole slice of each
// bucket except where a parameter-alignment gap or the bucket-end padding falls in it, so there are
// O(parameters + buckets) pieces whatever the shard count (the data-parallel size).
struct ShardOwnership {
  std::vector<std::int64_t> starts;  // ascending, starts[0] == 0
  std::vector<std::int64_t> owned;
  std::int64_t at(std::int64_t shard) const;
};
ShardOwnership shard_ownership(const DdpBuffer& buffer);

// static_memory_per_rank as it was first written: every DistOpt shard index built and compared
// (O(DP x CP) per stage). Kept as the reference the O(1)-in-DP version is tested against.
// TE's FP8 weight copies for `gemm_numel` GEMM weight elements, and the MoE layers (router buffers) of a stage
// (static_memory.cpp).
Bytes fp8_weight_cache(const RunSpec& spec, std::int64_t gemm_numel);
std::int64_t moe_layers_on_stage(const PipelineStage& stage);

// Megatron-FSDP v1's model state per rank shape (static_memory_fsdp.cpp).
std::vector<RankStatic> fsdp_static_memory_per_rank(const RunSpec& spec, const Derived& d, const LayerPlan& plan);

std::vector<RankStatic> static_memory_per_rank_all_shards(const RunSpec& spec, const Derived& d, const LayerPlan& plan);

// Optimizer bytes per element it owns, and the step transients (§ optimizer rules in
// static_memory_optimizer.cpp).
struct OptimizerBytes {
  std::int64_t main_param = 0;              // allocated when the optimizer is built
  std::int64_t states = 0;                  // allocated lazily at the first step()
  std::vector<std::int64_t> state_tensors;  // bytes per element of each state tensor (sum: states)
  std::int64_t step_transient = 0;          // live during step() (and until the next zero_grad)
  // torch AdamW's foreach temporary: lives only while its own optimizer steps, so a chain of
  // optimizers (dense, expert-parallel) holds the largest one's, not their sum.
  std::int64_t step_foreach_temporary = 0;
  // Gradient clipping without Transformer Engine's or Apex's multi_tensor_scale: one fp32 `src * scale`
  // per main gradient, each freed before the next is made.
  std::int64_t step_clip_temporary = 0;
};

// Megatron builds separate optimizers for expert-parallel parameters (allreduce=False: experts
// with EP > 1 or an expert TP size that differs from TP, tensor_parallel/layers.py:961-965) and
// steps them one after the other (ChainedOptimizer).
bool expert_params_have_own_optimizer(const RunSpec& spec);

// `param_dtype` is the dtype the buffer stores (uint8 for FP8 params).
OptimizerBytes optimizer_bytes(const RunSpec& spec, const Derived& d, DType param_dtype, DType grad_dtype);

// True when TE FusedAdam keeps the master weights (MCore skips its fp32 main shard):
// use_precision_aware_optimizer_no_fp8_or_ds_fp8 (optimizer_config.py:404-411).
bool te_keeps_master_weights(const RunSpec& spec);

// AllocatorSlack of a pipeline stage without DistOpt: parameters, grad buffers, main parameters and
// the first step's moments and temporaries replayed through CachingAllocatorModel in creation order
// (static_memory_slack.cpp). `buffers` are the stage's DDP buffers, per chunk.
AllocatorSlack allocator_slack(const PipelineStage& stage, const std::vector<std::vector<DdpBuffer>>& buffers,
                               const RunSpec& spec, const Derived& d);

}  // namespace peakcast::model::detail
