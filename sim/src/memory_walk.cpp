// The walk over one rank's schedule: every forward adds a segment's saved set and output, every
// backward releases them; each op's transient excess is checked against the peak.
#include "memory_walk.hpp"

#include "alloc_recorder.hpp"
#include "combined_step.hpp"

#include <utility>

namespace peakcast::sim::detail {

namespace {

struct Walker {
  Walker(const std::vector<ChunkModel>& c, const WalkSetup& s)
      : chunks(c), microbatches(s.microbatches), deallocate_outputs(s.deallocate_outputs), deferral_limit(s.deferral_limit), timeline(s.timeline), recorder(s.recorder) {
    kept_by_microbatch.resize(chunks.size() * static_cast<std::size_t>(microbatches));
    for (const auto& cm : chunks) {
      int last = -1;
      for (std::size_t i = 0; i < cm.segments.size(); ++i)
        if (cm.segments[i].offload_kept) last = static_cast<int>(i);
      last_offloading.push_back(last);
    }
  }
  // Each chunk's last layer whose fine-grained offloading moves bytes (-1: none).
  std::vector<int> last_offloading;

  const std::vector<ChunkModel>& chunks;
  int microbatches = 1;
  bool deallocate_outputs = true;
  std::int64_t deferral_limit = 0;
  std::vector<TimelineEvent>* timeline = nullptr;
  AllocRecorder* recorder = nullptr;

  // Megatron-FSDP: the unit weights gathered through a chunk's forward or backward, and what a
  // backward ends with (model::StaticMemory).
  Bytes fsdp_window, fsdp_backward_end;
  Bytes base;         // everything outside activations at this moment
  Bytes activations;  // saved activations and the flowing tensors
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
  double clock = 0;
  Bytes carried_weight_grad;      // a tied weight's gradient waiting for the embedding's backward
  Bytes carried_activation_grad;  // T5: the encoder output's gradient the decoder layers sum into
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
    if (timeline) timeline->push_back({clock, live, name(), layer, mb, chunk, iteration, phase});
  }

  // Bytes each segment of a (chunk, micro-batch) keeps until its backward, plus what the schedule
  // keeps (an output not deallocated after its send).
  struct Kept {
    std::vector<Bytes> segments;
    Bytes extra;
    bool last_on_gpu = false;  // its last offloading layer kept its groups on the GPU (after the warm-up)
  };
  std::vector<Kept> kept_by_microbatch;  // index chunk * microbatches + microbatch
  // Bytes each (chunk, segment) still holds after its backward (Segment::retained_after_backward);
  // they outlive the iteration, so they are kept outside `activations`.
  std::vector<std::vector<Bytes>> retained{};
  Bytes retained_total{};
  // defer_embedding_wgrad_compute: the entries deferred to the pipeline flush so far this iteration.
  Bytes deferred_wgrad;
  std::int64_t deferred_entries = 0;
  void retain(int c, std::size_t i, Bytes bytes) {
    if (retained.size() <= static_cast<std::size_t>(c)) retained.resize(static_cast<std::size_t>(c) + 1);
    auto& r = retained[static_cast<std::size_t>(c)];
    if (r.size() <= i) r.resize(i + 1);
    retained_total -= r[i];
    r[i] = bytes;
    retained_total += bytes;
  }

