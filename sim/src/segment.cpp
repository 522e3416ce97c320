// Segments from module profiles: plain modules, full-recompute groups, and the byte counts that
// distributed checkpoints and TE's half-layer graph scopes change.
#include "segment.hpp"

#include <utility>

namespace peakcast::sim::detail {

const ModuleProfile& cached_profile(ProfileCache& cache, const LayerGraph& g, const CheckpointSet& ckpt,
                                    const OffloadContext* offload) {
  ProfileKey key{&g, ckpt, offload ? offload->key() : std::vector<std::int64_t>{}};
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(std::move(key), profile_module(g, ckpt, offload)).first;
  return it->second;
}

Segment plain_segment(ProfileCache& cache, const LayerGraph& g, const CheckpointSet& ckpt, int layer,
                      const OffloadContext* offload) {
  const ModuleProfile& p = cached_profile(cache, g, ckpt, offload);
  Segment s;
  s.name = g.name;
  s.layer = layer;
  s.input_bytes = p.input_bytes;
  s.output_bytes = p.output_bytes;
  s.input_held = p.input_held;
  s.input_released = p.input_released;
  s.held = p.held;
  s.held_tensors = &p.held_tensors;
  s.forward_peak_excess = p.forward_peak_excess;
  bool input_grad = false;
  for (const auto& t : g.tensors)
    if (t.external && t.requires_grad) input_grad = true;
  s.parts.push_back({p.held, p.backward_peak_excess, p.input_bytes, p.forward_peak_excess, input_grad});
  s.parts.back().graph = &g;
  s.parts.back().ckpt = ckpt;
  s.forward_work = p.forward_work;
  s.replay_work = p.replay_work;
  s.backward_flops = p.backward_flops;
  s.replay_flops = p.replay_flops;
  if (offload && offload->offloaded != 0) {
    const ModuleProfile& on_gpu = cached_profile(cache, g, ckpt, nullptr);
    if (on_gpu.held != p.held) s.offload_kept = Segment::OnGpu{on_gpu.held, on_gpu.forward_peak_excess, on_gpu.backward_peak_excess, on_gpu.input_held};
  }
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
  // CheckpointFunction.backward (random.py:629-664) holds the group's output gradient (`args`) and the replay's
  // output (`outputs`) until torch.autograd.backward returns: the last layer runs with its output gradient kept.
  CheckpointSet last{};
  last.keep_output_grad = true;
  for (std::size_t k = 0; k < graphs.size(); ++k) {
    const LayerGraph* g = graphs[k];  // layers of one shape share a graph: the last is known by its place
    const CheckpointSet& ckpt = k + 1 == graphs.size() ? last : none;
    const ModuleProfile& p = cached_profile(cache, *g, ckpt);
    const ModuleProfile& q = cached_profile(cache, *g, whole);  // no-grad forward: transient only
    s.parts.push_back({p.held, p.backward_peak_excess, p.input_bytes, q.forward_peak_excess, true});
    s.parts.back().graph = g;
    s.parts.back().ckpt = ckpt;
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

// The FFN half runs from the pre-MLP norm on (the graphed _forward_mlp, transformer_layer.py:1170-1181),
// the attention half before it, without the layer input (the graph's static input buffer).
Bytes captured_half_bytes(const std::vector<ModuleProfile::HeldTensor>& held, bool ffn_half) {
  // Held tensors are named "<layer>.<tensor>".
  const auto local = [](const std::string& name) { return name.substr(name.find('.') + 1); };
  std::size_t split = held.size();
  for (std::size_t i = 0; i < held.size(); ++i)
    if (local(held[i].name).rfind("pre_mlp_layernorm", 0) == 0) {
      split = i;
      break;
    }
  Bytes sum{};
  for (std::size_t i = 0; i < held.size(); ++i) {
    const bool in_ffn = i >= split;
    if (in_ffn == ffn_half && local(held[i].name) != "input") sum += held[i].bytes;
  }
  return sum;
}

}  // namespace peakcast::sim::detail
