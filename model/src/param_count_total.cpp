// Whole-model parameter count: the same tensor lists as the per-rank count, unsharded, each
// shared weight counted once.
#include "layer_plan_internal.hpp"
#include "param_count.hpp"
#include "peakcast/model/static_memory.hpp"

namespace peakcast::model {

namespace {
const detail::Sharding kUnsharded{};
}

std::int64_t total_parameters(const RunSpec& spec, const Derived& d, bool include_mtp) {
  const ModelSpec& m = spec.model;
  const detail::LayerKinds kinds = detail::layer_kinds(m);
  std::int64_t total = detail::sum_numel(detail::embedding_params(m, d, kUnsharded, false));
  if (!m.share_embeddings_and_output_weights) total += detail::sum_numel(detail::output_layer_params(m, d, kUnsharded));
  for (const auto& layer : kinds.decoder) total += detail::sum_numel(detail::layer_params(layer, m, d, kUnsharded));
  total += detail::sum_numel(detail::final_norm_params(m, "decoder.final_layernorm"));
  if (m.architecture == Architecture::t5) total += detail::sum_numel(detail::final_norm_params(m, "encoder.final_layernorm"));
  total += detail::sum_numel(detail::bert_lm_head_params(m)) + detail::sum_numel(detail::params_after_output_weight(m, d, kUnsharded));
  if (include_mtp) {
    const std::int64_t weight_depths = m.mtp_use_repeated_layer ? std::min<std::int64_t>(1, kinds.mtp_depths) : kinds.mtp_depths;
    for (std::int64_t depth = 0; depth < weight_depths; ++depth) {
      total += detail::sum_numel(detail::mtp_wrapper_params(m, kUnsharded));
      for (const auto& layer : kinds.mtp_block) total += detail::sum_numel(detail::layer_params(layer, m, d, kUnsharded));
      total += detail::sum_numel(detail::final_norm_params(m, "mtp.final_layernorm"));
    }
  }
  return total;
}

std::int64_t total_checkpointed_buffers(const RunSpec& spec, const Derived& d, bool include_mtp) {
  (void)d;
  const ModelSpec& m = spec.model;
  const detail::LayerKinds kinds = detail::layer_kinds(m);
  std::int64_t moe_layers = 0;
  for (const auto& layer : kinds.decoder) moe_layers += layer.ffn == FfnKind::moe ? 1 : 0;
  if (include_mtp) {
    const std::int64_t routers = m.mtp_use_repeated_layer ? std::min<std::int64_t>(1, kinds.mtp_depths) : kinds.mtp_depths;
    for (const auto& layer : kinds.mtp_block) moe_layers += layer.ffn == FfnKind::moe ? routers : 0;
  }
  return moe_layers * detail::router_checkpointed_buffer_numel_per_moe_layer(m);
}

}  // namespace peakcast::model
