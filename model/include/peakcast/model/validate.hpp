#pragma once
// Megatron's own validation rules (TransformerConfig.__post_init__, OptimizerConfig,
// DistributedDataParallelConfig, parallel_state) applied to a parsed spec, with their meaning.
// Accepted-but-ineffective combinations come back as warnings.
#include "peakcast/model/diagnostics.hpp"
#include "peakcast/model/run_spec.hpp"

namespace peakcast::model {

Diagnostics validate(const RunSpec& spec);

}  // namespace peakcast::model