  Kept& kept_at(int c, int mb) { return kept_by_microbatch.at(static_cast<std::size_t>(c) * microbatches + mb); }
  // A forward or a backward of one (chunk, micro-batch) in progress, module by module: a combined
  // 1F1B step interleaves two of them (combined_order).
  struct Run {
    int c = 0, mb = 0;
    bool whole = false;  // nothing module by module: an empty virtual stage, or a full-iteration graph
    Kept kept;
    Bytes carry;  // forward: an offloaded layer's saved set in flight to the host; backward: the flowing gradient
  };
  Run forward_begin(int c, int mb, bool last_on_gpu = false);
  // The segment a module runs as: its own, or with its offload groups kept on the GPU.
  const Segment& module_at(const Kept& k, int c, std::size_t i, Segment& scratch) const {
    const Segment& s = chunks[c].segments[i];
    if (!k.last_on_gpu || static_cast<int>(i) != last_offloading[static_cast<std::size_t>(c)]) return s;
    scratch = s.kept_on_gpu();
    return scratch;
  }
  void forward_module(Run& f, std::size_t i);
  void forward_end(Run& f);
  Run backward_begin(int c, int mb);
  void backward_module(Run& b, std::size_t i);
  void backward_end(Run& b);
  void forward(int c, int mb, bool last_on_gpu = false);
  void backward(int c, int mb);
  void combined(const ScheduleStep& f, const ScheduleStep& b, bool last_on_gpu = false);
  void backward_replay_group(const Segment& s, Bytes kept_bytes, int mb, int c);
  void backward_plain(const Segment& s, std::size_t i, Bytes kept_bytes, int mb, int c);
};

Walker::Run Walker::forward_begin(int c, int mb, bool last_on_gpu) {
  const ChunkModel& cm = chunks[c];
  Run f{c, mb, cm.segments.empty() || (graphed && whole_graph), {}, {}};
  f.kept.last_on_gpu = last_on_gpu;
  // The first module's input: received from the previous stage (the schedule keeps it until the
  // backward), or the token ids the data loader put on the GPU.
  // A layout's empty virtual stage hands the received hidden state straight on: nothing is kept
  // (deallocate_output_tensor frees the one tensor it received and sent).
  if (!f.whole) {
    activations += cm.segments.front().input_bytes;
    base += fsdp_window;
  }
  return f;
}

void Walker::forward_module(Run& f, std::size_t i) {
  if (f.whole) return;
  const ChunkModel& cm = chunks[f.c];
  Segment scratch;
  const Segment& s = module_at(f.kept, f.c, i, scratch);
  if (graphed && s.graph_captured) {
    clock += s.forward_s;
    f.kept.segments.push_back(Bytes{});
    return;
  }
  // Its dispatcher takes new probabilities early in the forward: the old replay graph goes.
  if (s.retained_after_backward.value > 0) retain(f.c, i, Bytes{});
  touch(
      s.forward_peak_excess, Phase::forward, [&] { return s.name + ".forward"; }, s.layer, f.mb, f.c);
  clock += s.forward_s;
  activations -= f.carry;  // the copy of the previous layer completes with this layer
  f.carry = Bytes{};
  // The schedule keeps a received input for its backward, unless a distributing checkpoint
  // swapped that very tensor's data for its slice (make_viewless_tensor returns a viewless
  // input as it is; measured: the p2p receive buffer is gone at the peak), or an offload commit
  // resized its storage to 0 (Segment::input_released).
  const bool input_kept = s.input_held || (i == 0 && cm.receives_input && !s.distributed_input && !s.input_released);
  // Replaying, a half-captured layer's graphed half keeps its saved set in the pool.
  const Bytes own = (s.input_held ? s.held - s.input_bytes : s.held) - (graphed ? s.captured_held : Bytes{});
  activations += own + s.output_bytes;
  if (!input_kept) activations -= s.input_bytes;
  const Bytes kept_here = own + (input_kept ? s.input_bytes : Bytes{});
  if (s.offloaded) {
    f.carry = kept_here;
    f.kept.segments.push_back(Bytes{});
  } else {
    f.kept.segments.push_back(kept_here);
  }
}

void Walker::forward_end(Run& f) {
  const ChunkModel& cm = chunks[f.c];
  if (!f.whole) {
    activations -= f.carry;
    const Bytes out = cm.segments.back().output_bytes;
    if (cm.sends_output && !deallocate_outputs) f.kept.extra = out;
    else activations -= out;  // deallocate_output_tensor after the send; the loss is reduced at once
    base -= fsdp_window;
  }
  kept_at(f.c, f.mb) = std::move(f.kept);
  touch(
      Bytes{}, Phase::forward, [&] { return "chunk" + std::to_string(f.c) + ".forward_done"; }, -1, f.mb, f.c);
}

void Walker::forward(int c, int mb, bool last_on_gpu) {
  if (recorder) recorder->forward(c, mb);
  Run f = forward_begin(c, mb, last_on_gpu);
  for (std::size_t i = 0; !f.whole && i < chunks[c].segments.size(); ++i) forward_module(f, i);
  forward_end(f);
}

// The checkpoint re-runs the group's forward with saving on: every layer's saved set returns (the
// group input is already kept), then the layers' backwards release them.
void Walker::backward_replay_group(const Segment& s, Bytes kept_bytes, int mb, int c) {
  Bytes replayed{}, fwd{};
  for (const auto& p : s.parts) {
    replayed += p.held;
    fwd = max(fwd, p.forward_excess);
  }
  replayed -= s.input_bytes;  // the group input is kept
  // Only its slice was: the backward all-gathers the full input into a new buffer and swaps it
  // in for the slice (random.py:640-645), which is freed at once.
  if (s.distributed_input) activations += s.input_bytes - s.held;
  touch(
      fwd, Phase::backward, [&] { return s.name + ".replay"; }, s.layer, mb, c);
  clock += s.replay_s + s.backward_s;
  activations += replayed;
  // CheckpointFunction.backward (random.py:648-664) keeps the replay's output (`outputs`) and the group's output
  // gradient (`args`, b.carry) until torch.autograd.backward returns; an earlier layer's output gradient (the
  // next one's input gradient) is alive beside them, the last layer's profile keeps the group's.
  activations += s.output_bytes;
  for (std::size_t k = s.parts.size(); k-- > 0;) {
    const Bytes flowing = k + 1 < s.parts.size() ? s.parts[k + 1].input_bytes : Bytes{};
    touch(
        s.parts[k].backward_excess + flowing, Phase::backward, [&] { return s.name + ".backward"; }, s.layer + static_cast<int>(k), mb, c);
    activations -= s.parts[k].held;
  }
  activations -= s.output_bytes;
  if (s.distributed_input) activations -= kept_bytes - s.held;  // nothing else, as kept holds only the slice
  else activations -= kept_bytes - s.input_bytes;               // what the checkpoint kept beside its first input
  activations += s.carried_weight_grad;
  carried_weight_grad += s.carried_weight_grad;
}

void Walker::backward_plain(const Segment& s, std::size_t i, Bytes kept_bytes, int mb, int c) {
  if (s.takes_carried_activation_grad) {  // its graph's own gradient from here on
    activations -= carried_activation_grad;
    carried_activation_grad = Bytes{};
  }
  touch(
      s.parts.front().backward_excess, Phase::backward, [&] { return s.name + ".backward"; }, s.layer, mb, c);
  take_pending_workspaces();
  if (s.retained_after_backward.value > 0) retain(c, i, s.retained_after_backward);
  activations += s.carried_weight_grad;
  carried_weight_grad += s.carried_weight_grad;
  activations += s.carried_activation_grad;
  carried_activation_grad += s.carried_activation_grad;
  if (i == 0 && s.is_embedding) {
    activations -= carried_weight_grad;
    carried_weight_grad = Bytes{};
  }
  activations -= kept_bytes;
  if (s.deferred_wgrad.value > 0 && (deferral_limit == 0 || deferred_entries < deferral_limit)) {
    const Bytes kept_alive = s.deferred_wgrad + (mb + 1 < microbatches ? s.deferred_graph : Bytes{});
    activations += kept_alive;
    deferred_wgrad += kept_alive;
    ++deferred_entries;
  }
  clock += s.replay_s + s.backward_s;
}

Walker::Run Walker::backward_begin(int c, int mb) {
  const ChunkModel& cm = chunks[c];
  Run b{c, mb, cm.segments.empty() || (graphed && whole_graph), std::move(kept_at(c, mb)), {}};
  // Gradient of the chunk output: received from the next stage (the loss gradient is tiny).
  if (!b.whole && cm.sends_output) b.carry = cm.segments.back().output_bytes;
  activations += b.carry;
  if (!b.whole) base += fsdp_window;
  return b;
}

void Walker::backward_module(Run& b, std::size_t i) {
  if (b.whole) return;
  const ChunkModel& cm = chunks[b.c];
  // Offloaded saved sets come back one layer ahead of their backward (prefetch).
  const auto offloaded_bytes = [&](std::size_t j) {
    const Segment& s = cm.segments[j];
    return s.offloaded ? (s.input_held ? s.held : s.held + s.input_bytes) : Bytes{};
  };
  Segment scratch;
  const Segment& s = module_at(b.kept, b.c, i, scratch);
  if (i + 1 == cm.segments.size()) activations += offloaded_bytes(i);
  if (i > 0) activations += offloaded_bytes(i - 1);
  // The loss's backward peaks (the logits' gradient beside the saved softmax) before the output
  // layer's first GEMM creates the backward workspaces; any other module starts with a GEMM.
  if (!s.is_output) take_pending_workspaces();
  if (graphed && s.graph_captured) clock += s.backward_s;
  else if (s.replay_group) backward_replay_group(s, b.kept.segments[i], b.mb, b.c);
  else backward_plain(s, i, b.kept.segments[i] + offloaded_bytes(i), b.mb, b.c);
  // The output gradient is consumed; the input gradient is handed to the previous module.
  activations -= b.carry;
  b.carry = s.parts.front().input_requires_grad ? s.input_bytes : Bytes{};
  activations += b.carry;
}

void Walker::backward_end(Run& b) {
  activations -= b.kept.extra;
  activations -= b.carry;  // sent to the previous stage (nothing at the embedding)
  if (!b.whole) {
    base -= fsdp_window;
    if (fsdp_backward_end.value > 0)
      touch(
          fsdp_backward_end, Phase::backward, [&] { return "chunk" + std::to_string(b.c) + ".fsdp_reduce_scatter_buckets"; }, -1, b.mb, b.c);
  }
  touch(
      Bytes{}, Phase::backward, [&] { return "chunk" + std::to_string(b.c) + ".backward_done"; }, -1, b.mb, b.c);
}

void Walker::backward(int c, int mb) {
  if (recorder) recorder->backward(c, mb);
  Run b = backward_begin(c, mb);
  for (std::size_t i = chunks[c].segments.size(); !b.whole && i-- > 0;) backward_module(b, i);
  backward_end(b);
}

// The combined 1F1B step: one micro-batch's forward and another's backward, module by module in
// combined_order's interleaving.
void Walker::combined(const ScheduleStep& f, const ScheduleStep& b, bool last_on_gpu) {
  if (recorder) recorder->combined(f.chunk, f.microbatch, b.chunk, b.microbatch);
  Run fr = forward_begin(f.chunk, f.microbatch, last_on_gpu);
  Run br = backward_begin(b.chunk, b.microbatch);
  for (const CombinedOp& op : combined_order(chunks[f.chunk], chunks[b.chunk], fr.whole, br.whole)) {
    if (op.kind == CombinedOp::forward) forward_module(fr, op.module);
    else if (op.kind == CombinedOp::backward) backward_module(br, op.module);
    else backward_end(br);
  }
  forward_end(fr);
}

// Fine-grained offloading after the warm-up keeps the last group of each name on the GPU
// (docs/research/fine-grained-offloading-memory-facts.md section 4): in the first (chunk, micro-batch) of
// the backward order that offloads (post_warmup_callback's margin, fine_grained_activation_offload.py:579-596),
// and in a forward whose (chunk, micro-batch) is the next to run its backward (the commit's skip, :1077-1085).
// True at the forward steps where either holds.
std::vector<bool> offload_kept_steps(const std::vector<ScheduleStep>& steps, const std::vector<int>& last_offloading) {
  std::vector<bool> kept(steps.size(), false);
  const auto offloads = [&](int c) { return last_offloading[static_cast<std::size_t>(c)] >= 0; };
  const auto forward_of = [&](const ScheduleStep& b) {
    for (std::size_t k = 0; k < steps.size(); ++k)
      if (steps[k].forward && steps[k].chunk == b.chunk && steps[k].microbatch == b.microbatch) return k;
    return steps.size();
  };
  for (const ScheduleStep& b : steps)
    if (!b.forward && offloads(b.chunk)) {
      if (const std::size_t k = forward_of(b); k < steps.size()) kept[k] = true;
      break;
    }
  for (std::size_t k = 0; k < steps.size(); ++k) {
    if (!steps[k].forward || !offloads(steps[k].chunk)) continue;
    std::size_t j = k + 1;
    while (j < steps.size() && steps[j].forward) ++j;
    if (j < steps.size() && steps[j].chunk == steps[k].chunk && steps[j].microbatch == steps[k].microbatch) kept[k] = true;
  }
  return kept;
}

// What the rank holds at a pass's peak, by kind; the rest of `base` (the framework's fixed bytes,
// graph buffers, the deferral's gather buffers, the dummy weight gradients once created) is `other`.
Breakdown breakdown_at_peak(const Walker& w, const model::StaticMemory& sm, Bytes moments, bool first) {
  Breakdown bd;
  bd.parameters = sm.parameters + sm.fp8_weight_cache + sm.slack.parameters;
  bd.gradients = sm.gradients;
  bd.optimizer_states =
      sm.main_params + sm.slack.main_params + ((first && w.peak_phase != Phase::optimizer) ? Bytes{} : sm.optimizer_states + moments);
  bd.activations = w.peak_activations;
  bd.transient = w.peak_transient;
  bd.other = w.peak - w.peak_activations - w.peak_transient - bd.parameters - bd.gradients - bd.optimizer_states;
  return bd;
}

}  // namespace

