// OptimizerConfig.__post_init__ (optimizer_config.py:404-482) and which Adam runs it.
#include <string>

#include "validate_detail.hpp"

namespace peakcast::model::detail {

namespace {

// Every other name goes to _get_megatron_emerging_optimizer (optimizer/__init__.py:1042, :728-842).
void emerging_optimizer(const RunSpec& spec, RuleSink& sink) {
  const OptimizerSpec& o = spec.optimizer;
  const bool legacy = o.optimizer.rfind("dist_", 0) == 0;  // "dist_muon": muon, layer-wise (:744-754)
  const std::string name = legacy ? o.optimizer.substr(5) : o.optimizer;
  const bool layer_wise = legacy || o.use_layer_wise_distributed_optimizer;
  // muon and adaptive_muon are Megatron's own (emerging_optimizers.py:463-489); the rest come from the
  // installed emerging-optimizers package's registry (:494-501), which peakcast cannot see.
  if (name != "muon" && name != "adaptive_muon")
    sink.warning("optimizer.optimizer", "optimizer_unknown",
                 "Megatron raises \"Unsupported emerging optimizer: " + name +
                     "\" (optimizer/__init__.py:771) unless the "
                     "installed emerging-optimizers package registers that name (emerging_optimizers.py:494-501)");
  if (o.fp16)
    sink.error("optimizer.fp16", "emerging_optimizer_no_fp16", "emerging optimizer with fp16 is not supported. (optimizer/__init__.py:773)");
  if (layer_wise && o.overlap_param_gather_with_optimizer_step)
    sink.error("optimizer.overlap_param_gather_with_optimizer_step", "layer_wise_vs_param_gather_overlap",
               "overlap_param_gather_with_optimizer_step is not supported with use_layer_wise_distributed_optimizer "
               "(optimizer/__init__.py:764)");
  if (layer_wise && spec.ddp.use_distributed_optimizer && spec.ddp.num_distributed_optimizer_instances > 1)
    sink.error("ddp.num_distributed_optimizer_instances", "layer_wise_single_instance",
               "Layer-wise + DistributedOptimizer split path does not yet support num_distributed_optimizer_instances > 1 "
               "(optimizer/__init__.py:838)");
  // On that split path the params the emerging optimizer leaves to adam (1-D or embedding/output,
  // emerging_optimizers.py:128-130) must not be expert-parallel (:917): the experts' biases are.
  const ModelSpec& m = spec.model;
  if (layer_wise && spec.ddp.use_distributed_optimizer && m.num_moe_experts && m.add_bias_linear)
    sink.error("optimizer.use_layer_wise_distributed_optimizer", "layer_wise_no_moe",
               "Non-emerging expert-parallel param groups are not yet supported on the layer-wise + DistributedOptimizer path "
               "(optimizer/__init__.py:917): the experts' biases (add_bias_linear) are 1-D, so adam takes them");
}

}  // namespace

void validate_optimizer(const RunSpec& spec, RuleSink& sink) {
  const OptimizerSpec& o = spec.optimizer;
  const bool distributed = o.use_distributed_optimizer || spec.ddp.use_distributed_optimizer;
  if (o.optimizer != "adam" && o.optimizer != "sgd") {
    sink.warning("optimizer.optimizer", "optimizer_not_modelled",
                 "optimizer \"" + o.optimizer + "\" is accepted, but peakcast models the state of adam and sgd only; it is treated as adam");
    emerging_optimizer(spec, sink);
  }
  if (o.use_precision_aware_optimizer) {
    if (o.optimizer != "adam")
      sink.error("optimizer.use_precision_aware_optimizer", "precision_aware_needs_adam",
                 "--use-precision-aware-optimizer only supported with adam (optimizer_config.py:433)");
    if (!distributed)
      sink.error("optimizer.use_precision_aware_optimizer", "precision_aware_needs_distributed_optimizer",
                 "--use-precision-aware-optimizer only supported with distributed optimizer (optimizer_config.py:436)");
    // Only TE's FusedAdam (or the CPU-offload HybridDeviceOptimizer) takes the dtype arguments (:444-467).
    if (!o.optimizer_cpu_offload && o.implementation != OptimizerImpl::te_fused_adam)
      sink.error("optimizer.implementation", "precision_aware_needs_te_fused_adam",
                 "--use-precision-aware-optimizer requires FusedAdam from TransformerEngine, but not found. (optimizer_config.py:465)");
    if (o.main_grads_dtype != DType::fp32 && o.main_grads_dtype != DType::bf16)
      sink.error("optimizer.main_grads_dtype", "precision_aware_dtype",
                 "main_grads_dtype must be fp32 or bf16 (the DDP grad buffer dtypes Megatron supports)");
    if (o.main_params_dtype != DType::fp32 && o.main_params_dtype != DType::fp16)
      sink.error("optimizer.main_params_dtype", "precision_aware_dtype", "main_params_dtype must be fp32 or fp16 (TE FusedAdam master_weight_dtype)");
  } else {
    // :469-482
    const struct {
      const char* key;
      DType value;
    } dtypes[] = {{"main_grads_dtype", o.main_grads_dtype},
                  {"main_params_dtype", o.main_params_dtype},
                  {"exp_avg_dtype", o.exp_avg_dtype},
                  {"exp_avg_sq_dtype", o.exp_avg_sq_dtype}};
    int line = 471;
    for (const auto& d : dtypes) {
      if (d.value != DType::fp32)
        sink.error(std::string("optimizer.") + d.key, "dtype_needs_precision_aware_optimizer",
                   std::string(d.key) + " can only be fp32 when not using precision-aware optimizer (optimizer_config.py:" +
                       std::to_string(line) + ")");
      line += 3;
    }
  }
  // :424-428 (reuse_grad_buf_for_mxfp8_param_ag is not carried; the overlap flag alone is harmless)
  if (o.overlap_param_gather_with_optimizer_step && !distributed) {
    sink.warning("optimizer.overlap_param_gather_with_optimizer_step", "param_gather_overlap_needs_distributed_optimizer",
                 "overlap_param_gather_with_optimizer_step only applies to the distributed optimizer");
  }
  if (spec.ddp.overlap_param_gather && !distributed) {
    sink.warning("ddp.overlap_param_gather", "param_gather_overlap_needs_distributed_optimizer",
                 "overlap_param_gather only applies to the distributed optimizer (there is no parameter all-gather without it)");
  }
}

}  // namespace peakcast::model::detail
