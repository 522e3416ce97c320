// OptimizerConfig.__post_init__ (optimizer_config.py:404-482) and which Adam runs it.
#include "validate_detail.hpp"

namespace peakcast::model::detail {

void validate_optimizer(const RunSpec& spec, RuleSink& sink) {
  const OptimizerSpec& o = spec.optimizer;
  const bool distributed = o.use_distributed_optimizer || spec.ddp.use_distributed_optimizer;
  if (o.optimizer != "adam" && o.optimizer != "sgd") {
    sink.warning("optimizer.optimizer", "optimizer_not_modelled",
                 "optimizer \"" + o.optimizer + "\" is accepted, but peakcast models the state of adam and sgd only; it is treated as adam");
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
    const struct { const char* key; DType value; } dtypes[] = {{"main_grads_dtype", o.main_grads_dtype},
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
