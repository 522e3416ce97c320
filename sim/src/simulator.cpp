// predict(): builds each pipeline rank's modules, profiles their lifetime graphs under the
// recompute policy, then walks Megatron's schedule for two iterations (first and steady) with the
// rank's static memory, the gradient sync and the optimizer step.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "peakcast/model/layer_plan.hpp"
#include "peakcast/model/static_memory.hpp"
#include "peakcast/model/userbuffers.hpp"
#include "peakcast/sim/fitted_constants.hpp"
#include "peakcast/sim/module_graphs.hpp"
#include "peakcast/sim/policy.hpp"
#include "peakcast/sim/prediction.hpp"
#include "peakcast/sim/schedule.hpp"
#include "peakcast/sim/time_model.hpp"
#include "text_format.hpp"

namespace peakcast::sim {

const char* to_string(Phase p) {
  switch (p) {
    case Phase::forward: return "forward";
    case Phase::backward: return "backward";
    case Phase::grad_sync: return "grad_sync";
    case Phase::optimizer: return "optimizer";
  }
  return "?";
}

namespace {

// PCIe Gen5 x16, one direction: 32 GT/s x 16 lanes with 128b/130b encoding, about 63 GB/s
// (PCI-SIG PCIe 5.0 base specification); H100/H200 SXM hosts attach over it.
constexpr double kHostLinkBytesPerSecond = 63.0e9;

// Bytes the optimizer step reads and writes on a rank: the fp32 master shard (or the parameters
// themselves when there is none) read and written, its gradient read and the model-dtype
// parameter written, and the moments read and written. Per fp32 master byte the gradient read
// and the parameter write are 4 + 2 bytes per 4, i.e. 1.5 (fp32 grads, bf16 params).
constexpr double kGradReadParamWritePerMasterByte = 1.5;
double optimizer_touched_bytes(const model::StaticMemory& sm) {
  const double master = static_cast<double>((sm.main_params.value > 0 ? sm.main_params : sm.parameters).value);
  return (2.0 + kGradReadParamWritePerMasterByte) * master + 2.0 * static_cast<double>(sm.optimizer_states.value);
}

// Gradient sync a step waits for: with overlap_grad_reduce the reduce-scatter/all-reduce runs
// under the backward and none is exposed; without it the whole gradient buffer goes over the
// data-parallel ring (reduce-scatter with the distributed optimizer, else all-reduce) after the
// backward. Priced at the intra-node link; data-parallel rings that span nodes are not modelled.
double exposed_grad_sync_seconds(const model::RunSpec& spec, const model::Derived& d, const model::StaticMemory& sm,
                                 const TimeModel& time) {
  if (spec.ddp.overlap_grad_reduce || d.dp <= 1) return 0.0;
  const double ring = static_cast<double>(d.dp - 1) / static_cast<double>(d.dp);
  const double wire = static_cast<double>(sm.gradients.value) * ring * (spec.ddp.use_distributed_optimizer ? 1.0 : 2.0);
  return time.comm_seconds(wire);
}

// A run of modules the schedule treats as one unit: a plain module, or a full-recompute group
// whose forward keeps only the group input and whose backward replays all its layers at once.
struct Segment {
  std::string name;
  int layer = -1;
  Bytes input_bytes, output_bytes;
  bool input_held = false;
  Bytes held;                 // kept from forward to backward (includes the input when held)
  const std::vector<ModuleProfile::HeldTensor>* held_tensors = nullptr;  // plain modules: in the profile cache
  Bytes forward_peak_excess;
  // Backward: the profiles of the modules, replayed first when `replay_group`.
  struct Part { Bytes held, backward_excess, input_bytes, forward_excess; bool input_requires_grad = true; };
  std::vector<Part> parts;
  bool replay_group = false;
  // distribute_saved_activations (full recompute, TP > 1): the checkpoint keeps a new buffer with
  // this rank's 1/TP slice of the group input instead of the input (random.py:595-626), and
  // all-gathers the full input into another new buffer at the group's backward.
  bool distributed_input = false;
  bool graph_captured = false;  // saved set lives at addresses a CUDA-graph pool keeps reserved
  Bytes captured_held;          // a half-captured layer (TE scopes): the saved bytes of the captured half
  bool offloaded = false;       // cpu_offloading: its saved activations go to host memory
  // Tied embeddings on one chunk: autograd sums the output layer's weight gradient with the
  // embedding's in the shared weight's input buffer, so it stays from this segment's backward
  // until the embedding's (no gradient-accumulation fusion; with it the GEMM writes main_grad).
  Bytes carried_weight_grad;
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
  ModuleProfile::Work forward_work, replay_work;
  double backward_flops = 0, replay_flops = 0;
  double forward_s = 0, backward_s = 0, replay_s = 0;  // from the time model, for the timeline clock
};

using ProfileKey = std::tuple<const LayerGraph*, std::uint32_t, std::uint32_t, bool>;
using ProfileCache = std::map<ProfileKey, ModuleProfile>;

const ModuleProfile& cached_profile(ProfileCache& cache, const LayerGraph& g, const CheckpointSet& ckpt) {
  const ProfileKey key{&g, ckpt.keep_inputs, ckpt.discard_output, ckpt.whole_module};
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, profile_module(g, ckpt)).first;
  return it->second;
}

Segment plain_segment(ProfileCache& cache, const LayerGraph& g, const CheckpointSet& ckpt, int layer) {
  const ModuleProfile& p = cached_profile(cache, g, ckpt);
  Segment s;
  s.name = g.name;
  s.layer = layer;
  s.input_bytes = p.input_bytes;
  s.output_bytes = p.output_bytes;
  s.input_held = p.input_held;
  s.held = p.held;
  s.held_tensors = &p.held_tensors;
  s.forward_peak_excess = p.forward_peak_excess;
  bool input_grad = false;
  for (const auto& t : g.tensors) if (t.external && t.requires_grad) input_grad = true;
  s.parts.push_back({p.held, p.backward_peak_excess, p.input_bytes, p.forward_peak_excess, input_grad});
  s.forward_work = p.forward_work;
  s.replay_work = p.replay_work;
  s.backward_flops = p.backward_flops;
  s.replay_flops = p.replay_flops;
  return s;
}

Segment group_segment(ProfileCache& cache, const std::vector<const LayerGraph*>& graphs, int first_layer) {
  Segment s;
  s.replay_group = true;
  s.layer = first_layer;
  s.name = graphs.front()->name + (graphs.size() > 1 ? ".." + graphs.back()->name : "") + "(checkpointed)";
  CheckpointSet none{};
  CheckpointSet whole{};
  whole.whole_module = true;
  for (const LayerGraph* g : graphs) {
    const ModuleProfile& p = cached_profile(cache, *g, none);
    const ModuleProfile& q = cached_profile(cache, *g, whole);  // no-grad forward: transient only
    s.parts.push_back({p.held, p.backward_peak_excess, p.input_bytes, q.forward_peak_excess, true});
    s.forward_peak_excess = max(s.forward_peak_excess, q.forward_peak_excess);
    s.forward_work += p.forward_work;
    s.backward_flops += p.backward_flops;
    s.replay_flops += p.forward_flops;
  }
  s.replay_work = s.forward_work;
  s.replay_work.checkpoint_regions = 1;  // one checkpoint call replays the whole group
  s.input_bytes = s.parts.front().input_bytes;
  s.output_bytes = cached_profile(cache, *graphs.back(), none).output_bytes;
  s.input_held = true;
  s.held = s.input_bytes;
  return s;
}

// split_tensor_into_1d_equal_chunks: numel / TP elements per rank. The data swap acts on the tensor
// the schedule or the embedding handed over, so the full input is freed on every stage (measured:
// calibration/data/h200_distribute.jsonl and its memory histories).
void distribute_group_input(Segment& s, std::int64_t tp) {
  s.distributed_input = true;
  s.input_held = false;
  s.held = Bytes{s.input_bytes.value / tp};
  s.replay_work.comm_bytes += static_cast<double>(s.input_bytes.value) * static_cast<double>(tp - 1) / static_cast<double>(tp);
}

// The saved bytes of one half of a standard layer: the FFN half from the pre-MLP norm on (the
// graphed _forward_mlp, transformer_layer.py:1170-1181), the attention half before it without the
// layer input (the graph's static input buffer).
Bytes captured_half_bytes(const std::vector<ModuleProfile::HeldTensor>& held, bool ffn_half) {
  // Held tensors are named "<layer>.<tensor>".
  const auto local = [](const std::string& name) { return name.substr(name.find('.') + 1); };
  std::size_t split = held.size();
  for (std::size_t i = 0; i < held.size(); ++i)
    if (local(held[i].name).rfind("pre_mlp_layernorm", 0) == 0) { split = i; break; }
  Bytes sum{};
  for (std::size_t i = 0; i < held.size(); ++i) {
    const bool in_ffn = i >= split;
    if (in_ffn == ffn_half && local(held[i].name) != "input") sum += held[i].bytes;
  }
  return sum;
}

struct ChunkModel {
  std::vector<Segment> segments;
  bool receives_input = false;  // input arrives from the previous pipeline stage
  bool sends_output = false;    // output goes to the next pipeline stage
};

struct Builder {
  model::RunSpec spec;
  model::Derived d;
  ShapeContext ctx;
  std::map<std::string, LayerGraph> graph_cache;
  ProfileCache profiles;
  LayerGraph embedding, output, mtp_wrapper;

