// Optimizer bytes per parameter element the optimizer owns (the DistOpt shard, or every parameter
// without DistOpt), and what step() allocates on top.
#include "static_memory_internal.hpp"

namespace peakcast::model::detail {

namespace {

constexpr std::int64_t kFp32Bytes = 4;
// torch.optim.AdamW (foreach, the default on CUDA) keeps one temporary per parameter in the
// parameter dtype during step(): _multi_tensor_adam computes
// exp_avg_sq_sqrt = torch._foreach_sqrt(exp_avg_sqs) for the whole group before the update
// (torch/optim/adam.py _multi_tensor_adam; AdamW shares it since PyTorch 2.x). Megatron's main
// params are fp32, so one fp32 copy of the owned shard.
constexpr std::int64_t kTorchAdamForeachTemporaries = 1;

bool is_low_precision(DType t) { return t == DType::bf16 || t == DType::fp16 || t == DType::uint8 || t == DType::fp8; }

}  // namespace

bool te_keeps_master_weights(const RunSpec& spec) {
  const OptimizerSpec& o = spec.optimizer;
  if (!o.use_precision_aware_optimizer) return false;
  // fp8_recipe None or 'delayed' (optimizer_config.py:404-411). MB copies
  // MixedPrecisionConfig.fp8_recipe ("tensorwise" by default, even for bf16) into the optimizer
  // config, so a bf16 MB recipe takes the MCore-master path unless main_params_dtype != fp32.
  const bool delayed_or_none = spec.model.fp8_recipe == Fp8Recipe::delayed;
  return o.main_params_dtype != DType::fp32 || delayed_or_none || o.optimizer_cpu_offload;
}

bool expert_params_have_own_optimizer(const RunSpec& spec) {
  const ModelSpec& m = spec.model;
  if (!m.num_moe_experts) return false;
  const std::int64_t etp = m.expert_tensor_parallel_size.value_or(m.tensor_model_parallel_size);
  return m.expert_model_parallel_size > 1 || etp != m.tensor_model_parallel_size;
}

OptimizerBytes optimizer_bytes(const RunSpec& spec, const Derived& d, DType param_dtype, DType grad_dtype) {
  (void)d;
  const OptimizerSpec& o = spec.optimizer;
  OptimizerBytes b;
  if (o.optimizer_cpu_offload) return b;  // HybridDeviceOptimizer keeps state on the host
  const bool low_precision = is_low_precision(param_dtype);
  const bool te_master = te_keeps_master_weights(spec);
  const bool adam = o.optimizer == "adam";

  // Main (master) params, created when the optimizer is built: a fp32 clone of each owned bf16 /
  // fp16 / FP8 range (distrib_optimizer.py:347-480, :445; Float16OptimizerWithFloat16Params
  // without DistOpt). fp32 params are updated in place (views). Skipped when TE keeps them.
  if (low_precision && !te_master) b.main_param = kFp32Bytes;

  // Lazily created state (first step()): Adam exp_avg + exp_avg_sq in their dtypes (TE FusedAdam
  // initialize_state); SGD a fp32 momentum buffer.
  if (adam) {
    const bool precision_aware = o.use_precision_aware_optimizer;
    const DType avg = precision_aware ? o.exp_avg_dtype : DType::fp32;
    const DType avg_sq = precision_aware ? o.exp_avg_sq_dtype : DType::fp32;
    b.state_tensors = {dtype_bytes(avg), dtype_bytes(avg_sq)};
    if (te_master && low_precision) {
      // TE FusedAdam master_param: int16 remainder bits when store_param_remainders with a fp32
      // master over bf16 params, else a copy in main_params_dtype.
      const bool remainders = o.store_param_remainders && o.main_params_dtype == DType::fp32 && param_dtype == DType::bf16;
      b.state_tensors.push_back(remainders ? dtype_bytes(DType::int16) : dtype_bytes(o.main_params_dtype));
    }
  } else {
    b.state_tensors = {kFp32Bytes};
  }
  for (const std::int64_t t : b.state_tensors) b.states += t;

  // step(): _copy_model_grads_to_main_grads sets main.grad = model_grad.float(): a new fp32
  // tensor when the grad buffer is not fp32 (distrib_optimizer.py:2746-2790); the TE-master path
  // hands the buffer over as decoupled_grad instead (no copy). It lives until the next zero_grad.
  if (low_precision && !te_master && grad_dtype != DType::fp32) b.step_transient += kFp32Bytes;
  if (adam && o.implementation == OptimizerImpl::torch_adamw) {
    b.step_foreach_temporary = kTorchAdamForeachTemporaries * (low_precision && !te_master ? kFp32Bytes : dtype_bytes(param_dtype));
  }
  // te_fused_adam / apex_fused_adam: multi_tensor_apply kernels update in place; no
  // parameter-sized temporaries.
  // Clipping (clip_grad > 0, optimizer.py:830-831) scales the main gradients by clip_coeff when the
  // norm exceeds clip_grad (clip_grads.py:189-192). clip_grads.py:11-47 imports multi_tensor_scale from
  // the same chain as the optimizer (Transformer Engine, then Apex, optimizer/__init__.py:13-33): where
  // the optimizer is torch's AdamW, clipping is local_multi_tensor_scale (utils.py:1337-1340),
  // `dst.copy_(src * scale)` per gradient: an fp32 temporary of the main gradient's size (main grads
  // are fp32 on that path). Assumed to fire: it did in both measured steps of 13 of the 14 traced H200
  // runs (calibration/data/diagnostics/alloc_traces_s16/; not in fam_gpt3, whose norm stayed under 1).
  if (o.implementation == OptimizerImpl::torch_adamw && o.clip_grad > 0.0) b.step_clip_temporary = kFp32Bytes;
  return b;
}

}  // namespace peakcast::model::detail
