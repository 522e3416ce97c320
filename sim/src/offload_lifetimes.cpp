// Fine-grained activation offloading in one module's lifetimes (docs/research/fine-grained-offloading-memory-facts.md):
// which saves go to the host at their group's commit, which GPU tensors that frees, and the reloads its backward gets.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "lifetimes.hpp"

namespace peakcast::sim {

const char* offload_group_name(std::uint32_t group) {
  switch (group) {
    case kOffAttnNorm: return "attn_norm";
    case kOffQkvLinear: return "qkv_linear";
    case kOffCoreAttn: return "core_attn";
    case kOffAttnProj: return "attn_proj";
    case kOffMlpNorm: return "mlp_norm";
    case kOffExpertFc1: return "expert_fc1";
    case kOffMoeAct: return "moe_act";
    default: return "";
  }
}

std::int64_t LayerGraph::elements(int t) const {
  const TensorNode& n = tensors.at(static_cast<std::size_t>(t));
  const std::int64_t per = n.element_bytes > 0 ? n.element_bytes : act_bytes;
  return per > 0 ? n.bytes.value / per : n.bytes.value;
}

std::vector<std::int64_t> OffloadContext::key() const {
  std::vector<std::int64_t> k{offloaded, prefetched, min_elements};
  for (const Event& e : events) {
    k.push_back(e.own);
    k.push_back(e.other.value);
  }
  return k;
}

namespace detail {

std::uint32_t started_offload_groups(const LayerGraph& g, const CheckpointSet& ckpt, std::uint32_t configured) {
  if (ckpt.whole_module) return 0;
  std::uint32_t out = 0;
  for (const auto& c : g.offload_commits) {
    if ((configured & c.group) == 0) continue;
    bool any = false, outside = false;
    for (const OpNode& op : g.ops) {
      if (op.offload_group != c.group) continue;
      any = true;
      if ((op.regions & ckpt.keep_inputs) == 0) outside = true;
    }
    if (any && outside) out |= c.group;
  }
  return out;
}

int offload_group_first_op(const LayerGraph& g, std::uint32_t group) {
  for (std::size_t i = 0; i < g.ops.size(); ++i)
    if (g.ops[i].offload_group == group) return static_cast<int>(i);
  return -1;
}

namespace {

// The span of the checkpoint region `bit` (lowest, highest op) and where its saved inputs are unpacked: a
// CheckpointWithoutOutput's recompute hook (random.py:800-812), else the region's backward entry (its last op).
struct RegionSpan {
  int first = -1, last = -1, unpack = -1;
};
RegionSpan region_span(const LayerGraph& g, const CheckpointSet& ckpt, std::uint32_t bit) {
  RegionSpan r;
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    if ((g.ops[i].regions & bit) == 0) continue;
    if (r.first < 0) r.first = static_cast<int>(i);
    r.last = static_cast<int>(i);
  }
  r.unpack = r.last;
  if ((ckpt.discard_output & bit) != 0)
    for (const auto& d : g.discards)
      if (d.region == bit) r.unpack = d.hook_op;
  return r;
}

// Every save call of the forward under `ckpt`, with the group whose hooks saw it: an op's own saves outside an
// active checkpoint, and a checkpoint's saved arguments (both checkpoint functions save every tensor argument,
// random.py:706-712) under the group of the op that reads them, once a region.
std::vector<Reload> save_calls(const LayerGraph& g, const CheckpointSet& ckpt) {
  const std::uint32_t no_grad = ckpt.keep_inputs | ckpt.discard_output;
  std::vector<Reload> out;
  std::vector<std::pair<std::uint32_t, int>> seen;  // (region bit, tensor) already saved by that checkpoint
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const OpNode& op = g.ops[i];
    const std::uint32_t active = op.regions & no_grad;
    if (active == 0) {
      for (int t : op.saves) out.push_back({t, op.offload_group, static_cast<int>(i), static_cast<int>(i)});
      continue;
    }
    const std::uint32_t outer = (active & ckpt.keep_inputs) != 0 ? active & ckpt.keep_inputs : active;
    const std::uint32_t bit = outer & (~outer + 1);
    const RegionSpan span = region_span(g, ckpt, bit);
    for (int t : op.inputs) {
      const TensorNode& tn = g.tensors[static_cast<std::size_t>(t)];
      if (tn.producer >= 0 && (g.ops[static_cast<std::size_t>(tn.producer)].regions & active) != 0) continue;
      if (std::find(seen.begin(), seen.end(), std::make_pair(bit, t)) != seen.end()) continue;
      seen.emplace_back(bit, t);
      out.push_back({t, op.offload_group, span.unpack, span.first});
    }
  }
  return out;
}

// Whether a save goes to the host: its group offloads in this instance and the tensor passes the manager's
// checker (at least min_offloaded_tensor_size elements, fine_grained_activation_offload.py:986-1000).
bool goes_to_host(const LayerGraph& g, const Reload& s, std::uint32_t groups, std::int64_t min_elements) {
  return (s.group & groups) != 0 && g.tensors[static_cast<std::size_t>(s.tensor)].bytes.value > 0 && g.elements(s.tensor) >= min_elements;
}

int commit_op(const LayerGraph& g, std::uint32_t group) {
  for (const auto& c : g.offload_commits)
    if (c.group == group) return c.op;
  return -1;
}

}  // namespace

