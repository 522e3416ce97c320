// Qwen35Bridge / Qwen35MoEBridge's rules (qwen35_bridge.py:40-102, :396-415, :634-652; docs/hf-config-mapping.md
// 4.17): what _apply_qwen35_common_config reads beyond the shared mapping, and the keys the bridges do not read
// although they would change the model.
#include "hf_config_mapper.hpp"
#include "spec_parser_detail.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

// linear_attention_freq = full_attention_interval_from_hf (transformers_compat.py:196-229): layer_types as a list
// with 1 for linear_attention and 0 for full_attention (another type raises ValueError), else the interval, else 4.
void qwen35_layer_pattern(Mapper& m) {
  if (const json* lt = m.get("layer_types"); lt && lt->is_array() && !lt->empty()) {
    json freq = json::array();
    for (const auto& t : *lt) {
      if (t != "linear_attention" && t != "full_attention") {
        m.error("layer_types", "hf_value_out_of_range",
                "layer_types holds " + t.dump().substr(0, 40) + ": Unsupported attention layer type (transformers_compat.py:223)");
        return;
      }
      freq.push_back(t == "linear_attention" ? 1 : 0);
    }
    m.model.fields["linear_attention_freq"] = freq;
    return;
  }
  const json* iv = m.get("full_attention_interval");
  m.model.fields["linear_attention_freq"] = iv && !iv->is_null() ? *iv : json(4);
}

// The provider fields _apply_qwen35_common_config and provider_bridge set from the config (qwen35_bridge.py:54,
// :67, :76-77, :645): add_qkv_bias, rotary_percent, the MTP loss factor, tied embeddings; rotary_base from
// rope_parameters as rope_theta_from_hf finds it (transformers_compat.py:27-87) when the config has no rope_theta.
void qwen35_common(Mapper& m) {
  const json* bias = m.get("attention_bias");
  m.model.fields["add_qkv_bias"] = bias && bias->is_boolean() ? *bias : json(false);
  const json* rp = m.get("rope_parameters");
  const json rope = rp && rp->is_object() ? *rp : json::object();
  m.model.fields["rotary_percent"] = rope.contains("partial_rotary_factor") ? rope["partial_rotary_factor"] : json(0.25);
  if (!m.hf.contains("rope_theta") && rope.contains("rope_theta")) m.model.fields["rotary_base"] = rope["rope_theta"];
  const json* tie = m.get("tie_word_embeddings");
  m.model.fields["share_embeddings_and_output_weights"] = tie && tie->is_boolean() ? *tie : json(false);
  if (m.model.fields.contains("mtp_num_layers") && m.model.fields["mtp_num_layers"].is_number_integer() &&
      m.model.fields["mtp_num_layers"].get<std::int64_t>() > 0)
    m.model.fields["mtp_loss_scaling_factor"] = 0.1;
  qwen35_layer_pattern(m);
}

// Keys the bridges do not read although they change the model: the gate and MTP embeddings are fixed by the
// bridge and Megatron's MTP (attention_output_gate True, qwen35_bridge.py:61; the MTP depth shares the model's
// embedding, multi_token_prediction.py), the rotary type is plain RoPE (position_embedding_type "rope", :643).
void qwen35_checks(Mapper& m) {
  m.refuse_unless("attn_output_gate", true, "the Qwen3.5 bridges set attention_output_gate True whatever the config says (qwen35_bridge.py:61)");
  m.refuse_unless("mtp_use_dedicated_embeddings", false,
                  "the bridges build Megatron's MTP, whose depths share the model's embedding; dedicated MTP embeddings are not read (qwen35_bridge.py:40-77)");
  if (const json* rp = m.get("rope_parameters"); rp && rp->is_object() && rp->contains("rope_type") && (*rp)["rope_type"] != "default")
    m.error("rope_parameters", "hf_unmapped_shape_key",
            "rope_parameters.rope_type " + (*rp)["rope_type"].dump().substr(0, 40) + ": the Qwen3.5 bridges build plain RoPE (position_embedding_type \"rope\", qwen35_bridge.py:405, :643)");
}

}  // namespace

bool Mapper::qwen35_rule(const std::string& rule) {
  if (rule == "qwen35_common") qwen35_common(*this);
  else if (rule == "qwen35_checks") qwen35_checks(*this);
  else return false;
  return true;
}

}  // namespace peakcast::model::detail