  const LayerGraph& layer_graph(const model::LayerSpec& l, bool hybrid) {
    const std::string key = std::to_string(static_cast<int>(l.mixer)) + "/" + std::to_string(static_cast<int>(l.ffn)) +
                            (l.high_precision ? "/bf16" : "");
    auto it = graph_cache.find(key);
    if (it == graph_cache.end()) {
      // A BF16 edge layer under FP8 saves its GEMM inputs unquantised.
      ShapeContext layer_ctx = ctx;
      if (l.high_precision) layer_ctx.fp8 = false;
      it = graph_cache.emplace(key, build_layer_graph(spec, d, layer_ctx, l, hybrid)).first;
    }
    return it->second;
  }

  // One deferral entry (tensor_parallel/layers.py:1147-1152 and :603-606): the output layer's input,
  // [tokens / TP with SP, hidden], and the gradient of its logits, [tokens, vocab / TP], both in the
  // activation dtype. Every call of the shared output layer (MTP depths too) adds one.
  Bytes deferred_wgrad_bytes() const {
    if (!spec.model.defer_embedding_wgrad_compute) return Bytes{};
    return Bytes{(ctx.local_tokens * ctx.hidden + ctx.tokens * (d.padded_vocab / ctx.tp)) * ctx.act_bytes};
  }

  // The dummy weight gradients a stage keeps under gradient_accumulation_fusion: one per distinct
  // [out, in] shape (and the activation dtype) among the linears of its layers and loss head.
  Bytes dummy_wgrads(const model::PipelineStage& stage, bool hybrid) {
    std::set<std::pair<std::int64_t, std::int64_t>> shapes;
    const auto add = [&](const LayerGraph& g) { shapes.insert(g.dummy_wgrad_shapes.begin(), g.dummy_wgrad_shapes.end()); };
    for (const auto& c : stage.chunks) {
      for (const auto& l : c.layers) add(layer_graph(l, hybrid));
      if (c.has_output_layer) add(output);
    }
    std::int64_t elements = 0;
    for (const auto& [rows, cols] : shapes) elements += rows * cols;
    return Bytes{elements * ctx.act_bytes};
  }

