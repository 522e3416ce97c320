// Hybrid models (Mamba / GDN / attention patterns): the pattern's own rules and its pipeline split
// (models/hybrid/hybrid_layer_allocation.py, hybrid_model.py), Mamba under context parallelism
// (ssm/mamba_context_parallel.py), GDN (ssm/gated_delta_net/) and Bridge's HybridModelProvider.
#include <algorithm>
#include <string>
#include <vector>

#include "validate_detail.hpp"

namespace peakcast::model::detail {

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == sep) out.emplace_back();
    else out.back() += c;
  }
  return out;
}

void pattern_rules(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  const char* path = "model.hybrid_override_pattern";
  // The deprecated ratio arguments (hybrid_model.py:170-176; hybrid_layer_allocation.py:91-94).
  if (m.hybrid_override_pattern && (m.hybrid_attention_ratio > 0.0 || m.hybrid_mlp_ratio > 0.0))
    sink.error(path, "hybrid_pattern_vs_ratios",
               "hybrid_layer_pattern cannot be used together with hybrid_attention_ratio or hybrid_mlp_ratio. (hybrid_model.py:172)");
  if (m.hybrid_attention_ratio < 0.0 || m.hybrid_attention_ratio > 1.0 || m.hybrid_mlp_ratio < 0.0 || m.hybrid_mlp_ratio > 1.0 ||
      m.hybrid_attention_ratio + m.hybrid_mlp_ratio > 1.0)
    sink.error("model.hybrid_attention_ratio", "hybrid_pattern_vs_ratios",
               "hybrid_attention_ratio and hybrid_mlp_ratio must each lie in [0, 1] and sum to at most 1 "
               "(hybrid_layer_allocation.py:92-94)");
  if (!m.hybrid_override_pattern) return;
  const auto parts = split(*m.hybrid_override_pattern, '/');
  for (std::size_t i = 2; i < parts.size(); ++i)
    if (parts[i] != parts[1]) {
      sink.error(path, "hybrid_mtp_patterns_identical",
                 "All MTP patterns must be identical. Pattern 1 is '" + parts[1].substr(0, 40) + "', but pattern " + std::to_string(i) +
                     " is '" + parts[i].substr(0, 40) + "'. (hybrid_layer_allocation.py:262)");
      break;
    }
  for (const std::string& part : parts)
    if (part.find('*') != std::string::npos && (part.find('+') != std::string::npos || part.find('D') != std::string::npos)) {
      sink.error(path, "hybrid_attention_and_mla", "Not supported to have both Attention and MLA/DSA in one model (hybrid_layer_allocation.py:298)");
      break;
    }
  if (m.hybrid_pattern_from_deprecated_key && !spec.bridge_training)
    sink.warning(path, "hybrid_override_pattern_deprecated",
                 "hybrid_override_pattern has been deprecated. Use hybrid_layer_pattern instead. (hybrid_model.py:156)");
}

