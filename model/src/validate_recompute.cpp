// Activation recompute and CPU offloading: rules 1-30 of the recompute digest (§1.2, all in
// TransformerConfig.__post_init__), plus the accepted-but-ineffective combinations of §1.4 as warnings.
#include "validate_detail.hpp"

namespace peakcast::model::detail {

namespace {

bool fused_attention(const ModelSpec& m) {
  return m.transformer_impl == TransformerImpl::transformer_engine &&
         (m.attention_backend == AttentionBackend::auto_ || m.attention_backend == AttentionBackend::flash ||
          m.attention_backend == AttentionBackend::fused);
}

void offloading(const ModelSpec& m, RuleSink& sink) {
  if (!m.cpu_offloading) return;
  // Rule 1 (transformer_config.py:1733-1738)
  if (m.cpu_offloading_num_layers < 0 || m.cpu_offloading_num_layers >= m.num_layers) {
    sink.error("model.cpu_offloading_num_layers", "cpu_offloading_num_layers_range",
               "CPU offloading can be done only for layers less than " + str(m.num_layers) + " (transformer_config.py:1737)");
  }
  // Rule 2 (transformer_config.py:1740-1743)
  if (m.pipeline_model_parallel_size > 1) {
    sink.error("model.cpu_offloading", "cpu_offloading_vs_pp",
               "Currently there is no support for Pipeline parallelism with CPU offloading (transformer_config.py:1742)");
  }
  // Rule 3 (transformer_config.py:1745-1748)
  if (m.recompute_granularity != RecomputeGranularity::none) {
    sink.error("model.cpu_offloading", "cpu_offloading_vs_recompute",
               "CPU offloading does not work when activation recomputation is enabled (transformer_config.py:1747)");
  }
  // Transformer Engine's availability (cpu_offloading_needs_te): validate_environment.cpp.
  // Rule 19 (transformer_config.py:1874-1877)
  if (m.fine_grained_activation_offloading) {
    sink.error("model.fine_grained_activation_offloading", "fine_grained_offloading_vs_cpu_offloading",
               "fine_grained_activation_offloading cannot be used together with cpu_offloading (transformer_config.py:1875)");
  }
}

void full_granularity(const ModelSpec& m, RuleSink& sink) {
  // Rule 6 (transformer_config.py:1762-1766)
  if (m.recompute_method == RecomputeMethod::none) {
    sink.error("model.recompute_method", "full_recompute_needs_method",
               "Using recompute_granularity: full so recompute_method must be \"block\" or \"uniform\" (transformer_config.py:1763)");
  }
  // Rule 7 (transformer_config.py:1768-1774); the range is only printed by Megatron, never checked.
  if (!m.recompute_num_layers) {
    sink.error("model.recompute_num_layers", "full_recompute_needs_num_layers",
               "When using recompute_granularity: full recompute_num_layers must be between 1 and "
               "num_layers_per_pipeline_rank: " +
                   str(m.num_layers / std::max<std::int64_t>(1, m.pipeline_model_parallel_size)) +
                   " (transformer_config.py:1769)");
  } else {
    const std::int64_t per_chunk = m.num_layers / std::max<std::int64_t>(1, m.pipeline_model_parallel_size) /
                                   m.virtual_pipeline_model_parallel_size.value_or(1);
    if (per_chunk > 0 && *m.recompute_num_layers > per_chunk) {
      sink.warning("model.recompute_num_layers", "recompute_num_layers_above_chunk",
                   "recompute_num_layers (" + str(*m.recompute_num_layers) + ") exceeds the " + str(per_chunk) +
                       " layers of a model chunk; Megatron does not check this and treats it as the whole chunk");
    }
  }
  // MTP under full recompute (multi_token_prediction.py:1420-1433): uniform asserts one layer at the
  // first training forward; block is skipped with a warning and the MTP layers run plain.
  if (m.mtp_num_layers > 0) {
    if (m.recompute_method == RecomputeMethod::uniform && m.recompute_num_layers && *m.recompute_num_layers != 1) {
      sink.error("model.recompute_num_layers", "mtp_full_recompute_one_layer",
                 "recompute_num_layers must be 1 for MTP recompute (multi_token_prediction.py:1426): with "
                 "mtp_num_layers > 0 and recompute_method uniform, the MTP block asserts it at the first forward");
    } else if (m.recompute_method == RecomputeMethod::block) {
      sink.warning("model.recompute_method", "mtp_block_recompute_skipped",
                   "recompute_method == 'block' is not supported for MTP yet. Skipping recompute. "
                   "(multi_token_prediction.py:1432): the MTP layers keep all their activations");
    }
  }
  // Rule 18, full part (transformer_config.py:1866-1868)
  if (m.moe_layer_recompute) {
    sink.error("model.moe_layer_recompute", "moe_layer_recompute_vs_full",
               "Do not set --moe-layer-recompute with full recompute granularity. (transformer_config.py:1867)");
  }
  // §1.4: recompute_modules is read only under selective.
  if (m.recompute_modules && !m.recompute_modules->empty()) {
    sink.warning("model.recompute_modules", "recompute_modules_ignored",
                 "recompute_modules has no effect under recompute_granularity \"full\": every consumer checks for selective");
  }
}

void selective_granularity(const ModelSpec& m, const std::vector<RecomputeTag>& tags, RuleSink& sink) {
  // Rule 8 (transformer_config.py:1775-1781)
  if (m.recompute_num_layers && m.recompute_granularity == RecomputeGranularity::selective) {
    sink.error("model.recompute_num_layers", "selective_rejects_num_layers",
               "When using recompute_granularity: selective recompute_num_layers must be None. (transformer_config.py:1778)");
  }
  // Megatron-LM's CLI also rejects a method under selective (arguments.py:1373-1376); Core ignores it.
  if (m.recompute_method != RecomputeMethod::none) {
    sink.warning("model.recompute_method", "recompute_method_ignored_under_selective",
                 "recompute_method is used only by full recompute; Megatron-LM's CLI rejects it with selective "
                 "(arguments.py:1373), Megatron Core ignores it");
  }
  // §1.4: distribute_saved_activations is passed as a literal False at every selective call site.
  if (m.distribute_saved_activations) {
    sink.warning("model.distribute_saved_activations", "distribute_saved_activations_ignored",
                 "distribute_saved_activations has no effect under selective recompute: every selective call site passes False");
  }
  const bool moe_model = is_moe_model(m) || (m.hybrid_override_pattern && m.hybrid_override_pattern->find('E') != std::string::npos);
  const bool te = m.transformer_impl == TransformerImpl::transformer_engine;
  for (const RecomputeTag t : tags) {
    const std::string path = tag_path(m, t);
    switch (t) {
      case RecomputeTag::moe_act:
        // Rule 12 (transformer_config.py:1810-1813)
        if (!m.moe_grouped_gemm)
          sink.error(path, "moe_act_needs_grouped_gemm",
                     "moe_act in recompute_modules is only supported with moe_grouped_gemm. (transformer_config.py:1811)");
        else if (!te)
          sink.warning(path, "moe_act_ineffective_local_spec",
                       "moe_act does nothing with the local spec: it always builds SequentialMLP experts (experts.py:883 is the grouped path)");
        else if (!moe_model)
          sink.warning(path, "moe_act_without_moe", "moe_act does nothing in a model without MoE layers");
        break;
      case RecomputeTag::mla_up_proj:
        // Rule 13 (transformer_config.py:1815-1819)
        if (!m.multi_latent_attention)
          sink.error(path, "mla_up_proj_needs_mla",
                     "mla_up_proj in recompute_modules is only supported with multi_latent_attention. (transformer_config.py:1816)");
        break;
      case RecomputeTag::gdn_norm_out:
        // Rule 14 (transformer_config.py:1821-1828)
        if (m.experimental_attention_variant != std::optional<std::string>("gated_delta_net"))
          sink.error(path, "gdn_norm_out_needs_gdn",
                     "gdn_norm_out in recompute_modules is only supported with experimental_attention_variant='gated_delta_net'. "
                     "(transformer_config.py:1825)");
        break;
      case RecomputeTag::core_attn:
        // Rule 15 (transformer_config.py:1830-1836), raised only where it is true: TE with a fused kernel.
        if (fused_attention(m))
          sink.warning(path, "core_attn_under_fused_attention",
                       "If you are using transformer_engine as the transformer implementation, the core_attn is from "
                       "transformer_engine and may be the fused version. For fused attention, you have no need to set "
                       "'core_attn' to recompute. (transformer_config.py:1831)");
        break;
      case RecomputeTag::shared_experts:
        // Rule 16 (transformer_config.py:1838-1845)
        if (m.moe_shared_expert_intermediate_size && m.moe_shared_expert_overlap)
          sink.error(path, "shared_experts_vs_shared_expert_overlap",
                     "shared_experts recompute cannot work with --moe-shared-expert-overlap. (transformer_config.py:1843)");
        else if (!m.moe_shared_expert_intermediate_size)
          sink.warning(path, "shared_experts_without_shared_expert",
                       "shared_experts does nothing: the model has no shared expert (moe_shared_expert_intermediate_size is None)");
        break;
      case RecomputeTag::mlp:
        // §1.4: mlp skips MoE layers (transformer_layer.py:512-514).
        if (all_layers_moe(m))
          sink.warning(path, "mlp_on_all_moe_model",
                       "mlp does nothing here: every layer's MLP is an MoE layer, and mlp recompute skips MoE layers "
                       "(transformer_layer.py:512-514)");
        break;
      case RecomputeTag::moe:
        if (!moe_model) sink.warning(path, "moe_without_moe", "moe does nothing in a model without MoE layers");
        // §1.4 [inferred]: MoELayer hands its wrapping to MoETransformerLayer under local graphs, which GPT never builds.
        else if (m.cuda_graph_impl == CudaGraphImpl::local && !m.hybrid_override_pattern)
          sink.warning(path, "moe_ineffective_local_graphs",
                       "moe does nothing in a GPT model with cuda_graph_impl local: MoELayer disables its own checkpoint "
                       "(moe_layer.py:246-250) and GPT layer specs never use MoETransformerLayer");
        break;
      case RecomputeTag::layernorm:
        // CheckpointWithoutOutput needs Transformer Engine importable: validate_environment.cpp.
        if (te && !moe_model && !m.multi_latent_attention && !m.hybrid_override_pattern) {
          // §1.4: TE GPT spec fuses the input LN into linear_qkv and the dense pre-MLP LN into linear_fc1.
          sink.warning(path, "layernorm_fused_under_te",
                       "layernorm does nothing here: with the Transformer Engine spec every norm of a dense GPT layer is "
                       "fused into linear_qkv / linear_fc1 (gpt_layer_specs.py:317-344)");
        }
        break;
    }
  }
  // Rule 17 (transformer_config.py:1847-1859)
  if (m.fp8 && m.fp8_recipe == Fp8Recipe::delayed) {
    for (const RecomputeTag t : {RecomputeTag::moe_act, RecomputeTag::layernorm}) {
      if (has(tags, t))
        sink.error(tag_path(m, t), "fp8_delayed_vs_output_discarding_recompute",
                   "Delayed scaling does not support moe_act and layernorm recompute for fp8. (transformer_config.py:1850)");
    }
  }
}

// Fine-grained activation offloading is simulated (sim/src/offload_lifetimes.cpp,
// docs/research/fine-grained-offloading-memory-facts.md) except where section 5 of those facts says not: there the
// prediction keeps the saves on the GPU, an upper bound on the peak with them offloaded.
void fine_grained_not_simulated(const ModelSpec& m, RuleSink& sink) {
  const auto warn = [&](const std::string& path, const std::string& what) {
    sink.warning(path, "fine_grained_offloading_not_simulated",
                 "fine-grained activation offloading is not simulated " + what +
                     ": the prediction keeps those saved tensors on the GPU, an upper bound on the peak with them offloaded");
  };
  if (m.architecture != Architecture::gpt)
    warn("model.architecture", "for BERT and T5 (they create no offload chunk handler and offload nothing, gpt_model.py:554-555)");
  else if (m.cuda_graph_impl != CudaGraphImpl::none)
    warn("model.cuda_graph_impl", "under CUDA graphs (the graph-capture paths of fine_grained_activation_offload.py:1332-1353)");
  if (offloads(m, "fused_group_mlp")) warn("model.offload_modules", "for fused_group_mlp (the TE op-fuser grouped MLP)");
  if (m.recompute_granularity == RecomputeGranularity::full)
    warn("model.recompute_granularity", "for fully recomputed layers (their forward saves nothing)");
}

}  // namespace

void validate_recompute(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  offloading(m, sink);
  if (m.fine_grained_activation_offloading) fine_grained_not_simulated(m, sink);
  if (m.moe_layer_recompute) {
    // Rule 18 (transformer_config.py:1861-1865); the message names a tag that does not exist ("moe_layer").
    sink.warning("model.moe_layer_recompute", "moe_layer_recompute_deprecated",
                 "--moe-layer-recompute is deprecated. Use --recompute-granularity selective --recompute-modules moe "
                 "instead (transformer_config.py:1862 says \"moe_layer\"; the tag is \"moe\"). It switches granularity to "
                 "selective and adds moe to recompute_modules.");
  }

  if (m.recompute_granularity == RecomputeGranularity::full) {
    full_granularity(m, sink);
  } else if (selective(m)) {
    selective_granularity(m, effective_tags(m), sink);
  } else {
    if (m.recompute_modules && !m.recompute_modules->empty())
      sink.warning("model.recompute_modules", "recompute_modules_ignored",
                   "recompute_modules has no effect while recompute_granularity is None");
    if (m.recompute_method != RecomputeMethod::none)
      sink.warning("model.recompute_method", "recompute_method_ignored", "recompute_method has no effect while recompute_granularity is None");
    if (m.recompute_num_layers)
      sink.warning("model.recompute_num_layers", "recompute_num_layers_ignored",
                   "recompute_num_layers has no effect while recompute_granularity is None");
    if (m.distribute_saved_activations)
      sink.warning("model.distribute_saved_activations", "distribute_saved_activations_ignored",
                   "distribute_saved_activations has no effect without full recompute");
  }
  // Rule 9 (transformer_config.py:1783-1787), inside `if recompute_granularity is not None`.
  if (m.recompute_granularity != RecomputeGranularity::none && m.distribute_saved_activations && m.sequence_parallel) {
    sink.error("model.distribute_saved_activations", "distribute_saved_activations_vs_sp",
               "distribute_saved_activations: True must be false when sequence parallel is enabled: True (transformer_config.py:1784)");
  }
  if (m.recompute_granularity == RecomputeGranularity::full && m.distribute_saved_activations &&
      m.tensor_model_parallel_size == 1) {
    sink.warning("model.distribute_saved_activations", "distribute_saved_activations_needs_tp",
                 "distribute_saved_activations splits the saved input over TP ranks; with TP 1 it saves nothing "
                 "(Megatron-LM's CLI rejects it, arguments.py:1357)");
  }

  // Rule 29, recompute part (transformer_config.py:2714-2725); Bridge repeats it in comm_overlap.py:499-511.
  if (m.overlap_moe_expert_parallel_comm) {
    if (m.recompute_granularity == RecomputeGranularity::full)
      sink.error("model.recompute_granularity", "ep_overlap_vs_full_recompute",
                 "disable full recomputation when enabling overlap_moe_expert_parallel_comm (transformer_config.py:2716)");
    if (m.recompute_method != RecomputeMethod::none)
      sink.error("model.recompute_method", "ep_overlap_vs_recompute_method",
                 "disable recomputation method when enabling overlap_moe_expert_parallel_comm (transformer_config.py:2719)");
    if (m.recompute_num_layers)
      sink.error("model.recompute_num_layers", "ep_overlap_vs_recompute_num_layers",
                 "recompute_num_layers must be None when enabling overlap_moe_expert_parallel_comm (transformer_config.py:2722)");
    // recompute_modules has defaulted to [core_attn] whatever the granularity, so only an explicit moe bites.
    if (has(effective_tags(m), RecomputeTag::moe))
      sink.error(tag_path(m, RecomputeTag::moe), "ep_overlap_vs_moe_recompute",
                 "disable moe in recompute_modules when enabling overlap_moe_expert_parallel_comm (transformer_config.py:2725)");
  }
}

}  // namespace peakcast::model::detail