  ChunkModel chunk(const model::ModelChunk& c, std::int64_t pp_rank, bool hybrid, GraphBypass bypass) {
    ChunkModel cm;
    const bool first_chunk_overall = pp_rank == 0 && c.vpp_index == 0;
    cm.receives_input = !first_chunk_overall;
    cm.sends_output = !c.has_output_layer;
    if (c.has_embedding) {
      cm.segments.push_back(plain_segment(profiles, embedding, CheckpointSet{}, -1));
      cm.segments.back().is_embedding = true;
    }
    const ChunkPolicy pol = chunk_policy(spec, d, c, bypass);
    std::size_t i = 0;
    while (i < c.layers.size()) {
      const auto& l = c.layers[i];
      if (l.is_mtp) { ++i; continue; }  // MTP depths are added with the output layer below
      if (pol.layers[i].whole_module) {
        std::vector<const LayerGraph*> group;
        const int gid = pol.group_of_layer[i];
        std::size_t j = i;
        while (j < c.layers.size() && pol.layers[j].whole_module &&
               (gid < 0 ? j == i : pol.group_of_layer[j] == gid)) {
          group.push_back(&layer_graph(c.layers[j], hybrid));
          ++j;
        }
        cm.segments.push_back(group_segment(profiles, group, static_cast<int>(l.index)));
        if (spec.model.distribute_saved_activations && d.tp > 1) distribute_group_input(cm.segments.back(), d.tp);
        cm.segments.back().name = "L" + std::to_string(l.index) + (group.size() > 1 ? "..L" + std::to_string(l.index + static_cast<std::int64_t>(group.size()) - 1) : "") + "(full recompute)";
        i = j;
        continue;
      }
      cm.segments.push_back(plain_segment(profiles, layer_graph(l, hybrid), pol.layers[i], static_cast<int>(l.index)));
      cm.segments.back().name = "L" + std::to_string(l.index);
      const auto dispatcher = spec.model.moe_token_dispatcher_type;
      if (l.ffn == model::FfnKind::moe && (pol.layers[i].keep_inputs & kMoe) && !spec.model.fp8 &&
          (dispatcher == model::Dispatcher::allgather || dispatcher == model::Dispatcher::alltoall))
        cm.segments.back().retained_after_backward = cm.segments.back().input_bytes * 2;
      const GraphCapture capture = graph_capture(spec, l);
      cm.segments.back().graph_captured = capture == GraphCapture::whole;
      if (capture == GraphCapture::mixer || capture == GraphCapture::ffn)
        cm.segments.back().captured_held = captured_half_bytes(*cm.segments.back().held_tensors, capture == GraphCapture::ffn);
      // A captured layer's forward and backward are each one graph replay on the host, not one
      // Python call per op (its kernels still take their GPU time).
      if (cm.segments.back().graph_captured) cm.segments.back().forward_work.host_calls = 1;
      // TE's CPU offload context moves the saved activations of the first N layers to the host.
      cm.segments.back().offloaded = spec.model.cpu_offloading && spec.model.cpu_offloading_activations &&
                                     static_cast<std::int64_t>(i) < spec.model.cpu_offloading_num_layers;
      ++i;
    }
    if (c.has_output_layer) {
      std::vector<std::size_t> mtp_at;  // positions of the MTP depths' layers in the chunk
      for (std::size_t j = 0; j < c.layers.size(); ++j) if (c.layers[j].is_mtp) mtp_at.push_back(j);
      // Each MTP depth adds its wrapper and a layer of the last decoder layer's kind, all before any
      // head (gpt_model.py runs the MTP block, then process_mtp_loss); then each depth's head and loss.
      // In backward autograd takes the later-created nodes first: every head and loss (main, then the
      // depths in reverse) before the MTP layers, so the heads' saved logits are gone by then. The
      // layer is built from the decoder's layer spec, so the selective checkpoints apply to it as to a
      // decoder layer. Under full recompute the MTP block checkpoints each depth's projection and layer
      // when the method is uniform (multi_token_prediction.py:1420-1427; the embedding lookup and the
      // final norm stay outside, so the checkpoint keeps the hidden input and the embedding) and skips
      // recompute for block (:1429-1433).
      const bool mtp_full_uniform = spec.model.recompute_granularity == model::RecomputeGranularity::full &&
                                    spec.model.recompute_method == model::RecomputeMethod::uniform;
      // Each depth looks its shifted tokens up in the embedding weight, whose dense gradient autograd
      // then sums with the decoder lookup's in the weight's input buffer: the first one (the last
      // depth's, first in backward) stays until the embedding's backward on this chunk (measured: a
      // [V/TP, h] block alive through the decoder's backward). Already carried when the tied output
      // layer's gradient is (same weight, same buffer).
      // The embedding weight's [V/TP, h] gradient, and whether the tied output layer's already carries it.
      const Bytes embedding_grad{d.padded_vocab / ctx.tp * ctx.hidden * ctx.act_bytes};
      const bool tied_carry = c.has_embedding && spec.model.share_embeddings_and_output_weights && !ctx.grad_accumulation_fusion;
      const Bytes mtp_embedding_grad = c.has_embedding && !tied_carry ? embedding_grad : Bytes{};
      for (std::int64_t k = 0; k < c.mtp_layers && !c.layers.empty(); ++k) {
        const bool first_in_backward = k + 1 == c.mtp_layers;
        if (mtp_full_uniform) {
          cm.segments.push_back(group_segment(profiles, {&mtp_wrapper, &layer_graph(c.layers.back(), hybrid)}, -1));
          cm.segments.back().held += Bytes{ctx.local_tokens * ctx.hidden * ctx.act_bytes};  // the embedding lookup's [s, h]
          cm.segments.back().name = "mtp" + std::to_string(k) + "(full recompute)";
          if (first_in_backward) cm.segments.back().carried_weight_grad = mtp_embedding_grad;
          continue;
        }
        cm.segments.push_back(plain_segment(profiles, mtp_wrapper, CheckpointSet{}, -1));
        cm.segments.back().name = "mtp" + std::to_string(k) + ".wrapper";
        if (first_in_backward) cm.segments.back().carried_weight_grad = mtp_embedding_grad;
        const std::size_t at = static_cast<std::size_t>(k) < mtp_at.size() ? mtp_at[static_cast<std::size_t>(k)] : 0;
        const CheckpointSet mtp_ckpt =
            static_cast<std::size_t>(k) < mtp_at.size() && !pol.layers[at].whole_module ? pol.layers[at] : CheckpointSet{};
        cm.segments.push_back(plain_segment(profiles, layer_graph(c.layers.back(), hybrid), mtp_ckpt, -1));
        cm.segments.back().name = "mtp" + std::to_string(k);
      }
      for (std::int64_t k = 0; k < c.mtp_layers; ++k) {
        cm.segments.push_back(plain_segment(profiles, output, CheckpointSet{}, -1));
        cm.segments.back().is_output = true;
        cm.segments.back().deferred_wgrad = deferred_wgrad_bytes();
      }
      cm.segments.push_back(plain_segment(profiles, output, CheckpointSet{}, -1));
      cm.segments.back().is_output = true;
      cm.segments.back().deferred_wgrad = deferred_wgrad_bytes();
      if (cm.receives_input && cm.segments.back().deferred_wgrad.value > 0)
        cm.segments.back().deferred_graph = cm.segments.front().input_bytes * 2;
      if (tied_carry) cm.segments.back().carried_weight_grad = embedding_grad;
    }
    return cm;
  }
};

// Hidden-state-sized static buffers a chain of captured layers keeps beyond its two per layer:
// measured with Megatron's local graphs on 2, 4 and 8 layers (calibration/data/h200_cuda_graphs.jsonl:
// the persistent allocation grows by two hidden states a layer, and 4 layers hold 14), and traced to
// the first graph's fresh input buffers (cuda_graphs.py:280) and two forward outputs and two input
// gradients of linear layers (tensor_parallel/layers.py:575, :625) that the runners keep referenced.
constexpr std::int64_t kCudaGraphChainEndBuffers = 6;

// The rotary table every captured layer takes as a static input: [s, 1, 1, rot] in fp32
// (rotary_pos_embedding.py returns the float embedding).
Bytes rotary_table_bytes(const model::RunSpec& spec, const model::Derived& d, const ShapeContext& ctx) {
  return Bytes{ctx.seq * rotary_dim(spec, d) * 4};
}

// Live-memory walk of one pipeline rank.
struct Walker {
  const std::vector<ChunkModel>& chunks;
  Bytes base;          // everything outside activations at this moment
  Bytes activations;   // saved activations and the flowing tensors
  Bytes peak;
  Phase peak_phase = Phase::forward;
  std::string peak_op;
  Bytes peak_activations, peak_transient;
  int iteration = 1;
  // A replayed CUDA graph works in its private pool, which the allocator does not count as
  // allocated: a captured segment holds and allocates nothing, and the hidden state passes through
  // (the graphs' static input and output buffers are counted in `base`).
  bool graphed = false;
  bool whole_graph = false;  // with `graphed`: a full-iteration graph, every module replays in the pool
  bool record = false;
  std::vector<TimelineEvent>* timeline = nullptr;
  double clock = 0;
  bool deallocate_outputs = true;
  Bytes carried_weight_grad;  // a tied weight's gradient waiting for the embedding's backward
  // Iteration 1: what the first backward creates and keeps: the autograd thread's cuBLAS workspaces
  // (its first GEMM) and, under gradient_accumulation_fusion, the dummy weight gradients.
  Bytes pending_backward_workspaces;
  void take_pending_workspaces() {
    base += pending_backward_workspaces;
    pending_backward_workspaces = Bytes{};
  }

