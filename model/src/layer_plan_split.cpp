// How many decoder layers (and MTP depths, embedding, loss) each virtual pipeline stage holds.
// Virtual stage index = vpp_chunk * PP + pp_rank throughout, as Megatron numbers them
// (pipeline_parallel_layer_layout.py:46-53, hybrid_layer_allocation.py:466-467).
#include <algorithm>
#include <stdexcept>

#include "layer_plan_internal.hpp"

namespace peakcast::model::detail {

namespace {

constexpr char kLayoutEmbedding = 'E';
constexpr char kLayoutDecoder = 't';
constexpr char kLayoutMtp = 'm';
constexpr char kLayoutLoss = 'L';

std::int64_t stage_index(std::int64_t pp_rank, std::int64_t vpp_chunk, std::int64_t pp) { return vpp_chunk * pp + pp_rank; }

// More layout symbols than any model has layers and stages (num_layers <= 4096, PP x VPP <= 4096,
// validate_magnitudes.cpp): a longer expansion, in one repetition or in total, is a typo.
constexpr std::size_t kMaxLayoutSymbols = std::size_t{1} << 16;

// The decimal count at s[j...], saturating just past the cap (a 40-digit count must not wrap).
std::size_t repeat_count(const std::string& s, std::size_t& j, bool& digits) {
  std::size_t n = 0;
  digits = false;
  while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) {
    n = std::min(n * 10 + static_cast<std::size_t>(s[j] - '0'), kMaxLayoutSymbols + 1);
    ++j;
    digits = true;
  }
  return n;
}

// Repeat each "(body)*n" (non-nested, as the pinned regex r'\(([^)]+)\)\*(\d+)' does), then "x*n".
std::string unroll(const std::string& in) {
  std::string s;
  for (char c : in)
    if (c != ',' && c != ' ') s += c;
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    if (s[i] == '(') {
      const auto close = s.find(')', i);
      if (close != std::string::npos && close + 1 < s.size() && s[close + 1] == '*') {
        std::size_t j = close + 2;
        bool digits = false;
        const std::size_t n = repeat_count(s, j, digits);
        if (digits) {
          const std::string body = s.substr(i + 1, close - i - 1);
          if (n > kMaxLayoutSymbols || out.size() + body.size() * n > kMaxLayoutSymbols) throw std::length_error("layout too long");
          for (std::size_t r = 0; r < n; ++r) out += body;
          i = j;
          continue;
        }
      }
    }
    out += s[i++];
    if (out.size() > kMaxLayoutSymbols) throw std::length_error("layout too long");
  }
  std::string result;
  for (std::size_t i = 0; i < out.size();) {
    if (i + 1 < out.size() && out[i + 1] == '*') {
      std::size_t j = i + 2;
      bool digits = false;
      const std::size_t n = repeat_count(out, j, digits);
      if (digits) {
        if (n > kMaxLayoutSymbols || result.size() + n > kMaxLayoutSymbols) throw std::length_error("layout too long");
        result.append(n, out[i]);
        i = j;
        continue;
      }
    }
    result += out[i++];
    if (result.size() > kMaxLayoutSymbols) throw std::length_error("layout too long");
  }
  return result;
}

std::vector<VirtualStage> from_layout(const std::string& layout, std::int64_t pp) {
  const auto stages_text = expand_pipeline_layout(layout);
  if (pp <= 0 || static_cast<std::int64_t>(stages_text.size()) % pp != 0) {
    throw std::invalid_argument("pipeline_model_parallel_layout stage count is not a multiple of PP");
  }
  std::vector<VirtualStage> stages;
  for (const auto& text : stages_text) {
    VirtualStage v;
    for (char c : text) {
      switch (c) {
        case kLayoutEmbedding: v.embedding = true; break;
        case kLayoutDecoder: ++v.decoder_layers; break;
        case kLayoutMtp: ++v.mtp_depths; break;
        case kLayoutLoss: v.loss = true; break;
        default: throw std::invalid_argument(std::string("unknown layout symbol '") + c + "'");
      }
    }
    stages.push_back(v);
  }
  return stages;
}

