#include "peakcast/sim/policy.hpp"

#include <algorithm>
#include <string>

namespace peakcast::sim {

using model::RecomputeTag;

namespace {

bool scope_has(const model::RunSpec& spec, const std::string& scope) {
  const auto& mods = spec.model.cuda_graph_modules;
  return std::find(mods.begin(), mods.end(), scope) != mods.end();
}

}  // namespace

std::uint32_t regions_bypassed_by_cuda_graphs(const model::RunSpec& spec, const model::LayerSpec& layer) {
  const auto impl = spec.model.cuda_graph_impl;
  if (impl == model::CudaGraphImpl::none || impl == model::CudaGraphImpl::full_iteration) return 0;
  // Whole-layer capture when no scope is named; otherwise only the named scopes are captured.
  const bool whole = spec.model.cuda_graph_modules.empty();
  std::uint32_t bypass = 0;
  const bool attn = layer.mixer == model::MixerKind::attention || layer.mixer == model::MixerKind::mla || layer.mixer == model::MixerKind::dsa;
  // The bypass is tensor_parallel.checkpoint's (random.py:677). core_attn always uses it; mlp, moe
  // and shared_experts use TE's checkpoint instead when FP8/FP4 is on (transformer_layer.py:868-887,
  // moe_layer.py:510-522, :694-712), which has no such bypass.
  const bool te_checkpoint = spec.model.fp8.has_value();  // the spec has no fp4 mode
  // The local manager runs a captured layer whole inside the capture: every region in it is bypassed.
  if (impl == model::CudaGraphImpl::local) {
    if (!layer_captured_by_cuda_graphs(spec, layer)) return 0;
    if (attn) bypass |= kCoreAttn;
    if (!te_checkpoint) bypass |= kMlp | kMoe | kSharedExperts;
    return bypass;
  }
  if (attn && (whole || scope_has(spec, "attn"))) bypass |= kCoreAttn;
  if (!te_checkpoint && layer.ffn == model::FfnKind::dense && (whole || scope_has(spec, "mlp"))) bypass |= kMlp;
  if (!te_checkpoint && layer.ffn == model::FfnKind::moe && (whole || scope_has(spec, "moe"))) bypass |= kMoe | kSharedExperts;
  return bypass;
}

bool layer_captured_by_cuda_graphs(const model::RunSpec& spec, const model::LayerSpec& layer) {
  return graph_capture(spec, layer) == GraphCapture::whole;
}

GraphCapture graph_capture(const model::RunSpec& spec, const model::LayerSpec& layer) {
  const auto impl = spec.model.cuda_graph_impl;
  if (impl == model::CudaGraphImpl::none || impl == model::CudaGraphImpl::full_iteration) return GraphCapture::none;
  if (spec.model.cuda_graph_modules.empty()) return GraphCapture::whole;
  using model::FfnKind;
  using model::MixerKind;
  const bool attn = layer.mixer == MixerKind::attention || layer.mixer == MixerKind::mla || layer.mixer == MixerKind::dsa;
  const bool mixer_named = (attn && scope_has(spec, "attn")) || (layer.mixer == MixerKind::mamba && scope_has(spec, "mamba"));
  const bool ffn_named = (layer.ffn == FfnKind::dense && scope_has(spec, "mlp")) ||
                         (layer.ffn == FfnKind::moe && scope_has(spec, "moe"));
  if (impl == model::CudaGraphImpl::local) {
    // A layer with a manager is graphed whole (transformer_layer.py:527-554); local MoE capture
    // covers MoE-only layers.
    const bool named = mixer_named || (layer.ffn == FfnKind::dense && scope_has(spec, "mlp")) ||
                       (layer.ffn == FfnKind::moe && layer.mixer == MixerKind::none && scope_has(spec, "moe"));
    return named ? GraphCapture::whole : GraphCapture::none;
  }
  // Transformer Engine: a hybrid layer is one mixer or one FFN; a standard layer is captured whole
  // only when both its halves are named, else the named half.
  if (layer.mixer == MixerKind::none) return ffn_named ? GraphCapture::whole : GraphCapture::none;
  if (layer.ffn == FfnKind::none) return mixer_named ? GraphCapture::whole : GraphCapture::none;
  if (mixer_named && ffn_named) return GraphCapture::whole;
  if (!attn) return GraphCapture::none;
  if (mixer_named) return GraphCapture::mixer;
  if (ffn_named) return GraphCapture::ffn;
  return GraphCapture::none;
}

ChunkPolicy chunk_policy(const model::RunSpec& spec, const model::Derived& d, const model::ModelChunk& chunk,
                         GraphBypass graph_bypass) {
  ChunkPolicy p;
  const std::size_t n = chunk.layers.size();
  p.layers.assign(n, CheckpointSet{});
  p.group_of_layer.assign(n, -1);
  const auto& m = spec.model;
  if (m.recompute_granularity == model::RecomputeGranularity::full) {
    const std::int64_t k = m.recompute_num_layers.value_or(1);
    // recompute.py counts layers per model chunk (len(self.layers)).
    for (std::size_t i = 0; i < n; ++i) {
      if (m.recompute_method == model::RecomputeMethod::uniform) {
        p.layers[i].whole_module = true;
        p.group_of_layer[i] = static_cast<int>(static_cast<std::int64_t>(i) / std::max<std::int64_t>(1, k));
      } else if (static_cast<std::int64_t>(i) < k) {  // block: the first k layers, one at a time
        p.layers[i].whole_module = true;
      }
    }
    return p;
  }
  std::uint32_t keep = 0, discard = 0;
  for (RecomputeTag t : d.selective_tags) {
    switch (t) {
      case RecomputeTag::core_attn: keep |= kCoreAttn; break;
      case RecomputeTag::mlp: keep |= kMlp; break;
      case RecomputeTag::moe: keep |= kMoe; break;
      case RecomputeTag::shared_experts: keep |= kSharedExperts; break;
      case RecomputeTag::mla_up_proj: discard |= kMlaUpProj; break;
      case RecomputeTag::layernorm: discard |= kInputNorm | kPreMlpNorm; break;
      case RecomputeTag::moe_act: discard |= kMoeAct; break;
      case RecomputeTag::gdn_norm_out: discard |= kGdnNormOut; break;
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t bypass =
        graph_bypass == GraphBypass::none ? 0 : regions_bypassed_by_cuda_graphs(spec, chunk.layers[i]);
    p.layers[i].keep_inputs = keep & ~bypass;
    p.layers[i].discard_output = discard;
    if (graph_bypass == GraphBypass::warmup) {
      // The mechanism-2 regions of the captured layer, or of its captured half.
      const GraphCapture cap = graph_capture(spec, chunk.layers[i]);
      const std::uint32_t mixer_half = kInputNorm | kMlaUpProj | kGdnNormOut;
      const std::uint32_t ffn_half = kPreMlpNorm | kMoeAct;
      const std::uint32_t plain = cap == GraphCapture::whole   ? (mixer_half | ffn_half)
                                  : cap == GraphCapture::mixer ? mixer_half
                                  : cap == GraphCapture::ffn   ? ffn_half
                                                               : 0u;
      p.layers[i].discard_output = discard & ~plain;
    }
  }
  return p;
}

}  // namespace peakcast::sim
