#pragma once
// Shared pieces of the validation rules, split by topic into validate_*.cpp. Private to peakcast_model.
#include <algorithm>
#include <string>

#include "peakcast/model/diagnostics.hpp"
#include "peakcast/model/run_spec.hpp"

namespace peakcast::model::detail {

class RuleSink {
 public:
  explicit RuleSink(Diagnostics& out) : out_(out) {}
  void error(std::string path, std::string rule, std::string message) {
    out_.push_back({Severity::error, std::move(path), std::move(rule), std::move(message)});
  }
  void warning(std::string path, std::string rule, std::string message) {
    out_.push_back({Severity::warning, std::move(path), std::move(rule), std::move(message)});
  }
  bool failed() const { return has_errors(out_); }

 private:
  Diagnostics& out_;
};

// The tags that selective recompute will use, exactly as Megatron ends up with them:
// None becomes [core_attn] (transformer_config.py:1789), moe_layer_recompute appends moe (:1861-1872).
inline std::vector<RecomputeTag> effective_tags(const ModelSpec& m) {
  std::vector<RecomputeTag> tags = m.recompute_modules.value_or(std::vector<RecomputeTag>{RecomputeTag::core_attn});
  if (m.moe_layer_recompute && std::find(tags.begin(), tags.end(), RecomputeTag::moe) == tags.end())
    tags.push_back(RecomputeTag::moe);
  return tags;
}

inline bool selective(const ModelSpec& m) {
  return m.recompute_granularity == RecomputeGranularity::selective ||
         (m.moe_layer_recompute && m.recompute_granularity != RecomputeGranularity::full);
}

inline bool has(const std::vector<RecomputeTag>& tags, RecomputeTag t) {
  return std::find(tags.begin(), tags.end(), t) != tags.end();
}

inline bool has_graph_module(const ModelSpec& m, const char* name) {
  return std::find(m.cuda_graph_modules.begin(), m.cuda_graph_modules.end(), name) != m.cuda_graph_modules.end();
}

// Index in recompute_modules of a tag, for paths like model.recompute_modules[2].
inline std::string tag_path(const ModelSpec& m, RecomputeTag t) {
  if (m.recompute_modules) {
    const auto& v = *m.recompute_modules;
    const auto it = std::find(v.begin(), v.end(), t);
    if (it != v.end()) return "model.recompute_modules[" + std::to_string(it - v.begin()) + "]";
  }
  return m.moe_layer_recompute && t == RecomputeTag::moe ? "model.moe_layer_recompute" : "model.recompute_modules";
}

// Whether offload_modules names a module (fine-grained activation offloading's list).
inline bool offloads(const ModelSpec& m, const char* module) {
  return std::find(m.offload_modules.begin(), m.offload_modules.end(), module) != m.offload_modules.end();
}

inline bool is_moe_model(const ModelSpec& m) { return m.num_moe_experts.has_value(); }

// Every layer is MoE: moe_layer_freq 1 (or an all-ones list), or a hybrid pattern with no dense MLP.
inline bool all_layers_moe(const ModelSpec& m) {
  if (m.hybrid_override_pattern) return m.hybrid_override_pattern->find('-') == std::string::npos;
  if (!is_moe_model(m)) return false;
  if (const auto* k = std::get_if<std::int64_t>(&m.moe_layer_freq)) return *k == 1;
  const auto& v = std::get<std::vector<std::int64_t>>(m.moe_layer_freq);
  return std::find(v.begin(), v.end(), 0) == v.end();
}

inline std::string str(std::int64_t v) { return std::to_string(v); }

void validate_sizes(const RunSpec& spec, RuleSink& sink);
void validate_layout(const RunSpec& spec, RuleSink& sink);
void validate_architecture(const RunSpec& spec, RuleSink& sink);
void validate_shapes(const RunSpec& spec, RuleSink& sink);
void validate_moe(const RunSpec& spec, RuleSink& sink);
void validate_recompute(const RunSpec& spec, RuleSink& sink);
void validate_precision(const RunSpec& spec, RuleSink& sink);
void validate_comm_overlap(const RunSpec& spec, RuleSink& sink);
void validate_cuda_graphs(const RunSpec& spec, RuleSink& sink);
void validate_optimizer(const RunSpec& spec, RuleSink& sink);
void validate_environment(const RunSpec& spec, RuleSink& sink);
void validate_runtime(const RunSpec& spec, RuleSink& sink);
void validate_offloading(const RunSpec& spec, RuleSink& sink);
void validate_moe_dispatch(const RunSpec& spec, RuleSink& sink);
void validate_moe_experts(const RunSpec& spec, RuleSink& sink);
void validate_mlp(const RunSpec& spec, RuleSink& sink);
void validate_attention(const RunSpec& spec, RuleSink& sink);
void validate_gemma(const RunSpec& spec, RuleSink& sink);
void validate_exaone(const RunSpec& spec, RuleSink& sink);
void validate_dsa(const RunSpec& spec, RuleSink& sink);
void validate_hybrid(const RunSpec& spec, RuleSink& sink);
void validate_ddp(const RunSpec& spec, RuleSink& sink);
void validate_launcher(const RunSpec& spec, RuleSink& sink);
void validate_magnitudes(const RunSpec& spec, RuleSink& sink);  // peakcast's limits; needs a valid layout

}  // namespace peakcast::model::detail
