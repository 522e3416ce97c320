#pragma once
// The typed fill of parse_run_spec, split by section (spec_fill.cpp) and by model topic
// (spec_fill_model.cpp), with the rule-only keys apart (spec_fill_checks.cpp). Private to peakcast_model.
#include <optional>

#include <nlohmann/json.hpp>

#include "peakcast/model/run_spec.hpp"
#include "spec_reader.hpp"

namespace peakcast::model::detail {

// Megatron's int-or-list layer fields (moe_layer_freq, linear_attention_freq): an int, or one 0/1
// entry per layer; anything else (null) leaves the field as it was.
std::optional<LayerPattern> int_or_pattern(const nlohmann::json& v);

// model.tp_comm_overlap_cfg, the object form Transformer Engine's initialize_ub takes as ub_cfgs.
void read_userbuffer_overrides(const Reader& r, ModelSpec& m);

void fill_model(const Reader& r, ModelSpec& m);

// A dtype name (fp32 / float32 / float, bf16 / bfloat16, fp16 / float16 / half, fp8 / uint8) into dst;
// another name is unsupported_dtype.
void read_dtype(const Reader& r, const char* key, DType& dst);

// spec_fill_checks.cpp: the keys only the validation rules read, one function per section.
void fill_model_checks(const Reader& r, ModelSpec& m);
void fill_train_checks(const Reader& r, TrainSpec& t);
void fill_optimizer_checks(const Reader& r, OptimizerSpec& o);
void fill_ddp_checks(const Reader& r, DdpSpec& d);
void fill_cluster_checks(const Reader& r, ClusterSpec& c);
// The peft section (spec_fill_peft.cpp); called only when the document has one.
void fill_peft(const Reader& r, const ModelSpec& m, PeftSpec& p);

}  // namespace peakcast::model::detail