  // `name` builds the op's name; called only when the peak moves or a timeline is recorded, so the
  // walk allocates no strings on its hot path.
  template <typename Name>
  void touch(Bytes excess, Phase phase, Name&& name, int layer, int mb, int chunk) {
    const Bytes live = base + activations + retained_total + excess;
    if (live > peak) {
      peak = live;
      peak_phase = phase;
      peak_op = name();
      peak_activations = activations + retained_total;
      peak_transient = excess;
    }
    if (record && timeline) timeline->push_back({clock, live, name(), layer, mb, chunk, iteration, phase});
  }

  // Bytes each segment of a (chunk, micro-batch) keeps until its backward, plus what the schedule
  // keeps (an output not deallocated after its send).
  struct Kept { std::vector<Bytes> segments; Bytes extra; };
  std::vector<Kept> kept_by_microbatch;  // index chunk * microbatches + microbatch
  int microbatches = 1;
  // Bytes each (chunk, segment) still holds after its backward (Segment::retained_after_backward);
  // they outlive the iteration, so they are kept outside `activations`.
  std::vector<std::vector<Bytes>> retained{};
  Bytes retained_total{};
  // defer_embedding_wgrad_compute: the entries deferred to the pipeline flush so far this iteration
  // and the limit on their number (0: no limit).
  Bytes deferred_wgrad;
  std::int64_t deferred_entries = 0, deferral_limit = 0;
  void retain(int c, std::size_t i, Bytes bytes) {
    if (retained.size() <= static_cast<std::size_t>(c)) retained.resize(static_cast<std::size_t>(c) + 1);
    auto& r = retained[static_cast<std::size_t>(c)];
    if (r.size() <= i) r.resize(i + 1);
    retained_total -= r[i];
    r[i] = bytes;
    retained_total += bytes;
  }

  void forward(int c, int mb) {
    const ChunkModel& cm = chunks[c];
    Kept kept;
    // The first module's input: received from the previous stage (the schedule keeps it until the
    // backward), or the token ids the data loader put on the GPU.
    // A layout's empty virtual stage hands the received hidden state straight on: nothing is kept
    // (deallocate_output_tensor frees the one tensor it received and sent).
    if (cm.segments.empty() || (graphed && whole_graph)) {
      kept_by_microbatch.at(static_cast<std::size_t>(c) * microbatches + mb) = Kept{};
      touch(Bytes{}, Phase::forward, [&] { return "chunk" + std::to_string(c) + ".forward_done"; }, -1, mb, c);
      return;
    }
    activations += cm.segments.front().input_bytes;
    Bytes in_flight{};  // an offloaded layer's saved set, copied out while the next layer runs
    for (std::size_t i = 0; i < cm.segments.size(); ++i) {
      const Segment& s = cm.segments[i];
      if (graphed && s.graph_captured) {
        clock += s.forward_s;
        kept.segments.push_back(Bytes{});
        continue;
      }
      // Its dispatcher takes new probabilities early in the forward: the old replay graph goes.
      if (s.retained_after_backward.value > 0) retain(c, i, Bytes{});
      touch(s.forward_peak_excess, Phase::forward, [&] { return s.name + ".forward"; }, s.layer, mb, c);
      clock += s.forward_s;
      activations -= in_flight;  // the copy of the previous layer completes with this layer
      in_flight = Bytes{};
      // The schedule keeps a received input for its backward, unless a distributing checkpoint
      // swapped that very tensor's data for its slice (make_viewless_tensor returns a viewless
      // input as it is; measured: the p2p receive buffer is gone at the peak).
      const bool input_kept = s.input_held || (i == 0 && cm.receives_input && !s.distributed_input);
      // Replaying, a half-captured layer's graphed half keeps its saved set in the pool.
      const Bytes own = (s.input_held ? s.held - s.input_bytes : s.held) - (graphed ? s.captured_held : Bytes{});
      activations += own + s.output_bytes;
      if (!input_kept) activations -= s.input_bytes;
      const Bytes kept_here = own + (input_kept ? s.input_bytes : Bytes{});
      if (s.offloaded) {
        in_flight = kept_here;
        kept.segments.push_back(Bytes{});
      } else {
        kept.segments.push_back(kept_here);
      }
    }
    activations -= in_flight;
    const Bytes out = cm.segments.back().output_bytes;
    if (cm.sends_output && !deallocate_outputs) kept.extra = out;
    else activations -= out;  // deallocate_output_tensor after the send; the loss is reduced at once
    kept_by_microbatch.at(static_cast<std::size_t>(c) * microbatches + mb) = std::move(kept);
    touch(Bytes{}, Phase::forward, [&] { return "chunk" + std::to_string(c) + ".forward_done"; }, -1, mb, c);
  }