// select_pipeline_segment (hybrid_layer_allocation.py:372-475) on this run's PP / VPP.
void pipeline_rules(const ModelSpec& m, RuleSink& sink) {
  if (!m.hybrid_override_pattern) return;
  const std::string main = split(*m.hybrid_override_pattern, '/')[0];
  const auto segments = static_cast<std::int64_t>(split(main, '|').size());
  const std::int64_t pp = m.pipeline_model_parallel_size;
  const bool uneven = m.num_layers_in_first_pipeline_stage || m.num_layers_in_last_pipeline_stage;
  const char* path = "model.hybrid_override_pattern";
  if (segments > 1) {
    if (uneven)
      sink.error(m.num_layers_in_first_pipeline_stage ? "model.num_layers_in_first_pipeline_stage" : "model.num_layers_in_last_pipeline_stage",
                 "hybrid_pipes_vs_uneven_pp",
                 "Cannot specify num_layers_in_first_pipeline_stage or num_layers_in_last_pipeline_stage when hybrid_layer_pattern "
                 "contains pipe ('|') separators. (hybrid_layer_allocation.py:378)");
    const std::int64_t vpp = m.virtual_pipeline_model_parallel_size.value_or(1);
    if (segments % pp == 0 && segments < vpp * pp)
      sink.error("model.virtual_pipeline_model_parallel_size", "hybrid_segments_vs_vpp",
                 "The pattern does not define enough pipe-delimited segments for the current PP/VPP configuration: " + str(segments) +
                     " segments for " + str(vpp) + " x " + str(pp) + " stages (hybrid_layer_allocation.py:470)");
    return;
  }
  if (pp <= 1) return;
  if (m.virtual_pipeline_model_parallel_size)
    sink.error("model.virtual_pipeline_model_parallel_size", "hybrid_vpp_needs_pipes",
               "Virtual pipeline parallelism (vp_stage != None) is not supported when hybrid_layer_pattern has no pipe ('|') "
               "separators. (hybrid_layer_allocation.py:387)");
  sink.warning(path, "hybrid_pattern_without_pipes_deprecated",
               "DEPRECATION: Using hybrid_layer_pattern without pipe ('|') separators with pipeline_model_parallel_size > 1 is "
               "deprecated. (hybrid_layer_allocation.py:393)");
  const std::int64_t layers = m.num_layers;
  if (uneven) {
    const std::int64_t middle = layers - m.num_layers_in_first_pipeline_stage.value_or(0) - m.num_layers_in_last_pipeline_stage.value_or(0);
    const std::int64_t stages = pp - (m.num_layers_in_first_pipeline_stage ? 1 : 0) - (m.num_layers_in_last_pipeline_stage ? 1 : 0);
    if (stages > 0 && middle % stages != 0)
      sink.error("model.num_layers", "hybrid_uneven_middle_divisible",
                 "Middle layers (" + str(middle) + ") must be evenly divisible by middle pipeline stages (" + str(stages) +
                     "). (hybrid_layer_allocation.py:414)");
  } else if (layers % pp != 0) {
    sink.error("model.pipeline_model_parallel_size", "hybrid_layers_divisible_by_pp",
               "Number of layers (" + str(layers) + ") must be evenly divisible by pipeline-model-parallel-size (" + str(pp) +
                   ") when no pipe separators are specified in the pattern. (hybrid_layer_allocation.py:437)");
  }
}

// MambaContextParallel (ssm/mamba_context_parallel.py:96-130).
void mamba_cp(const ModelSpec& m, RuleSink& sink) {
  const std::int64_t cp = m.context_parallel_size, tp = m.tensor_model_parallel_size;
  if (cp <= 1 || !m.hybrid_override_pattern || m.hybrid_override_pattern->find('M') == std::string::npos || m.mamba_head_dim <= 0) return;
  const std::int64_t heads = m.mamba_num_heads.value_or(2 * m.hidden_size / m.mamba_head_dim);
  if (heads % tp != 0 || m.mamba_num_groups % tp != 0) return;  // mamba_heads/groups_divisible_by_tp
  const char* rule = "mamba_cp_divisibility";
  if ((heads / tp) % cp != 0)
    sink.error("model.context_parallel_size", rule, "nheads must be evenly divisible by tp_size * cp_size (mamba_context_parallel.py:106)");
  const std::int64_t groups = m.mamba_num_groups / tp;
  if (groups > 0 && groups < cp && cp % groups != 0)
    sink.error("model.context_parallel_size", rule, "cp_size must be evenly divisible by ngroups/tp_size (mamba_context_parallel.py:120)");
  if (groups >= cp && groups % cp != 0)
    sink.error("model.context_parallel_size", rule, "ngroups must be evenly divisible by tp_size * cp_size (mamba_context_parallel.py:127)");
}

