#pragma once
// DeepSeek sparse attention facts the model and the simulator share (docs/research/dsa-memory-facts.md).
#include <cstdint>
#include <optional>

#include "peakcast/model/layer_plan.hpp"
#include "peakcast/model/run_spec.hpp"

namespace peakcast::model {

// DSA top-k sharing (dsa.py:37-56): whether a 1-indexed layer reuses an earlier layer's top-k, and which.
bool dsa_skips_topk(std::int64_t layer_number, std::int64_t offset, std::int64_t freq);
std::int64_t dsa_source_layer(std::int64_t layer_number, std::int64_t offset, std::int64_t freq);
// The number DSAttention sees: the decoder index + 1; an MTP inner layer is number 1
// (multi_token_prediction.py:1036-1045, transformer_layer.py:341-342).
std::int64_t dsa_layer_number(const LayerSpec& l);
// Whether a DSA layer computes its own top-k and so builds an indexer (dsa.py:1561-1584).
bool dsa_computes_topk(const ModelSpec& m, const LayerSpec& l);

// Where a computing layer's top-k lives between layers under top-k sharing (dsa.py:1593-1625): none without
// sharing; on the TransformerConfig (one per layer number and rank, kept for the run) when no packed_seq_params
// or attention mask carries it (Bridge's pretraining passes neither); on the micro-batch's packed_seq_params.
enum class DsaTopkHolder { none,
                           per_rank,
                           per_microbatch };
DsaTopkHolder dsa_topk_holder(const RunSpec& spec);

// The query-head count FlashMLA's sparse kernels run for `heads` per rank, or nullopt where the cuDNN hooks
// decline (dsa_cudnn_kernels.py:348-371): compute capability 9 pads to a multiple of 64 (or up to 64), 10 and
// later take 64 or 128 (or pad up to them), else multiples of 128; nothing before 9.
std::optional<std::int64_t> flash_mla_head_padding(std::int64_t heads, int compute_capability_major);

}  // namespace peakcast::model
