#pragma once
// The tensor-lifetime graph of one module (a decoder layer, the embedding, the output layer and
// loss) for one micro-batch: ops in forward order, the tensors each produces and consumes, which
// tensors each op saves for its backward, and the checkpoint regions each op belongs to.
#include <array>
#include <compare>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "peakcast/model/units.hpp"

namespace peakcast::sim {

// Checkpoint regions Megatron can wrap, one bit each. An op may sit in several (nested) regions.
enum Region : std::uint32_t {
  kNoRegion = 0,
  kCoreAttn = 1u << 0,       // mechanism 1: attention core
  kMlaUpProj = 1u << 1,      // mechanism 2: MLA up-projections + RoPE; outputs Q, K, V discarded
  kInputNorm = 1u << 2,      // mechanism 2 (layernorm tag): input layernorm output discarded
  kPreMlpNorm = 1u << 3,     // mechanism 2 (layernorm tag): pre-MLP layernorm output discarded
  kMlp = 1u << 4,            // mechanism 1: dense MLP
  kMoe = 1u << 5,            // mechanism 1: whole MoE layer
  kSharedExperts = 1u << 6,  // mechanism 1: shared expert MLP
  kMoeAct = 1u << 7,         // mechanism 2: grouped expert activation output discarded
  kGdnNormOut = 1u << 8,     // mechanism 2: GDN gated norm output discarded
};

enum class Mechanism { keep_inputs,
                       discard_output };

// Fine-grained activation offloading's groups (offload_modules), one bit each: whose saved-tensor hooks an op
// runs under (FineGrainedActivationOffloadingInterface, fine_grained_activation_offload.py:1356-1418). Groups do
// not nest: an op sits in at most one.
enum OffloadGroup : std::uint32_t {
  kNoOffloadGroup = 0,
  kOffAttnNorm = 1u << 0,   // the input layernorm (transformer_layer.py:617-626)
  kOffQkvLinear = 1u << 1,  // get_query_key_value_tensors (attention.py:1386-1395, multi_latent_attention.py:343-352)
  kOffCoreAttn = 1u << 2,   // the core attention (attention.py:1542-1598)
  kOffAttnProj = 1u << 3,   // linear_proj (attention.py:1616-1619)
  kOffMlpNorm = 1u << 4,    // the pre-MLP layernorm (transformer_layer.py:750-760)
  kOffExpertFc1 = 1u << 5,  // TEGroupedMLP's linear_fc1 (experts.py:792-803)
  kOffMoeAct = 1u << 6,     // the expert activation (experts.py:805, :881-901)
};
constexpr int kOffloadGroupCount = 7;
// The offload_modules name of a group bit ("" for none).
const char* offload_group_name(std::uint32_t group);

struct TensorNode {
  std::string name;
  Bytes bytes;
  bool external = false;      // produced before this module (its input)
  bool requires_grad = true;  // activations do; index maps and masks do not
  int producer = -1;          // op index, -1 for external inputs
  // The block its gradient occupies when that is not `bytes`: a piece of torch.split (a view, 0 bytes,
  // whose gradient is a tensor of its own until SplitBackward cats them), or the first input of a cat
  // whose backward hands every input a view of the one output gradient. Negative: `bytes`.
  Bytes grad_block{-1};
  Bytes gradient_bytes() const { return grad_block.value < 0 ? bytes : grad_block; }
  // Referenced from outside autograd until the module's forward ends, and under full recompute (which keeps the
  // object holding it alive) until the module's backward: DSA's top-k on a micro-batch's packed_seq_params.
  bool escapes = false;
  // Bytes per element (min_offloaded_tensor_size counts elements, fine_grained_activation_offload.py:993);
  // 0: the activation dtype's (LayerGraph::act_bytes).
  std::int32_t element_bytes = 0;
  // MoE rows under routing: a tensor whose rows are local expert `row_group`'s of `row_groups` local experts
  // (SequentialMLP's per-expert tensors), or with row_group == row_groups the rows all of them receive (the
  // dispatcher's received rows, grouped experts). Its bytes are those of balanced routing; the allocator
  // replay's routing band (routing_band.hpp) redraws the rows. -1: not routed.
  std::int16_t row_group = -1;
  std::int16_t row_groups = 0;
};

struct OpNode {
  std::string name;
  std::vector<int> inputs;       // tensor indices read in forward
  std::vector<int> outputs;      // tensor indices written in forward
  std::vector<int> saves;        // tensor indices this op keeps for its backward
  std::vector<int> keeps_alive;  // tensors a Python local keeps referenced until this op (no grad flow)
  Bytes forward_workspace;       // scratch live only while the op runs forward
  Bytes backward_workspace;      // scratch live only while its backward runs (e.g. wgrad, re-gather)
  // The part of backward_workspace that is a parameter's gradient: an unfused linear's weight gradient or
  // the embedding's dense one, which AccumulateGrad makes param.grad and the DDP hook adds into main_grad
  // and drops (distributed_data_parallel.py:495-499). A request of its own, the backward's last block.
  Bytes param_grad;
  // Where the backward's scratch is several tensors: the first of them, each its own request to the
  // caching allocator, all live together (what backward_workspace holds beyond their sum is one more).
  std::vector<Bytes> backward_blocks;
  // The scratch is taken and let go before the op's input gradients exist: autograd nodes that run
  // ahead of the op's own backward (the scores' view and in-place mask, attention_graphs.cpp).
  bool backward_scratch_first = false;
  // With backward_scratch_first: the first block is taken while the output's gradient lives, then that
  // gradient is let go and remade as a new block before the rest (CopySlices' base-sized result after
  // AsStridedBackward0's zeroed one), and the first block goes last.
  bool backward_renews_output_grad = false;
  // The output layer's dgrad: the first backward GEMM of the last stage, where the autograd thread's
  // cuBLAS workspaces appear (measured: between its input gradient and its weight gradient).
  bool backward_takes_workspaces = false;
  double forward_flops = 0;
  double backward_flops = 0;
  double forward_bytes_moved = 0;  // memory traffic of the forward kernel(s), for the time model
  // Host side, for the time model: how many times the framework calls this op per forward (a
  // SequentialMLP expert op runs once per local expert), and whether it blocks the host until the
  // GPU catches up (a device-to-host copy of token counts).
  double host_calls = 1;
  bool host_sync = false;
  // Collective traffic per rank (bytes on the wire, ring algorithms), forward and backward.
  double comm_bytes = 0, backward_comm_bytes = 0;
  std::uint32_t regions = kNoRegion;
  bool is_gemm = false;  // for the time model's efficiency classes
  bool is_attention_core = false;
  bool is_fused_attention = false;                // a fused attention kernel (timed by its own measured class)
  bool is_movement = false;                       // row gathers and block copies (timed by their measured rate)
  bool grad_passthrough = false;                  // backward returns its output grad unchanged (views, residual adds)
  std::uint32_t offload_group = kNoOffloadGroup;  // the fine-grained offloading group it runs in (OffloadGroup)
};

struct LayerGraph {
  std::string name;
  std::vector<TensorNode> tensors;
  std::vector<OpNode> ops;
  int output = -1;  // tensor handed to the next module (not counted as this module's saved state)
  // For mechanism-2 regions: which tensors are discarded and at which op's backward they return.
  struct Discard {
    Region region;
    std::vector<int> tensors;
    int hook_op;  // re-materialised when the backward reaches this op (before running it)
  };
  std::vector<Discard> discards;
  // gradient_accumulation_fusion: the [out, in] weight shapes whose backward hands autograd a dummy
  // weight gradient from Transformer Engine's get_dummy_wgrad cache (one buffer per shape and
  // dtype, kept for the rest of the run) while the GEMM accumulates into main_grad.
  std::vector<std::pair<std::int64_t, std::int64_t>> dummy_wgrad_shapes;
  // defer_embedding_wgrad_compute (the output graph): the output layer's input and its logits, whose
  // gradient the layer's backward appends to its deferral buffers instead of letting them go
  // (tensor_parallel/layers.py:603-606); -1 elsewhere.
  int deferred_input = -1, deferred_output = -1;
  // What the module keeps referenced for the rest of the run, one copy per module on the rank whatever the
  // micro-batches in flight (DSA's top-k holder on the TransformerConfig, dsa.py:1593-1612).
  Bytes persistent{};
  // Fine-grained activation offloading: where each group of the module commits (group_offload: its GPU
  // references go after op `op`) and the tensors whose storage the commit frees whatever still references
  // them (forced_released_tensors, fine_grained_activation_offload.py:1100-1106). A group's ops carry its bit.
  struct OffloadCommit {
    OffloadGroup group = kNoOffloadGroup;
    int op = -1;
    std::vector<int> forced_release;
  };
  std::vector<OffloadCommit> offload_commits;
  std::int64_t act_bytes = 2;  // the activation dtype's bytes (TensorNode::element_bytes 0)
  // The op at whose start the token dispatcher replaces its probabilities attribute (alltoall dispatch_preprocess,
  // token_dispatcher.py:639-640); -1 without a dispatcher.
  int dispatcher_takes_probs = -1;

