// The router's rules, still checked on the JSON document (moe_router_*, moe_aux_loss_coeff,
// moe_z_loss_coeff, moe_router_load_balancing_type): their keys are being typed on another branch
// (agent/router), which moves these into validate_*.cpp and removes this file. Every other rule that
// was here reads typed ModelSpec fields now (validate_*.cpp, same ids and messages).
#include "spec_parser_detail.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

class Model {
 public:
  explicit Model(const json& doc) {
    if (doc.is_object() && doc.contains("model") && doc["model"].is_object()) obj_ = &doc["model"];
  }
  const json* get(const char* key) const {
    if (obj_ == nullptr) return nullptr;
    const auto it = obj_->find(key);
    return it == obj_->end() || it->is_null() ? nullptr : &*it;
  }
  bool flag(const char* key) const {
    const json* v = get(key);
    return v != nullptr && v->is_boolean() && v->get<bool>();
  }
  std::string str(const char* key, const std::string& fallback = "") const {
    const json* v = get(key);
    return v != nullptr && v->is_string() ? v->get<std::string>() : fallback;
  }
  std::optional<std::int64_t> integer(const char* key) const {
    const json* v = get(key);
    if (v == nullptr || !v->is_number_integer()) return std::nullopt;
    return v->get<std::int64_t>();
  }
  std::optional<double> number(const char* key) const {
    const json* v = get(key);
    if (v == nullptr || !v->is_number()) return std::nullopt;
    return v->get<double>();
  }
  bool has_string_in(const char* key, const char* item) const {
    const json* v = get(key);
    if (v == nullptr || !v->is_array()) return false;
    for (const auto& e : *v) if (e.is_string() && e.get<std::string>() == item) return true;
    return false;
  }

 private:
  const json* obj_ = nullptr;
};

void error(Diagnostics& out, const char* key, const char* rule, const std::string& msg) {
  out.push_back({Severity::error, std::string("model.") + key, rule, msg});
}

}  // namespace

void check_untyped_rules(const json& doc, Diagnostics& out) {
  const Model m(doc);
  const std::string dispatcher = m.str("moe_token_dispatcher_type", "allgather");
  // Expert bias needs sigmoid-like scores (transformer_config.py:2310-2318)
  if (m.flag("moe_router_enable_expert_bias")) {
    const std::string score = m.str("moe_router_score_function", "softmax");
    if (score != "sigmoid" && score != "sqrtsoftplus")
      error(out, "moe_router_enable_expert_bias", "expert_bias_needs_sigmoid",
            "Expert bias for aux-loss-free routing only supports 'sigmoid' and 'sqrtsoftplus' score functions. "
            "(transformer_config.py:2314)");
  }
  // Top-1 softmax routing needs pre-softmax (transformer_config.py:2355-2362)
  if (m.integer("moe_router_topk").value_or(2) == 1 && m.get("num_moe_experts") != nullptr &&
      m.str("moe_router_score_function", "softmax") == "softmax" && !m.flag("moe_router_pre_softmax") &&
      m.str("moe_router_load_balancing_type", "aux_loss") != "sinkhorn") {
    error(out, "moe_router_topk", "topk1_needs_pre_softmax", "Please use --moe-router-pre-softmax when topk is 1. (transformer_config.py:2362)");
  }
  // Router padding for quantization (transformer_config.py:2342-2352)
  if (m.flag("moe_router_padding_for_quantization") || m.flag("moe_router_padding_for_fp8")) {
    if (m.get("fp8") == nullptr && m.get("fp4") == nullptr)
      error(out, "moe_router_padding_for_quantization", "router_padding_needs_fp8",
            "fp8/fp4 must be specified when moe_router_padding_for_quantization is True. (transformer_config.py:2344)");
    if (dispatcher == "allgather")
      error(out, "moe_router_padding_for_quantization", "router_padding_vs_allgather",
            "allgather and alltoall_seq dispatcher does not support moe_router_padding_for_quantization. (transformer_config.py:2349)");
  }
  // Group-limited routing (transformer_config.py:2364-2382)
  if (const auto group_topk = m.integer("moe_router_group_topk"); group_topk && *group_topk > 0) {
    const auto groups = m.integer("moe_router_num_groups");
    const auto experts = m.integer("num_moe_experts");
    if (!groups || *groups == 0) {
      error(out, "moe_router_num_groups", "group_topk_needs_groups",
            "When using group limited routing, moe_router_num_groups must be specified. (transformer_config.py:2371)");
    } else {
      if (experts && *groups > 0 && *experts % *groups != 0)
        error(out, "moe_router_num_groups", "experts_divisible_by_groups",
              "num_moe_experts (" + std::to_string(*experts) + ") should be divisible by moe_router_num_groups (" +
                  std::to_string(*groups) + "). (transformer_config.py:2375)");
      if (*group_topk > *groups)
        error(out, "moe_router_group_topk", "group_topk_le_groups",
              "moe_router_group_topk (" + std::to_string(*group_topk) + ") should be smaller than moe_router_num_groups (" +
                  std::to_string(*groups) + "). (transformer_config.py:2379)");
    }
  }
  // A capacity factor needs a load-balancing type it can count tokens with (transformer_config.py:1686-1710).
  if (const auto cf = m.number("moe_expert_capacity_factor"); cf && *cf >= 0) {
    std::vector<std::string> types;
    const json* lb = m.get("moe_router_load_balancing_type");
    if (lb == nullptr) types.push_back("aux_loss");
    else if (lb->is_string()) types.push_back(lb->get<std::string>());
    else if (lb->is_array())
      for (const auto& e : *lb) if (e.is_string()) types.push_back(e.get<std::string>());
    for (const auto& t : types)
      if (t != "aux_loss" && t != "seq_aux_loss" && t != "global_aux_loss" && t != "none") {
        error(out, "moe_router_load_balancing_type", "capacity_factor_load_balancing",
              "moe_expert_capacity_factor only works with aux_loss, seq_aux_loss, global_aux_loss or none load "
              "balancing, got '" + t + "'. (transformer_config.py:1697)");
        break;
      }
  }
}

}  // namespace peakcast::model::detail