RankWalk walk_rank(const std::vector<ChunkModel>& chunks, const std::vector<ScheduleStep>& steps,
                   const model::StaticMemory& sm, const WalkSetup& setup) {
  Walker w(chunks, setup);
  const std::vector<bool> kept_steps = offload_kept_steps(steps, w.last_offloading);
  w.fsdp_window = sm.fsdp_gather_window;
  w.fsdp_backward_end = sm.fsdp_backward_end;
  RankWalk out;
  out.graph_pool = setup.plan.full_graph ? Bytes{} : setup.graphs.pool;
  // Without DistOpt, per-parameter tensors carry the caching allocator's slack (static_memory.hpp).
  const Bytes model_state = sm.parameters + sm.gradients + sm.main_params + sm.fp8_weight_cache + sm.slack.parameters + sm.slack.main_params;
  model::AllocatorSlack::Step step_slack;
  bool steady_set = false;
  for (const Pass& pass : setup.plan.passes) {
    const bool first = pass.first;
    w.iteration = pass.iteration;
    w.graphed = pass.graphed;
    w.whole_graph = setup.plan.full_graph;
    w.peak = Bytes{};
    w.activations = Bytes{};
    const Bytes states = first ? Bytes{} : sm.optimizer_states + step_slack.moments;
    const Bytes graph_static = pass.graphed ? setup.graphs.static_buffers : Bytes{};
    w.base = model_state + states + setup.fixed + graph_static - (first ? setup.backward_workspaces : Bytes{}) +
             (first ? Bytes{} : setup.drain_buffers + setup.dummy_wgrads);
    if (w.recorder) w.recorder->begin_pass(pass.iteration, first, pass.graphed, setup.plan.full_graph);
    bool backward_seen = !first;
    for (std::size_t k = 0; k < steps.size(); ++k) {
      const ScheduleStep& st = steps[k];
      const bool pair = st.forward && k + 1 < steps.size() && steps[k + 1].combined;
      if ((pair || !st.forward) && !backward_seen) {
        w.pending_backward_workspaces = setup.backward_workspaces + setup.dummy_wgrads;
        backward_seen = true;
      }
      const bool last_on_gpu = !first && kept_steps[k];  // the warm-up (iteration 1) offloads every group
      if (pair) w.combined(st, steps[++k], last_on_gpu);
      else if (st.forward) w.forward(st.chunk, st.microbatch, last_on_gpu);
      else w.backward(st.chunk, st.microbatch);
    }
    w.take_pending_workspaces();
    if (w.recorder) {
      w.recorder->backward_started();
      w.recorder->flush(first);
    }
    if (w.deferred_entries > 0) {
      // The pipeline flush computes the deferred weight gradients (schedules.py:2064-2068), then
      // frees what they kept; the first flush allocates its two gather buffers.
      const Bytes new_buffers = first ? setup.drain_buffers : Bytes{};
      w.touch(
          new_buffers, Phase::backward, [] { return std::string("output_layer.deferred_wgrad"); }, -1, -1, -1);
      w.base += new_buffers;
      w.activations -= w.deferred_wgrad;
      w.deferred_wgrad = Bytes{};
      w.deferred_entries = 0;
    }
    // The full-iteration graph's pool: what the forward-backward of its capture allocated at most.
    if (pass.capture) out.graph_pool = max(out.graph_pool, w.peak - w.base);
    // The first step's moments are carved first from what the forward-backward freed (the
    // allocator keeps it); the later step() calls reuse the first one's temporary blocks.
    if (first) step_slack = sm.slack.step(w.peak - (w.base + w.activations));
    w.touch(
        Bytes{}, Phase::grad_sync, [] { return std::string("grad_sync.reduce_scatter"); }, -1, -1, -1);
    // The first step creates the Adam moments; both steps hold their implementation's transient.
    const Bytes step_transient = (first ? sm.step_transient_first : sm.step_transient_steady) + step_slack.temporaries;
    if (first) w.base += sm.optimizer_states + step_slack.moments;
    w.touch(
        step_transient, Phase::optimizer, [] { return std::string("optimizer.step"); }, -1, -1, -1);
    if (w.recorder) w.recorder->optimizer(first);
    PassPeak p{w.peak, w.peak_phase, w.peak_op, breakdown_at_peak(w, sm, step_slack.moments, first)};
    out.peak_with_graph_pool = max(out.peak_with_graph_pool, w.peak + (pass.graphed ? out.graph_pool : Bytes{}));
    out.last_pass_peak = w.peak;
    if (first) {
      out.first = std::move(p);
    } else if (!steady_set || w.peak > out.steady.peak) {
      steady_set = true;
      out.steady = std::move(p);
    }
  }
  return out;
}

}  // namespace peakcast::sim::detail
