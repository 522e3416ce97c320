// Precision flags: bf16/fp16, FP8 and FP8 parameters.
#include <algorithm>
#include <string>

#include "validate_detail.hpp"

namespace peakcast::model::detail {

void validate_precision(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  // transformer_config.py:1314-1317
  if (m.bf16 && m.fp16) {
    sink.error("model.fp16", "bf16_and_fp16",
               "Only one of self.fp16: True and self.bf16 True should be True. (transformer_config.py:1315)");
  }
  // fp16 with dynamic loss scaling: a step whose gradients overflow returns before the inner optimizer
  // runs (optimizer.py:820-822), and the scale starts at initial_loss_scale (2^32 by default), so the
  // first steps of a run are skipped and no optimizer state exists until one succeeds (measured: three
  // skipped steps allocated 8 bytes per parameter less, calibration/data/diagnostics/fp16_skipped_steps.jsonl).
  if (m.fp16 && !spec.optimizer.loss_scale) {
    sink.warning("optimizer.loss_scale", "fp16_skipped_first_steps",
                 "fp16 with dynamic loss scaling skips every step whose gradients overflow until the loss scale has "
                 "fallen from initial_loss_scale (optimizer.py:820-822): until the first successful step no optimizer "
                 "state exists, so those iterations allocate up to the optimizer states' bytes less than predicted "
                 "(the prediction is the run after its first successful step)");
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
    // transformer_config.py:1405-1429: each count lies in [0, num_layers / PP].
    if (m.first_last_layers_bf16) {
      const std::int64_t per_stage = m.num_layers / std::max<std::int64_t>(1, m.pipeline_model_parallel_size);
      const auto check = [&](std::int64_t n, const char* key) {
        if (n < 0 || n > per_stage) {
          sink.error(std::string("model.") + key, "bf16_edge_layers_out_of_range",
                     std::string(key) + " (" + std::to_string(n) + ") must be between 0 and number of layers per pipeline stage (" +
                         std::to_string(per_stage) + "). (transformer_config.py:1413)");
        }
      };
      check(m.num_layers_at_start_in_bf16, "num_layers_at_start_in_bf16");
      check(m.num_layers_at_end_in_bf16, "num_layers_at_end_in_bf16");
    }
  }
}

}  // namespace peakcast::model::detail
