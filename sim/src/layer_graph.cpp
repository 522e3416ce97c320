#include "peakcast/sim/layer_graph.hpp"

#include "lifetimes.hpp"

#include <algorithm>
#include <bit>
#include <stdexcept>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/topological_sort.hpp>

namespace peakcast::sim {

int LayerGraph::add_input(std::string tensor_name, Bytes bytes) {
  TensorNode t;
  t.name = std::move(tensor_name);
  t.bytes = bytes;
  t.external = true;
  tensors.push_back(std::move(t));
  return static_cast<int>(tensors.size()) - 1;
}

int LayerGraph::add_tensor(std::string tensor_name, Bytes bytes, bool requires_grad) {
  TensorNode t;
  t.name = std::move(tensor_name);
  t.bytes = bytes;
  t.requires_grad = requires_grad;
  tensors.push_back(std::move(t));
  return static_cast<int>(tensors.size()) - 1;
}

int LayerGraph::add_op(OpNode op) {
  const int index = static_cast<int>(ops.size());
  for (int t : op.outputs) tensors.at(t).producer = index;
  ops.push_back(std::move(op));
  return index;
}

namespace {

// Data-flow graph of the module: an edge per tensor from its producer to each consumer. Ops are
// added in program order; the topological sort checks that the order is a valid execution order.
using FlowGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;

void check_program_order(const LayerGraph& g) {
  FlowGraph flow(g.ops.size());
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    for (int t : g.ops[i].inputs) {
      const int p = g.tensors.at(t).producer;
      if (p >= 0) {
        if (p >= static_cast<int>(i)) throw std::logic_error(g.name + ": op " + g.ops[i].name + " reads a tensor produced later");
        boost::add_edge(static_cast<std::size_t>(p), i, flow);
      }
    }
  }
  std::vector<std::size_t> order;
  boost::topological_sort(flow, std::back_inserter(order));  // throws not_a_dag on a cycle
}

}  // namespace

namespace detail {

Lifetimes analyse(const LayerGraph& g, const CheckpointSet& ckpt, const OffloadContext* offload) {
  const std::size_t nt = g.tensors.size();
  Lifetimes lt{std::vector<int>(nt, -1), std::vector<int>(nt, -1), std::vector<bool>(nt, false), std::vector<bool>(nt, false), {}, {}, false};
  for (std::size_t t = 0; t < nt; ++t) lt.last_forward_use[t] = g.tensors[t].producer;
  const std::uint32_t no_grad_regions = ckpt.keep_inputs | ckpt.discard_output;
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const OpNode& op = g.ops[i];
    for (int t : op.inputs) lt.last_forward_use[t] = std::max(lt.last_forward_use[t], static_cast<int>(i));
    for (int t : op.keeps_alive) lt.last_forward_use[t] = std::max(lt.last_forward_use[t], static_cast<int>(i));
    const std::uint32_t active_here = ckpt.whole_module ? 0u : (op.regions & no_grad_regions);
    if (active_here != 0) {
      // Both checkpoint functions save every tensor argument (ctx.save_for_backward(*args),
      // random.py), whether or not an op inside would: whatever the region reads from outside
      // stays, e.g. a GQA core's K and the fused QKV output V is a view of, read only by
      // repeat_interleave.
      for (int t : op.inputs) {
        const TensorNode& tn = g.tensors[t];
        const bool produced_inside = tn.producer >= 0 && (g.ops[tn.producer].regions & active_here) != 0;
        if (!produced_inside) lt.held[t] = true;
      }
    }
    for (int t : op.saves) {
      if (lt.first_saver[t] < 0) lt.first_saver[t] = static_cast<int>(i);
      const TensorNode& tn = g.tensors[t];
      if (ckpt.whole_module) {
        // Full recompute keeps only the module's inputs (the checkpoint's positional arguments).
        if (tn.external) lt.held[t] = true;
        else lt.replayed[t] = true;
        continue;
      }
      const std::uint32_t active = op.regions & no_grad_regions;
      if (active == 0) {
        lt.held[t] = true;
        continue;
      }
      // Inside a checkpoint the op runs under no_grad; the checkpoint keeps the region's inputs.
      const bool produced_inside = tn.producer >= 0 && (g.ops[tn.producer].regions & active) != 0;
      if (produced_inside) lt.replayed[t] = true;
      else lt.held[t] = true;
    }
  }
  if (ckpt.whole_module) {
    for (std::size_t t = 0; t < nt; ++t)
      if (g.tensors[t].external) lt.held[t] = true;
  }
  for (std::size_t t = 0; t < nt; ++t) {
    if (!g.tensors[t].escapes || g.ops.empty()) continue;
    lt.last_forward_use[t] = static_cast<int>(g.ops.size()) - 1;
    if (ckpt.whole_module) lt.held[t] = true;
  }
  for (const auto& d : g.discards) {
    if ((ckpt.discard_output & d.region) == 0 || ckpt.whole_module) continue;
    for (int t : d.tensors) {
      lt.held[t] = false;
      lt.replayed[t] = true;
    }
  }
  if (offload) apply_offload(g, ckpt, *offload, lt);
  else lt.offload_freed.assign(nt, false);
  return lt;
}