void gdn(const ModelSpec& m, RuleSink& sink) {
  const bool has_gdn = m.experimental_attention_variant == std::optional<std::string>("gated_delta_net") ||
                       (m.hybrid_override_pattern && m.hybrid_override_pattern->find('G') != std::string::npos);
  if (!has_gdn) return;
  // GatedDeltaNet uses config.activation_func for its convolution (common.py:166-167; gdn.py:213).
  if (m.activation_func_name != "silu" && !m.deterministic_mode)  // deterministic_mode convolves with act_fn (gdn.py:199-210)
    sink.error("model.activation_func", "gdn_activation_silu",
               "the gated delta net asserts its activation is silu or swish at the first forward (gdn.py:213); activation_func is " +
                   m.activation_func_name);
  if (m.fp8) {
    // in_proj: 2 q/k + 2 v + the per-value-head extra (gdn.py:35), aligned for FP8 GEMMs (fp8_utils.py:358-363).
    const std::int64_t dim = 2 * m.linear_key_head_dim * m.linear_num_key_heads + 2 * m.linear_value_head_dim * m.linear_num_value_heads +
                             2 * m.linear_num_value_heads;
    const std::int64_t align = m.fp8_recipe == Fp8Recipe::mxfp8 ? 32 : 16;
    if (dim % align != 0)
      sink.error("model.fp8", "gdn_fp8_in_proj_alignment",
                 "For FP8, the innermost dimension of the GDN layer input projection output tensor must be a multiple of " + str(align) +
                     " (ssm/gated_delta_net/common.py:200); it is " + str(dim));
  }
}

// HybridModelProvider (bridge:src/megatron/bridge/models/hybrid/hybrid_provider.py).
void bridge_provider(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  if (!spec.bridge_training || !m.hybrid_override_pattern) return;
  if (m.mamba_chunk_size < 1)
    sink.error("model.mamba_chunk_size", "mamba_chunk_size_positive", "mamba_chunk_size must be at least 1. (Bridge hybrid_provider.py:177)");
  if (m.virtual_pipeline_model_parallel_size)
    sink.error("model.virtual_pipeline_model_parallel_size", "hybrid_no_vpp",
               "Virtual pipeline model parallelism is temporarily unsupported in Hybrid models due to upstream MCore HybridModel API "
               "dependency (Bridge hybrid_provider.py:289)");
  // The provider appends mtp_hybrid_override_pattern mtp_num_layers times after '/' (hybrid_provider.py:198-208);
  // a pattern that holds '/' itself parses as more depths (hybrid_layer_allocation.py:200-274).
  const std::string& mtp = m.mtp_hybrid_override_pattern.value_or("");
  if (mtp.empty() || m.mtp_num_layers <= 0 || m.mtp_use_repeated_layer || mtp.find('/') == std::string::npos) return;
  const std::string first = mtp.substr(0, mtp.find('/'));
  for (std::size_t at = 0; at != std::string::npos;) {
    const std::size_t next = mtp.find('/', at);
    if (mtp.substr(at, next == std::string::npos ? std::string::npos : next - at) != first) {
      sink.error("model.mtp_hybrid_override_pattern", "hybrid_mtp_patterns_identical",
                 "All MTP patterns must be identical (hybrid_layer_allocation.py:262): mtp_hybrid_override_pattern '" + mtp +
                     "' holds different depths");
      return;
    }
    at = next == std::string::npos ? next : next + 1;
  }
  const auto depths = static_cast<std::int64_t>(std::count(mtp.begin(), mtp.end(), '/') + 1) * m.mtp_num_layers;
  sink.warning("model.mtp_num_layers", "mtp_num_layers_vs_hybrid_pattern",
               "mtp_num_layers (" + str(m.mtp_num_layers) + ") conflicts with MTP depth count (" + str(depths) +
                   ") in the combined pattern; Bridge uses the inferred value (hybrid_provider.py:223); peakcast predicts " +
                   str(m.mtp_num_layers) + " MTP depths: set mtp_num_layers to " + str(depths) + " and a '/'-free pattern");
}

}  // namespace

void validate_hybrid(const RunSpec& spec, RuleSink& sink) {
  pattern_rules(spec, sink);
  pipeline_rules(spec.model, sink);
  mamba_cp(spec.model, sink);
  gdn(spec.model, sink);
  bridge_provider(spec, sink);
}

}  // namespace peakcast::model::detail