Bytes offload_group_bytes(const LayerGraph& g, const CheckpointSet& ckpt, const OffloadContext& offload, std::uint32_t group) {
  const std::uint32_t groups = started_offload_groups(g, ckpt, offload.offloaded) & group;
  Bytes total{};
  for (const Reload& s : save_calls(g, ckpt))
    if (goes_to_host(g, s, groups, offload.min_elements)) total += g.tensors[static_cast<std::size_t>(s.tensor)].bytes;
  return total;
}

void apply_offload(const LayerGraph& g, const CheckpointSet& ckpt, const OffloadContext& offload, Lifetimes& lt) {
  const std::size_t nt = g.tensors.size();
  lt.offload_freed.assign(nt, false);
  const std::uint32_t groups = started_offload_groups(g, ckpt, offload.offloaded);
  if (groups == 0) return;
  std::vector<int> on_gpu(nt, 0), on_host(nt, 0);
  for (const Reload& s : save_calls(g, ckpt)) {
    const auto t = static_cast<std::size_t>(s.tensor);
    if (!goes_to_host(g, s, groups, offload.min_elements)) {
      ++on_gpu[t];
      continue;
    }
    ++on_host[t];
    lt.reloads.push_back(s);
    // The group holds the GPU tensor until its commit copies it out (bulk_offload_group, :1002-1026).
    lt.last_forward_use[t] = std::max(lt.last_forward_use[t], commit_op(g, s.group));
  }
  // A tensor every save of which went to the host is no longer referenced once the commits ran: its block goes
  // (record_stream'd on the copy's stream, :1015).
  for (std::size_t t = 0; t < nt; ++t) {
    if (on_host[t] == 0 || on_gpu[t] > 0 || !lt.held[t]) continue;
    lt.held[t] = false;
    lt.offload_freed[t] = true;
  }
  // forced_released_tensors: the storage goes at the commit whatever still references it (:1100-1106), when the
  // tensor passes the same checker; a tensor a save kept on the GPU is left alone (freeing it would break its backward).
  for (const auto& c : g.offload_commits) {
    if ((c.group & groups) == 0) continue;
    for (int f : c.forced_release) {
      const auto u = static_cast<std::size_t>(f);
      if (on_gpu[u] > 0 || g.tensors[u].bytes.value == 0 || g.elements(f) < offload.min_elements || f == g.output) continue;
      lt.held[u] = false;
      lt.last_forward_use[u] = std::max(c.op, on_host[u] > 0 ? lt.last_forward_use[u] : c.op);
      if (g.tensors[u].external) lt.input_released = true;
    }
  }
}

}  // namespace detail

}  // namespace peakcast::sim
