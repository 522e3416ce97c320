// NemotronHBridge's rules (nemotron_h_bridge.py:233-332, docs/hf-config-mapping.md 4.12): the layer pattern
// from layers_block_type or hybrid_override_pattern, kv_channels, MTP, and the keys the bridge does not read
// although they shape the checkpoint.
#include <algorithm>
#include <optional>

#include "hf_config_mapper.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

// The layer symbol of a transformers NemotronH layer type (configuration_nemotron_h.py _list_to_pattern,
// with the legacy names remap_legacy_layer_types maps: "mamba", "attention"); 0 for any other name.
char nemotron_h_symbol(const json& type) {
  if (!type.is_string()) return 0;
  const std::string t = type.get<std::string>();
  if (t == "mamba" || t == "linear_attention") return 'M';
  if (t == "attention" || t == "full_attention") return '*';
  if (t == "moe") return 'E';
  if (t == "mlp") return '-';
  return 0;
}

// A layer pattern from a layers_block_type list or a hybrid_override_pattern string, as the transformers
// class reads either (_pattern_to_list takes M, E, * and - only); nullopt after an error naming the key.
std::optional<std::string> nemotron_h_layers(const json& v, const std::string& key, Mapper& m) {
  std::string pattern;
  if (v.is_array()) {
    for (const auto& t : v) {
      const char c = nemotron_h_symbol(t);
      if (!c) {
        m.error(key, "hf_value_out_of_range", key + " holds " + t.dump().substr(0, 40) + "; the transformers class knows mamba / linear_attention, attention / full_attention, moe and mlp (configuration_nemotron_h.py)");
        return std::nullopt;
      }
      pattern += c;
    }
  } else if (v.is_string()) {
    pattern = v.get<std::string>();
    if (pattern.find_first_not_of("ME*-") != std::string::npos) {
      m.error(key, "hf_value_out_of_range", key + " \"" + pattern.substr(0, 60) + "\" has a symbol other than M, E, * and -, which the transformers class cannot read (_pattern_to_list)");
      return std::nullopt;
    }
  }
  if (pattern.empty()) {
    m.error(key, "hf_value_out_of_range", key + " " + v.dump().substr(0, 40) + " names no layers");
    return std::nullopt;
  }
  return pattern;
}

}  // namespace

// hybrid_override_pattern (nemotron_h_bridge.py:262) as the transformers class derives it: layers_block_type
// when given, else the pattern string (configuration_nemotron_h.py __post_init__); num_hidden_layers is the
// pattern's length, a differing value only warned about there. A config with neither would build the
// class's 4-layer default: refused instead.
void Mapper::nemotron_h_pattern() {
  const json* list = get("layers_block_type");
  const json* text = get("hybrid_override_pattern");
  const bool from_list = list && !list->is_null();
  if (!from_list && (!text || text->is_null())) {
    error("hybrid_override_pattern", "hf_value_out_of_range", "neither layers_block_type nor hybrid_override_pattern gives the layers; the transformers class would build its 4-layer default");
    return;
  }
  const auto pattern = nemotron_h_layers(from_list ? *list : *text, from_list ? "layers_block_type" : "hybrid_override_pattern", *this);
  if (!pattern) return;
  model.fields["hybrid_layer_pattern"] = *pattern;
  model.fields["num_layers"] = static_cast<std::int64_t>(pattern->size());
  if (const json* n = get("num_hidden_layers"); n && n->is_number_integer() && n->get<std::int64_t>() != static_cast<std::int64_t>(pattern->size()))
    out.push_back({Severity::warning, "num_hidden_layers", "hf_value_out_of_range",
                   file + ": num_hidden_layers " + n->dump() + " differs from the " + std::to_string(pattern->size()) +
                       " layers of the pattern; the transformers class uses the pattern's (configuration_nemotron_h.py), and so does Bridge"});
}

// kv_channels = head_dim or attention_head_dim (nemotron_h_bridge.py:306-308); the class always has head_dim.
void Mapper::nemotron_h_kv_channels() {
  const json* hd = get("head_dim");
  const json* ahd = get("attention_head_dim");
  const bool head = hd && !hd->is_null() && *hd != 0;
  if (const json* kv = head ? hd : ahd; kv && !kv->is_null()) model.fields["kv_channels"] = *kv;
  if (head && ahd && !ahd->is_null() && *ahd != *hd)
    error("attention_head_dim", "hf_unmapped_shape_key", "attention_head_dim " + ahd->dump() + " differs from head_dim " + hd->dump() + ", which the bridge takes first (nemotron_h_bridge.py:306)");
}