  void backward(int c, int mb) {
    const ChunkModel& cm = chunks[c];
    const Kept kept = std::move(kept_by_microbatch.at(static_cast<std::size_t>(c) * microbatches + mb));
    if (cm.segments.empty() || (graphed && whole_graph)) {
      touch(Bytes{}, Phase::backward, [&] { return "chunk" + std::to_string(c) + ".backward_done"; }, -1, mb, c);
      return;
    }
    // Gradient of the chunk output: received from the next stage (the loss gradient is tiny).
    Bytes grad = cm.sends_output ? cm.segments.back().output_bytes : Bytes{};
    activations += grad;
    // Offloaded saved sets come back one layer ahead of their backward (prefetch).
    const auto offloaded_bytes = [&](std::size_t i) {
      const Segment& s = cm.segments[i];
      return s.offloaded ? (s.input_held ? s.held : s.held + s.input_bytes) : Bytes{};
    };
    for (std::size_t i = cm.segments.size(); i-- > 0;) {
      const Segment& s = cm.segments[i];
      if (i + 1 == cm.segments.size()) activations += offloaded_bytes(i);
      if (i > 0) activations += offloaded_bytes(i - 1);
      // The loss's backward peaks (the logits' gradient beside the saved softmax) before the output
      // layer's first GEMM creates the backward workspaces; any other module starts with a GEMM.
      if (!s.is_output) take_pending_workspaces();
      if (graphed && s.graph_captured) {
        clock += s.backward_s;
      } else if (s.replay_group) {
        // The checkpoint re-runs the group's forward with saving on: every layer's saved set
        // returns (the group input is already kept), then the layers' backwards release them.
        Bytes replayed{}, fwd{};
        for (const auto& p : s.parts) { replayed += p.held; fwd = max(fwd, p.forward_excess); }
        replayed -= s.input_bytes;  // the group input is kept
        // Only its slice was: the backward all-gathers the full input into a new buffer and swaps it
        // in for the slice (random.py:640-645), which is freed at once.
        if (s.distributed_input) activations += s.input_bytes - s.held;
        touch(fwd, Phase::backward, [&] { return s.name + ".replay"; }, s.layer, mb, c);
        clock += s.replay_s + s.backward_s;
        activations += replayed;
        for (std::size_t k = s.parts.size(); k-- > 0;) {
          touch(s.parts[k].backward_excess, Phase::backward, [&] { return s.name + ".backward"; }, s.layer + static_cast<int>(k), mb, c);
          activations -= s.parts[k].held;
        }
        if (s.distributed_input) activations -= kept.segments[i] - s.held;  // nothing else, as kept holds only the slice
        else activations -= kept.segments[i] - s.input_bytes;  // what the checkpoint kept beside its first input
        activations += s.carried_weight_grad;
        carried_weight_grad += s.carried_weight_grad;
      } else {
        touch(s.parts.front().backward_excess, Phase::backward, [&] { return s.name + ".backward"; }, s.layer, mb, c);
        take_pending_workspaces();
        if (s.retained_after_backward.value > 0) retain(c, i, s.retained_after_backward);
        activations += s.carried_weight_grad;
        carried_weight_grad += s.carried_weight_grad;
        if (i == 0 && s.is_embedding) {
          activations -= carried_weight_grad;
          carried_weight_grad = Bytes{};
        }
        activations -= kept.segments[i] + offloaded_bytes(i);
        if (s.deferred_wgrad.value > 0 && (deferral_limit == 0 || deferred_entries < deferral_limit)) {
          const Bytes kept_alive = s.deferred_wgrad + (mb + 1 < microbatches ? s.deferred_graph : Bytes{});
          activations += kept_alive;
          deferred_wgrad += kept_alive;
          ++deferred_entries;
        }
        clock += s.replay_s + s.backward_s;
      }
      // The output gradient is consumed; the input gradient is handed to the previous module.
      activations -= grad;
      grad = s.parts.front().input_requires_grad ? s.input_bytes : Bytes{};
      activations += grad;
    }
    activations -= kept.extra;
    activations -= grad;  // sent to the previous stage (nothing at the embedding)
    touch(Bytes{}, Phase::backward, [&] { return "chunk" + std::to_string(c) + ".backward_done"; }, -1, mb, c);
  }
};

// Micro-batches the walk needs to find the same peaks as the full step. After the warm-up the
// schedule repeats with period one micro-batch group (1F1B: one micro-batch), so whole groups can be
// dropped from the middle of the steady state as long as the warm-up, two steady groups, the
// remainder group and the cool-down remain. Timelines walk every micro-batch.
std::int64_t walked_microbatches(const ScheduleParams& p, std::int64_t m) {
  if (p.pp <= 1 && p.vpp <= 1) return std::min<std::int64_t>(m, 2);
  if (p.vpp <= 1) return std::min<std::int64_t>(m, p.pp + 2);
  const std::int64_t g = p.group_size > 0 ? p.group_size : p.pp;
  const std::int64_t warmup = (p.pp - 1) * 2 + (p.vpp - 1) * g + 1;  // largest rank's warm-up
  const std::int64_t needed = ((warmup + g * p.vpp - 1) / (g * p.vpp)) * g + 3 * g;
  if (m <= needed) return m;
  return m - ((m - needed) / g) * g;
}

// The shipped profile is compiled in and never changes: read each stack's constants once per
// process instead of parsing its JSON for every prediction (sweeps make thousands).
const FittedConstants& shipped_fitted_constants(bool local) {
  static const FittedConstants te = load_fitted_constants("default", "transformer_engine");
  static const FittedConstants loc = load_fitted_constants("default", "local");
  return local ? loc : te;
}

}  // namespace

struct Predictor::Impl {
  Builder builder;
  model::LayerPlan plan;
  FittedConstants fitted;
  // Static memory does not depend on the recompute choice (Predictor::run(choice) changes only that).
  std::optional<std::vector<model::RankStatic>> statics;
  explicit Impl(model::RunSpec spec) : builder(make_builder(std::move(spec))) {
    plan = model::build_layer_plan(builder.spec, builder.d);
    fitted = shipped_fitted_constants(builder.spec.model.transformer_impl == model::TransformerImpl::local);
  }
  static Builder make_builder(model::RunSpec spec) {
    const model::Derived d = model::derive(spec);
    const ShapeContext ctx = make_shape_context(spec, d);
    Builder b{std::move(spec), d, ctx, {}, {}, {}, {}};
    b.embedding = build_embedding_graph(b.spec, b.d, b.ctx);
    b.output = build_output_graph(b.spec, b.d, b.ctx);
    if (b.spec.model.mtp_num_layers > 0) b.mtp_wrapper = build_mtp_wrapper_graph(b.spec, b.d, b.ctx);
    return b;
  }
  Prediction run(const PredictOptions& options);
};

Predictor::Predictor(model::RunSpec spec) : impl_(std::make_unique<Impl>(std::move(spec))) {}
Predictor::Predictor(model::RunSpec spec, const FittedConstants& fitted) : impl_(std::make_unique<Impl>(std::move(spec))) {
  impl_->fitted = fitted;
}
Predictor::~Predictor() = default;
Predictor::Predictor(Predictor&&) noexcept = default;
Predictor& Predictor::operator=(Predictor&&) noexcept = default;
const model::RunSpec& Predictor::spec() const { return impl_->builder.spec; }
Prediction Predictor::run(const PredictOptions& options) { return impl_->run(options); }

Prediction Predictor::run(const RecomputeChoice& choice, const PredictOptions& options) {
  // Only the policy fields change; the graphs (shapes) stay valid and so do cached profiles.
  model::RunSpec& s = impl_->builder.spec;
  const model::RunSpec saved = s;
  s.model.recompute_granularity = choice.granularity;
  s.model.recompute_modules = choice.modules;
  s.model.recompute_method = choice.method;
  s.model.recompute_num_layers = choice.num_layers;
  s.model.cpu_offloading = choice.cpu_offloading;
  s.model.cpu_offloading_num_layers = choice.cpu_offloading_num_layers;
  s.model.moe_layer_recompute = false;
  impl_->builder.d = model::derive(s);
  Prediction p = impl_->run(options);
  s = saved;
  impl_->builder.d = model::derive(s);
  return p;
}

