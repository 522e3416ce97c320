#pragma once
// Pieces of build_layer_plan: what each decoder layer is, and how many layers each virtual
// pipeline stage holds.
#include <cstdint>
#include <string>
#include <vector>

#include "peakcast/model/layer_plan.hpp"
#include "peakcast/model/run_spec.hpp"

namespace peakcast::model::detail {

// The model's layers before any pipeline split.
struct LayerKinds {
  std::vector<LayerSpec> decoder;
  std::vector<LayerSpec> mtp_block;  // inner layers of one MTP depth (is_mtp set, index unset)
  std::int64_t mtp_depths = 0;
  // Hybrid patterns with '|': layer count of each segment, segment k = vpp_chunk * PP + pp_rank.
  std::vector<std::int64_t> hybrid_segment_sizes;
};

LayerKinds layer_kinds(const ModelSpec& m);

// What one virtual stage (index = vpp_chunk * PP + pp_rank) holds.
struct VirtualStage {
  std::int64_t decoder_layers = 0;
  std::int64_t mtp_depths = 0;
  bool embedding = false;
  bool loss = false;  // output layer + loss
};

// One entry per virtual stage, in virtual-stage order; size is PP * VPP.
std::vector<VirtualStage> virtual_stages(const ModelSpec& m, const Derived& d, const LayerKinds& kinds);

// pipeline_model_parallel_layout text -> one string per virtual stage over {E, t, m, L}
// (pipeline_parallel_layer_layout.py:283-320: commas dropped, "(..)*n" then "x*n" unrolled).
std::vector<std::string> expand_pipeline_layout(const std::string& layout);

// What is wrong with the spec's pipeline_model_parallel_layout under Megatron's rules
// (pipeline_parallel_layer_layout.py __init__ and validate_layer_layout), or an empty string.
std::string pipeline_layout_problem(const ModelSpec& m);

}  // namespace peakcast::model::detail