int moe_checkpoint_input(const LayerGraph& g) {
  int best = -1;
  for (const auto& op : g.ops) {
    if (!in_region(op, kMoe)) continue;
    for (const int t : op.inputs) {
      const TensorNode& tn = g.tensors[static_cast<std::size_t>(t)];
      if (tn.producer >= 0 && in_region(g.ops[static_cast<std::size_t>(tn.producer)], kMoe)) continue;
      if (best < 0 || tn.bytes > g.tensors[static_cast<std::size_t>(best)].bytes) best = t;
    }
  }
  return best;
}

std::uint32_t active_keep_region(const OpNode& op, const CheckpointSet& ckpt) {
  return op.regions & ckpt.keep_inputs;
}

}  // namespace detail

namespace {

using detail::active_keep_region;
using detail::analyse;
using detail::in_region;
using detail::Lifetimes;

struct Simulation {
  ModuleProfile profile;
  std::vector<OpEvent> events;
};

// What one op adds to a pass's work counters (the time model's classes).
void add_work(const OpNode& op, ModuleProfile::Work& w) {
  if (op.is_gemm) {
    w.gemm_flops += op.forward_flops;
    w.gemm_backward_flops += op.backward_flops;
  } else if (op.is_fused_attention) {
    w.fused_attention_flops += op.forward_flops;
    w.fused_attention_calls += 1;
  } else if (op.is_attention_core) w.attention_flops += op.forward_flops;
  else if (op.is_movement) {
    w.other_flops += op.forward_flops;
    w.movement_bytes += op.forward_bytes_moved;
  } else {
    w.other_flops += op.forward_flops;
    w.other_bytes += op.forward_bytes_moved;
  }
  w.host_calls += op.host_calls;
  if (op.host_sync) w.host_syncs += 1;
  w.comm_bytes += op.comm_bytes;
  w.backward_comm_bytes += op.backward_comm_bytes;
}

// The forward pass: outputs allocated in program order, tensors freed after their last forward use
// unless held for backward; the peak above the inputs, the held set, FLOPs and replay work.
void forward_pass(const LayerGraph& g, const Lifetimes& lt, const CheckpointSet& ckpt, bool trace, Simulation& sim) {
  const std::size_t nt = g.tensors.size();
  ModuleProfile& p = sim.profile;
  std::vector<bool> alive(nt, false);
  std::int64_t live = 0;
  for (std::size_t t = 0; t < nt; ++t) {
    if (g.tensors[t].external) {
      alive[t] = true;
      live += g.tensors[t].bytes.value;
      p.input_bytes += g.tensors[t].bytes;
    }
  }
  const std::int64_t forward_start = live;
  std::int64_t peak = live;
  const std::uint32_t recompute_regions = ckpt.keep_inputs | ckpt.discard_output;
  std::uint32_t regions_seen = 0;
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const OpNode& op = g.ops[i];
    for (int t : op.outputs)
      if (!alive[t]) {
        alive[t] = true;
        live += g.tensors[t].bytes.value;
      }
    peak = std::max(peak, live + op.forward_workspace.value);
    p.forward_flops += op.forward_flops;
    p.backward_flops += op.backward_flops;
    p.forward_bytes_moved += op.forward_bytes_moved;
    add_work(op, p.forward_work);
    regions_seen |= op.regions & recompute_regions;
    if (ckpt.whole_module || in_region(op, recompute_regions)) {
      p.replay_flops += op.forward_flops;
      p.replay_bytes_moved += op.forward_bytes_moved;
      add_work(op, p.replay_work);
    }
    for (std::size_t t = 0; t < nt; ++t) {
      if (!alive[t] || lt.held[t] || static_cast<int>(t) == g.output) continue;
      if (lt.last_forward_use[t] == static_cast<int>(i)) {
        alive[t] = false;
        live -= g.tensors[t].bytes.value;
      }
    }
    if (trace) sim.events.push_back({op.name, false, Bytes{live - forward_start}});
  }
  // One checkpoint call per active region of the module (each region is one wrapper in Megatron's
  // code; the two layernorms are two regions), one for a fully recomputed module.
  p.replay_work.checkpoint_regions = ckpt.whole_module ? 1.0 : static_cast<double>(std::popcount(regions_seen));
  p.forward_peak_excess = Bytes{peak - forward_start};
  for (std::size_t t = 0; t < nt; ++t) {
    if (lt.held[t]) {
      p.held += g.tensors[t].bytes;
      p.held_tensors.push_back({g.tensors[t].name, g.tensors[t].bytes});
    }
    // A stand-in of no bytes for a tensor another module holds (T5's encoder output) is not this module's input.
    if (g.tensors[t].external && lt.held[t] && g.tensors[t].bytes.value > 0) p.input_held = true;
  }
  if (g.output >= 0) p.output_bytes = g.tensors[g.output].bytes;
  p.input_released = lt.input_released;
}

