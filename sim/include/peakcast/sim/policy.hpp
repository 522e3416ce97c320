#pragma once
// A recompute policy as graph transforms: which checkpoint regions each layer of a model chunk
// runs under, following Megatron's selective tags and full uniform/block counting per chunk.
#include <cstdint>
#include <vector>

#include "peakcast/model/layer_plan.hpp"
#include "peakcast/model/run_spec.hpp"
#include "peakcast/sim/layer_graph.hpp"

namespace peakcast::sim {

// Checkpoint set of every layer of one model chunk, in layer order. Full recompute groups are
// expressed per layer: a layer of a uniform group of n keeps only the group input when it is the
// group's first layer and nothing when it is not (its input is produced inside the group).
struct ChunkPolicy {
  std::vector<CheckpointSet> layers;
  std::vector<int> group_of_layer;  // full uniform: group index per layer; -1 when not grouped
};

// How CUDA-graph capture changes a captured layer's checkpoints:
//   none:    eager iterations before a Transformer Engine capture, every checkpoint works as usual;
//   capture: tensor_parallel.checkpoint runs plain inside the capture (random.py:677), as in the whole
//            first iteration of Megatron's local graphs, which ends in the capture;
//   warmup:  the warm-up runs before each capture also run CheckpointWithoutOutput plain
//            (random.py:759, :846): what the graph pool and the cache beside it must hold once.
enum class GraphBypass { none,
                         capture,
                         warmup };
ChunkPolicy chunk_policy(const model::RunSpec& spec, const model::Derived& d, const model::ModelChunk& chunk,
                         GraphBypass bypass = GraphBypass::capture);

// Whether CUDA-graph capture bypasses checkpoints for this layer kind (random.py:677): the
// captured region keeps all its activations.
std::uint32_t regions_bypassed_by_cuda_graphs(const model::RunSpec& spec, const model::LayerSpec& layer);

// Whether a per-layer CUDA graph (cuda_graph_impl local or transformer_engine) captures this layer's
// saved activations: whole layers when no scope is named, else the layers the scopes name. Megatron's
// local manager graphs the whole layer once a scope names a submodule it has
// (transformer_layer.py:527-554; measured: the attn scope holds what the whole-layer scope holds).
bool layer_captured_by_cuda_graphs(const model::RunSpec& spec, const model::LayerSpec& layer);

// What of a layer a per-layer CUDA graph captures. Transformer Engine graphs a scoped part of a
// standard layer only (transformer_layer.py:1138-1193): the attention half (attn) or the MLP / MoE
// half (mlp, moe) runs eagerly beside the graph.
enum class GraphCapture { none,
                          whole,
                          mixer,
                          ffn };
GraphCapture graph_capture(const model::RunSpec& spec, const model::LayerSpec& layer);

}  // namespace peakcast::sim
