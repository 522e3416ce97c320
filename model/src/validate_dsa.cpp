// DeepSeek sparse attention (experimental_attention_variant "dsa", hybrid 'D' layers) and the other
// experimental attention variants: TransformerConfig.__post_init__ (transformer_config.py:1383-1398,
// :2863-2877), their layer specs and AbsorbedMLASelfAttention / DSAttention.
#include <algorithm>
#include <cctype>
#include <exception>

#include "layer_plan_internal.hpp"
#include "validate_detail.hpp"

namespace peakcast::model::detail {

namespace {

bool gpt_dsa(const ModelSpec& m) { return m.experimental_attention_variant == std::optional<std::string>("dsa"); }
bool any_dsa(const ModelSpec& m) {
  return gpt_dsa(m) || (m.hybrid_override_pattern && m.hybrid_override_pattern->find('D') != std::string::npos);
}

// dsa.py:37-56: a 1-indexed layer reuses the top-k of an earlier computing layer.
bool skips_topk(std::int64_t layer, std::int64_t offset, std::int64_t freq) {
  return (std::max<std::int64_t>(layer - std::max<std::int64_t>(offset, 1), 0) % freq) != 0;
}
std::int64_t source_layer(std::int64_t layer, std::int64_t offset, std::int64_t freq) {
  const std::int64_t o = std::max<std::int64_t>(offset, 1);
  return layer <= o ? layer : layer - ((layer - o) % freq);
}

// _validate_dsa_index_share_pipeline_split (experimental_attention_variant_module_specs.py:339-370), per
// virtual stage: a layer that reuses top-k indices needs its source layer earlier in the same stage.
void index_share_split(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  if (!gpt_dsa(m) || m.dsa_indexer_topk_freq <= 1 || m.dsa_indexer_skip_topk_offset < 0 || m.pipeline_model_parallel_size <= 1) return;
  std::vector<VirtualStage> stages;
  try {
    stages = virtual_stages(m, derive(spec), layer_kinds(m));
  } catch (const std::exception&) {
    return;  // a split the layout rules refuse already
  }
  std::int64_t first = 1;  // 1-indexed layer number of the stage's first decoder layer
  for (const VirtualStage& s : stages) {
    for (std::int64_t layer = first; layer < first + s.decoder_layers; ++layer) {
      if (!skips_topk(layer, m.dsa_indexer_skip_topk_offset, m.dsa_indexer_topk_freq)) continue;
      const std::int64_t source = source_layer(layer, m.dsa_indexer_skip_topk_offset, m.dsa_indexer_topk_freq);
      if (source < first) {
        sink.error("model.dsa_indexer_topk_freq", "dsa_index_share_pipeline_split",
                   "DSA index-share pipeline split is invalid: local layer " + str(layer) +
                       " reuses top-k indices from "
                       "computing layer " +
                       str(source) +
                       ", but that source layer is not earlier in this pipeline stage. "
                       "(experimental_attention_variant_module_specs.py:366)");
        return;
      }
    }
    first += s.decoder_layers;
  }
}

}  // namespace

void validate_dsa(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  // get_gpt_decoder_block_spec for an experimental variant (experimental_attention_variant_module_specs.py:440-444)
  if (m.experimental_attention_variant && !m.hybrid_override_pattern && m.transformer_impl != TransformerImpl::transformer_engine)
    sink.error("model.transformer_impl", "experimental_attention_needs_te_spec",
               "Experimental GPT decoder block spec only supports transformer engine implementation for now. "
               "(experimental_attention_variant_module_specs.py:442)");
  if (!any_dsa(m)) return;
  if (!m.multi_latent_attention)
    sink.error("model.multi_latent_attention", "dsa_needs_mla",
               "Currently only MLA supports sparse attention. (experimental_attention_variant_module_specs.py:85)");
  if (m.add_bias_linear)
    sink.error("model.add_bias_linear", "dsa_no_linear_bias",
               "DSA uses AbsorbedMLASelfAttention, which requires add_bias_linear=False. Disable linear bias for DSA configs. "
               "(transformer_config.py:1386, absorbed_mla.py:170)");
  if (m.tensor_model_parallel_size > 1 && !m.sequence_parallel)
    sink.error("model.sequence_parallel", "dsa_tp_needs_sequence_parallel",
               "AbsorbedMLA requires sequence_parallel when tensor_model_parallel_size > 1 (absorbed_mla.py:171)");
  if (gpt_dsa(m) && m.dsa_indexer_topk_freq < 1)
    sink.error("model.dsa_indexer_topk_freq", "dsa_indexer_args",
               "dsa_indexer_topk_freq must be positive, got " + str(m.dsa_indexer_topk_freq) + ". (transformer_config.py:1391)");
  if (gpt_dsa(m) && m.dsa_indexer_skip_topk_offset < 0)
    sink.error("model.dsa_indexer_skip_topk_offset", "dsa_indexer_args",
               "dsa_indexer_skip_topk_offset must be non-negative, got " + str(m.dsa_indexer_skip_topk_offset) +
                   ". (transformer_config.py:1395)");
  if (m.apply_rope_fusion)
    sink.error("model.apply_rope_fusion", "dsa_no_rope_fusion", "RoPE fusion is not supported for DSAttention (transformer_config.py:2864)");
  if (m.context_parallel_size > 1) {
    bool allgather = m.cp_comm_type.has_value() && !m.cp_comm_type->empty();
    if (allgather)
      for (std::string t : *m.cp_comm_type) {
        t.erase(std::remove(t.begin(), t.end(), '_'), t.end());
        for (char& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        allgather = allgather && t == "allgather";
      }
    if (!allgather)
      sink.error("model.cp_comm_type", "dsa_cp_needs_allgather",
                 "DSAttention context parallelism currently supports cp_comm_type=allgather only. (transformer_config.py:2871, "
                 "dsa.py:1806)");
  }
  if (selective(m) && has(effective_tags(m), RecomputeTag::mla_up_proj) && (m.fp8 || m.fp4))
    sink.error(tag_path(m, RecomputeTag::mla_up_proj), "dsa_mla_up_proj_no_fp8",
               "FP8/FP4 is not supported for AbsorbedMLA (absorbed_mla.py:663): mla_up_proj recompute under fp8/fp4");
  if (m.qk_clip)
    sink.error("model.qk_clip", "dsa_no_qk_clip", "clip_qk is not implemented for AbsorbedMLA (absorbed_mla.py:943), at the first optimizer step");
  if (m.dsa_kernel_backend == "cudnn" && !m.dsa_indexer_scoring_relu)
    sink.error("model.dsa_indexer_scoring_relu", "dsa_cudnn_scoring_relu",
               "cuDNN fused DSA kernels currently require dsa_indexer_scoring_relu=True. (dsa_cudnn_kernels.py:146)");
  if (m.qk_layernorm && !m.q_lora_rank)
    sink.error("model.qk_layernorm", "dsa_qk_layernorm_needs_q_lora",
               "`qk_layernorm=True` with `q_lora_rank is None` is not supported for DSA because DSA cannot fuse Q norm into "
               "`linear_q_proj`. (mla_qk_norm_config.py:115)");
  index_share_split(spec, sink);
}

}  // namespace peakcast::model::detail
