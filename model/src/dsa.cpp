// DeepSeek sparse attention helpers (peakcast/model/dsa.hpp).
#include "peakcast/model/dsa.hpp"

#include <algorithm>
#include <initializer_list>

namespace peakcast::model {

bool dsa_skips_topk(std::int64_t layer_number, std::int64_t offset, std::int64_t freq) {
  return freq > 1 && (std::max<std::int64_t>(layer_number - std::max<std::int64_t>(offset, 1), 0) % freq) != 0;
}

std::int64_t dsa_source_layer(std::int64_t layer_number, std::int64_t offset, std::int64_t freq) {
  const std::int64_t o = std::max<std::int64_t>(offset, 1);
  return freq <= 1 || layer_number <= o ? layer_number : layer_number - ((layer_number - o) % freq);
}

std::int64_t dsa_layer_number(const LayerSpec& l) { return l.is_mtp ? 1 : l.index + 1; }

bool dsa_computes_topk(const ModelSpec& m, const LayerSpec& l) {
  return l.mixer == MixerKind::dsa && !dsa_skips_topk(dsa_layer_number(l), m.dsa_indexer_skip_topk_offset, m.dsa_indexer_topk_freq);
}

DsaTopkHolder dsa_topk_holder(const RunSpec& spec) {
  if (spec.model.dsa_indexer_topk_freq <= 1) return DsaTopkHolder::none;
  return spec.train.packed_sequence ? DsaTopkHolder::per_microbatch : DsaTopkHolder::per_rank;
}

std::optional<std::int64_t> flash_mla_head_padding(std::int64_t heads, int compute_capability_major) {
  if (heads <= 0 || compute_capability_major < 9) return std::nullopt;
  std::int64_t align = 64;
  if (compute_capability_major >= 10) {
    for (const std::int64_t padded : {std::int64_t{64}, std::int64_t{128}})
      if (heads == padded || (heads < padded && padded % heads == 0)) return padded;
    align = 128;
  }
  if (heads % align == 0) return heads;
  if (heads < align && align % heads == 0) return align;
  return std::nullopt;
}

}  // namespace peakcast::model