// MTP (nemotron_h_bridge.py:274-285, :324-330): num_nextn_predict_layers depths of mtp_hybrid_override_pattern,
// which the class derives from mtp_layers_block_type (a list other than its default wins over the string;
// default ["full_attention", "moe"]); repeated layer, BF16 spec and loss factor from the config or the
// bridge's defaults.
void Mapper::nemotron_h_mtp() {
  const json* n = get("num_nextn_predict_layers");
  const json* list = get("mtp_layers_block_type");
  const json* text = get("mtp_hybrid_override_pattern");
  const json* repeated = get("mtp_use_repeated_layer");
  const json* bf16 = get("keep_mtp_spec_in_bf16");
  const json* scale = get("mtp_loss_scaling_factor");
  if (n && !n->is_null() && !n->is_number_integer()) {
    error("num_nextn_predict_layers", "hf_value_out_of_range", "num_nextn_predict_layers " + n->dump().substr(0, 40) + " is not a whole number");
    return;
  }
  const std::int64_t depths = n && n->is_number_integer() ? n->get<std::int64_t>() : 0;
  if (depths < 0) error("num_nextn_predict_layers", "hf_value_out_of_range", "num_nextn_predict_layers must be non-negative. (nemotron_h_bridge.py:278)");
  model.fields["mtp_num_layers"] = std::max<std::int64_t>(depths, 0);
  model.fields["mtp_use_repeated_layer"] = depths > 0 && !(repeated && *repeated == false);
  model.fields["keep_mtp_spec_in_bf16"] = depths > 0 && !(bf16 && *bf16 == false);
  model.fields["mtp_hybrid_override_pattern"] = nullptr;
  if (depths <= 0) return;
  const json class_default = json::array({"full_attention", "moe"});
  const bool list_wins = list && list->is_array() && *list != class_default;
  const json v = list_wins ? *list : text && !text->is_null() ? *text
                                 : list && !list->is_null()   ? *list
                                                              : json("*E");
  const auto pattern = nemotron_h_layers(v, list_wins || !(text && !text->is_null()) ? "mtp_layers_block_type" : "mtp_hybrid_override_pattern", *this);
  if (pattern) model.fields["mtp_hybrid_override_pattern"] = *pattern;
  model.fields["mtp_loss_scaling_factor"] = scale && scale->is_number() ? *scale : json(0.3);
}

void Mapper::refuse_unless(const char* key, const json& accepted, const std::string& why) {
  if (const json* v = get(key); v && *v != accepted)
    error(key, "hf_unmapped_shape_key", std::string(key) + " " + v->dump().substr(0, 40) + ": " + why);
}

// Keys NemotronHBridge does not read although they shape the checkpoint (docs/hf-config-mapping.md 4.12).
void Mapper::nemotron_h_checks() {
  refuse_unless("conv_kernel", 4, "Megatron's Mamba mixer convolves over d_conv 4 (mcore:megatron/core/ssm/mamba_mixer.py:178), which the bridge does not set from the config");
  refuse_unless("use_conv_bias", true, "Megatron's Mamba mixer asserts a convolution bias (mamba_mixer.py:191, :276)");
  refuse_unless("mamba_proj_bias", false, "Megatron's Mamba in_proj / out_proj have no bias (mamba_mixer.py:190, :287, :438)");
  refuse_unless("use_bias", false, "the bridge maps use_bias to add_bias_linear only when the config has no mlp_bias (nemotron_h_bridge.py:264, first match), and the transformers class always has one");
  refuse_unless("n_shared_experts", 1, "NemotronHBridge does not read it; Megatron builds one shared expert of moe_shared_expert_intermediate_size (nemotron_h_bridge.py:267)");
  if (const json* v = get("sliding_window"); v && !v->is_null())
    error("sliding_window", "hf_unmapped_shape_key", "sliding_window " + v->dump().substr(0, 40) + ": NemotronHBridge does not read it and Megatron builds full causal attention");
}

}  // namespace peakcast::model::detail
