// GLM5Bridge's rules (glm5_bridge.py:57-143, docs/hf-config-mapping.md): what provider_bridge computes beyond the
// shared mapping (the RoPE width, the RoPE base, the indexer's top-k sharing, the routed-expert count) and the keys
// the bridge does not read although they shape the Hugging Face model.
#include <cstdint>
#include <string>

#include "hf_config_mapper.hpp"
#include "peakcast/model/dsa.hpp"
#include "spec_parser_detail.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

bool positive_int(const json* v) { return v && v->is_number_integer() && v->get<std::int64_t>() > 0; }

}  // namespace

// qk_pos_emb_head_dim = qk_head_dim - qk_nope_head_dim (glm5_bridge.py:117-120: Transformers may rewrite
// qk_rope_head_dim to head_dim for GLM-5.2, so the bridge recovers the RoPE width from the total); rotary_base from
// rope_parameters["rope_theta"] (:122-123); n_routed_experts over the num_experts an affected Transformers class
// injects (:57-67); the indexer's sharing with getattr defaults 1 and 0 (:136-137).
void Mapper::glm5_dsa() {
  const json* total = get("qk_head_dim");
  const json* nope = get("qk_nope_head_dim");
  if (positive_int(total) && positive_int(nope) && total->get<std::int64_t>() >= nope->get<std::int64_t>())
    model.fields["qk_pos_emb_head_dim"] = total->get<std::int64_t>() - nope->get<std::int64_t>();
  else
    error("qk_head_dim", "hf_value_out_of_range",
          "GLM5Bridge sets qk_pos_emb_head_dim = qk_head_dim - qk_nope_head_dim (glm5_bridge.py:120): qk_head_dim " +
              (total ? total->dump().substr(0, 40) : std::string("is missing")) + ", qk_nope_head_dim " + (nope ? nope->dump().substr(0, 40) : std::string("missing")));
  const json* rope = get("rope_parameters");
  if (rope && rope->is_object() && rope->contains("rope_theta") && (*rope)["rope_theta"].is_number()) model.fields["rotary_base"] = (*rope)["rope_theta"];
  else error("rope_parameters", "hf_value_out_of_range", "GLM5Bridge reads rope_parameters[\"rope_theta\"] (glm5_bridge.py:123), which is missing");
  if (const json* n = get("n_routed_experts")) model.fields["num_moe_experts"] = *n;
  const json* freq = get("index_topk_freq");
  const json* offset = get("index_skip_topk_offset");
  model.fields["dsa_indexer_topk_freq"] = freq ? *freq : json(1);
  model.fields["dsa_indexer_skip_topk_offset"] = offset ? *offset : json(0);
  glm5_unread_keys();
}

// Keys GLM5Bridge does not read although Transformers builds the model from them: a config whose value differs from
// what the bridge builds describes a model Bridge does not build (docs/hf-config-mapping.md).
void Mapper::glm5_unread_keys() {
  const std::int64_t layers = int_or(hf, "num_hidden_layers", 0);
  const std::int64_t dense = int_or(hf, "first_k_dense_replace", 0);
  const std::int64_t freq = model.fields["dsa_indexer_topk_freq"].is_number_integer() ? model.fields["dsa_indexer_topk_freq"].get<std::int64_t>() : 1;
  const std::int64_t offset = model.fields["dsa_indexer_skip_topk_offset"].is_number_integer() ? model.fields["dsa_indexer_skip_topk_offset"].get<std::int64_t>() : 0;
  if (const json* v = get("moe_layer_freq"); v && *v != 1)
    error("moe_layer_freq", "hf_unmapped_shape_key", "moe_layer_freq " + v->dump().substr(0, 40) + " is not read by GLM5Bridge, which makes every layer after first_k_dense_replace MoE (glm5_bridge.py:113-115)");
  if (const json* v = get("index_topk_pattern"); v && !v->is_null())
    error("index_topk_pattern", "hf_unmapped_shape_key", "index_topk_pattern " + v->dump().substr(0, 40) + " is not read by GLM5Bridge, which shares top-k by index_topk_freq and index_skip_topk_offset (glm5_bridge.py:136-137)");
  if (const json* v = get("indexer_types"); v) {
    bool same = v->is_array() && static_cast<std::int64_t>(v->size()) == layers;
    for (std::int64_t i = 0; same && i < layers; ++i) same = (*v)[static_cast<std::size_t>(i)] == (dsa_skips_topk(i + 1, offset, freq) ? "shared" : "full");
    if (!same)
      error("indexer_types", "hf_unmapped_shape_key", "indexer_types is not the full / shared schedule index_topk_freq " + std::to_string(freq) + " and index_skip_topk_offset " + std::to_string(offset) + " give (dsa.py:37-47); GLM5Bridge builds that schedule and does not read the list");
  }
  if (const json* v = get("mlp_layer_types"); v) {
    bool same = v->is_array() && static_cast<std::int64_t>(v->size()) == layers;
    for (std::int64_t i = 0; same && i < layers; ++i) same = (*v)[static_cast<std::size_t>(i)] == (i < dense ? "dense" : "sparse");
    if (!same)
      error("mlp_layer_types", "hf_unmapped_shape_key", "mlp_layer_types is not first_k_dense_replace dense layers then sparse ones; GLM5Bridge builds that (glm5_bridge.py:113-115) and does not read the list");
  }
}

}  // namespace peakcast::model::detail
