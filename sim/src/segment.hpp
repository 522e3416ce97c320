#pragma once
// The units a pipeline schedule moves through: one segment is a plain module, or a full-recompute
// group whose forward keeps only the group input and whose backward replays all its layers at once.
// A model chunk is the segments it runs in order. Private to peakcast_sim.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "peakcast/sim/layer_graph.hpp"

namespace peakcast::sim::detail {

struct Segment {
  std::string name;
  int layer = -1;
  Bytes input_bytes, output_bytes;
  bool input_held = false;
  Bytes held;                                                            // kept from forward to backward (includes the input when held)
  const std::vector<ModuleProfile::HeldTensor>* held_tensors = nullptr;  // plain modules: in the profile cache
  Bytes forward_peak_excess;
  // Backward: the profiles of the modules, replayed first when `replay_group`.
  // graph / ckpt: the module and checkpoint set the part runs (a group's parts replay under none),
  // for the caching-allocator replay's tensor-by-tensor scripts (module_script.hpp).
  struct Part {
    Bytes held, backward_excess, input_bytes, forward_excess;
    bool input_requires_grad = true;
    const LayerGraph* graph = nullptr;
    CheckpointSet ckpt{};
  };
  std::vector<Part> parts;
  bool replay_group = false;
  // distribute_saved_activations (full recompute, TP > 1): the checkpoint keeps a new buffer with
  // this rank's 1/TP slice of the group input instead of the input (random.py:595-626), and
  // all-gathers the full input into another new buffer at the group's backward.
  bool distributed_input = false;
  bool graph_captured = false;  // saved set lives at addresses a CUDA-graph pool keeps reserved
  Bytes captured_held;          // a half-captured layer (TE scopes): the saved bytes of the captured half
  bool offloaded = false;       // cpu_offloading: its saved activations go to host memory
  // Fine-grained offloading: a group's commit freed the input's storage (forced_released_tensors,
  // fine_grained_activation_offload.py:1100-1106), so the tensor the schedule keeps holds no bytes.
  bool input_released = false;
  // Tied embeddings on one chunk: autograd sums the output layer's weight gradient with the
  // embedding's in the shared weight's input buffer, so it stays from this segment's backward
  // until the embedding's (no gradient-accumulation fusion; with it the GEMM writes main_grad).
  Bytes carried_weight_grad;
  // T5: the gradient of the encoder's output, which every decoder layer's cross-attention adds to: the first decoder
  // layer in backward starts it (carried_activation_grad), the step between the stacks takes it over as its own
  // tensor's gradient (takes_carried_activation_grad, before its backward).
  Bytes carried_activation_grad;
  bool takes_carried_activation_grad = false;
  // A `moe` checkpoint (tensor_parallel.checkpoint) over a layer whose token dispatcher keeps the
  // last routing probabilities as an attribute (allgather: local_probs, alltoall: probs): that
  // reference keeps the replay's autograd graph, whose leaf is the checkpoint's detached input, and
  // with it the input and its gradient, from the layer's backward until its next forward.
  Bytes retained_after_backward;
  // defer_embedding_wgrad_compute, the loss head: its input (the final norm's output) and the
  // logits' gradient stay in the model's buffers from its backward to the pipeline flush.
  Bytes deferred_wgrad;
  // ...and, through the kept input's autograd graph (its grad_fn chain reaches the AccumulateGrad
  // of the chunk's received input, whose gradient backward_step retains), that received input and
  // its gradient. Measured on every deferred micro-batch but the step's last
  // (calibration/data/h200_defer.jsonl: 7 of 8 and 3 of 3).
  Bytes deferred_graph;
  bool is_output = false, is_embedding = false;  // the loss head / the token embedding (set at build)
  // Fine-grained offloading after the warm-up iteration: the layer as it runs when its offload groups stay
  // on the GPU (its profile without the OffloadContext). Set on every layer whose offloading moves bytes;
  // the walk uses it for a chunk's last such layer where Megatron keeps the last group of each name
  // (docs/research/fine-grained-offloading-memory-facts.md section 4).
  struct OnGpu {
    Bytes held, forward_peak_excess, backward_excess;
    bool input_held = false;
  };
  std::optional<OnGpu> offload_kept;
  // This segment as it runs with its offload groups kept on the GPU (offload_kept set).
  Segment kept_on_gpu() const {
    Segment k = *this;
    k.held = offload_kept->held;
    k.forward_peak_excess = offload_kept->forward_peak_excess;
    k.input_held = offload_kept->input_held;
    k.input_released = false;  // a group kept on the GPU commits nothing, so forces no release
    k.parts.front().held = offload_kept->held;
    k.parts.front().backward_excess = offload_kept->backward_excess;
    k.offload_kept.reset();
    return k;
  }
  ModuleProfile::Work forward_work, replay_work;
  double backward_flops = 0, replay_flops = 0;
  double forward_s = 0, backward_s = 0, replay_s = 0;  // from the time model, for the timeline clock

  Bytes largest_backward_excess() const {
    Bytes b{};
    for (const auto& p : parts) b = max(b, p.backward_excess);
    return b;
  }
};

struct ChunkModel {
  std::vector<Segment> segments;
  bool receives_input = false;  // input arrives from the previous pipeline stage
  bool sends_output = false;    // output goes to the next pipeline stage
};

// Profiles of (graph, checkpoint set) pairs, computed once per Predictor: policies that differ only
// in other layers reuse them.
// The last element: the fine-grained offloading context's key (OffloadContext::key), empty without one.
using ProfileKey = std::tuple<const LayerGraph*, CheckpointSet, std::vector<std::int64_t>>;
using ProfileCache = std::map<ProfileKey, ModuleProfile>;

const ModuleProfile& cached_profile(ProfileCache& cache, const LayerGraph& g, const CheckpointSet& ckpt,
                                    const OffloadContext* offload = nullptr);

// A module run under one checkpoint set (and, with `offload`, fine-grained activation offloading).
Segment plain_segment(ProfileCache& cache, const LayerGraph& g, const CheckpointSet& ckpt, int layer,
                      const OffloadContext* offload = nullptr);

// Layers under one full-recompute checkpoint: the forward runs without saving, the backward
// replays every layer with saving on.
Segment group_segment(ProfileCache& cache, const std::vector<const LayerGraph*>& graphs, int first_layer);

// distribute_saved_activations: the group keeps this rank's 1/TP slice of its input.
void distribute_group_input(Segment& s, std::int64_t tp);

// The saved bytes of one half of a standard layer (the FFN half when `ffn_half`), for TE's
// attn / mlp / moe graph scopes.
Bytes captured_half_bytes(const std::vector<ModuleProfile::HeldTensor>& held, bool ffn_half);

}  // namespace peakcast::sim::detail
