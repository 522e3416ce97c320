// DeepSeek sparse attention (experimental_attention_variant "dsa", hybrid 'D' layers) and the other
// experimental attention variants: TransformerConfig.__post_init__ (transformer_config.py:1383-1398,
// :2863-2877), their layer specs and AbsorbedMLASelfAttention / DSAttention.
#include <algorithm>
#include <cctype>
#include <exception>
#include <utility>

#include "layer_plan_internal.hpp"
#include "peakcast/model/dsa.hpp"
#include "validate_detail.hpp"

namespace peakcast::model::detail {

namespace {

bool gpt_dsa(const ModelSpec& m) { return m.experimental_attention_variant == std::optional<std::string>("dsa"); }
bool any_dsa(const ModelSpec& m) {
  return gpt_dsa(m) || (m.hybrid_override_pattern && m.hybrid_override_pattern->find('D') != std::string::npos);
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
      if (!dsa_skips_topk(layer, m.dsa_indexer_skip_topk_offset, m.dsa_indexer_topk_freq)) continue;
      const std::int64_t source = dsa_source_layer(layer, m.dsa_indexer_skip_topk_offset, m.dsa_indexer_topk_freq);
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

// The indexer's sizes: DSAIndexer builds its linears from them (dsa.py:1123-1125, :1159-1204), so None cannot be
// built, and it splits each indexer head into the RoPE channels and the rest (dsa.py:1222-1224).
void indexer_sizes(const ModelSpec& m, RuleSink& sink) {
  const std::pair<const char*, const std::optional<std::int64_t>*> sizes[] = {
      {"model.dsa_indexer_n_heads", &m.dsa_indexer_n_heads}, {"model.dsa_indexer_head_dim", &m.dsa_indexer_head_dim}, {"model.dsa_indexer_topk", &m.dsa_indexer_topk}};
  for (const auto& [path, v] : sizes)
    if (!v->has_value())
      sink.error(path, "dsa_indexer_size_missing",
                 std::string(path + 6) +
                     " is None: DSAIndexer builds linear_wq_b with dsa_indexer_n_heads x dsa_indexer_head_dim "
                     "outputs and selects dsa_indexer_topk keys (dsa.py:1123-1125, :1159-1169)");
  if (m.dsa_indexer_head_dim && *m.dsa_indexer_head_dim < m.qk_pos_emb_head_dim)
    sink.error("model.dsa_indexer_head_dim", "dsa_indexer_head_dim_below_rope",
               "the indexer splits each head into qk_pos_emb_head_dim (" + str(m.qk_pos_emb_head_dim) + ") RoPE channels and the rest; " +
                   str(*m.dsa_indexer_head_dim) + " is narrower (dsa.py:1222-1224)");
}

// What peakcast simulates of DSAttention: the cuDNN kernels with the sparse indexer loss or none
// (docs/research/dsa-memory-facts.md sections 0 and 5). Elsewhere Megatron runs paths that are not simulated.
void simulated_kernels(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  if (m.dsa_kernel_backend != "cudnn") {
    sink.error("model.dsa_kernel_backend", "dsa_kernel_backend_not_simulated",
               "dsa_kernel_backend " + m.dsa_kernel_backend + " is not simulated: " +
                   (m.dsa_kernel_backend == "none" ? "the PyTorch reference path materialises fp32 [b, heads, sq, sk] scores (dsa.py:59-112, :384-514)"
                                                   : std::string("the TileLang kernels (dsa_tilelang_kernels.py)")) +
                   "; peakcast simulates cudnn");
    return;
  }
  if (m.attention_backend == AttentionBackend::unfused)
    sink.error("model.attention_backend", "dsa_kernel_backend_not_simulated",
               "attention_backend unfused turns the fused DSA kernels off (dsa_kernels.py:92-97): the PyTorch reference path is not simulated");
  if (m.dsa_indexer_loss_coeff.value_or(0.0) > 0 && !m.dsa_indexer_use_sparse_loss)
    sink.error("model.dsa_indexer_use_sparse_loss", "dsa_dense_indexer_loss_not_simulated",
               "the dense indexer loss (dsa_indexer_use_sparse_loss false with dsa_indexer_loss_coeff > 0) is not simulated: cuDNN's dense "
               "loss scores every key (dsa_cudnn_kernels.py:1870-1944) and declines varlen and shared top-k layouts for the "
               "reference path (:244-245, dsa.py:2124-2156)");
  if (m.kv_lora_rank != 512)
    sink.error("model.kv_lora_rank", "dsa_cudnn_declines_not_simulated",
               "FlashMLA's sparse kernels take a 512-channel latent value only (dsa_cudnn_kernels.py:138, :151-153); with kv_lora_rank " +
                   str(m.kv_lora_rank) + " the cuDNN hooks decline and DSA runs the PyTorch reference path, which is not simulated");
  const int cc = spec.cluster.gpu.compute_capability_major;
  const std::int64_t heads = m.tensor_model_parallel_size > 0 ? m.num_attention_heads / m.tensor_model_parallel_size : 0;
  if (!flash_mla_head_padding(heads, cc))
    sink.error(cc < 9 ? "cluster.gpu" : "model.num_attention_heads", "dsa_cudnn_declines_not_simulated",
               (cc < 9 ? "the cuDNN DSA kernels need compute capability 9 or later, the GPU has " + str(cc)
                       : str(heads) + " attention heads per TP rank have no FlashMLA head padding on compute capability " + str(cc)) +
                   " (dsa_cudnn_kernels.py:348-399): the hooks decline and DSA runs the PyTorch reference path, which is not simulated");
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
  indexer_sizes(m, sink);
  simulated_kernels(spec, sink);
}

}  // namespace peakcast::model::detail
