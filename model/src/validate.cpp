// validate(): Megatron's own rules on a parsed spec. Sizes first: the other rules divide by them.
#include "peakcast/model/validate.hpp"

#include "validate_detail.hpp"

namespace peakcast::model {

Diagnostics validate(const RunSpec& spec) {
  Diagnostics out;
  detail::RuleSink sink(out);
  try {
    detail::validate_sizes(spec, sink);
    if (sink.failed()) return out;
    detail::validate_layout(spec, sink);
    detail::validate_architecture(spec, sink);
    detail::validate_shapes(spec, sink);
    detail::validate_moe(spec, sink);
    detail::validate_recompute(spec, sink);
    detail::validate_precision(spec, sink);
    detail::validate_comm_overlap(spec, sink);
    detail::validate_cuda_graphs(spec, sink);
    detail::validate_optimizer(spec, sink);
    detail::validate_environment(spec, sink);
    detail::validate_runtime(spec, sink);
    detail::validate_offloading(spec, sink);
    detail::validate_moe_dispatch(spec, sink);
    detail::validate_moe_experts(spec, sink);
    detail::validate_mlp(spec, sink);
    detail::validate_attention(spec, sink);
    detail::validate_gemma(spec, sink);
    detail::validate_exaone(spec, sink);
    detail::validate_dsa(spec, sink);
    detail::validate_hybrid(spec, sink);
    detail::validate_ddp(spec, sink);
    detail::validate_launcher(spec, sink);
    detail::validate_magnitudes(spec, sink);
  } catch (const std::exception& e) {
    sink.error("", "internal", std::string("validation failed: ") + e.what());
  }
  return out;
}

}  // namespace peakcast::model
