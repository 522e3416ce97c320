#pragma once
// Which decoder layers exist, what each holds, and which pipeline rank / virtual chunk owns it.
#include <cstdint>
#include <vector>

#include "peakcast/model/run_spec.hpp"

namespace peakcast::model {

enum class MixerKind { none,
                       attention,
                       mla,
                       dsa,  // DeepSeek sparse attention: absorbed MLA + indexer (docs/research/dsa-memory-facts.md)
                       mamba,
                       gdn };  // token mixer of a layer
enum class FfnKind { none,
                     dense,
                     moe };

struct LayerSpec {
  std::int64_t index = 0;  // global decoder layer index (MTP layers follow the decoder)
  MixerKind mixer = MixerKind::attention;
  FfnKind ffn = FfnKind::dense;
  bool is_mtp = false;
  // T5 (t5_spec.py): an encoder layer (bidirectional self-attention over the encoder's sequence), or a decoder
  // layer whose causal self-attention is followed by cross-attention over the encoder's output.
  bool t5_encoder = false;
  bool cross_attention = false;
  // Runs outside FP8 with BF16 weights although the model trains in FP8: one of the first / last
  // decoder layers under first_last_layers_bf16 (fp8_utils.py is_first_last_bf16_layer).
  bool high_precision = false;
};

struct ModelChunk {
  std::int64_t vpp_index = 0;  // virtual stage index on its pipeline rank
  std::vector<LayerSpec> layers;
  bool has_embedding = false;     // first chunk of pipeline rank 0
  bool has_output_layer = false;  // last chunk of the last pipeline rank (final norm, head, loss)
  std::int64_t mtp_layers = 0;    // MTP blocks in this chunk (they sit with the output layer)
  // Decoder final layernorm: with the output layer, or, when MTP is on, with the last decoder
  // layer (transformer_block.py:387-413).
  bool has_final_norm = false;
};

struct PipelineStage {
  std::int64_t pp_rank = 0;
  std::vector<ModelChunk> chunks;  // one per virtual stage, in vpp order
};

struct LayerPlan {
  std::vector<LayerSpec> decoder_layers;  // all decoder layers, in order
  std::vector<PipelineStage> stages;      // one per pipeline rank
};

// Follows Megatron: hybrid patterns (one layer per character), moe_layer_freq, uneven first/last
// stages, pipeline_model_parallel_layout, VPP. Assumes a validated spec.
LayerPlan build_layer_plan(const RunSpec& spec, const Derived& d);

}  // namespace peakcast::model