// The backward pass over the ops in reverse: live at its start are the held tensors and the output's
// gradient; checkpointed regions replay on entry, discarded outputs come back at their hook, each op
// allocates its inputs' gradients, and saved tensors go once their last saver has run.
class BackwardPass {
 public:
  BackwardPass(const LayerGraph& g, const Lifetimes& lt, const CheckpointSet& ckpt, const OffloadContext* offload, Simulation& sim)
      : g_(g), lt_(lt), ckpt_(ckpt), offload_(offload), sim_(sim), nt_(g.tensors.size()), alive_(nt_, false), grad_alive_(nt_, false), grad_bytes_(nt_, 0), reload_(lt.reloads.size(), 0) {}

  void run(bool trace) {
    for (std::size_t t = 0; t < nt_; ++t)
      if (lt_.held[t]) {
        alive_[t] = true;
        live_ += g_.tensors[t].bytes.value;
      }
    if (g_.output >= 0 && g_.tensors[g_.output].requires_grad) {
      grad_alive_[g_.output] = true;
      grad_bytes_[g_.output] = g_.tensors[g_.output].gradient_bytes().value;
      live_ += grad_bytes_[g_.output];
      if (ckpt_.keep_output_grad) pinned_.push_back(g_.output);
    }
    if (ckpt_.retains_moe_input) retained_ = detail::moe_checkpoint_input(g_);
    for (std::size_t r = 0; r < reload_.size(); ++r) {  // reloaded ahead of this backward
      if (offload_ == nullptr || (offload_->prefetched & lt_.reloads[r].group) == 0) continue;
      take_reload(r);
      sim_.profile.reload_prefetched += reload_bytes(r);
    }
    const std::int64_t backward_start = live_;
    peak_ = live_;
    if (ckpt_.whole_module && !g_.ops.empty()) replay([](const OpNode&) { return true; });
    for (int i = static_cast<int>(g_.ops.size()) - 1; i >= 0; --i) {
      const OpNode& op = g_.ops[i];
      reload_on_demand(i);
      if (!ckpt_.whole_module) rematerialise_before(op, i);
      op_backward(op);
      release_after(i);
      reload_events_after(i);
      if (trace) sim_.events.push_back({op.name, true, Bytes{live_ - backward_start}});
    }
    sim_.profile.backward_peak_excess = Bytes{peak_ - backward_start};
  }