// Per-rank layer counts without a layout (transformer_block.py:70-200 get_num_layers_to_build).
std::vector<VirtualStage> from_counts(const ModelSpec& m, std::int64_t pp, std::int64_t vpp) {
  std::vector<VirtualStage> stages(static_cast<std::size_t>(pp * vpp));
  const bool uneven = m.num_layers_in_first_pipeline_stage || m.num_layers_in_last_pipeline_stage;
  for (std::int64_t r = 0; r < pp; ++r) {
    std::int64_t per_rank = 0;
    if (uneven) {
      // First/last stages take the given counts; the rest split evenly (:95-125).
      std::int64_t middle_layers = m.num_layers;
      std::int64_t middle_stages = pp;
      if (m.num_layers_in_first_pipeline_stage) {
        middle_layers -= *m.num_layers_in_first_pipeline_stage;
        --middle_stages;
      }
      if (m.num_layers_in_last_pipeline_stage) {
        middle_layers -= *m.num_layers_in_last_pipeline_stage;
        --middle_stages;
      }
      per_rank = middle_stages > 0 ? middle_layers / middle_stages : 0;
      if (r == 0 && m.num_layers_in_first_pipeline_stage) per_rank = *m.num_layers_in_first_pipeline_stage;
      if (r == pp - 1 && m.num_layers_in_last_pipeline_stage) per_rank = *m.num_layers_in_last_pipeline_stage;
    } else {
      // The embedding / loss may count as one layer each in the split (:126-137).
      std::int64_t total = m.num_layers;
      if (m.account_for_embedding_in_pipeline_split) ++total;
      if (m.account_for_loss_in_pipeline_split) ++total;
      per_rank = total / pp;
    }
    for (std::int64_t v = 0; v < vpp; ++v) {
      stages[static_cast<std::size_t>(stage_index(r, v, pp))].decoder_layers = per_rank / vpp;
    }
  }
  // The standalone embedding / loss slot is not a transformer layer (:165-176).
  if (!uneven && m.account_for_embedding_in_pipeline_split) --stages.front().decoder_layers;
  if (!uneven && m.account_for_loss_in_pipeline_split) --stages.back().decoder_layers;
  stages.front().embedding = true;
  stages.back().loss = true;
  return stages;
}

}  // namespace

std::vector<std::string> expand_pipeline_layout(const std::string& layout) {
  const std::string flat = unroll(layout);
  std::vector<std::string> stages(1);
  for (char c : flat) {
    if (c == '|') stages.emplace_back();
    else stages.back() += c;
  }
  return stages;
}

