#pragma once
// Model state on one rank: parameters, gradient buffers, distributed-optimizer shards, Adam state,
// and the optimizer step's transients, each from shapes and dtypes.
#include <cstdint>
#include <vector>

#include "peakcast/model/layer_plan.hpp"
#include "peakcast/model/run_spec.hpp"

namespace peakcast::model {

// Position of a rank in the layout. Ranks with equal positions on the axes that change memory are
// the same "rank shape"; static_memory_per_rank returns one entry per distinct shape.
struct RankId {
  std::int64_t pp_rank = 0, tp_rank = 0, cp_rank = 0, ep_rank = 0, dp_rank = 0;
};

struct ParamCounts {
  std::int64_t dense = 0;   // non-expert parameters held by this rank (after TP/PP sharding)
  std::int64_t expert = 0;  // routed-expert parameters held by this rank (after EP/ETP sharding)
  std::int64_t total() const { return dense + expert; }
};

// The caching allocator's slack on per-parameter tensors without the distributed optimizer (with
// it, parameters, main parameters and moments live in a few large buffers and shards): the bytes its
// blocks hold beyond what the tensors request (caching_allocator.hpp), replayed in allocation order.
struct AllocatorSlack {
  Bytes parameters;   // model build: one tensor per parameter
  Bytes main_params;  // optimizer build: an fp32 clone per bf16 / fp16 parameter
  // The first step() allocates the Adam moments, then torch AdamW's foreach temporaries, parameter
  // by parameter. Each one's slack had it a fresh segment, and the step's bytes requested up to and
  // including it.
  std::vector<Bytes> step_request_end;
  std::vector<Bytes> step_slack;
  std::size_t moments = 0;  // the first `moments` entries are moments, the rest temporaries
  // The moments' and the temporaries' slack when the first `cached` bytes of the step's requests
  // are carved from memory the forward-backward freed (no new segment, so no unsplit remainder).
  struct Step {
    Bytes moments, temporaries;
  };
  Step step(Bytes cached) const;
};

struct StaticMemory {
  ParamCounts params;
  Bytes parameters;             // model weights in their dtype (DDP param buffer with DistOpt)
  Bytes gradients;              // DDP grad buffers incl. bucket padding
  Bytes main_params;            // fp32 (or main_params_dtype) master shard, from optimizer build
  Bytes optimizer_states;       // Adam moments (+ TE remainders), created at the first step
  Bytes fp8_weight_cache;       // FP8 weight copies/transposes kept by TE when FP8 compute is on
  Bytes step_transient_first;   // extra bytes live during the first optimizer.step()
  Bytes step_transient_steady;  // extra bytes live during later optimizer.step() calls
  Bytes ddp_init_transient;     // duplicate params while DDP copies them into its buffer
  Bytes buffers;                // module buffers that are not parameters (fp32 router expert bias + token counts)
  AllocatorSlack slack;         // without DistOpt only
  // Megatron-FSDP's temporary full buckets (docs/research/megatron-fsdp-memory-facts.md section 4),
  // zero without it. The walk holds `fsdp_gather_window` through every forward and backward of a
  // chunk and, at each backward's end, `fsdp_backward_end` in its place.
  Bytes fsdp_gather_window;  // unit weight buckets all-gathered at once (the unit run plus its prefetch)
  Bytes fsdp_backward_end;   // the last unit's gathered weights plus every full gradient bucket not yet freed
};

struct RankStatic {
  RankId rank;
  std::vector<std::int64_t> vpp_chunks;
  StaticMemory memory;
};

std::vector<RankStatic> static_memory_per_rank(const RunSpec& spec, const Derived& d, const LayerPlan& plan);

// Whole-model parameter count (unsharded, padded vocab, MTP included when include_mtp).
std::int64_t total_parameters(const RunSpec& spec, const Derived& d, bool include_mtp = true);

// Elements of the non-parameter tensors a checkpoint also stores: the fp32 router expert_bias
// buffers (router.py:191-198). Hugging Face parameter totals often include them.
std::int64_t total_checkpointed_buffers(const RunSpec& spec, const Derived& d, bool include_mtp = true);

}  // namespace peakcast::model