 private:
  // Re-materialise the tensors a checkpoint dropped, replaying the region's forward with saving on.
  template <typename InRegion>
  void replay(InRegion&& op_in_region) {
    std::int64_t replay_live = 0, replay_peak = 0, rematerialised = 0;
    std::vector<bool> tmp(nt_, false);
    int last = -1;
    for (std::size_t i = 0; i < g_.ops.size(); ++i)
      if (op_in_region(g_.ops[i])) last = static_cast<int>(i);
    for (std::size_t i = 0; i < g_.ops.size(); ++i) {
      const OpNode& op = g_.ops[i];
      if (!op_in_region(op)) continue;
      for (int t : op.outputs)
        if (!alive_[t] && !tmp[t]) {
          tmp[t] = true;
          replay_live += g_.tensors[t].bytes.value;
        }
      replay_peak = std::max(replay_peak, replay_live + op.forward_workspace.value);
      for (std::size_t t = 0; t < nt_; ++t) {
        if (!tmp[t]) continue;
        const bool needed = lt_.replayed[t] || g_.tensors[t].producer == last;
        if (!needed && lt_.last_forward_use[t] <= static_cast<int>(i)) {
          tmp[t] = false;
          replay_live -= g_.tensors[t].bytes.value;
        }
      }
    }
    for (std::size_t t = 0; t < nt_; ++t)
      if (tmp[t]) {
        alive_[t] = true;
        rematerialised += g_.tensors[t].bytes.value;
      }
    peak_ = std::max(peak_, live_ + replay_peak);
    live_ += rematerialised;
    sim_.profile.replay_bytes = max(sim_.profile.replay_bytes, Bytes{rematerialised});
  }

  // Entering a region's backward (its last forward op) replays the whole region once; a discarded
  // output comes back at its hook op.
  void rematerialise_before(const OpNode& op, int i) {
    const std::uint32_t region = active_keep_region(op, ckpt_);
    for (std::uint32_t bit = 1; bit != 0 && bit <= region; bit <<= 1) {
      if ((region & bit) == 0 || (replayed_regions_ & bit) != 0) continue;
      replayed_regions_ |= bit;
      replay([bit](const OpNode& o) { return (o.regions & bit) != 0; });
    }
    for (const auto& d : g_.discards) {
      if ((ckpt_.discard_output & d.region) == 0 || d.hook_op != i) continue;
      std::int64_t back = 0;
      for (int t : d.tensors)
        if (!alive_[t]) {
          alive_[t] = true;
          back += g_.tensors[t].bytes.value;
        }
      live_ += back;
      peak_ = std::max(peak_, live_);
      sim_.profile.replay_bytes = max(sim_.profile.replay_bytes, Bytes{back});
    }
  }

  // The op's backward: gradients of its inputs plus scratch. A pass-through op (view, residual
  // add) hands its output gradient to its inputs without copying; a second contribution to an
  // existing gradient allocates the sum before the old partial gradient is released.
  void op_backward(const OpNode& op) {
    std::int64_t new_grads = 0, accumulate = 0;
    std::int64_t handed_over = 0;
    int handed_from = -1, handed_to = -1, summed_pinned = -1;
    for (int o : op.outputs)
      if (grad_alive_[o]) {
        handed_over += grad_bytes_[o];
        if (handed_from < 0) handed_from = o;
      }
    bool handed = false;
    for (int t : op.inputs) {
      if (!g_.tensors[t].requires_grad) continue;
      const std::int64_t b = g_.tensors[t].gradient_bytes().value;
      if (grad_alive_[t]) {
        accumulate = std::max(accumulate, b);
        if (grad_bytes_[t] == 0) {
          grad_bytes_[t] = b;
          new_grads += b;
        }  // an alias becomes a real sum
        if (pinned(t)) summed_pinned = t;
      } else if (op.grad_passthrough) {
        grad_alive_[t] = true;
        grad_bytes_[t] = handed ? 0 : std::min(b, handed_over);
        if (!handed) handed_to = t;
        handed = true;
        if (t == retained_ && grad_bytes_[t] > 0) pinned_.push_back(t);
      } else {
        grad_alive_[t] = true;
        grad_bytes_[t] = b;
        new_grads += b;
        if (t == retained_) pinned_.push_back(t);  // the detached input's .grad from its first block on
      }
    }
    const std::int64_t ws = op.backward_workspace.value;
    if (op.backward_scratch_first) peak_ = std::max(peak_, live_ + ws);
    peak_ = std::max(peak_, live_ + new_grads + accumulate + (op.backward_scratch_first ? 0 : ws));
    live_ += new_grads;
    // keep_output_grad: a sum into the caller's block is a new block beside it (module_script.cpp's Writer).
    if (summed_pinned >= 0) {
      live_ += grad_bytes_[summed_pinned];
      unpin(summed_pinned);
    }
    for (int o : op.outputs) {
      if (!grad_alive_[o]) continue;
      grad_alive_[o] = false;
      // Bytes handed to an input by a pass-through stay allocated under the input's name.
      if (op.grad_passthrough && handed) {
        if (pinned(o)) {
          unpin(o);
          if (o == handed_from) pinned_.push_back(handed_to);
        }
      } else if (pinned(o)) {
        unpin(o);  // the caller's (or the dispatcher's) block stays allocated
      } else {
        live_ -= grad_bytes_[o];
      }
      grad_bytes_[o] = 0;
    }
  }