std::string pipeline_layout_problem(const ModelSpec& m) {
  if (!m.pipeline_model_parallel_layout || m.pipeline_model_parallel_layout->empty()) return {};
  std::vector<std::string> stages;
  try {
    stages = expand_pipeline_layout(*m.pipeline_model_parallel_layout);
  } catch (const std::length_error&) {
    return "the layout expands to more than " + std::to_string(kMaxLayoutSymbols) + " layers";
  }
  const auto pp = static_cast<std::size_t>(std::max<std::int64_t>(1, m.pipeline_model_parallel_size));
  if (stages.size() % pp != 0)
    return "pipeline_model_parallel_layout must be divisible by pipeline_model_parallel_size (len(layout)=" +
           std::to_string(stages.size()) + ", pipeline_model_parallel_size=" + std::to_string(pp) +
           ") (pipeline_parallel_layer_layout.py:40)";
  for (const auto& st : stages)
    for (char c : st)
      if (c != kLayoutEmbedding && c != kLayoutDecoder && c != kLayoutMtp && c != kLayoutLoss)
        return std::string("'") + c + "' is not a valid LayerType (E, t, m, L; pipeline_parallel_layer_layout.py:66)";
  // Flattened in layer-id order: virtual stage vpp * PP + pp is already the order of `stages`.
  std::string flat;
  for (const auto& st : stages) flat += st;
  if (flat.empty() || flat.front() != kLayoutEmbedding)
    return "The first layer must be embedding (pipeline_parallel_layer_layout.py:94)";
  if (flat.back() != kLayoutLoss) return "The last layer must be loss (pipeline_parallel_layer_layout.py:97)";
  const auto count = [&](char c) { return static_cast<std::int64_t>(std::count(flat.begin(), flat.end(), c)); };
  if (count(kLayoutEmbedding) != 1) return "Embedding must be specified exactly once (pipeline_parallel_layer_layout.py:102)";
  if (count(kLayoutLoss) != 1) return "Loss must be specified exactly once (pipeline_parallel_layer_layout.py:105)";
  if (count(kLayoutDecoder) != m.num_layers)
    return "Number of decoder layers " + std::to_string(count(kLayoutDecoder)) + " must match num_layers " +
           std::to_string(m.num_layers) + " (pipeline_parallel_layer_layout.py:106)";
  if (count(kLayoutMtp) != m.mtp_num_layers)
    return "Number of mtp layers in layout must match mtp_num_layers (pipeline_parallel_layer_layout.py:111)";
  const auto first_mtp = flat.find(kLayoutMtp);
  if (first_mtp != std::string::npos && flat.find(kLayoutDecoder, first_mtp) != std::string::npos)
    return "decoder layers must be placed before MTP layers (pipeline_parallel_layer_layout.py:116)";
  const std::size_t vpp = stages.size() / pp;
  // The layout fixes the virtual stages per rank; an explicit VPP size must agree (transformer_config.py:2000).
  if (m.virtual_pipeline_model_parallel_size && static_cast<std::size_t>(*m.virtual_pipeline_model_parallel_size) != vpp)
    return "virtual_pipeline_model_parallel_size conflicts with pipeline_model_parallel_layout "
           "(virtual_pipeline_model_parallel_size=" +
           std::to_string(*m.virtual_pipeline_model_parallel_size) +
           ", the layout gives " + std::to_string(vpp) + " virtual stages per rank) (transformer_config.py:2000)";
  for (std::size_t r = 0; r < pp; ++r)
    for (std::size_t v = 0; v + 1 < vpp; ++v)
      if (stages[v * pp + r].find(kLayoutMtp) != std::string::npos)
        return "Currently we restrict that the MTP should be always in the last virtual pipeline stage of that rank "
               "(pipeline_parallel_layer_layout.py:122)";
  // One rank's last virtual stage holds them all (the same split fails again at gpt_layer_specs.py:790 and
  // multi_token_prediction.py:701); :132 (not on the first rank) is implied by :122.
  for (std::size_t r = 0; r < pp; ++r) {
    const std::string& last = stages[(vpp - 1) * pp + r];
    const auto mtp = static_cast<std::int64_t>(std::count(last.begin(), last.end(), kLayoutMtp));
    if (mtp > 0 && mtp != m.mtp_num_layers)
      return "All of the MTP layers must be in the same one virtual pipeline stage (pipeline_parallel_layer_layout.py:128)";
  }
  return {};
}

std::vector<VirtualStage> virtual_stages(const ModelSpec& m, const Derived& d, const LayerKinds& kinds) {
  const std::int64_t pp = std::max<std::int64_t>(1, d.pp);
  std::vector<VirtualStage> stages;
  if (m.pipeline_model_parallel_layout && !m.pipeline_model_parallel_layout->empty()) {
    return from_layout(*m.pipeline_model_parallel_layout, pp);  // MTP placement is explicit
  }
  if (m.architecture == Architecture::t5) {
    // pretrain_t5.py refuses PP > 1 (:97-98): one stage holds the embedding, both stacks and the head.
    stages.assign(static_cast<std::size_t>(pp), VirtualStage{});
    stages.front().decoder_layers = static_cast<std::int64_t>(kinds.decoder.size());
    stages.front().embedding = true;
    stages.back().loss = true;
  } else if (!kinds.hybrid_segment_sizes.empty()) {
    // Hybrid '|' segments fix every stage (hybrid_layer_allocation.py:452-484).
    const auto n = static_cast<std::int64_t>(kinds.hybrid_segment_sizes.size());
    if (n % pp != 0) throw std::invalid_argument("hybrid pattern segment count is not a multiple of PP");
    for (auto size : kinds.hybrid_segment_sizes) {
      VirtualStage v;
      v.decoder_layers = size;
      stages.push_back(v);
    }
    stages.front().embedding = true;
    stages.back().loss = true;
  } else {
    stages = from_counts(m, pp, pp > 1 ? std::max<std::int64_t>(1, d.vpp) : 1);
  }
  // Without a layout all MTP depths sit on the last virtual stage with the output layer
  // (multi_token_prediction.py:692-711).
  stages.back().mtp_depths = kinds.mtp_depths;
  return stages;
}

}  // namespace peakcast::model::detail
