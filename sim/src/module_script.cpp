// module_script: layer_graph.cpp's forward and backward of one module, tensor by tensor, written
// down as allocations and frees instead of summed. The rules are those of simulate() there: outputs
// appear when their op runs, a tensor goes after its last forward use unless held, scratch lives
// for its op, a checkpointed region is replayed once when its backward starts, a pass-through op
// hands its output gradient on, a second gradient contribution forms a sum before the old one goes.
#include "module_script.hpp"

#include <algorithm>

#include "lifetimes.hpp"

namespace peakcast::sim::detail {

namespace {

using Kind = ModuleScript::Kind;

struct Writer {
  const LayerGraph& g;
  const Lifetimes& lt;
  ModuleScript& s;
  std::vector<ModuleScript::Step>* out = nullptr;
  std::int32_t n = 0;
  std::int32_t scratch(std::int32_t k = 0) const { return k == 0 ? 2 * n : 2 * n + 1 + k; }
  std::int32_t sum() const { return 2 * n + 1; }

  void alloc(std::int32_t slot, std::int64_t bytes) {
    if (bytes <= 0) return;
    unpin(slot);
    ModuleScript::Step st{Kind::alloc, slot, -1, bytes};
    if (slot < 2 * n) {  // a tensor's value or gradient, not an op's scratch
      const TensorNode& t = g.tensors[static_cast<std::size_t>(slot < n ? slot : slot - n)];
      st.row_group = t.row_group;
      st.row_groups = t.row_groups;
    }
    out->push_back(st);
    arm(slot);
  }
  // Blocks the module never frees (keep_output_grad, retains_moe_input): a pinned slot's block goes to its park
  // slot where the module would free it or put another block in its slot; a slot armed for a pin is pinned once a
  // block first arrives in it (the retained input's gradient).
  struct Pin {
    std::int32_t slot, park;
  };
  std::vector<Pin> pins, armed;
  void unpin(std::int32_t slot) {
    for (auto it = pins.begin(); it != pins.end(); ++it)
      if (it->slot == slot) {
        out->push_back({Kind::move, it->park, slot, 0});
        pins.erase(it);
        return;
      }
  }
  void arm(std::int32_t slot) {
    for (auto it = armed.begin(); it != armed.end(); ++it)
      if (it->slot == slot) {
        pins.push_back(*it);
        armed.erase(it);
        return;
      }
  }
  bool pinned(std::int32_t slot) const {
    return std::any_of(pins.begin(), pins.end(), [slot](const Pin& p) { return p.slot == slot; });
  }
  void free(std::int32_t slot) {
    if (pinned(slot)) return unpin(slot);
    out->push_back({Kind::free, slot, -1, 0});
  }
  void move(std::int32_t slot, std::int32_t from) {
    unpin(slot);
    out->push_back({Kind::move, slot, from, 0});
    for (auto& p : pins)
      if (p.slot == from) p.slot = slot;
    arm(slot);
  }
  void workspace(Bytes b) {
    if (b.value <= 0) return;
    alloc(scratch(), b.value);
    free(scratch());
  }
  std::int64_t bytes(int t) const { return g.tensors[static_cast<std::size_t>(t)].bytes.value; }
  std::int64_t grad_bytes(int t) const { return g.tensors[static_cast<std::size_t>(t)].gradient_bytes().value; }
};

void write_forward(Writer& w) {
  const auto nt = static_cast<std::size_t>(w.n);
  std::vector<bool> alive(nt, false);
  for (std::size_t t = 0; t < nt; ++t) alive[t] = w.g.tensors[t].external;
  w.out = &w.s.forward;
  for (std::size_t i = 0; i < w.g.ops.size(); ++i) {
    const OpNode& op = w.g.ops[i];
    if (static_cast<int>(i) == w.g.dispatcher_takes_probs) w.s.dispatcher_step = static_cast<std::int32_t>(w.out->size());
    for (int t : op.outputs) {
      if (alive[static_cast<std::size_t>(t)]) continue;
      alive[static_cast<std::size_t>(t)] = true;
      w.alloc(t, w.bytes(t));
    }
    w.workspace(op.forward_workspace);
    for (std::size_t t = 0; t < nt; ++t) {
      if (!alive[t] || w.lt.held[t] || static_cast<int>(t) == w.g.output) continue;
      if (w.lt.last_forward_use[t] == static_cast<int>(i)) {
        alive[t] = false;
        w.free(static_cast<std::int32_t>(t));
      }
    }
  }
}

// The backward's state: which values and gradients are alive (a gradient alias holds no block).
struct BackwardState {
  std::vector<bool> alive, grad_alive, grad_block;
};

// Re-materialises a checkpointed region: its forward again with saving on.
template <typename InRegion>
void write_replay(Writer& w, BackwardState& st, InRegion&& in_region) {
  const auto nt = static_cast<std::size_t>(w.n);
  std::vector<bool> tmp(nt, false);
  int last = -1;
  for (std::size_t i = 0; i < w.g.ops.size(); ++i)
    if (in_region(w.g.ops[i])) last = static_cast<int>(i);
  for (std::size_t i = 0; i < w.g.ops.size(); ++i) {
    const OpNode& op = w.g.ops[i];
    if (!in_region(op)) continue;
    for (int t : op.outputs) {
      const auto u = static_cast<std::size_t>(t);
      if (st.alive[u] || tmp[u]) continue;
      tmp[u] = true;
      w.alloc(t, w.bytes(t));
    }
    w.workspace(op.forward_workspace);
    for (std::size_t t = 0; t < nt; ++t) {
      if (!tmp[t]) continue;
      const bool needed = w.lt.replayed[t] || w.g.tensors[t].producer == last;
      if (!needed && w.lt.last_forward_use[t] <= static_cast<int>(i)) {
        tmp[t] = false;
        w.free(static_cast<std::int32_t>(t));
      }
    }
  }
  for (std::size_t t = 0; t < nt; ++t)
    if (tmp[t]) st.alive[t] = true;
}

// The requests an op's backward scratch makes: its listed blocks, the rest of the workspace, then the
// parameter's gradient (OpNode::param_grad) as a block of its own, the last.
std::vector<std::int64_t> scratch_blocks(const OpNode& op) {
  std::vector<std::int64_t> blocks;
  std::int64_t rest = op.backward_workspace.value;
  const std::int64_t param_grad = op.param_grad.value > 0 && op.param_grad.value <= rest ? op.param_grad.value : 0;
  rest -= param_grad;
  for (const Bytes b : op.backward_blocks) {
    if (b.value <= 0 || b.value > rest) continue;
    blocks.push_back(b.value);
    rest -= b.value;
  }
  if (rest > 0) blocks.push_back(rest);
  if (param_grad > 0) blocks.push_back(param_grad);
  return blocks;
}

// One op's backward: its inputs' gradients, scratch, sums, then what it no longer needs goes.
void write_op_backward(Writer& w, BackwardState& st, int i) {
  const OpNode& op = w.g.ops[static_cast<std::size_t>(i)];
  const auto blocks = scratch_blocks(op);
  const bool last_is_param_grad = op.param_grad.value > 0 && op.param_grad.value <= op.backward_workspace.value;
  const auto scratch = [&](bool take) {
    for (std::size_t k = 0; k < blocks.size(); ++k) {
      if (take) {
        w.alloc(w.scratch(static_cast<std::int32_t>(k)), blocks[k]);
      } else {
        w.free(w.scratch(static_cast<std::int32_t>(k)));
        w.out->back().param_grad = last_is_param_grad && k + 1 == blocks.size();
      }
    }
  };
  if (op.backward_scratch_first && op.backward_renews_output_grad && blocks.size() > 1) {
    w.alloc(w.scratch(0), blocks[0]);
    for (int o : op.outputs) {
      const auto u = static_cast<std::size_t>(o);
      if (!st.grad_alive[u] || !st.grad_block[u]) continue;
      w.free(w.s.grad(o));
      w.alloc(w.s.grad(o), w.grad_bytes(o));
    }
    for (std::size_t k = 1; k < blocks.size(); ++k) w.alloc(w.scratch(static_cast<std::int32_t>(k)), blocks[k]);
    for (std::size_t k = 1; k < blocks.size(); ++k) w.free(w.scratch(static_cast<std::int32_t>(k)));
    w.free(w.scratch(0));
  } else if (op.backward_scratch_first) {
    scratch(true);
    scratch(false);
  }
  std::vector<int> sums;
  int handed_from = -1;
  for (int o : op.outputs)
    if (st.grad_alive[static_cast<std::size_t>(o)] && handed_from < 0) handed_from = o;
  bool handed = false;
  for (int t : op.inputs) {
    const auto u = static_cast<std::size_t>(t);
    if (!w.g.tensors[u].requires_grad) continue;
    if (st.grad_alive[u]) {
      if (!st.grad_block[u]) {  // an alias becomes a real sum
        st.grad_block[u] = true;
        w.alloc(w.s.grad(t), w.grad_bytes(t));
      }
      sums.push_back(t);
    } else if (op.grad_passthrough) {
      st.grad_alive[u] = true;
      if (!handed && handed_from >= 0 && st.grad_block[static_cast<std::size_t>(handed_from)]) {
        w.move(w.s.grad(t), w.s.grad(handed_from));
        st.grad_block[u] = true;
        st.grad_block[static_cast<std::size_t>(handed_from)] = false;
      }
      handed = true;
    } else {
      st.grad_alive[u] = true;
      st.grad_block[u] = true;
      w.alloc(w.s.grad(t), w.grad_bytes(t));
    }
  }
  if (op.backward_takes_workspaces) w.out->push_back({Kind::workspaces, 0, -1, 0});
  if (!op.backward_scratch_first) scratch(true);
  for (int t : sums) {
    w.alloc(w.sum(), w.grad_bytes(t));
    w.free(w.s.grad(t));
    w.move(w.s.grad(t), w.sum());
  }
  if (!op.backward_scratch_first) scratch(false);
  for (int o : op.outputs) {
    const auto u = static_cast<std::size_t>(o);
    if (!st.grad_alive[u]) continue;
    st.grad_alive[u] = false;
    if (!(op.grad_passthrough && handed) && st.grad_block[u]) w.free(w.s.grad(o));
    if (!(op.grad_passthrough && handed)) st.grad_block[u] = false;
  }
  for (std::size_t t = 0; t < st.alive.size(); ++t) {
    if (!st.alive[t]) continue;
    const bool done = w.lt.first_saver[t] >= i || (w.lt.first_saver[t] < 0 && w.g.tensors[t].producer >= i);
    if (done) {
      st.alive[t] = false;
      w.free(static_cast<std::int32_t>(t));
    }
  }
}

void write_backward(Writer& w, const CheckpointSet& ckpt) {
  const auto nt = static_cast<std::size_t>(w.n);
  BackwardState st{std::vector<bool>(nt, false), std::vector<bool>(nt, false), std::vector<bool>(nt, false)};
  for (std::size_t t = 0; t < nt; ++t) st.alive[t] = w.lt.held[t];
  if (w.s.output_grad) {
    st.grad_alive[static_cast<std::size_t>(w.g.output)] = true;
    st.grad_block[static_cast<std::size_t>(w.g.output)] = true;
  }
  w.out = &w.s.backward;
  if (w.s.kept_output_grad >= 0) w.pins.push_back({w.s.grad(w.g.output), w.s.kept_output_grad});
  if (w.s.retained_input >= 0) {
    const int t = moe_checkpoint_input(w.g);
    w.pins.push_back({t, w.s.retained_input});
    w.armed.push_back({w.s.grad(t), w.s.retained_input + 1});
  }
  if (ckpt.whole_module && !w.g.ops.empty()) write_replay(w, st, [](const OpNode&) { return true; });
  std::uint32_t replayed_regions = 0;
  for (int i = static_cast<int>(w.g.ops.size()) - 1; i >= 0; --i) {
    const OpNode& op = w.g.ops[static_cast<std::size_t>(i)];
    if (!ckpt.whole_module) {
      const std::uint32_t region = active_keep_region(op, ckpt);
      for (std::uint32_t bit = 1; bit != 0 && bit <= region; bit <<= 1) {
        if ((region & bit) == 0 || (replayed_regions & bit) != 0) continue;
        replayed_regions |= bit;
        write_replay(w, st, [bit](const OpNode& o) { return (o.regions & bit) != 0; });
      }
      for (const auto& d : w.g.discards) {
        if ((ckpt.discard_output & d.region) == 0 || d.hook_op != i) continue;
        for (int t : d.tensors) {
          if (st.alive[static_cast<std::size_t>(t)]) continue;
          st.alive[static_cast<std::size_t>(t)] = true;
          w.alloc(t, w.bytes(t));
        }
      }
    }
    write_op_backward(w, st, i);
  }
}

}  // namespace

ModuleScript module_script(const LayerGraph& g, const CheckpointSet& ckpt) {
  const Lifetimes lt = analyse(g, ckpt);
  ModuleScript s;
  s.tensors = static_cast<std::int32_t>(g.tensors.size());
  s.output = g.output;
  s.graph = &g;
  for (std::size_t t = 0; t < g.tensors.size(); ++t) {
    if (g.tensors[t].external) s.inputs.push_back(static_cast<std::int32_t>(t));
    if (lt.held[t]) s.held.push_back(static_cast<std::int32_t>(t));
  }
  s.output_grad = g.output >= 0 && g.tensors[static_cast<std::size_t>(g.output)].requires_grad;
  for (const auto& op : g.ops) s.scratch_blocks = std::max(s.scratch_blocks, static_cast<std::int32_t>(scratch_blocks(op).size()));
  std::int32_t park = 2 * s.tensors + 1 + s.scratch_blocks;
  if (ckpt.keep_output_grad && s.output_grad) s.kept_output_grad = park++;
  if (ckpt.retains_moe_input && moe_checkpoint_input(g) >= 0) s.retained_input = park;  // and park + 1, its gradient
  Writer w{g, lt, s, nullptr, s.tensors, {}, {}};
  write_forward(w);
  write_backward(w, ckpt);
  return s;
}

ScriptExcess script_excess(const ModuleScript& s, const LayerGraph& g) {
  std::vector<std::int64_t> live_bytes(static_cast<std::size_t>(s.slots()), 0);
  const auto run = [&](const std::vector<ModuleScript::Step>& steps) {
    std::int64_t live = 0, peak = 0;
    for (std::size_t k = 0; k < live_bytes.size(); ++k) live += live_bytes[k];
    const std::int64_t start = live;
    peak = live;
    for (const auto& st : steps) {
      if (st.kind == Kind::workspaces) continue;  // outside the module's own bytes
      auto& b = live_bytes[static_cast<std::size_t>(st.slot)];
      if (st.kind == Kind::alloc) {
        live += st.bytes - b;  // a slot holds one block; a second alloc replaces the first in this count
        b = st.bytes;
        peak = std::max(peak, live);
      } else if (st.kind == Kind::free) {
        live -= b;
        b = 0;
      } else {
        auto& f = live_bytes[static_cast<std::size_t>(st.from)];
        live -= b;
        b = f;
        f = 0;
      }
    }
    return Bytes{peak - start};
  };
  for (const std::int32_t t : s.inputs) live_bytes[static_cast<std::size_t>(t)] = g.tensors[static_cast<std::size_t>(t)].bytes.value;
  ScriptExcess e;
  e.forward = run(s.forward);
  std::fill(live_bytes.begin(), live_bytes.end(), 0);
  for (const std::int32_t t : s.held) live_bytes[static_cast<std::size_t>(t)] = g.tensors[static_cast<std::size_t>(t)].bytes.value;
  if (s.output_grad) live_bytes[static_cast<std::size_t>(s.grad(s.output))] = g.tensors[static_cast<std::size_t>(s.output)].bytes.value;
  e.backward = run(s.backward);
  return e;
}

std::string slot_name(const ModuleScript& s, std::int32_t slot) {
  const std::int32_t n = s.tensors;
  const auto name = [&](std::int32_t t) { return s.graph ? s.graph->tensors[static_cast<std::size_t>(t)].name : "tensor " + std::to_string(t); };
  if (slot < n) return name(slot);
  if (slot < 2 * n) return "grad " + name(slot - n);
  if (slot == 2 * n) return "scratch";
  if (slot == 2 * n + 1) return "grad sum";
  if (slot == s.kept_output_grad) return "grad " + name(s.output) + " (the caller's)";
  if (s.retained_input >= 0 && slot == s.retained_input) return name(moe_checkpoint_input(*s.graph)) + " (retained)";
  if (s.retained_input >= 0 && slot == s.retained_input + 1) return "grad " + name(moe_checkpoint_input(*s.graph)) + " (retained)";
  return "scratch " + std::to_string(slot - 2 * n - 1);
}

}  // namespace peakcast::sim::detail
