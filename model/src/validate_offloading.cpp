// Fine-grained activation offloading (TransformerConfig.__post_init__, transformer_config.py:1874-1942,
// :2622-2667) and the pipeline's partial-checkpoint count. Formerly checked on the raw JSON
// (the removed spec_untyped_rules.cpp); same ids and messages.
#include <algorithm>
#include <string>

#include "validate_detail.hpp"

namespace peakcast::model::detail {

namespace {

void offload_modules(const ModelSpec& m, RuleSink& sink) {
  static const char* const kAllowed[] = {"core_attn", "attn_proj", "expert_fc1", "fused_group_mlp",
                                         "moe_act", "attn_norm", "mlp_norm", "qkv_linear"};
  if (m.offload_modules.empty()) {
    sink.error("model.offload_modules", "offload_modules_required",
               "fine_grained_activation_offloading needs a non-empty offload_modules. (transformer_config.py:1878)");
    return;
  }
  for (std::size_t i = 0; i < m.offload_modules.size(); ++i) {
    const std::string& e = m.offload_modules[i];
    if (std::none_of(std::begin(kAllowed), std::end(kAllowed), [&](const char* a) { return e == a; }))
      sink.error("model.offload_modules[" + std::to_string(i) + "]", "offload_module_unknown",
                 "Invalid choice for offload_modules: \"" + e.substr(0, 60) +
                     "\". Allowed modules are: core_attn, attn_proj, expert_fc1, fused_group_mlp, moe_act, attn_norm, "
                     "mlp_norm, qkv_linear. (transformer_config.py:1889)");
  }
  if (offloads(m, "attn_proj") && !offloads(m, "core_attn"))
    sink.error("model.offload_modules", "attn_proj_offload_needs_core_attn",
               "attn_proj cannot be set to offload_modules alone without core_attn because the input of attn_proj is the "
               "output of core_attn, which is needed in core_attn.backward(). (transformer_config.py:1895)");
  if (offloads(m, "fused_group_mlp")) {
    if (!m.use_transformer_engine_op_fuser)
      sink.error("model.offload_modules", "fused_group_mlp_needs_op_fuser",
                 "fused_group_mlp requires use_transformer_engine_op_fuser. (transformer_config.py:1923)");
    if (offloads(m, "expert_fc1") || offloads(m, "moe_act"))
      sink.error("model.offload_modules", "fused_group_mlp_vs_partial",
                 "fused_group_mlp offloads the whole fused grouped MLP and cannot be combined with expert_fc1 or moe_act. "
                 "(transformer_config.py:1925)");
  }
}

void offload_sizes(const ModelSpec& m, RuleSink& sink) {
  if (m.min_offloaded_tensor_size < 0)
    sink.error("model.min_offloaded_tensor_size", "min_offloaded_tensor_size_range",
               "min_offloaded_tensor_size must be non-negative. (transformer_config.py:1912)");
  if (m.activation_offload_fraction < 0.0 || m.activation_offload_fraction > 1.0)
    sink.error("model.activation_offload_fraction", "activation_offload_fraction_range",
               "activation_offload_fraction must be in range [0, 1]. (transformer_config.py:1915)");
  if (m.delta_offload_bytes_across_pp_ranks < 0)
    sink.error("model.delta_offload_bytes_across_pp_ranks", "delta_offload_bytes_range",
               "delta_offload_bytes_across_pp_ranks must be non-negative. (transformer_config.py:1918)");
}

// Under per-layer or full-iteration CUDA graphs (transformer_config.py:2622-2667): the first that applies.
void offload_under_graphs(const ModelSpec& m, RuleSink& sink) {
  const CudaGraphImpl impl = m.cuda_graph_impl;
  if (impl == CudaGraphImpl::none) return;
  const char* scope_path = "model.cuda_graph_modules";
  const bool moe_parts_only = !m.offload_modules.empty() && std::all_of(m.offload_modules.begin(), m.offload_modules.end(), [](const std::string& e) {
    return e == "expert_fc1" || e == "moe_act" || e == "fused_group_mlp";
  });
  if (impl == CudaGraphImpl::local && !moe_parts_only) {
    sink.error("model.offload_modules", "offload_local_graph_modules",
               "fine-grained activation offloading with cuda_graph_impl='local' only supports offload_modules 'expert_fc1', "
               "'moe_act', and 'fused_group_mlp'. (transformer_config.py:2627)");
    return;
  }
  if (impl == CudaGraphImpl::local && m.cuda_graph_modules.empty()) {
    sink.error(scope_path, "offload_local_graph_whole_layer",
               "fine-grained activation offloading with cuda_graph_impl='local' is not supported with whole-layer CUDA graph "
               "capture. (transformer_config.py:2633)");
    return;
  }
  const bool local_partial_moe = impl == CudaGraphImpl::local && moe_parts_only && !has_graph_module(m, "moe");
  if (impl != CudaGraphImpl::transformer_engine && impl != CudaGraphImpl::full_iteration && !local_partial_moe) {
    sink.error("model.cuda_graph_impl", "offload_graph_impl",
               "fine-grained activation offloading is only supported with transformer_engine CUDA graph implementation or "
               "local CUDA graph implementation with partial MoE offload. (transformer_config.py:2643)");
    return;
  }
  if (has_graph_module(m, "moe")) {
    sink.error(scope_path, "offload_graph_moe_scope",
               "Token-drop MoE is temporarily not supported with activation offloading. (transformer_config.py:2653)");
    return;
  }
  if (m.cuda_graph_warmup_steps <= 0) {
    sink.error("model.cuda_graph_warmup_steps", "offload_graph_warmup_steps",
               "cuda_graph_warmup_steps must be greater than 0 when enabling fine-grained activation offloading. "
               "(transformer_config.py:2656)");
    return;
  }
  if (impl == CudaGraphImpl::full_iteration &&
      (!m.fine_grained_offloading_max_inflight_offloads || *m.fine_grained_offloading_max_inflight_offloads < 0))
    sink.error("model.fine_grained_offloading_max_inflight_offloads", "offload_full_graph_inflight",
               "fine_grained_offloading_max_inflight_offloads must be a non-negative integer when using fine-grained activation "
               "offloading with full-iteration CUDA graphs. (transformer_config.py:2661)");
}

}  // namespace

void validate_offloading(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  // The pipelined schedules only hand a per-micro-batch flag to forward_step_func as a third argument
  // (schedules.py:1197, :1597, :2265); no Megatron Core model reads it, and pretrain_gpt.py's forward_step
  // would take it as return_schedule_plan. What a rank holds does not change, so say so instead of
  // calling it unsimulated.
  if (m.num_microbatches_with_partial_activation_checkpoints) {
    sink.warning("model.num_microbatches_with_partial_activation_checkpoints", "partial_activation_checkpoints_unread",
                 "num_microbatches_with_partial_activation_checkpoints is only passed to the forward-step function under "
                 "pipeline parallelism (schedules.py:1597, :2265); Megatron Core's models do not read it, so every "
                 "micro-batch is checkpointed by the recompute policy alone (what is predicted)");
  }
  // moe_paged_stash excludes layer-level CPU offloading (transformer_config.py:1930-1932)
  if (m.moe_paged_stash && m.cpu_offloading) {
    sink.error("model.moe_paged_stash", "paged_stash_vs_cpu_offloading",
               "moe_paged_stash cannot be enabled with cpu_offloading. (transformer_config.py:1932)");
  }
  if (!m.fine_grained_activation_offloading) return;
  offload_modules(m, sink);
  offload_sizes(m, sink);
  // Fine-grained offloading inside a recomputed MoE (rule 19, transformer_config.py:1900-1908)
  if (m.recompute_granularity == RecomputeGranularity::selective && m.recompute_modules && has(*m.recompute_modules, RecomputeTag::moe)) {
    for (const char* inner : {"moe_act", "expert_fc1", "fused_group_mlp"}) {
      if (offloads(m, inner))
        sink.error("model.offload_modules", "offload_inside_moe_recompute",
                   std::string("offload_modules must not contain '") + inner +
                       "' when 'moe' is recomputed: the MoE checkpoint already drops it. (transformer_config.py:1904)");
    }
  }
  offload_under_graphs(m, sink);
  // TransformerLayer._set_offload_modules (transformer_layer.py:1443-1476) turns these off with a log line.
  if (m.cuda_graph_impl == CudaGraphImpl::none) return;
  const bool attn = has_graph_module(m, "attn"), mlp = has_graph_module(m, "mlp"), router = has_graph_module(m, "moe_router");
  if (offloads(m, "attn_norm") && attn)
    sink.warning("model.offload_modules", "offload_norm_disabled_by_graph",
                 "attn_norm offloading is not supported with attn cudagraph. Disabling attn_norm offloading. (transformer_layer.py:1448)");
  const bool moe_layers = is_moe_model(m) || (m.hybrid_override_pattern && m.hybrid_override_pattern->find('E') != std::string::npos);
  const bool mlp_norm_off = (moe_layers && (attn || router)) || (!all_layers_moe(m) && attn != mlp);
  if (offloads(m, "mlp_norm") && mlp_norm_off)
    sink.warning("model.offload_modules", "offload_norm_disabled_by_graph",
                 "mlp_norm offloading is not supported with the current cudagraph scope. Disabling mlp_norm offloading. "
                 "(transformer_layer.py:1474)");
}

}  // namespace peakcast::model::detail
