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

ChunkPolicy chunk_policy(const model::RunSpec& spec, const model::Derived& d, const model::ModelChunk& chunk);

// Whether CUDA-graph capture bypasses checkpoints for this layer kind (random.py:677): the
// captured region keeps all its activations.
std::uint32_t regions_bypassed_by_cuda_graphs(const model::RunSpec& spec, const model::LayerSpec& layer);

// Whether a per-layer CUDA graph (cuda_graph_impl local or transformer_engine) captures this layer's
// saved activations: whole layers when no scope is named, else the layers the scopes name.
bool layer_captured_by_cuda_graphs(const model::RunSpec& spec, const model::LayerSpec& layer);

}  // namespace peakcast::sim