// cuBLAS workspaces PyTorch keeps through the caching allocator: one per (handle, stream), and the
// autograd engine runs the backward on its own thread with its own handle. Measured on the local
// stack (memory history of the H200 runs: two 32 MiB blocks from the forward and backward matmuls of
// tensor_parallel/layers.py, four with the shared experts' side stream). Transformer Engine's GEMMs
// use TE's own workspace; that stack keeps the one.
// The backward's workspaces are created by the first backward, so iteration 1's forward runs without
// them.
namespace {
struct CublasWorkspaces { std::int64_t forward = 1, backward = 0; };
CublasWorkspaces cublas_workspaces(const model::RunSpec& spec) {
  if (spec.model.transformer_impl != model::TransformerImpl::local) return {1, 0};
  const bool side_stream = spec.model.num_moe_experts && spec.model.moe_shared_expert_overlap &&
                           spec.model.moe_shared_expert_intermediate_size;
  return side_stream ? CublasWorkspaces{2, 2} : CublasWorkspaces{1, 1};
}
}  // namespace

Prediction predict(const model::RunSpec& spec, const PredictOptions& options) {
  Predictor predictor(spec);
  return predictor.run(options);
}

Prediction Predictor::Impl::run(const PredictOptions& options) {
  const model::RunSpec& spec = builder.spec;
  const model::Derived& d = builder.d;
  if (!this->statics) this->statics = model::static_memory_per_rank(spec, d, plan);
  const auto& statics = *this->statics;
  const TimeModel time(spec.cluster.gpu, fitted);

  Prediction out;
  // TE's userbuffers (tp_comm_overlap) are cudaMalloc'd beside the caching allocator: what is left
  // of the device is the allocator's capacity.
  out.userbuffers = model::total_bytes(model::te_userbuffers(spec));
  out.capacity = spec.cluster.gpu.memory_bytes - out.userbuffers;
  out.calibration_profile = fitted.profile;
  out.peak_relative_sigma = fitted.peak_relative_sigma;
  const bool hybrid = spec.model.hybrid_override_pattern.has_value();
  const Bytes global_buffer = global_memory_buffer_bytes(spec, d, builder.ctx);
  const CublasWorkspaces ws = cublas_workspaces(spec);
  const Bytes backward_workspaces = fitted.cublas_workspace * ws.backward;
  const Bytes fixed = global_buffer + fitted.cublas_workspace * ws.forward + backward_workspaces + fitted.framework_fixed;

  ScheduleParams sp;
  sp.pp = d.pp;
  sp.vpp = d.vpp;
  // The deferred output-layer entries pile up over every micro-batch of the step: walk them all.
  const bool defer_wgrad = spec.model.defer_embedding_wgrad_compute;
  sp.microbatches = options.record_timeline || defer_wgrad ? d.num_microbatches : walked_microbatches(sp, d.num_microbatches);
  sp.group_size = spec.model.microbatch_group_size_per_vp_stage.value_or(0);
  sp.extra_warmup = spec.model.overlap_moe_expert_parallel_comm && d.vpp > 1;

  // Per-layer CUDA graphs. Megatron's local manager records iteration 1 eagerly and captures at its
  // end (schedules.py:871), with the checkpoints it bypasses running plain: that iteration peaks in
  // the capture. Transformer Engine captures after cuda_graph_warmup_steps eager iterations
  // (training.py:3824-3832) whose checkpoints work as usual. Later iterations replay the graphs.
  const auto impl = spec.model.cuda_graph_impl;
  const bool layer_graphs = impl == model::CudaGraphImpl::local || impl == model::CudaGraphImpl::transformer_engine;
  const bool local_graphs = impl == model::CudaGraphImpl::local;
  const std::int64_t te_eager_iterations = std::max<std::int64_t>(0, spec.model.cuda_graph_warmup_steps);
  const GraphBypass eager_bypass = local_graphs ? GraphBypass::capture : GraphBypass::none;

  std::map<std::int64_t, std::vector<ChunkModel>> stage_models, captured_models;
  const auto build_stage = [&](std::int64_t r, GraphBypass bypass) {
    std::vector<ChunkModel> chunks;
    for (const auto& c : plan.stages.at(static_cast<std::size_t>(r)).chunks) chunks.push_back(builder.chunk(c, r, hybrid, bypass));
    for (auto& cm : chunks) {
      for (auto& seg : cm.segments) {
        seg.forward_s = time.seconds(seg.forward_work);
        seg.backward_s = time.backward_seconds(seg.forward_work);
        seg.replay_s = time.seconds(seg.replay_work);
      }
    }
    return chunks;
  };
  for (const auto& rs : statics) {
    const std::int64_t r = rs.rank.pp_rank;
    if (!stage_models.count(r)) {
      stage_models.emplace(r, build_stage(r, eager_bypass));
      // What the capture keeps in the graph pool: the captured segments as its warm-up runs them,
      // every checkpoint of theirs bypassed (measured: mla_up_proj inside a local capture reserves
      // no less than no recompute, calibration/data/h200_cuda_graphs.jsonl).
      if (layer_graphs) captured_models.emplace(r, build_stage(r, GraphBypass::warmup));
    }
    const auto& chunks = stage_models.at(r);
    const auto& captured_chunks = captured_models.count(r) ? captured_models.at(r) : chunks;
    const auto& sm = rs.memory;
    RankPrediction rp;
    rp.rank = rs.rank;
    rp.vpp_chunks = rs.vpp_chunks;

    const auto steps = pipeline_schedule(sp, r);
    // Graph sets per chunk: one when micro-batches run one at a time (PP 1: the local manager reuses
    // its graphs, cuda_graphs.py:1846-1849; TE reuses the static buffers of finished micro-batches),
    // else one per micro-batch in flight.
    int in_flight = 0, outstanding = 0;
    for (const auto& st : steps) { outstanding += st.forward ? 1 : -1; in_flight = std::max(in_flight, outstanding); }
    const std::int64_t per_chunk_in_flight = (in_flight + static_cast<int>(chunks.size()) - 1) / static_cast<int>(chunks.size());
    const std::int64_t graph_sets = d.pp == 1 ? 1 : per_chunk_in_flight;
    // The graph pool: every captured segment's saved set (checkpoints bypassed) for each graph set,
    // plus the largest working memory one of them needs beside it. Static input and output buffers
    // stay allocated: measured with the local manager (calibration/data/h200_cuda_graphs.jsonl), two
    // hidden states per captured layer (its static output and its static input gradient) and six
    // more per chunk (the first graph's fresh inputs and the end buffers of the chain), plus the
    // static rotary table ([s, 1, 1, rot] fp32) the layers take as an input.
    Bytes pool{}, pool_excess{}, static_buffers{};
    bool any_captured = false;
    for (const auto& cm : captured_chunks) {
      std::int64_t n_captured = 0;
      Bytes hidden{};
      for (const auto& s : cm.segments) {
        if (!s.graph_captured && s.captured_held.value == 0) continue;
        any_captured = true;
        ++n_captured;
        hidden = s.input_bytes;
        pool += (s.graph_captured ? s.held : s.captured_held) * graph_sets;
        pool_excess = max(pool_excess, s.forward_peak_excess);
        for (const auto& part : s.parts) pool_excess = max(pool_excess, part.backward_excess);
      }
      if (n_captured > 0) static_buffers += (hidden * (2 * n_captured + kCudaGraphChainEndBuffers) + rotary_table_bytes(spec, d, builder.ctx)) * graph_sets;
    }
    if (any_captured) pool += pool_excess;

    Walker w{chunks, {}, {}, {}, Phase::forward, {}, {}, {}, 1, false, false, options.record_timeline, &rp.timeline, 0,
             spec.model.deallocate_pipeline_outputs, {}, {}, {}, static_cast<int>(sp.microbatches)};
    w.kept_by_microbatch.resize(chunks.size() * static_cast<std::size_t>(sp.microbatches));
    w.deferral_limit = spec.model.wgrad_deferral_limit;
    // Created by each shape's first backward; from iteration 1's first backward on, like the workspaces.
    const Bytes dummies = builder.dummy_wgrads(plan.stages.at(static_cast<std::size_t>(r)), hybrid);
    // The flush all-gathers each deferred input (SP) into two alternating global buffers, "mpu_0" and
    // "mpu_1" [tokens, hidden], which the global memory buffer keeps (utils.py:1254-1290).
    const auto& stage_chunks = plan.stages.at(static_cast<std::size_t>(r)).chunks;
    const bool defers_here = spec.model.defer_embedding_wgrad_compute &&
                             std::any_of(stage_chunks.begin(), stage_chunks.end(), [](const auto& c) { return c.has_output_layer; });
    const Bytes drain_buffers = defers_here && builder.ctx.sequence_parallel
                                    ? Bytes{2 * builder.ctx.tokens * builder.ctx.hidden * builder.ctx.act_bytes}
                                    : Bytes{};
    // Without DistOpt, per-parameter tensors carry the caching allocator's slack (static_memory.hpp).
    const Bytes model_state = sm.parameters + sm.gradients + sm.main_params + sm.fp8_weight_cache +
                              sm.slack.parameters + sm.slack.main_params;
    model::AllocatorSlack::Step step_slack;
    // The passes walked: iteration 1, then the steady state eager (no graphs, or TE's later warm-up
    // iterations) and replaying the graphs.
    struct Pass { int iteration; bool first, graphed, capture = false; };
    std::vector<Pass> passes;
    // A full-iteration graph (FullCudaGraphWrapper) captures the whole forward-backward after
    // cuda_graph_warmup_steps eager calls; the capture runs it eagerly into the pool (its blocks count
    // as allocated while alive), every later call replays it. Checkpoints stay active in it.
    const bool full_graph = impl == model::CudaGraphImpl::full_iteration;
    if (full_graph) {
      any_captured = true;
      pool = Bytes{};
    }
    const bool first_graphed = any_captured && impl == model::CudaGraphImpl::transformer_engine && te_eager_iterations == 0;
    passes.push_back({1, true, first_graphed, full_graph && te_eager_iterations == 0});
    const bool steady_eager = !any_captured || (!local_graphs && te_eager_iterations >= 2) ||
                              (full_graph && te_eager_iterations >= 1);
    if (steady_eager) passes.push_back({2, false, false, full_graph});
    if (any_captured)
      passes.push_back({local_graphs ? 2 : static_cast<int>(std::max<std::int64_t>(2, te_eager_iterations + 1 + (full_graph ? 1 : 0))),
                        false, true});
    Breakdown first_bd, steady_bd;
    Bytes first_peak, steady_peak, with_pool;
    Phase first_phase = Phase::forward, steady_phase = Phase::forward;
    std::string first_op, steady_op;
    bool steady_set = false;
    for (const Pass& pass : passes) {
      const bool first = pass.first;
      w.iteration = pass.iteration;
      w.graphed = pass.graphed;
      w.whole_graph = full_graph;
      w.peak = Bytes{};
      w.activations = Bytes{};
      const Bytes states = first ? Bytes{} : sm.optimizer_states + step_slack.moments;
      const Bytes graph_static = pass.graphed ? static_buffers : Bytes{};
      w.base = model_state + states + fixed + graph_static - (first ? backward_workspaces : Bytes{}) +
               (first ? Bytes{} : drain_buffers + dummies);
      bool backward_seen = !first;
      for (const auto& st : steps) {
        if (!st.forward && !backward_seen) {
          w.pending_backward_workspaces = backward_workspaces + dummies;
          backward_seen = true;
        }
        if (st.forward) w.forward(st.chunk, st.microbatch); else w.backward(st.chunk, st.microbatch);
      }
      w.take_pending_workspaces();
      if (w.deferred_entries > 0) {
        // The pipeline flush computes the deferred weight gradients (schedules.py:2064-2068), then
        // frees what they kept; the first flush allocates its two gather buffers.
        const Bytes new_buffers = first ? drain_buffers : Bytes{};
        w.touch(new_buffers, Phase::backward, [] { return std::string("output_layer.deferred_wgrad"); }, -1, -1, -1);
        w.base += new_buffers;
        w.activations -= w.deferred_wgrad;
        w.deferred_wgrad = Bytes{};
        w.deferred_entries = 0;
      }
      // The full-iteration graph's pool: what the forward-backward of its capture allocated at most.
      if (pass.capture) pool = max(pool, w.peak - w.base);
      // The first step's moments are carved first from what the forward-backward freed (the
      // allocator keeps it); the later step() calls reuse the first one's temporary blocks.
      if (first) step_slack = sm.slack.step(w.peak - (w.base + w.activations));
      w.touch(Bytes{}, Phase::grad_sync, [] { return std::string("grad_sync.reduce_scatter"); }, -1, -1, -1);
      // The first step creates the Adam moments; both steps hold their implementation's transient.
      const Bytes step_transient = (first ? sm.step_transient_first : sm.step_transient_steady) + step_slack.temporaries;
      if (first) w.base += sm.optimizer_states + step_slack.moments;
      w.touch(step_transient, Phase::optimizer, [] { return std::string("optimizer.step"); }, -1, -1, -1);
      Breakdown bd;
      bd.parameters = sm.parameters + sm.fp8_weight_cache + sm.slack.parameters;
      bd.gradients = sm.gradients;
      bd.optimizer_states = sm.main_params + sm.slack.main_params +
                            ((first && w.peak_phase != Phase::optimizer) ? Bytes{} : sm.optimizer_states + step_slack.moments);
      bd.activations = w.peak_activations;
      bd.transient = w.peak_transient;
      // Everything else in `base` at the peak: the framework's fixed bytes, graph buffers, the deferred
      // wgrad's gather buffers and the dummy weight gradients once created.
      bd.other = w.peak - w.peak_activations - w.peak_transient - bd.parameters - bd.gradients - bd.optimizer_states;
      with_pool = max(with_pool, w.peak + (pass.graphed ? pool : Bytes{}));
      if (first) { first_peak = w.peak; first_bd = bd; first_phase = w.peak_phase; first_op = w.peak_op; }
      else if (!steady_set || w.peak > steady_peak) {
        steady_set = true;
        steady_peak = w.peak; steady_bd = bd; steady_phase = w.peak_phase; steady_op = w.peak_op;
      }
    }
    rp.steady_peak_allocated = steady_peak;
    rp.first_iteration_peak_allocated = first_peak;
    rp.first_iteration_peak_phase = first_phase;
    rp.peak_in_first_iteration = first_peak > steady_peak;
    rp.peak_allocated = max(first_peak, steady_peak);
    rp.peak_phase = rp.peak_in_first_iteration ? first_phase : steady_phase;
    rp.peak_op = rp.peak_in_first_iteration ? first_op : steady_op;
    rp.breakdown = rp.peak_in_first_iteration ? first_bd : steady_bd;
    // Replaying iterations keep the graph pool reserved beside what they allocate.
    rp.reserved_outside_allocated = any_captured ? pool : Bytes{};
    rp.peak_with_graph_pool = with_pool;
    rp.fits = rp.peak_with_graph_pool <= out.capacity;
    // The allocator's cache scales what it allocates; the pool comes on top in replaying iterations.
    const auto scaled = [&](double ratio) {
      if (ratio <= 0) return Bytes{};
      const auto times = [ratio](Bytes b) { return Bytes{std::llround(static_cast<double>(b.value) * ratio)}; };
      Bytes eager = times(first_peak), graphed{};
      if (steady_eager) eager = max(eager, times(steady_peak));
      if (any_captured) {
        // The graphed pass is the last one walked; its peak is the steady peak unless TE's eager
        // warm-up iterations peaked higher, when their peak is what the cache holds before capture.
        graphed = times(w.peak) + pool;
      }
      return max(eager, graphed);
    };
    const bool expandable = spec.cluster.expandable_segments;
    rp.estimated_peak_reserved = scaled(expandable ? fitted.reserved_ratio_median_expandable : fitted.reserved_ratio_median);
    rp.estimated_peak_reserved_p90 = scaled(expandable ? fitted.reserved_ratio_p90_expandable : fitted.reserved_ratio_p90);
    rp.fits_with_allocator_reserve = rp.fits && rp.estimated_peak_reserved_p90 <= out.capacity;

    for (std::size_t ci = 0; ci < chunks.size(); ++ci) {
      for (const auto& s : chunks[ci].segments) {
        Bytes bwd{};
        for (const auto& part : s.parts) bwd = max(bwd, part.backward_excess);
        rp.modules.push_back({s.name, static_cast<int>(ci), s.held, s.forward_peak_excess, bwd, s.replay_flops,
                              s.forward_s, s.backward_s, s.replay_s, {}});
        if (options.record_held_tensors && s.held_tensors) rp.modules.back().held_tensors = *s.held_tensors;
      }
    }
    // Work and time per iteration on this rank.
    double fwd_s = 0, bwd_s = 0, replay_s = 0, replay_flops = 0;
    double host_fwd_calls = 0, host_bwd_calls = 0, gpu_s = 0, wire = 0, regions = 0;
    for (const auto& cm : chunks) {
      for (const auto& s : cm.segments) {
        const double f = time.seconds(s.forward_work);
        fwd_s += f;
        bwd_s += time.backward_seconds(s.forward_work);
        replay_s += time.seconds(s.replay_work);
        host_fwd_calls += s.forward_work.host_calls + s.replay_work.host_calls;
        regions += s.replay_work.checkpoint_regions;
        host_bwd_calls += s.forward_work.host_calls;
        wire += s.forward_work.comm_bytes + s.forward_work.backward_comm_bytes + s.replay_work.comm_bytes;
        gpu_s += time.compute_seconds(s.forward_work) + time.backward_compute_seconds(s.forward_work) +
                 time.compute_seconds(s.replay_work);
        // CPU offloading pays its copies out and back over the host link instead of a replay
        // (counted without overlap: an upper bound on what it adds to the step).
        if (s.offloaded) replay_s += 2.0 * static_cast<double>(s.held.value) / kHostLinkBytesPerSecond;
        replay_flops += s.replay_flops;
      }
    }
    const double m = static_cast<double>(d.num_microbatches);
    // Pipeline bubble: (pp - 1) / vpp extra micro-batch slots (Narayanan et al. 2021).
    const double slots = m + static_cast<double>(d.pp - 1) / static_cast<double>(d.vpp);
    rp.replay_flops = replay_flops * m;
    rp.replay_time_s = replay_s * m;
    rp.time.forward_backward_s = (fwd_s + bwd_s + replay_s) * slots + time.host_microbatch_seconds() * m;
    rp.time.microbatches = m;
    rp.time.host_forward_calls = host_fwd_calls * m;
    rp.time.host_backward_calls = host_bwd_calls * m;
    rp.time.checkpoint_regions = regions * m;
    rp.time.compute_s = gpu_s * m;
    rp.time.comm_wire_bytes = wire * m;
    rp.time.optimizer_touched_bytes = optimizer_touched_bytes(sm);
    rp.time.optimizer_s = time.optimizer_seconds(rp.time.optimizer_touched_bytes);
    rp.time.grad_sync_s = exposed_grad_sync_seconds(spec, d, sm, time);
    rp.step_time_s = rp.time.forward_backward_s + rp.time.grad_sync_s + rp.time.optimizer_s;
    out.ranks.push_back(std::move(rp));
  }
  for (const auto& r : out.ranks) {
    out.max_peak_allocated = max(out.max_peak_allocated, r.peak_allocated);
    if (!r.fits) out.fits = false;
    if (!r.fits_with_allocator_reserve) out.fits_with_allocator_reserve = false;
    // Fits by allocated bytes, but not once the allocator's cache is counted as in most measured runs.
    if (r.fits && r.estimated_peak_reserved_p90 > out.capacity) {
      const bool expandable = spec.cluster.expandable_segments;
      const double p90 = expandable ? fitted.reserved_ratio_p90_expandable : fitted.reserved_ratio_p90;
      out.warnings.push_back({model::Severity::warning, "ranks.pp_rank_" + std::to_string(r.rank.pp_rank),
                              "fragmentation_risk",
                              "pp rank " + std::to_string(r.rank.pp_rank) + " fits by allocated bytes (" +
                                  detail::gb_text(r.peak_with_graph_pool) +
                                  (r.reserved_outside_allocated.value > 0 ? " GB with its CUDA-graph pool, of " : " GB of ") +
                                  detail::gb_text(out.capacity) +
                                  "), but the caching allocator reserved up to " + detail::percent_text(p90 - 1.0) +
                                  " more than it allocated in 90 % of our measured runs" +
                                  (expandable ? " with expandable_segments" : "") + " (" +
                                  detail::gb_text(r.estimated_peak_reserved_p90) + " GB): it may run out of memory from fragmentation" +
                                  (expandable ? std::string("")
                                              : std::string("; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (cluster."
                                                            "expandable_segments) avoids most of it"))});
    }
    if (r.step_time_s >= out.step_time_s) {
      out.step_time_s = r.step_time_s;
      out.replay_time_s = r.replay_time_s;
      out.replay_flops = r.replay_flops;
    }
  }
  return out;
}

}  // namespace peakcast::sim
