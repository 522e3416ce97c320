// AllocRecorder's forward and backward of a (chunk, micro-batch), following the memory walk's rules
// (memory_walk.cpp) tensor by tensor: each module's script (module_script.hpp) over the tensor that
// flows between modules; what the schedule keeps; full-recompute groups replaying their layers;
// offloaded saved sets; the bytes the walk keeps beyond a module's own tensors as blocks of their
// own (a moe checkpoint's retained graph, a tied weight's gradient, deferred wgrad entries).
#include <algorithm>

#include "alloc_recorder.hpp"
#include "combined_step.hpp"

namespace peakcast::sim::detail {

namespace {
Bytes excess(Bytes a, Bytes b) { return a > b ? a - b : Bytes{}; }
}  // namespace

// A module under its checkpoint set: its forward's tensors, the flowing tensor its input slot.
// `retained`: what the segment's previous backward left to its token dispatcher (retains_moe_input), freed where the
// dispatcher takes new probabilities.
void AllocRecorder::forward_plain(const Segment& s, std::vector<int>& retained, bool input_kept, int& flow, Kept& k) {
  const Segment::Part& part = s.parts.front();
  if (!part.graph) {  // no graph (white-box tests): its saved bytes and output as blocks
    const int out = alloc(s.output_bytes);
    k.owned.push_back(alloc(s.input_held ? s.held - s.input_bytes : s.held));
    if (input_kept) k.owned.push_back(flow);
    else free(flow);
    flow = out;
    return;
  }
  const ModuleScript& sc = setup_.scripts->get(*part.graph, part.ckpt);
  k.slots.assign(static_cast<std::size_t>(sc.slots()), -1);
  const int in = sc.inputs.empty() ? -1 : sc.inputs.front();
  if (in >= 0) k.slots[static_cast<std::size_t>(in)] = flow;
  else free(flow);
  const bool input_held = in >= 0 && std::find(sc.held.begin(), sc.held.end(), in) != sc.held.end();
  const int kept_input = input_kept && !input_held ? in : -1;
  const auto split = static_cast<std::size_t>(sc.dispatcher_step >= 0 ? sc.dispatcher_step : 0);
  const std::span<const ModuleScript::Step> steps(sc.forward);
  play(sc, steps.first(split), k.slots, kept_input);
  free_all(retained);
  play(sc, steps.subspan(split), k.slots, kept_input);
  flow = sc.output >= 0 ? k.slots[static_cast<std::size_t>(sc.output)] : -1;
  if (sc.output >= 0) k.slots[static_cast<std::size_t>(sc.output)] = -1;
  // What stays: the held slots, the input the schedule keeps; anything else alive goes now.
  std::vector<bool> keep(k.slots.size(), false);
  for (const int t : sc.held) keep[static_cast<std::size_t>(t)] = true;
  for (std::size_t t = 0; t < k.slots.size(); ++t) {
    if (k.slots[t] < 0 || keep[t]) continue;
    if (static_cast<int>(t) == in && input_kept) k.owned.push_back(k.slots[t]);
    else free(k.slots[t]);
    k.slots[t] = -1;
  }
}

// A full-recompute group's forward without saving: each layer's no-grad forward, only the group's
// input kept (or, distributed, this rank's slice of it).
void AllocRecorder::forward_group(const Segment& s, int& flow, Kept& k) {
  const int input = flow;
  int cur = flow;
  for (std::size_t p = 0; p < s.parts.size(); ++p) {
    const Segment::Part& part = s.parts[p];
    if (!part.graph) break;
    at_part(p);
    CheckpointSet whole{};
    whole.whole_module = true;
    const ModuleScript& sc = setup_.scripts->get(*part.graph, whole);
    std::vector<int> slots(static_cast<std::size_t>(sc.slots()), -1);
    if (!sc.inputs.empty()) slots[static_cast<std::size_t>(sc.inputs.front())] = cur;
    play(sc, sc.forward, slots, -1);
    const int out = sc.output >= 0 ? slots[static_cast<std::size_t>(sc.output)] : -1;
    if (sc.output >= 0) slots[static_cast<std::size_t>(sc.output)] = -1;
    for (int& id : slots) {  // the part's input (held by the checkpoint) and anything left
      if (id == input) {
        id = -1;
        continue;
      }
      free(id);
      id = -1;
    }
    cur = out;
  }
  flow = cur;
  if (s.distributed_input) {
    k.owned.push_back(alloc(s.held));  // split_tensor_into_1d_equal_chunks: the slice, a new buffer
    free(input);
  } else {
    k.owned.push_back(input);
    k.owned.push_back(alloc(excess(s.held, s.input_bytes)));  // an MTP group's embedding lookup
  }
}

AllocRecorder::Run AllocRecorder::forward_begin(int c, int mb) {
  const ChunkModel& cm = chunks_[static_cast<std::size_t>(c)];
  Run f{c, mb, cm.segments.empty() || (graphed_ && whole_graph_), {}, -1, {}};
  if (f.whole) return f;
  note(&cm.segments.front().name, "forward");
  f.flow = alloc(cm.segments.front().input_bytes);  // received from the previous stage, or the token ids
  return f;
}

void AllocRecorder::forward_module(Run& f, std::size_t i) {
  if (f.whole) return;
  const ChunkModel& cm = chunks_[static_cast<std::size_t>(f.c)];
  const Segment& s = cm.segments[i];
  Kept& k = f.kc.segments.emplace_back();
  if (graphed_ && s.graph_captured) return;  // replays in the graph's pool; the hidden state passes through
  note(&s.name, "forward");
  auto& retained = retained_[static_cast<std::size_t>(f.c)][i];
  const bool input_kept = s.input_held || (i == 0 && cm.receives_input && !s.distributed_input);
  at(f.c, f.mb, i);
  if (s.replay_group) forward_group(s, f.flow, k);
  else forward_plain(s, retained, input_kept, f.flow, k);
  free_all(retained);     // (a segment without a script: at its forward)
  free_all(f.in_flight);  // the previous layer's copy to the host completes with this layer
  if (s.offloaded) {
    for (int& id : k.slots)
      if (id >= 0) {
        k.offloaded.push_back(bytes_of(id));
        f.in_flight.push_back(id);
        id = -1;
      }
    for (const int id : k.owned) {
      k.offloaded.push_back(bytes_of(id));
      f.in_flight.push_back(id);
    }
    k.owned.clear();
  }
}

void AllocRecorder::forward_end(Run& f) {
  const ChunkModel& cm = chunks_[static_cast<std::size_t>(f.c)];
  if (!f.whole) {
    free_all(f.in_flight);
    if (cm.sends_output && !setup_.deallocate_outputs) f.kc.extra = f.flow;
    else free(f.flow);  // deallocate_output_tensor after the send; the loss is reduced at once
  }
  kept_.at(static_cast<std::size_t>(f.c) * static_cast<std::size_t>(setup_.microbatches) + static_cast<std::size_t>(f.mb)) = std::move(f.kc);
}

void AllocRecorder::forward(int c, int mb) {
  Run f = forward_begin(c, mb);
  for (std::size_t i = 0; !f.whole && i < chunks_[static_cast<std::size_t>(c)].segments.size(); ++i) forward_module(f, i);
  forward_end(f);
}

// Brings an offloaded saved set back (one block per tensor; the script's slots stay empty).
void AllocRecorder::prefetch(Kept& k) {
  for (const Bytes b : k.offloaded) k.owned.push_back(alloc(b));
  k.offloaded.clear();
}

// One part's backward over its slots, `grad` the gradient of its output; returns its input's gradient.
// With `deferred` (the output layer under defer_embedding_wgrad_compute): its input and its logits'
// gradient are not freed but appended there, as the layer's backward appends them to its deferral
// buffers (tensor_parallel/layers.py:603-606) until the pipeline flush.
int AllocRecorder::backward_part(const Segment::Part& part, std::vector<int>& slots, int grad, std::vector<int>* deferred,
                                 int* callers_grad, std::vector<int>* retained) {
  const ModuleScript& sc = setup_.scripts->get(*part.graph, part.ckpt);
  if (sc.output_grad) {
    if (grad < 0) grad = alloc(Bytes{part.graph->tensors[static_cast<std::size_t>(sc.output)].bytes});  // the loss's ones
    slots[static_cast<std::size_t>(sc.grad(sc.output))] = grad;
  } else {
    free(grad);
  }
  const bool defers = deferred && part.graph->deferred_input >= 0;
  const int kept_input = defers ? part.graph->deferred_input : -1;
  const int kept_grad = defers ? sc.grad(part.graph->deferred_output) : -1;
  play(sc, sc.backward, slots, kept_input, kept_grad);
  if (defers) {
    for (const int slot : {kept_input, kept_grad}) {
      int& id = slots[static_cast<std::size_t>(slot)];
      deferred->push_back(id);
      id = -1;
    }
  }
  int out = -1;
  if (!sc.inputs.empty()) {
    int& g = slots[static_cast<std::size_t>(sc.grad(sc.inputs.front()))];
    out = g;
    g = -1;
  }
  if (callers_grad && sc.kept_output_grad >= 0) {  // keep_output_grad: the caller frees it
    *callers_grad = slots[static_cast<std::size_t>(sc.kept_output_grad)];
    slots[static_cast<std::size_t>(sc.kept_output_grad)] = -1;
  }
  if (retained && sc.retained_input >= 0) {  // retains_moe_input: the checkpoint's input and its gradient
    for (const int slot : {sc.retained_input, sc.retained_input + 1}) {
      int& id = slots[static_cast<std::size_t>(slot)];
      if (id >= 0) retained->push_back(id);
      id = -1;
    }
  }
  for (int& id : slots) {
    free(id);
    id = -1;
  }
  return out;
}

int AllocRecorder::backward_plain(const Segment& s, std::size_t i, int mb, int grad, Kept& k, std::vector<int>& retained) {
  int out = -1;
  const Segment::Part& part = s.parts.front();
  const bool defers = s.deferred_wgrad.value > 0 && (setup_.deferral_limit == 0 || deferred_entries_ < setup_.deferral_limit);
  Bytes deferred_elsewhere = defers ? s.deferred_wgrad : Bytes{};
  if (s.takes_carried_activation_grad) free_all(carried_activation_);  // its graph's own gradient from here on
  if (part.graph && !k.slots.empty()) {
    const std::size_t before = deferred_.size();
    out = backward_part(part, k.slots, grad, defers ? &deferred_ : nullptr, nullptr, &retained);
    for (std::size_t d = before; d < deferred_.size(); ++d) deferred_elsewhere -= bytes_of(deferred_[d]);
  } else {
    const int ws = alloc(part.backward_excess);
    free(ws);
    free(grad);
    if (part.input_requires_grad) out = alloc(s.input_bytes);
  }
  free_all(k.owned);
  if (s.carried_weight_grad.value > 0) carried_.push_back(alloc(s.carried_weight_grad));
  if (s.carried_activation_grad.value > 0) carried_activation_.push_back(alloc(s.carried_activation_grad));
  if (i == 0 && s.is_embedding) free_all(carried_);
  if (defers) {
    // What the buffers hold beyond the two tensors (none when the graph names them), and the
    // autograd graph the last stage's stored input keeps (stage_builder.cpp).
    if (deferred_elsewhere.value > 0) deferred_.push_back(alloc(deferred_elsewhere));
    if (mb + 1 < setup_.microbatches && s.deferred_graph.value > 0) deferred_.push_back(alloc(s.deferred_graph));
    ++deferred_entries_;
  }
  return out;
}

// The checkpoint's backward: every layer's forward again with saving on, then their backwards.
int AllocRecorder::backward_group(const Segment& s, int grad, Kept& k) {
  if (s.parts.empty() || !s.parts.front().graph) {
    free_all(k.owned);
    free(grad);
    return alloc(s.input_bytes);
  }
  int cur = k.owned.empty() ? -1 : k.owned.front();
  if (s.distributed_input) {
    cur = alloc(s.input_bytes);  // all-gathered into a new buffer, swapped in for the slice
    free_all(k.owned);
  }
  k.parts.assign(s.parts.size(), {});
  for (std::size_t p = 0; p < s.parts.size(); ++p) {
    const ModuleScript& sc = setup_.scripts->get(*s.parts[p].graph, s.parts[p].ckpt);
    auto& slots = k.parts[p];
    slots.assign(static_cast<std::size_t>(sc.slots()), -1);
    if (!sc.inputs.empty()) slots[static_cast<std::size_t>(sc.inputs.front())] = cur;
    at_part(p);
    play(sc, sc.forward, slots, -1);
    cur = sc.output >= 0 ? slots[static_cast<std::size_t>(sc.output)] : -1;
    if (sc.output >= 0) slots[static_cast<std::size_t>(sc.output)] = -1;
  }
  // CheckpointFunction.backward keeps the replay's output (`outputs`) and the group's output gradient (`args`)
  // until torch.autograd.backward returns (random.py:648-664): the last layer's script hands the latter back.
  const int replay_output = cur;
  int g = grad, callers_grad = -1;
  for (std::size_t p = s.parts.size(); p-- > 0;) {
    at_part(p);
    g = backward_part(s.parts[p], k.parts[p], g, nullptr, &callers_grad);
  }
  free(callers_grad);
  free(replay_output);
  free_all(k.owned);
  if (s.carried_weight_grad.value > 0) carried_.push_back(alloc(s.carried_weight_grad));
  return g;
}

AllocRecorder::Run AllocRecorder::backward_begin(int c, int mb) {
  const ChunkModel& cm = chunks_[static_cast<std::size_t>(c)];
  Run b{c, mb, false, std::move(kept_.at(static_cast<std::size_t>(c) * static_cast<std::size_t>(setup_.microbatches) + static_cast<std::size_t>(mb))), -1, {}};
  b.whole = cm.segments.empty() || (graphed_ && whole_graph_) || b.kc.segments.size() != cm.segments.size();
  // The gradient of the chunk's output, received from the next stage (the loss's is its own).
  if (!b.whole && cm.sends_output) b.flow = alloc(cm.segments.back().output_bytes);
  return b;
}

void AllocRecorder::backward_module(Run& b, std::size_t i) {
  if (b.whole) return;
  const ChunkModel& cm = chunks_[static_cast<std::size_t>(b.c)];
  const Segment& s = cm.segments[i];
  Kept& k = b.kc.segments[i];
  if (i + 1 == cm.segments.size()) prefetch(k);
  if (i > 0) prefetch(b.kc.segments[i - 1]);
  if (!s.is_output) backward_started();
  note(&s.name, "backward");
  at(b.c, b.mb, i);
  int out = -1;
  if (graphed_ && s.graph_captured) out = b.flow;  // the graph's replay hands the gradient through
  else if (s.replay_group) out = backward_group(s, b.flow, k);
  else {
    auto& retained = retained_[static_cast<std::size_t>(b.c)][i];
    free_all(retained);  // (an earlier micro-batch's, if no forward took them)
    out = backward_plain(s, i, b.mb, b.flow, k, retained);
    // Without a script (white-box tests) the retained input and its gradient as one block.
    if (s.retained_after_backward.value > 0 && retained.empty()) retained.push_back(alloc(s.retained_after_backward));
  }
  if (!s.parts.front().input_requires_grad) {
    free(out);
    out = -1;
  }
  b.flow = out;
}

void AllocRecorder::backward_end(Run& b) {
  if (b.whole) return;
  free(b.kc.extra);
  free(b.flow);  // sent to the previous stage (nothing at the embedding)
  b.flow = -1;
}

void AllocRecorder::backward(int c, int mb) {
  Run b = backward_begin(c, mb);
  for (std::size_t i = chunks_[static_cast<std::size_t>(c)].segments.size(); !b.whole && i-- > 0;) backward_module(b, i);
  backward_end(b);
}

// The combined 1F1B step, in the memory walk's order (combined_step.hpp).
void AllocRecorder::combined(int f_chunk, int f_mb, int b_chunk, int b_mb) {
  Run f = forward_begin(f_chunk, f_mb);
  Run b = backward_begin(b_chunk, b_mb);
  const auto& fc = chunks_[static_cast<std::size_t>(f_chunk)];
  const auto& bc = chunks_[static_cast<std::size_t>(b_chunk)];
  for (const CombinedOp& op : combined_order(fc, bc, f.whole, b.whole)) {
    if (op.kind == CombinedOp::forward) forward_module(f, op.module);
    else if (op.kind == CombinedOp::backward) backward_module(b, op.module);
    else backward_end(b);
  }
  forward_end(f);
}

}  // namespace peakcast::sim::detail
