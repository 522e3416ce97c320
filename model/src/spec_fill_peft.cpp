// The peft section: Megatron-Bridge's LoRA dataclass (bridge:src/megatron/bridge/peft/lora.py:101-115)
// read with the JSON path's strictness. What Bridge would assert is an error; what changes memory in a
// way peakcast does not simulate is an error naming it; a target that matches no module of this model
// is Bridge's own warning (module_matcher.py:186-200).
#include <algorithm>
#include <set>

#include "spec_fill_detail.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

std::vector<std::string> string_list(const Reader& r, const char* key) {
  std::vector<std::string> out;
  if (const json* v = r.find(key); v && v->is_array())
    for (const auto& e : *v)
      if (e.is_string()) out.push_back(e.get<std::string>());
  return out;
}

// The attribute names of the linears this model builds, as ModuleMatcher sees them (`name`, the last
// component of the module path): GPT attention and MLP (gpt_layer_specs.py), MLA's projections
// (multi_latent_attention.py), the Mamba and gated-delta-net mixers, the MoE router and experts.
std::set<std::string> linear_names(const ModelSpec& m) {
  // A hybrid pattern builds attention at '*', Mamba at 'M', MLP at '-' and MoE at 'E' (hybrid_layer_specs.py).
  const std::string pattern = m.hybrid_override_pattern.value_or("*-");
  const auto has = [&](const char* chars) { return pattern.find_first_of(chars) != std::string::npos; };
  std::set<std::string> names = {"output_layer"};
  if (has("-E")) names.insert({"linear_fc1", "linear_fc2"});
  if (has("*")) {
    names.insert("linear_proj");
    if (!m.multi_latent_attention) names.insert("linear_qkv");
    else if (m.q_lora_rank) names.insert({"linear_q_down_proj", "linear_q_up_proj", "linear_kv_down_proj", "linear_kv_up_proj"});
    else names.insert({"linear_q_proj", "linear_kv_down_proj", "linear_kv_up_proj"});
  }
  if (has("M") || m.experimental_attention_variant) names.insert({"in_proj", "out_proj"});
  if (m.num_moe_experts) names.insert("router");
  return names;
}

void check_targets(const Reader& r, const ModelSpec& m, const PeftSpec& p, const std::vector<std::string>& exclude) {
  if (!exclude.empty() && !p.target_modules.empty())
    r.error(r.path("exclude_modules"), "peft_exclude_with_targets",
            "exclude_modules must be empty when target_modules is set (Bridge asserts it, module_matcher.py:141)");
  else if (!exclude.empty() || p.target_modules.empty())
    r.error(r.path("target_modules"), "not_simulated",
            "LoRA on every linear but exclude_modules (target_modules empty) is not simulated; name the targets");
  const std::set<std::string> known = linear_names(m);
  for (std::size_t i = 0; i < p.target_modules.size(); ++i) {
    const std::string& t = p.target_modules[i];
    const std::string at = r.path("target_modules") + "[" + std::to_string(i) + "]";
    if (t.find_first_of("*?[") != std::string::npos)
      r.error(at, "not_simulated", "wildcard target \"" + t.substr(0, 80) + "\" is not simulated; name the modules (linear_qkv, linear_fc1, ...)");
    else if (t == "output_layer" || t == "router")
      r.error(at, "not_simulated", "LoRA on " + t + " is not simulated");
    else if (!known.count(t))
      r.warning(at, "peft_target_unmatched",
                "\"" + t.substr(0, 80) + "\" matches no linear of this model; Bridge warns and adds no adapter there (module_matcher.py:186-200)");
  }
}

}  // namespace

void fill_peft(const Reader& r, const ModelSpec& m, PeftSpec& p) {
  p.enabled = true;
  std::string method = "lora";
  r.read("method", method);
  if (const json* v = r.find("target_modules"); v && v->is_array()) p.target_modules = string_list(r, "target_modules");
  r.read("dim", p.dim);
  r.read("alpha", p.alpha);
  r.read("dropout", p.dropout);
  r.read("dropout_position", p.dropout_position);
  r.read("sequence_parallel_input_regather", p.sequence_parallel_input_regather);
  r.read("a2a_experimental", p.a2a_experimental);
  if (r.name("lora_dtype")) {  // null: the base layer's dtype
    DType d = DType::bf16;
    read_dtype(r, "lora_dtype", d);
    p.lora_dtype = d;
  }
  r.read("normalize_moe_lora", p.normalize_moe_lora);
  r.read("share_expert_adapters", p.share_expert_adapters);
  r.read("experts_shared_outer_loras", p.experts_shared_outer_loras);
  if (method != "lora") r.error(r.path("method"), "not_simulated", "PEFT method \"" + method + "\" is not simulated (lora is)");
  // No model peakcast simulates is wider than this: a larger rank is a mistake, and it keeps r x in far from int64's limit.
  constexpr std::int64_t kMaxRank = std::int64_t{1} << 20;
  if (p.dim < 1 || p.dim > kMaxRank)
    r.error(r.path("dim"), "value_out_of_range", "the LoRA rank must be between 1 and 2^20, got " + std::to_string(p.dim));
  if (p.dropout < 0 || p.dropout >= 1)
    r.error(r.path("dropout"), "peft_dropout", "dropout must be in [0, 1) (torch.nn.Dropout), got " + std::to_string(p.dropout));
  if (p.experts_shared_outer_loras)
    r.error(r.path("experts_shared_outer_loras"), "not_simulated", "SharedOuterGroupedExpertAdapter (experts_shared_outer_loras) is not simulated");
  if (p.normalize_moe_lora) r.error(r.path("normalize_moe_lora"), "not_simulated", "normalize_moe_lora (expert rank dim // topk) is not simulated");
  // A beside a column-parallel or duplicated base is ColumnParallelLinear(in, r): divide(r, TP) asserts
  // (peft/utils.py:1046-1056; tensor_parallel/layers.py:966); experts split over ETP.
  static const std::set<std::string> kColumn = {"linear_qkv", "linear_fc1", "in_proj", "linear_q_proj", "linear_q_up_proj",
                                                "linear_kv_up_proj", "linear_q_down_proj", "linear_kv_down_proj"};
  const std::int64_t tp = m.tensor_model_parallel_size, etp = m.expert_tensor_parallel_size.value_or(tp);
  for (const auto& t : p.target_modules)
    if (kColumn.count(t) && p.dim > 0 && (p.dim % std::max<std::int64_t>(1, tp) != 0 || (t == "linear_fc1" && m.num_moe_experts && p.dim % std::max<std::int64_t>(1, etp) != 0))) {
      r.error(r.path("dim"), "peft_dim_not_divisible",
              "LoRA rank " + std::to_string(p.dim) + " does not split over the tensor-parallel group of " + t +
                  " (TP " + std::to_string(tp) + ", ETP " + std::to_string(etp) + "): Megatron's divide() asserts (tensor_parallel/layers.py:966)");
      break;
    }
  if (p.a2a_experimental) r.warning(r.path("a2a_experimental"), "not_simulated", "the experimental all-to-all LoRA path is not simulated; simulated as the default one");
  check_targets(r, m, p, string_list(r, "exclude_modules"));
}

}  // namespace peakcast::model::detail
