// Which mixer and FFN each decoder layer has: GPT models by moe_layer_freq, hybrid models one
// layer per pattern character.
#include <stdexcept>
#include <variant>

#include "layer_plan_internal.hpp"

namespace peakcast::model::detail {

namespace {

// Hybrid pattern symbols (models/hybrid/hybrid_layer_allocation.py:14-26). Each character is a
// separate layer with its own pre-norm (hybrid_layer_specs.py:90-218).
constexpr char kMamba = 'M';
constexpr char kGdn = 'G';
constexpr char kAttention = '*';
constexpr char kDsAttention = 'D';  // DeepSeek sparse attention (hybrid_layer_specs.py:137-176)
constexpr char kMla = '+';
constexpr char kMlp = '-';
constexpr char kMoe = 'E';
constexpr char kPipe = '|';
constexpr char kMtpSeparator = '/';

LayerSpec hybrid_layer(char c) {
  LayerSpec l;
  l.mixer = MixerKind::none;
  l.ffn = FfnKind::none;
  switch (c) {
    case kMamba: l.mixer = MixerKind::mamba; break;
    case kGdn: l.mixer = MixerKind::gdn; break;
    case kAttention: l.mixer = MixerKind::attention; break;
    case kDsAttention: l.mixer = MixerKind::dsa; break;
    case kMla: l.mixer = MixerKind::mla; break;
    case kMlp: l.ffn = FfnKind::dense; break;
    case kMoe: l.ffn = FfnKind::moe; break;
    default: throw std::invalid_argument(std::string("unknown hybrid layer symbol '") + c + "'");
  }
  return l;
}

// moe_layer_freq: int k means layer i is MoE when i % k == 0; a list is taken as given
// (transformer_config.py moe_layer_freq; theoretical_memory_usage.py:29-50).
bool is_moe_layer(const ModelSpec& m, std::int64_t i) {
  if (!m.num_moe_experts || *m.num_moe_experts <= 0) return false;
  if (const auto* k = std::get_if<std::int64_t>(&m.moe_layer_freq)) return *k > 0 && i % *k == 0;
  const auto& list = std::get<std::vector<std::int64_t>>(m.moe_layer_freq);
  return i < static_cast<std::int64_t>(list.size()) && list[static_cast<std::size_t>(i)] != 0;
}

// GPT models with the gated_delta_net attention variant: layer i is GDN unless linear_attention_freq
// makes it a standard attention layer (experimental_attention_variant_module_specs.py:193-195, :402-420).
bool is_linear_attention_layer(const ModelSpec& m, std::int64_t i) {
  if (m.experimental_attention_variant != std::optional<std::string>("gated_delta_net") || !m.linear_attention_freq)
    return false;
  if (const auto* k = std::get_if<std::int64_t>(&*m.linear_attention_freq)) return *k > 0 && (i + 1) % *k != 0;
  const auto& list = std::get<std::vector<std::int64_t>>(*m.linear_attention_freq);
  return i < static_cast<std::int64_t>(list.size()) && list[static_cast<std::size_t>(i)] != 0;
}

LayerKinds gpt_kinds(const ModelSpec& m) {
  LayerKinds k;
  // experimental_attention_variant "dsa": every layer is DSA (experimental_attention_variant_module_specs.py:192-196).
  const bool dsa = m.experimental_attention_variant == std::optional<std::string>("dsa");
  const MixerKind mixer = dsa ? MixerKind::dsa : m.multi_latent_attention ? MixerKind::mla
                                                                          : MixerKind::attention;
  for (std::int64_t i = 0; i < m.num_layers; ++i) {
    LayerSpec l;
    l.index = i;
    l.mixer = is_linear_attention_layer(m, i) ? MixerKind::gdn : mixer;
    l.ffn = is_moe_layer(m, i) ? FfnKind::moe : FfnKind::dense;
    k.decoder.push_back(l);
  }
  // An MTP depth holds one transformer layer of the same kind as the last decoder layer
  // (gpt_layer_specs.py get_gpt_mtp_block_spec uses the last layer spec; estimator :51-57).
  k.mtp_depths = m.mtp_num_layers;
  if (k.mtp_depths > 0 && !k.decoder.empty()) {
    LayerSpec l = k.decoder.back();
    l.is_mtp = true;
    k.mtp_block.push_back(l);
  }
  return k;
}

// "<main>/<mtp>/<mtp>..." with '|' stage boundaries in <main> (hybrid_layer_allocation.py:205-273).
LayerKinds hybrid_kinds(const ModelSpec& m, const std::string& pattern) {
  LayerKinds k;
  const auto slash = pattern.find(kMtpSeparator);
  const std::string main = pattern.substr(0, slash);
  std::int64_t segment = 0;
  bool has_pipe = false;
  for (char c : main) {
    if (c == kPipe) {
      k.hybrid_segment_sizes.push_back(segment);
      segment = 0;
      has_pipe = true;
      continue;
    }
    LayerSpec l = hybrid_layer(c);
    l.index = static_cast<std::int64_t>(k.decoder.size());
    k.decoder.push_back(l);
    ++segment;
  }
  if (has_pipe) k.hybrid_segment_sizes.push_back(segment);
  if (slash != std::string::npos) {
    std::string rest = pattern.substr(slash + 1);
    std::string first_depth;
    std::int64_t depths = 0;
    std::size_t start = 0;
    while (start <= rest.size()) {
      const auto next = rest.find(kMtpSeparator, start);
      const std::string part = rest.substr(start, next == std::string::npos ? std::string::npos : next - start);
      if (!part.empty()) {
        if (depths == 0) first_depth = part;
        ++depths;
      }
      if (next == std::string::npos) break;
      start = next + 1;
    }
    for (char c : first_depth) {
      LayerSpec l = hybrid_layer(c);
      l.is_mtp = true;
      k.mtp_block.push_back(l);
    }
    k.mtp_depths = depths;
  }
  (void)m;
  return k;
}

// T5: num_layers encoder layers, then as many decoder layers: pretrain_t5.py builds the decoder block with the
// config's num_layers, which is --encoder-num-layers (pretrain_t5.py:91-114, arguments.py:1252-1259).
LayerKinds t5_kinds(const ModelSpec& m) {
  LayerKinds k;
  for (std::int64_t i = 0; i < 2 * m.num_layers; ++i) {
    LayerSpec l;
    l.index = i;
    l.t5_encoder = i < m.num_layers;
    l.cross_attention = !l.t5_encoder;
    k.decoder.push_back(l);
  }
  return k;
}

}  // namespace

LayerKinds layer_kinds(const ModelSpec& m) {
  if (m.architecture == Architecture::t5) return t5_kinds(m);
  if (m.hybrid_override_pattern && !m.hybrid_override_pattern->empty()) {
    return hybrid_kinds(m, *m.hybrid_override_pattern);
  }
  return gpt_kinds(m);
}

}  // namespace peakcast::model::detail
