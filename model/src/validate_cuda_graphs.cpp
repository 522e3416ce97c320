// CUDA graphs (transformer_config.py:2487-2620 and the EP overlap block at :2764-2773).
#include <exception>

#include "layer_plan_internal.hpp"
#include "validate_detail.hpp"

namespace peakcast::model::detail {

namespace {

// The scope list as written (cuda_graph_config.py normalize, :30-45, :116-126; transformer_config.py:2436-2467),
// the graph-scope rule of GTP formerly checked on the raw JSON, and Bridge's and the helpers' own checks.
void graph_scopes(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  const CudaGraphImpl impl = m.cuda_graph_impl;
  const char* modules = "model.cuda_graph_modules";
  if (m.cuda_graph_modules_full_with_others)
    sink.error(modules, "cuda_graph_full_with_others", "full scope cannot be used with other scopes. (cuda_graph_config.py:40)");
  else if (m.cuda_graph_modules_full_listed && impl != CudaGraphImpl::none)
    sink.warning(modules, "cuda_graph_full_scope_deprecated",
                 "full scope is deprecated. Use empty cuda_graph_modules to capture the whole layer. (transformer_config.py:2441)");
  if (m.cuda_graph_modules_full_iteration_inference) {
    if (impl == CudaGraphImpl::transformer_engine || impl == CudaGraphImpl::full_iteration)
      sink.error(modules, "full_iteration_inference_scope_impl",
                 "cuda_graph_modules='full_iteration_inference' cannot be combined with cuda_graph_impl transformer_engine or "
                 "full_iteration. (cuda_graph_config.py:118)");
    else if (impl == CudaGraphImpl::none)
      sink.warning(modules, "cuda_graph_inference_scope_ignored",
                   "cuda_graph_modules 'full_iteration_inference' is deprecated and has no effect when cuda_graph_impl='none'. "
                   "(transformer_config.py:2450)");
  }
  // Rule 28: GTP weight remat + local graphs + fp8 cannot recompute the captured shared expert (transformer_config.py:2605-2613).
  if (m.gtp_weight_remat_size > 1 && impl == CudaGraphImpl::local && (m.fp8 || m.fp4) && m.moe_shared_expert_intermediate_size &&
      !m.moe_shared_expert_overlap && m.recompute_granularity == RecomputeGranularity::selective && m.recompute_modules &&
      has(*m.recompute_modules, RecomputeTag::shared_experts) &&
      (m.cuda_graph_modules.empty() || has_graph_module(m, "moe") || has_graph_module(m, "moe_router"))) {
    sink.error("model.recompute_modules", "gtp_local_graph_shared_experts",
               "GTP + local CUDA graphs that capture shared_experts (moe_router/moe scope) cannot recompute it under fp8/fp4. "
               "(transformer_config.py:2613)");
  }
  if (impl == CudaGraphImpl::none) return;
  if (spec.bridge_training) {
    // validate_cuda_graph_configuration (bridge:src/megatron/bridge/utils/cuda_graph.py:137-152), from
    // ConfigContainer.validate and GPTModelProvider.provide (gpt_provider.py:232-237).
    if (impl == CudaGraphImpl::local)
      sink.error("model.cuda_graph_impl", "bridge_local_graphs_full_iteration_only",
                 "Megatron Bridge supports model.cuda_graph_impl=\"local\" only for full-iteration CUDA graphs. Use "
                 "model.cuda_graph_impl=\"transformer_engine\" for scoped CUDA graph capture such as \"attn\" or \"mlp\". "
                 "(Bridge utils/cuda_graph.py:148)");
    if (!m.use_te_rng_tracker)
      sink.error("model.use_te_rng_tracker", "cuda_graphs_need_te_rng_tracker",
                 "Transformer engine's RNG tracker is required for cudagraphs, it can be enabled with use_te_rng_tracker=True. "
                 "(Bridge gpt_provider.py:234)");
  }
  // TECudaGraphHelper skips capture on a rank with no graphable layer (cuda_graphs.py:2733-2736).
  if (impl == CudaGraphImpl::transformer_engine && m.pipeline_model_parallel_layout) {
    try {
      const auto stages = expand_pipeline_layout(*m.pipeline_model_parallel_layout);
      const auto pp = static_cast<std::size_t>(std::max<std::int64_t>(1, m.pipeline_model_parallel_size));
      for (std::size_t r = 0; r < pp && stages.size() % pp == 0; ++r) {
        bool layers = false;
        for (std::size_t v = r; v < stages.size(); v += pp) layers = layers || stages[v].find('t') != std::string::npos;
        if (!layers) {
          sink.warning("model.pipeline_model_parallel_layout", "te_graph_nothing_to_capture",
                       "TECudaGraphHelper: No graphable layers found. Skipping CUDA graph capture. (cuda_graphs.py:2735): pipeline "
                       "rank " +
                           std::to_string(r) + " holds no decoder layer and runs eager");
          break;
        }
      }
    } catch (const std::exception&) {
    }
  }
  // TECudaGraphHelper (cuda_graphs.py:2116-2122): the environment variable is not part of a spec.
  if (impl == CudaGraphImpl::transformer_engine && spec.cluster.expandable_segments)
    sink.warning("cluster.expandable_segments", "te_graphs_vs_expandable_segments",
                 "cuda_graph_impl transformer_engine with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True asserts unless the "
                 "environment sets NCCL_GRAPH_REGISTER=0 (cuda_graphs.py:2116)");
}

}  // namespace

void validate_cuda_graphs(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  const CudaGraphImpl impl = m.cuda_graph_impl;
  const char* modules = "model.cuda_graph_modules";
  graph_scopes(spec, sink);

  if (impl == CudaGraphImpl::none) {
    if (!m.cuda_graph_modules.empty())
      sink.warning(modules, "cuda_graph_modules_ignored", "cuda_graph_modules has no effect when cuda_graph_impl=\"none\" (transformer_config.py:1044)");
    return;
  }
  // :2487-2489
  if (impl == CudaGraphImpl::full_iteration && !m.cuda_graph_modules.empty()) {
    sink.error(modules, "full_iteration_graph_modules_empty",
               "cuda_graph_modules must be empty when cuda_graph_impl=\"full_iteration\". (transformer_config.py:2489)");
  }
  // Rule 21 (:2491-2494)
  if (m.cpu_offloading && impl != CudaGraphImpl::full_iteration) {
    sink.error("model.cuda_graph_impl", "cuda_graphs_vs_cpu_offloading", "CUDA graphs not supported with CPU offloading. (transformer_config.py:2494)");
  }

  // Capture scopes of the per-layer implementations (:2497-2545). "local" treats moe_router and
  // moe_preprocess as one scope (:2498-2508).
  std::vector<std::string> scopes = m.cuda_graph_modules;
  auto in = [&](const char* s) { return std::find(scopes.begin(), scopes.end(), s) != scopes.end(); };
  if (impl == CudaGraphImpl::local && (in("moe_router") || in("moe_preprocess"))) {
    if (!in("moe_router")) scopes.push_back("moe_router");
    if (!in("moe_preprocess")) scopes.push_back("moe_preprocess");
  }
  if (impl == CudaGraphImpl::local || impl == CudaGraphImpl::transformer_engine) {
    if (in("moe") && in("moe_router"))
      sink.error(modules, "graph_moe_and_moe_router", "cuda_graph_modules must not contain both moe and moe_router. (transformer_config.py:2512)");
    if (in("moe_preprocess") && !in("moe_router"))
      sink.error(modules, "graph_moe_preprocess_needs_router",
                 "moe_preprocess cuda graph is only supported with moe_router cuda graph. (transformer_config.py:2516)");
    if (!m.num_moe_experts || *m.num_moe_experts <= 1) {
      if (in("moe") || in("moe_router"))
        sink.error(modules, "graph_moe_needs_moe", "moe cuda graph is only supported for MoE. (transformer_config.py:2521)");
    } else {
      const auto* freq = std::get_if<std::int64_t>(&m.moe_layer_freq);
      const auto* list = std::get_if<std::vector<std::int64_t>>(&m.moe_layer_freq);
      const bool no_dense = (freq && *freq == 1) || (list && std::find(list->begin(), list->end(), 0) == list->end());
      if (no_dense && in("mlp"))
        sink.error(modules, "graph_mlp_needs_dense_layers",
                   "mlp cuda graph is only supported for dense layers, but not found in the model. (transformer_config.py:2528)");
      if (!m.moe_expert_capacity_factor || !m.moe_pad_expert_input_to_capacity) {
        if (in("moe"))
          sink.error(modules, "graph_moe_needs_drop_and_pad",
                     "moe cuda graph is only supported with drop-padding MoE. (transformer_config.py:2537)");
        if (m.moe_token_dispatcher_type == Dispatcher::alltoall && m.moe_expert_capacity_factor && in("moe_preprocess"))
          sink.error(modules, "graph_moe_preprocess_host_sync",
                     "moe_preprocess cuda graph is not supported when there are DtoH copies and synchronizations in the "
                     "preprocess step. (transformer_config.py:2543)");
      }
    }
  }

  // Recompute against graphs (rules 22-27, :2547-2599)
  if (m.recompute_granularity == RecomputeGranularity::full) {
    if (impl != CudaGraphImpl::full_iteration)
      sink.error("model.recompute_granularity", "full_recompute_needs_full_iteration_graph",
                 "full recompute is only supported with full iteration CUDA graph. (transformer_config.py:2550)");
  } else if (selective(m)) {
    const auto tags = effective_tags(m);
    if (impl == CudaGraphImpl::transformer_engine && has(tags, RecomputeTag::moe) && in("moe_router"))
      sink.error(tag_path(m, RecomputeTag::moe), "moe_recompute_vs_moe_router_graph",
                 "moe recompute is not supported with moe_router CUDA graph with: --cuda-graph-impl transformer_engine. "
                 "(transformer_config.py:2560)");
    // A graphed recompute region cannot draw random numbers (:2567-2599).
    const bool full_cudagraph = impl == CudaGraphImpl::full_iteration || m.cuda_graph_modules.empty();
    if (m.attention_dropout != 0.0 && has(tags, RecomputeTag::core_attn) && (full_cudagraph || in("attn")))
      sink.error(tag_path(m, RecomputeTag::core_attn), "attention_dropout_vs_graphed_core_attn",
                 "attention dropout is not supported with graphed attention recomputation. (transformer_config.py:2576)");
    if (m.hidden_dropout != 0.0) {
      if (has(tags, RecomputeTag::mlp) && (full_cudagraph || in("mlp")))
        sink.error(tag_path(m, RecomputeTag::mlp), "hidden_dropout_vs_graphed_mlp_moe",
                   "hidden dropout is not supported with graphed MLP/MoE recomputation. (transformer_config.py:2591)");
      if (has(tags, RecomputeTag::moe) && (full_cudagraph || in("moe")))
        sink.error(tag_path(m, RecomputeTag::moe), "hidden_dropout_vs_graphed_mlp_moe",
                   "hidden dropout is not supported with graphed MLP/MoE recomputation. (transformer_config.py:2591)");
    }
    if (m.moe_input_jitter_eps && has(tags, RecomputeTag::moe) && (full_cudagraph || in("moe")))
      sink.error(tag_path(m, RecomputeTag::moe), "jitter_vs_graphed_moe_recompute",
                 "moe_input_jitter_eps is not supported with graphed moe recomputation. (transformer_config.py:2598)");
  }

  // TransformerLayer drops the pre-MLP norm's recompute of an MoE layer whose router is graphed
  // (transformer_layer.py:456-495, can_recompute_pre_mlp_layernorm_for_cudagraph); a log line only.
  if (selective(m) && has(effective_tags(m), RecomputeTag::layernorm) && is_moe_model(m) && impl != CudaGraphImpl::local &&
      in("moe_router")) {
    const bool shared_overlap = m.moe_shared_expert_intermediate_size && m.moe_shared_expert_overlap;
    const bool preprocess_ok = in("moe_preprocess") && (m.moe_token_dispatcher_type == Dispatcher::alltoall || m.moe_latent_size);
    if (shared_overlap || !preprocess_ok)
      sink.warning(tag_path(m, RecomputeTag::layernorm), "pre_mlp_layernorm_recompute_disabled_by_router_graph",
                   shared_overlap ? "pre_mlp_layernorm recompute is not supported with moe router cudagraph + shared expert overlap. "
                                    "Disabling pre_mlp_layernorm recompute. (transformer_layer.py:471): the pre-MLP norm output is kept"
                                  : "pre_mlp_layernorm recompute is only supported with moe router + preprocess cudagraph will alltoall "
                                    "token dispatcher or latent MoE. Disabling pre_mlp_layernorm recompute. (transformer_layer.py:489): "
                                    "the pre-MLP norm output is kept");
  }
  // EP overlap with TE graphs (:2764-2773)
  if (m.overlap_moe_expert_parallel_comm && impl == CudaGraphImpl::transformer_engine && (in("moe") || in("mlp")))
    sink.error(modules, "ep_overlap_vs_graphed_mlp_moe",
               "CUDA graph scope on moe and mlp is not supported with overlap_moe_expert_parallel_comm (transformer_config.py:2770)");
}

}  // namespace peakcast::model::detail