  std::int64_t elements(int t) const;  // a tensor's element count

  int add_input(std::string name, Bytes bytes);
  int add_tensor(std::string name, Bytes bytes, bool requires_grad = true);
  // Appends an op; fills producer links of its outputs. Returns its index.
  int add_op(OpNode op);
};

// Which regions are checkpointed, and how.
struct CheckpointSet {
  std::uint32_t keep_inputs = 0;     // mechanism-1 regions active
  std::uint32_t discard_output = 0;  // mechanism-2 regions active
  bool whole_module = false;         // full recompute: only the module input is kept
  // The caller holds the output's gradient until the backward ends (a full-recompute group's last layer:
  // CheckpointFunction.backward's `args`, random.py:629-664): the block stays allocated where the module would
  // free it or sum into it.
  bool keep_output_grad = false;
  // A `moe` checkpoint whose token dispatcher keeps the last probabilities as an attribute (stage_builder.cpp): the
  // attribute keeps the replay's autograd graph, whose leaf is the checkpoint's detached input, so that input
  // (moe_checkpoint_input) and its gradient stay allocated past the backward, until the dispatcher takes new
  // probabilities in the layer's next forward (LayerGraph::dispatcher_takes_probs).
  bool retains_moe_input = false;

  auto operator<=>(const CheckpointSet&) const = default;  // field by field: the profile and script caches' keys
};

// Fine-grained activation offloading of one module instance (a micro-batch's pass through it) as the offload
// manager runs it (sim/src/offload_plan.cpp decides it): which of its groups sent their saves to the host, which
// came back before its backward started, and what each of its groups' start-backward events reloads
// (on_group_start_backward -> bulk_reload, fine_grained_activation_offload.py:1131-1146, :1192-1202).
struct OffloadContext {
  std::uint32_t offloaded = 0;    // OffloadGroup bits whose saves went to the host
  std::uint32_t prefetched = 0;   // of `offloaded`: reloaded before this module's backward starts
  std::int64_t min_elements = 0;  // min_offloaded_tensor_size: smaller saves stay on the GPU
  struct Event {
    std::uint32_t own = 0;  // a group of this module reloaded at the event
    Bytes other{};          // another module's group reloaded at the event (its bytes)
  };
  std::array<Event, kOffloadGroupCount> events{};  // at the start-backward event of group bit k
  std::vector<std::int64_t> key() const;           // for caches
};

// Memory profile of one module for one micro-batch under a checkpoint set. "Excess" values are
// relative to the live bytes just before the module's forward (or backward) starts.
struct ModuleProfile {
  Bytes held;  // saved from the end of forward until the module's backward
  struct HeldTensor {
    std::string name;
    Bytes bytes;
  };
  std::vector<HeldTensor> held_tensors;  // what `held` is made of, in graph order
  Bytes forward_peak_excess;             // max over the forward of (live - live_at_start)
  Bytes output_bytes;                    // the output handed on (live after forward besides `held`)
  Bytes input_bytes;                     // the external input (freed or held at the end of forward)
  bool input_held = false;
  Bytes backward_peak_excess;  // max over the backward of (live - live_at_backward_start), where
                               // live_at_backward_start includes `held` and the output gradient
  Bytes replay_bytes;          // largest set of tensors re-materialised at once by recompute
  double forward_flops = 0, backward_flops = 0, replay_flops = 0;
  double forward_bytes_moved = 0, replay_bytes_moved = 0;
  // The same work split by the time model's op classes (forward, and what a replay repeats).
  struct Work {
    double gemm_flops = 0, attention_flops = 0, other_flops = 0, other_bytes = 0;
    double gemm_backward_flops = 0;                               // dgrad + wgrad (2x forward), dgrad alone for a frozen (PEFT) weight
    double fused_attention_flops = 0, fused_attention_calls = 0;  // fused kernels (not in attention_flops)
    double movement_bytes = 0;                                    // read + written by row gathers and block copies (not in other_bytes)
    double host_calls = 0, host_syncs = 0;                        // forward host calls and blocking syncs
    double comm_bytes = 0, backward_comm_bytes = 0;               // collective bytes per rank
    double checkpoint_regions = 0;                                // replay only: checkpoint calls (each wrapper's fixed host cost)
    // Field by field, in the declaration's groups.
    // clang-format off
    Work& operator+=(const Work& o) {
      gemm_flops += o.gemm_flops; attention_flops += o.attention_flops;
      gemm_backward_flops += o.gemm_backward_flops;
      other_flops += o.other_flops; other_bytes += o.other_bytes;
      fused_attention_flops += o.fused_attention_flops; fused_attention_calls += o.fused_attention_calls;
      movement_bytes += o.movement_bytes;
      host_calls += o.host_calls; host_syncs += o.host_syncs;
      comm_bytes += o.comm_bytes; backward_comm_bytes += o.backward_comm_bytes;
      checkpoint_regions += o.checkpoint_regions;
      return *this;
    }
    // clang-format on
  };
  Work forward_work, replay_work;
  // Under fine-grained offloading (OffloadContext): the reloaded saves alive when its backward starts (counted in
  // the backward's start), the other modules' reloads its events add (alive after it), and whether a commit freed
  // its input's storage (forced_released_tensors) whatever the schedule keeps.
  Bytes reload_prefetched, reload_other;
  bool input_released = false;
};

// Runs the forward and backward of `g` op by op under `ckpt` and measures its lifetimes.
ModuleProfile profile_module(const LayerGraph& g, const CheckpointSet& ckpt, const OffloadContext* offload = nullptr);

// One step of the op-level replay of a module, for timelines.
struct OpEvent {
  std::string op;
  bool backward = false;
  Bytes live_delta;  // live bytes after this op, relative to the module's start
};
std::vector<OpEvent> trace_module(const LayerGraph& g, const CheckpointSet& ckpt, const OffloadContext* offload = nullptr);

}  // namespace peakcast::sim
