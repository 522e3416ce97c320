// Exaone4Bridge's rules (exaone4_bridge.py:88-129, docs/hf-config-mapping.md 4.16): llama3-style RoPE scaling
// and the attention pattern the bridge does not read (its layer spec builds full causal attention with RoPE in
// every layer).
#include "hf_config_mapper.hpp"
#include "spec_parser_detail.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

// rope_scaling as the bridge reads it (exaone4_bridge.py:119-127): the factor only matters to Megatron;
// low_freq_factor, high_freq_factor and original_max_position_embeddings become plain provider attributes
// that GPTModel never reads (gpt_provider.py:293-313 passes rope_scaling and rope_scaling_factor only).
void exaone4_rope_scaling(Mapper& m) {
  const json* rs = m.get("rope_scaling");
  if (!rs || !rs->is_object()) return;
  if (string_or(*rs, "rope_type") != "llama3") {
    // Any other type leaves the provider's rope_scaling False (exaone4_bridge.py:120): plain RoPE.
    if (rs->contains("rope_type") && (*rs)["rope_type"] != "default")
      m.error("rope_scaling", "hf_unmapped_shape_key",
              "rope_scaling of type " + (*rs)["rope_type"].dump().substr(0, 40) + ": Exaone4Bridge maps llama3 scaling only (exaone4_bridge.py:120) and builds plain RoPE otherwise");
    return;
  }
  m.model.fields["rope_scaling"] = true;
  const json f = rs->contains("factor") ? (*rs)["factor"] : json(16.0);  // the bridge's default (:122)
  if (!f.is_number() || f.get<double>() <= 0) {
    m.error("rope_scaling", "hf_value_out_of_range", "rope_scaling.factor " + f.dump().substr(0, 40) + " is not a positive number (exaone4_bridge.py:122)");
    return;
  }
  m.model.fields["rope_scaling_factor"] = f;
}

// The bridge reads none of sliding_window, sliding_window_pattern and layer_types (exaone4_bridge.py:88-129): its
// layer spec gives every layer full causal attention and RoPE (exaone4_provider.py:71-93; the hybrid 32B pattern is
// "future extension", exaone4_bridge.py:77). A config that asks for windows or global no-RoPE layers describes a
// model Bridge does not build.
void exaone4_attention_layers(Mapper& m) {
  if (const json* v = m.get("sliding_window"); v && !v->is_null())
    m.error("sliding_window", "hf_unmapped_shape_key",
            "sliding_window " + v->dump().substr(0, 40) + ": Exaone4Bridge does not read it and its layer spec builds full causal attention in every layer (exaone4_provider.py:71-93)");
  if (const json* v = m.get("sliding_window_pattern"); v && !v->is_null())
    m.error("sliding_window_pattern", "hf_unmapped_shape_key",
            "sliding_window_pattern " + v->dump().substr(0, 40) + ": Exaone4Bridge builds no local / global layer pattern (exaone4_bridge.py:76-77)");
  const json* lt = m.get("layer_types");
  if (!lt || lt->is_null()) return;
  bool all_full = lt->is_array();
  for (std::size_t i = 0; all_full && i < lt->size(); ++i) all_full = (*lt)[i] == "full_attention";
  if (!all_full)
    m.error("layer_types", "hf_unmapped_shape_key",
            "layer_types is not full_attention in every layer: Exaone4Bridge does not read it and builds full causal attention with RoPE in every layer (exaone4_provider.py:71-93)");
}

}  // namespace

bool Mapper::exaone_rule(const std::string& rule) {
  if (rule == "exaone4_rope_scaling") exaone4_rope_scaling(*this);
  else if (rule == "exaone4_attention_layers") exaone4_attention_layers(*this);
  else return false;
  return true;
}

}  // namespace peakcast::model::detail
