// What the run needs from its installation: Transformer Engine importable (cluster.transformer_engine_available,
// default true as in every NeMo / Megatron-Bridge container). Megatron's condition is whether TE imports,
// not transformer_impl: the local spec runs these paths too when TE is installed.
#include "validate_detail.hpp"

namespace peakcast::model::detail {

namespace {

// CheckpointWithoutOutput(): `self.fp8 = fp8 is not None` (random.py:744) is true for its default
// fp8=False, so forward calls FP8GlobalStateManager / activation_recompute_forward (random.py:697-700),
// names bound only when `import transformer_engine` succeeded (:84-91): NameError at the first forward.
void checkpoint_without_output(const ModelSpec& m, const ClusterSpec& c, RuleSink& sink) {
  if (!selective(m)) return;
  const auto tags = effective_tags(m);
  const bool local = m.transformer_impl == TransformerImpl::local;
  // Its users: the input / pre-MLP norms (transformer_layer.py:619, :752), the grouped experts'
  // activation (experts.py:883, TEGroupedMLP only: the local spec builds SequentialMLP) and GDN's
  // output norm (ssm/gated_delta_net/gdn.py:256).
  for (const RecomputeTag t : {RecomputeTag::layernorm, RecomputeTag::moe_act, RecomputeTag::gdn_norm_out}) {
    if (!has(tags, t) || (t == RecomputeTag::moe_act && local)) continue;
    const std::string tag = to_string(t);
    if (!c.transformer_engine_available && !c.calibration_harness) {
      sink.error(tag_path(m, t), "checkpoint_without_output_needs_te",
                 tag +
                     " recompute uses CheckpointWithoutOutput, whose default fp8=False still takes Transformer Engine's "
                     "FP8 path (random.py:744: self.fp8 = fp8 is not None); without Transformer Engine "
                     "(cluster.transformer_engine_available false) the first forward fails with NameError: name "
                     "'FP8GlobalStateManager' is not defined (random.py:697), whatever transformer_impl says");
    } else if (local && t == RecomputeTag::layernorm && c.transformer_engine_available) {
      sink.warning(tag_path(m, t), "checkpoint_without_output_uses_te",
                   "layernorm recompute with transformer_impl local runs only because Transformer Engine is importable "
                   "(cluster.transformer_engine_available, default true): CheckpointWithoutOutput enters TE's FP8 state "
                   "even with FP8 off (random.py:697, :744); without TE it fails with NameError");
    }
  }
}

// Features whose module is Transformer Engine's whatever transformer_impl says.
void te_features(const ModelSpec& m, RuleSink& sink) {
  const auto refuse = [&](const char* key, const std::string& msg) {
    sink.error(std::string("model.") + key, "needs_transformer_engine", msg + "; cluster.transformer_engine_available is false");
  };
  const bool moe = is_moe_model(m) || (m.hybrid_override_pattern && m.hybrid_override_pattern->find('E') != std::string::npos);
  if (m.cuda_graph_impl == CudaGraphImpl::transformer_engine)
    refuse("cuda_graph_impl", "CUDA Graphs are not supported without TE. (cuda_graphs.py:2112)");
  if (m.apply_rope_fusion && !m.multi_latent_attention)
    refuse("apply_rope_fusion", "apply_rope_fusion is not available. Please install TE >= 1.4. (transformer_config.py:2211)");
  if (m.cross_entropy_loss_fusion && m.cross_entropy_fusion_impl == CrossEntropyImpl::te)
    refuse("cross_entropy_fusion_impl", "Trying to use a TE block when it's not present. (language_module.py:196)");
  if (moe && m.moe_latent_size) refuse("moe_latent_size", "TransformerEngine is required for MoE latent projections. (moe_layer.py:266)");
  if (moe && m.moe_permute_fusion)
    refuse("moe_permute_fusion", "fused permutation is not available. Please install TE >= 2.1.0. (transformer_config.py:2693)");
  if (moe && m.moe_shared_expert_intermediate_size && m.use_grouped_gemm_for_shared_expert)
    refuse("use_grouped_gemm_for_shared_expert",
           "FusedSharedExpertMLP requires Transformer Engine when use_grouped_gemm_for_shared_expert=True. "
           "(shared_experts.py:398)");
  if (m.tp_comm_overlap)
    refuse("tp_comm_overlap",
           "tensor-parallel communication overlap runs on Transformer Engine's userbuffers (initialize_ub; Bridge "
           "initialize.py:339 imports it)");
}

}  // namespace

void validate_environment(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  const ClusterSpec& c = spec.cluster;
  const bool te = c.transformer_engine_available;
  if (!te && m.transformer_impl == TransformerImpl::transformer_engine) {
    sink.error("model.transformer_impl", "transformer_impl_needs_te",
               "transformer_impl transformer_engine builds Transformer Engine modules (TENorm, TELayerNormColumnParallelLinear, "
               "TEDotProductAttention: gpt_layer_specs.py get_gpt_layer_with_transformer_engine_spec), but "
               "cluster.transformer_engine_available is false");
  }
  checkpoint_without_output(m, c, sink);
  if (!te) te_features(m, sink);
  // transformer_block.py:298-317: without TE there is no get_cpu_offload_context.
  if (m.cpu_offloading && !te) {
    sink.error("model.cpu_offloading", "cpu_offloading_needs_te",
               "CPU Offloading is enabled when TE is not present (transformer_block.py:315): layer-level offloading is "
               "Transformer Engine's cpu_offload context, and cluster.transformer_engine_available is false");
  }
  // Measured on the H200 without Transformer Engine: the first offload context raises at the first
  // forward (fine_grained_activation_offload.py:784-788 sets TE's cpu_offload.CPUOffloadEnabled).
  if (m.fine_grained_activation_offloading && !te) {
    sink.error("model.fine_grained_activation_offloading", "fine_grained_offloading_needs_te",
               "fine-grained activation offloading needs Transformer Engine installed: its context sets TE's cpu_offload "
               "flag and raises \"TE CPU offload is not available\" at the first forward without it "
               "(fine_grained_activation_offload.py:788); cluster.transformer_engine_available is false");
  } else if (m.fine_grained_activation_offloading && m.transformer_impl == TransformerImpl::local) {
    sink.warning("model.fine_grained_activation_offloading", "fine_grained_offloading_needs_te",
                 "fine-grained activation offloading needs Transformer Engine installed, also with the local "
                 "transformer_impl: its context sets TE's cpu_offload flag and raises \"TE CPU offload is not "
                 "available\" at the first forward without it (fine_grained_activation_offload.py:788)");
  }
}

}  // namespace peakcast::model::detail