  // Released once no saver still needs it: savers run their backward in reverse order, so the
  // smallest saving op is the last one to need it. Replayed outputs nobody saves die with their producer.
  void release_after(int i) {
    for (std::size_t t = 0; t < nt_; ++t) {
      if (!alive_[t] || static_cast<int>(t) == retained_) continue;
      const bool done = lt_.first_saver[t] >= i || (lt_.first_saver[t] < 0 && g_.tensors[t].producer >= i);
      if (done) {
        alive_[t] = false;
        live_ -= g_.tensors[t].bytes.value;
      }
    }
  }

  // Fine-grained offloading: reload r's GPU tensor appears (state 1) ahead of its backward, at an event, or when
  // autograd unpacks it (tensor_pop's synchronous reload, fine_grained_activation_offload.py:980-982); it goes
  // after its last use (state 2).
  Bytes reload_bytes(std::size_t r) const { return g_.tensors[static_cast<std::size_t>(lt_.reloads[r].tensor)].bytes; }
  void take_reload(std::size_t r) {
    reload_[r] = 1;
    live_ += reload_bytes(r).value;
    peak_ = std::max(peak_, live_);
  }
  void reload_on_demand(int i) {
    for (std::size_t r = 0; r < reload_.size(); ++r)
      if (reload_[r] == 0 && lt_.reloads[r].first_use == i) take_reload(r);
  }
  // After op i's backward: reloads whose last use it was go; a group whose first op it is ends its backward,
  // and the manager reloads what the plan says (bulk_reload, :1131-1146).
  void reload_events_after(int i) {
    for (std::size_t r = 0; r < reload_.size(); ++r)
      if (reload_[r] == 1 && lt_.reloads[r].last_use == i) {
        reload_[r] = 2;
        live_ -= reload_bytes(r).value;
      }
    if (offload_ == nullptr) return;
    for (int k = 0; k < kOffloadGroupCount; ++k) {
      const auto& ev = offload_->events[static_cast<std::size_t>(k)];
      if ((ev.own == 0 && ev.other.value == 0) || detail::offload_group_first_op(g_, 1u << k) != i) continue;
      for (std::size_t r = 0; r < reload_.size(); ++r)
        if (reload_[r] == 0 && (lt_.reloads[r].group & ev.own) != 0) take_reload(r);
      live_ += ev.other.value;
      sim_.profile.reload_other += ev.other;
      peak_ = std::max(peak_, live_);
    }
  }

  const LayerGraph& g_;
  const Lifetimes& lt_;
  const CheckpointSet& ckpt_;
  const OffloadContext* offload_;
  Simulation& sim_;
  std::size_t nt_;
  std::vector<bool> alive_, grad_alive_;
  std::vector<std::int64_t> grad_bytes_;
  std::vector<std::uint8_t> reload_;
  std::int64_t live_ = 0, peak_ = 0;
  // Tensors whose gradient block the module never frees: the caller's (keep_output_grad), the retained checkpoint
  // input's (retains_moe_input); and that input itself, whose value the module never frees either.
  std::vector<int> pinned_;
  int retained_ = -1;
  bool pinned(int t) const { return std::find(pinned_.begin(), pinned_.end(), t) != pinned_.end(); }
  void unpin(int t) { pinned_.erase(std::find(pinned_.begin(), pinned_.end(), t)); }
  std::uint32_t replayed_regions_ = 0;
};

Simulation simulate(const LayerGraph& g, const CheckpointSet& ckpt, const OffloadContext* offload, bool trace) {
  check_program_order(g);
  const Lifetimes lt = analyse(g, ckpt, offload);
  Simulation sim;
  forward_pass(g, lt, ckpt, trace, sim);
  BackwardPass(g, lt, ckpt, offload, sim).run(trace);
  return sim;
}

}  // namespace

ModuleProfile profile_module(const LayerGraph& g, const CheckpointSet& ckpt, const OffloadContext* offload) {
  return simulate(g, ckpt, offload, false).profile;
}

std::vector<OpEvent> trace_module(const LayerGraph& g, const CheckpointSet& ckpt, const OffloadContext* offload) {
  return simulate(g, ckpt, offload, true).events;
}

}  // namespace peakcast::sim
