// Precision flags: bf16/fp16, FP8 and FP8 parameters.
#include "validate_detail.hpp"

namespace peakcast::model::detail {

void validate_precision(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  // transformer_config.py:1314-1317
  if (m.bf16 && m.fp16) {
    sink.error("model.fp16", "bf16_and_fp16",
               "Only one of self.fp16: True and self.bf16 True should be True. (transformer_config.py:1315)");
  }
  // transformer_config.py:1439-1440 (ddp.fp8_param_gather sets the same switch)
  if (m.fp8_param && !m.fp8) {
    sink.error("model.fp8_param", "fp8_param_needs_fp8", "fp8_param must be used together with fp8 mode. (transformer_config.py:1440)");
  }
  // transformer_config.py:2187-2189
  if (m.activation_func_fp8_input_store && (m.activation_func != Activation::silu || !m.gated_linear_unit)) {
    sink.error("model.activation_func_fp8_input_store", "fp8_input_store_needs_swiglu",
               "Storing activation input in FP8 is supported only for SwiGLU. (transformer_config.py:2189)");
  }
  if (m.fp8) {
    // FP8 compute happens inside TE modules (fp8_autocast); the local spec has no FP8 path.
    if (m.transformer_impl == TransformerImpl::local) {
      sink.error("model.fp8", "fp8_needs_transformer_engine",
                 "fp8 training runs through Transformer Engine (fp8_autocast around TE modules); transformer_impl local has no FP8 path");
    }
    if (!m.bf16 && !m.fp16) {
      sink.warning("model.fp8", "fp8_without_half_precision",
                   "fp8 is normally combined with bf16 (the params and the non-FP8 activations stay in bf16); here they are fp32");
    }
  }
}

}  // namespace peakcast::model::detail
