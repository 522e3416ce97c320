// build_layer_plan: decoder layers in order, then dealt to virtual stages (vpp_chunk * PP +
// pp_rank) in that order, which reproduces Megatron's layer offsets for even, uneven, VPP and
// layout splits (transformer_layer.py:57-210 get_transformer_layer_offset).
#include "peakcast/model/layer_plan.hpp"
#include "layer_plan_internal.hpp"

namespace peakcast::model {

LayerPlan build_layer_plan(const RunSpec& spec, const Derived& d) {
  const detail::LayerKinds kinds = detail::layer_kinds(spec.model);
  const std::vector<detail::VirtualStage> stages = detail::virtual_stages(spec.model, d, kinds);
  const std::int64_t pp = std::max<std::int64_t>(1, d.pp);
  const std::int64_t vpp = static_cast<std::int64_t>(stages.size()) / pp;

  LayerPlan plan;
  plan.decoder_layers = kinds.decoder;
  // Global decoder index below num_layers_at_start_in_bf16, or within num_layers_at_end_in_bf16 of
  // the end, runs in BF16 under FP8 (fp8_utils.py:713-729; MTP layers use the global FP8 context,
  // multi_token_prediction.py:1185-1188).
  const auto& m = spec.model;
  if (m.fp8 && m.first_last_layers_bf16) {
    const std::int64_t n = static_cast<std::int64_t>(plan.decoder_layers.size());
    for (auto& l : plan.decoder_layers) {
      l.high_precision = l.index < m.num_layers_at_start_in_bf16 || l.index >= n - m.num_layers_at_end_in_bf16;
    }
  }
  plan.stages.resize(static_cast<std::size_t>(pp));
  for (std::int64_t r = 0; r < pp; ++r) {
    plan.stages[static_cast<std::size_t>(r)].pp_rank = r;
    plan.stages[static_cast<std::size_t>(r)].chunks.resize(static_cast<std::size_t>(vpp));
  }

  const auto num_decoder = static_cast<std::int64_t>(kinds.decoder.size());
  std::int64_t next_layer = 0;
  std::int64_t next_mtp_index = num_decoder;
  for (std::int64_t s = 0; s < static_cast<std::int64_t>(stages.size()); ++s) {
    const auto& vs = stages[static_cast<std::size_t>(s)];
    const std::int64_t r = s % pp;
    const std::int64_t v = s / pp;
    ModelChunk& chunk = plan.stages[static_cast<std::size_t>(r)].chunks[static_cast<std::size_t>(v)];
    chunk.vpp_index = v;
    chunk.has_embedding = vs.embedding;
    chunk.has_output_layer = vs.loss;
    for (std::int64_t i = 0; i < vs.decoder_layers && next_layer < num_decoder; ++i) {
      chunk.layers.push_back(plan.decoder_layers[static_cast<std::size_t>(next_layer++)]);
    }
    // With MTP the final layernorm moves to the chunk holding the last decoder layer
    // (transformer_block.py:387-413); otherwise it sits with the output layer.
    if (kinds.mtp_depths > 0) {
      chunk.has_final_norm = !chunk.layers.empty() && chunk.layers.back().index == num_decoder - 1;
    } else {
      chunk.has_final_norm = vs.loss;
    }
    chunk.mtp_layers = vs.mtp_depths;
    for (std::int64_t depth = 0; depth < vs.mtp_depths; ++depth) {
      for (LayerSpec l : kinds.mtp_block) {
        l.index = next_mtp_index++;
        chunk.layers.push_back(l);
      }
    }
  }
  return plan;
}

}  // namespace peakcast::model
