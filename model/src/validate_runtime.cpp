// Refusals that no config check makes: the run builds, then fails in its first training forward or
// backward (Megatron Core 24bad8e6). Each names the line that fails and why.
#include "validate_detail.hpp"

namespace peakcast::model::detail {

namespace {

bool has_moe_layers(const ModelSpec& m) {
  return is_moe_model(m) || (m.hybrid_override_pattern && m.hybrid_override_pattern->find('E') != std::string::npos);
}

// The checkpointed dense MLP returns linear_fc2's bias Parameter as its second output.
void mlp_recompute_with_bias(const ModelSpec& m, RuleSink& sink) {
  if (!selective(m) || !has(effective_tags(m), RecomputeTag::mlp) || !m.add_bias_linear || all_layers_moe(m)) return;
  const std::string path = tag_path(m, RecomputeTag::mlp);
  const std::string mechanism =
      "recompute_modules 'mlp' with add_bias_linear: tensor_parallel.checkpoint wraps the dense MLP "
      "(transformer_layer.py:882), which returns (output, linear_fc2.bias) with the bias the nn.Parameter itself "
      "(tensor_parallel/layers.py:1483; TE's return_bias likewise). CheckpointFunction makes that Parameter an output of "
      "its own node, and the node's backward calls torch.autograd.backward on it (random.py:656-660), re-entering the "
      "same node without end: no gradient reaches the weights and memory grows every level until the first backward "
      "runs out of memory (measured on an H200: 2,534 nested CheckpointFunction calls, 138,256 MiB allocated; "
      "docs/megatron-refusals/part-a.md). Set add_bias_linear false or drop 'mlp'";
  if (!m.fp8 && !m.fp4) {
    sink.error(path, "mlp_recompute_with_linear_bias", mechanism);
  } else {
    sink.warning(path, "mlp_recompute_with_linear_bias",
                 "with fp8/fp4 the MLP goes through te_checkpoint (transformer_layer.py:870-880), Transformer Engine's "
                 "reentrant checkpoint with the same structure; probably the same unbounded backward as without it (not "
                 "run): " +
                     mechanism);
  }
}

}  // namespace

void validate_runtime(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  // MoELayer.forward in training (moe_layer.py:630-634): attention TP without sequence parallelism,
  // whatever the expert parallelism (model_parallel_config.py:562 only warns for EP > 1).
  if (has_moe_layers(m) && m.tensor_model_parallel_size > 1 && !m.sequence_parallel) {
    sink.error("model.sequence_parallel", "moe_tp_needs_sequence_parallel",
               "During training, performance may degrade if MoE and tensor parallelism are enabled without also enabling "
               "sequence parallelism. (moe_layer.py:630): a ValueError at the first training forward of every MoE layer "
               "when tensor_model_parallel_size > 1 and sequence_parallel is false");
  }
  mlp_recompute_with_bias(m, sink);
  // MoELayer.preprocess in training (moe_layer.py:470-475): only the inference dispatcher takes both.
  if (has_moe_layers(m) && m.moe_latent_size && m.moe_shared_expert_overlap) {
    sink.error("model.moe_shared_expert_overlap", "latent_vs_shared_expert_overlap",
               "Shared expert overlap with MoE latent projections is not supported during training. Disable "
               "moe_shared_expert_overlap. (moe_layer.py:472)");
  }
  // TransformerLayer.__init__ builds its CUDA-graph manager (transformer_layer.py:327 -> module.py:173-175)
  // before it sets is_moe_layer (:443); the 'mlp'-without-'attn' branch reads it (:552).
  if (m.cuda_graph_impl == CudaGraphImpl::local && has_graph_module(m, "mlp") && !has_graph_module(m, "attn")) {
    sink.error("model.cuda_graph_modules", "local_graph_mlp_scope_unbuildable",
               "cuda_graph_impl local with cuda_graph_modules naming 'mlp' but not 'attn': TransformerLayer.__init__ creates "
               "its CUDA-graph manager (transformer_layer.py:327, module.py:173-175) before it sets is_moe_layer (:443), and "
               "the mlp-scope check at transformer_layer.py:552 reads it: AttributeError at construction (read from the "
               "source, not run)");
  }
}

}  // namespace peakcast::model::detail
