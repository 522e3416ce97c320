// The parameters one rank registers for one model chunk, sharded by TP / EP / ETP.
#include <map>
#include <tuple>
#include <utility>

#include "peakcast/model/dsa.hpp"
#include "static_memory_internal.hpp"

namespace peakcast::model::detail {

ChunkParams chunk_params(const ModelChunk& chunk, const RunSpec& spec, const Derived& d) {
  const ModelSpec& m = spec.model;
  const Sharding s{d.tp, d.ep, d.etp};
  const bool tied = m.share_embeddings_and_output_weights;
  const bool has_mtp = chunk.mtp_layers > 0;
  ChunkParams out;
  // PEFT freezes every parameter the model builds (peft/base.py:176-193), then adds the adapters.
  const auto frozen = [&spec](ParamList list) {
    if (spec.peft.enabled)
      for (auto& t : list) t.frozen = true;
    return list;
  };
  auto append = [&out, &frozen](ParamList more) {
    const ParamList& kept = out.storage.emplace_back(frozen(std::move(more)));
    for (const auto& t : kept) {
      out.tensors.push_back(&t);
      out.layer_of.push_back(-1);
    }
  };
  std::int32_t next_layer = 0;
  // A layer's tensors depend only on its mixer and FFN kind (names carry no layer index), so
  // layers of one kind share one list instead of building thousands of identical tensors.
  // A BF16 edge layer (first_last_layers_bf16) has the same tensors, none of them FP8-quantised. A DSA layer
  // that reuses another's top-k has no indexer (dsa.py:1580-1584).
  std::map<std::tuple<MixerKind, FfnKind, bool, bool, bool>, const ParamList*> by_kind;
  auto append_layer = [&](const LayerSpec& layer) {
    const ParamList*& list = by_kind[{layer.mixer, layer.ffn, layer.high_precision, layer.cross_attention, dsa_computes_topk(m, layer)}];
    if (list == nullptr) {
      ParamList params = frozen(layer_params(layer, m, d, s));
      if (layer.high_precision)
        for (auto& t : params) t.gemm_weight = false;
      if (spec.peft.enabled) {
        ParamList adapters = lora_adapters(params, spec.peft, s, m.moe_grouped_gemm);
        params.insert(params.end(), adapters.begin(), adapters.end());
      }
      list = &out.storage.emplace_back(std::move(params));
    }
    for (const auto& t : *list) {
      out.tensors.push_back(&t);
      out.layer_of.push_back(next_layer);
    }
    ++next_layer;
  };

  // The embedding lives on the pre-process chunk; an MTP chunk without it keeps a duplicate
  // (gpt_model.py:167-175). With PP > 1 and tied weights or MTP, the first-stage copy is marked
  // shared_embedding and gets its own DDP bucket (language_module.py:258-276).
  if (chunk.has_embedding) {
    const bool shared = (tied || m.mtp_num_layers > 0) && d.pp > 1 && !chunk.has_output_layer;
    append(embedding_params(m, d, s, shared));
  } else if (has_mtp) {
    append(embedding_params(m, d, s, false));
  }
  for (std::size_t i = 0; i < chunk.layers.size(); ++i) {
    const LayerSpec& layer = chunk.layers[i];
    if (!layer.is_mtp) append_layer(layer);
    // T5's encoder block ends in its own final norm, before the decoder's layers (t5_model.py:241-262).
    if (layer.t5_encoder && (i + 1 == chunk.layers.size() || !chunk.layers[i + 1].t5_encoder))
      append(final_norm_params(m, "encoder.final_layernorm"));
  }
  if (chunk.has_final_norm) append(final_norm_params(m, "decoder.final_layernorm"));
  // MTP depths: wrapper, inner layers, final norm each (multi_token_prediction.py:897-1053).
  std::size_t next_mtp = 0;
  std::vector<const LayerSpec*> mtp_layers;
  for (const auto& layer : chunk.layers)
    if (layer.is_mtp) mtp_layers.push_back(&layer);
  const std::size_t per_depth = chunk.mtp_layers > 0 ? mtp_layers.size() / static_cast<std::size_t>(chunk.mtp_layers) : 0;
  // mtp_use_repeated_layer: one MTP layer serves every depth, so its weights exist once.
  const std::int64_t weight_depths = m.mtp_use_repeated_layer ? std::min<std::int64_t>(1, chunk.mtp_layers) : chunk.mtp_layers;
  for (std::int64_t depth = 0; depth < weight_depths; ++depth) {
    append(mtp_wrapper_params(m, s));
    for (std::size_t i = 0; i < per_depth && next_mtp < mtp_layers.size(); ++i) {
      append_layer(*mtp_layers[next_mtp++]);
    }
    append(final_norm_params(m, "mtp.final_layernorm"));
  }
  // The output weight is skipped only when it is the embedding on this very chunk (PP = 1, tied);
  // otherwise the last stage allocates it, as a copy when tied (gpt_model.py:269-286).
  if (chunk.has_output_layer) {
    append(bert_lm_head_params(m));  // BERT's head registers before the output layer (bert_model.py:141-169)
    if (!(tied && chunk.has_embedding)) append(output_layer_params(m, d, s));
    append(params_after_output_weight(m, d, s));
  }
  return out;
}

}  // namespace peakcast::model::detail
