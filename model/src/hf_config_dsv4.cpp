// DeepSeekV4Bridge's rules (deepseek_v4_bridge.py:390-523, docs/hf-config-mapping.md 4.19): what provider_bridge
// computes beyond the shared mapping and its constants (the MLA geometry, the two RoPE bases and the YaRN factors, the
// per-layer compression ratios, the CSA window and indexer, the hyper-connections, the hash-routed layers, the SwiGLU
// clamp, the shared expert, MTP), then the refusal: the pinned Megatron Core (24bad8e6) has none of the modules these
// fields configure (docs/research/dsv4-memory-facts.md section 1).
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "hf_config_mapper.hpp"
#include "spec_parser_detail.hpp"
#include "spec_schema.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

constexpr const char* kBridge = "DeepSeekV4Bridge";

bool int_value(const json* v) { return v && v->is_number_integer(); }

// _DSV4_LAYER_TYPE_TO_COMPRESS_RATIO (deepseek_v4_bridge.py:94-98).
std::optional<std::int64_t> ratio_of_layer_type(const std::string& t) {
  if (t == "sliding_attention") return 0;
  if (t == "compressed_sparse_attention") return 4;
  if (t == "heavily_compressed_attention") return 128;
  return std::nullopt;
}

}  // namespace

// A key provider_bridge reads as hf_config.<key> (an AttributeError when the config lacks it): copied to `field`
// (none when empty); false and an error naming the bridge's line when missing.
bool Mapper::dsv4_require(const char* key, const char* field, const char* line) {
  const json* v = get(key);
  if (!v || v->is_null()) {
    error(key, "hf_value_out_of_range", std::string(key) + " is missing; " + kBridge + " reads it (deepseek_v4_bridge.py:" + line + ")");
    return false;
  }
  if (field[0] != '\0') model.fields[field] = *v;
  return true;
}

// The MLA geometry, the CSA window and indexer, the hyper-connections (deepseek_v4_bridge.py:410-421, :466-478):
// v_head_dim = head_dim, qk_pos_emb_head_dim = qk_rope_head_dim; qk_head_dim and kv_lora_rank are left to Megatron
// (the comment at :418).
void Mapper::dsv4_geometry() {
  dsv4_require("head_dim", "v_head_dim", "410");
  dsv4_require("qk_rope_head_dim", "qk_pos_emb_head_dim", "411");
  dsv4_require("q_lora_rank", "q_lora_rank", "419");
  dsv4_require("o_groups", "o_groups", "420");
  dsv4_require("o_lora_rank", "o_lora_rank", "421");
  dsv4_require("sliding_window", "csa_window_size", "466");
  dsv4_require("index_n_heads", "dsa_indexer_n_heads", "469");
  dsv4_require("index_head_dim", "dsa_indexer_head_dim", "470");
  dsv4_require("index_topk", "dsa_indexer_topk", "471");
  dsv4_require("hc_mult", "num_residual_streams", "477");
  dsv4_require("hc_sinkhorn_iters", "mhc_sinkhorn_iterations", "478");
  for (const char* k : {"head_dim", "qk_rope_head_dim", "q_lora_rank", "o_groups", "o_lora_rank", "sliding_window", "index_n_heads",
                        "index_head_dim", "index_topk", "hc_mult", "hc_sinkhorn_iters"})
    if (const json* v = get(k); v && !v->is_null() && !(int_value(v) && v->get<std::int64_t>() > 0))
      error(k, "hf_value_out_of_range", std::string(k) + " " + v->dump().substr(0, 40) + " is not a positive integer");
}

// The RoPE bases and YaRN factors (deepseek_v4_bridge.py:428-449): rope_scaling, else rope_parameters, split into
// "main" / "compress" parts when it has a "compress" entry; rotary_base from the main part's rope_theta (the config's
// rope_theta otherwise), csa_compress_rotary_base from compress_rope_theta (else the compress part's rope_theta, else
// rotary_base); factor and original_max_position_embeddings from the compress part (a KeyError when missing),
// beta_fast / beta_slow with defaults 32 / 1.
void Mapper::dsv4_rope() {
  const json* scaling = get("rope_scaling");
  const json* params = get("rope_parameters");
  json rope = json::object();
  if (scaling && scaling->is_object() && !scaling->empty()) rope = *scaling;
  else if (params && params->is_object() && !params->empty()) rope = *params;
  const bool split = rope.contains("compress");
  const json main = split ? rope.value("main", json::object()) : rope;
  const json compress = split ? rope["compress"] : rope;
  const json* theta = get("rope_theta");
  if (main.is_object() && main.contains("rope_theta") && main["rope_theta"].is_number()) model.fields["rotary_base"] = main["rope_theta"];
  else if (theta && theta->is_number()) model.fields["rotary_base"] = *theta;
  else error("rope_theta", "hf_value_out_of_range", std::string(kBridge) + " reads rope_theta (deepseek_v4_bridge.py:437), which is missing");
  if (const json* ct = get("compress_rope_theta"); ct && ct->is_number()) model.fields["csa_compress_rotary_base"] = *ct;
  else if (compress.is_object() && compress.contains("rope_theta") && compress["rope_theta"].is_number()) model.fields["csa_compress_rotary_base"] = compress["rope_theta"];
  else if (model.fields.contains("rotary_base")) model.fields["csa_compress_rotary_base"] = model.fields["rotary_base"];
  const char* where = split ? "rope_scaling.compress" : "rope_scaling";
  for (const auto& [h, f, line] : std::vector<std::tuple<const char*, const char*, const char*>>{
           {"factor", "rotary_scaling_factor", "441"}, {"original_max_position_embeddings", "original_max_position_embeddings", "442-444"}}) {
    if (compress.is_object() && compress.contains(h) && compress[h].is_number()) model.fields[f] = compress[h];
    else error("rope_scaling", "hf_value_out_of_range", std::string(where) + "." + h + " is missing; " + kBridge + " reads it (deepseek_v4_bridge.py:" + line + ")");
  }
  model.fields["beta_fast"] = compress.is_object() && compress.contains("beta_fast") ? compress["beta_fast"] : json(32);
  model.fields["beta_slow"] = compress.is_object() && compress.contains("beta_slow") ? compress["beta_slow"] : json(1);
}

// _dsv4_compress_ratios (deepseek_v4_bridge.py:187-224) cut to num_hidden_layers + num_nextn_predict_layers entries
// (:454-465): compress_ratios as given, else layer_types through compress_rates / the three named types; a list of
// exactly num_hidden_layers entries gets a 0 per MTP layer; a shorter one is a ValueError.
void Mapper::dsv4_compress_ratios() {
  const std::int64_t layers = int_or(hf, "num_hidden_layers", 0);
  const json* mtp_v = get("num_nextn_predict_layers");
  const std::int64_t mtp = int_value(mtp_v) ? mtp_v->get<std::int64_t>() : 0;
  json ratios = json::array();
  if (const json* cr = get("compress_ratios"); cr && !cr->is_null()) {
    for (const auto& r : cr->is_array() ? *cr : json::array({*cr})) {
      if (!r.is_number_integer()) {
        error("compress_ratios", "hf_value_out_of_range", "compress_ratios holds " + r.dump().substr(0, 40) + ", not an integer");
        return;
      }
      ratios.push_back(r);
    }
    dsv4_unread_lists(ratios);
  } else {
    const json* types = get("layer_types");
    const json* rates = get("compress_rates");
    if (!types || !types->is_array() || !rates || !rates->is_object()) {
      error("compress_ratios", "hf_value_out_of_range", "HF config missing 'compress_ratios' and native 'layer_types'/'compress_rates'. DeepSeek-V4 requires per-layer compression ratios. (deepseek_v4_bridge.py:198-202)");
      return;
    }
    for (const auto& t : *types) {
      const std::string name = t.is_string() ? t.get<std::string>() : t.dump();
      if (name != "sliding_attention" && rates->contains(name) && (*rates)[name].is_number_integer()) ratios.push_back((*rates)[name]);
      else if (const auto r = ratio_of_layer_type(name)) ratios.push_back(*r);
      else return error("layer_types", "hf_value_out_of_range", "Unsupported DeepSeek-V4 attention layer type: '" + name.substr(0, 40) + "' (deepseek_v4_bridge.py:213)");
    }
  }
  if (static_cast<std::int64_t>(ratios.size()) == layers)
    for (std::int64_t i = 0; i < mtp; ++i) ratios.push_back(0);
  if (static_cast<std::int64_t>(ratios.size()) < layers + mtp) {
    error("compress_ratios", "hf_value_out_of_range", "DeepSeek-V4 compression ratios length (" + std::to_string(ratios.size()) + ") is shorter than num_hidden_layers + num_nextn_predict_layers (" + std::to_string(layers + mtp) + "). (deepseek_v4_bridge.py:218-222)");
    return;
  }
  ratios.erase(ratios.begin() + (layers + mtp), ratios.end());
  model.fields["csa_compress_ratios"] = ratios;
}

// The native per-layer lists the bridge does not read when the legacy keys are there (compress_ratios before
// layer_types / compress_rates, :192-195; num_hash_layers before mlp_layer_types, :167-169): a list that disagrees
// describes a model Bridge does not build.
void Mapper::dsv4_unread_lists(const json& ratios) {
  const json* types = get("layer_types");
  const json* rates = get("compress_rates");
  bool same = true;
  for (std::size_t i = 0; types && types->is_array() && i < types->size() && same; ++i) {
    const std::string name = (*types)[i].is_string() ? (*types)[i].get<std::string>() : "";
    std::optional<std::int64_t> r = ratio_of_layer_type(name);
    if (name != "sliding_attention" && rates && rates->is_object() && rates->contains(name) && (*rates)[name].is_number_integer()) r = (*rates)[name].get<std::int64_t>();
    same = r && i < ratios.size() && ratios[i] == *r;
  }
  if (!same) error("layer_types", "hf_unmapped_shape_key", "layer_types / compress_rates disagree with compress_ratios, which DeepSeekV4Bridge reads instead (deepseek_v4_bridge.py:192-195)");
  const json* hash = get("num_hash_layers");
  const json* mlp = get("mlp_layer_types");
  if (!hash || !int_value(hash) || !mlp || !mlp->is_array()) return;
  for (std::size_t i = 0; i < mlp->size(); ++i)
    if (((*mlp)[i] == "hash_moe") != (static_cast<std::int64_t>(i) < hash->get<std::int64_t>()))
      return error("mlp_layer_types", "hf_unmapped_shape_key", "mlp_layer_types disagrees with num_hash_layers " + hash->dump() + ", which DeepSeekV4Bridge reads instead (deepseek_v4_bridge.py:167-169)");
}

// The MoE side (deepseek_v4_bridge.py:487-505): the router's score function, top-k and scaling through the shared
// mapping, norm_topk_prob (an attribute no TransformerConfig field takes), the hash-routed prefix from num_hash_layers
// or a leading run of "hash_moe" mlp_layer_types (:166-184), actual_vocab_size, the SwiGLU clamp, every layer MoE.
void Mapper::dsv4_moe() {
  dsv4_require("scoring_func", "moe_router_score_function", "487");
  dsv4_require("num_experts_per_tok", "moe_router_topk", "492");
  dsv4_require("norm_topk_prob", "norm_topk_prob", "493");
  dsv4_require("routed_scaling_factor", "moe_router_topk_scaling_factor", "494");
  dsv4_require("vocab_size", "actual_vocab_size", "498");
  dsv4_require("swiglu_limit", "activation_func_clamp_value", "501");
  dsv4_require("tie_word_embeddings", "share_embeddings_and_output_weights", "511");
  std::int64_t hash = 0;
  if (const json* n = get("num_hash_layers"); n && !n->is_null()) {
    if (!int_value(n) || n->get<std::int64_t>() < 0) return error("num_hash_layers", "hf_value_out_of_range", "num_hash_layers " + n->dump().substr(0, 40) + " is not a count of layers");
    hash = n->get<std::int64_t>();
  } else if (const json* types = get("mlp_layer_types"); types && types->is_array()) {
    while (hash < static_cast<std::int64_t>(types->size()) && (*types)[static_cast<std::size_t>(hash)] == "hash_moe") ++hash;
    for (std::size_t i = static_cast<std::size_t>(hash); i < types->size(); ++i)
      if ((*types)[i] == "hash_moe") return error("mlp_layer_types", "hf_value_out_of_range", "DeepSeek-V4 hash MoE layers must be a contiguous prefix. (deepseek_v4_bridge.py:181-182)");
  }
  model.fields["moe_n_hash_layers"] = hash;
  const std::int64_t layers = int_or(hf, "num_hidden_layers", 0);
  if (layers > 0 && layers <= (std::int64_t{1} << 20)) model.fields["moe_layer_freq"] = json(std::vector<int>(static_cast<std::size_t>(layers), 1));
  // A dense prefix the bridge would not build (every layer MoE, :503-504).
  if (const json* k = get("first_k_dense_replace"); k && *k != 0)
    error("first_k_dense_replace", "hf_unmapped_shape_key", "first_k_dense_replace " + k->dump().substr(0, 40) + " is not read by DeepSeekV4Bridge, which makes every layer MoE (deepseek_v4_bridge.py:503-504)");
}

// Every DeepSeek-V4 rule, then the refusal: the provider attributes the pinned Megatron Core has no field for, and the
// attention variant its TransformerConfig does not list (transformer_config.py:294) and its spec builder raises on
// (experimental_attention_variant_module_specs.py:141-148). Bridge runs these recipes on Megatron-LM dev
// (.dev.commit cae55c1f; examples/models/deepseek_v4/README.md:9, :46-48).
void Mapper::dsv4() {
  dsv4_geometry();
  dsv4_rope();
  dsv4_compress_ratios();
  dsv4_moe();
  get("hc_eps");  // Megatron's mHC uses its own eps constants (docs/hf-config-mapping.md 4.19)
  std::vector<std::string> missing;
  for (const auto& [k, v] : model.fields.items())
    if (!find_field("model", k)) missing.push_back(k);
  const json constants = arch.value("constants", json::object());  // a named copy: items() only refers to it
  for (const auto& c : constants.items())
    if (!find_field("model", c.key()) && !model.fields.contains(c.key())) missing.push_back(c.key());
  std::string list;
  for (std::size_t i = 0; i < missing.size(); ++i) list += (i ? ", " : "") + missing[i];
  error("architectures", "dsv4_hybrid_not_in_pinned_megatron",
        "DeepseekV4ForCausalLM: DeepSeekV4Bridge builds experimental_attention_variant \"dsv4_hybrid\" (deepseek_v4_bridge.py:397), which "
        "the pinned Megatron Core 24bad8e6 does not build (its TransformerConfig lists gated_delta_net and dsa, transformer_config.py:294; "
        "get_experimental_attention_variant_module_spec raises \"Invalid experimental attention variant\", "
        "experimental_attention_variant_module_specs.py:141-148), and sets " +
            list +
            ", which are no fields of the pinned TransformerConfig: hyper-connections (mHC), compressed sparse attention, the grouped "
            "output projection and hash routing are Megatron-LM dev's (Bridge's .dev.commit cae55c1f; examples/models/deepseek_v4/README.md:9, :46-48). "
            "Not simulated: docs/research/dsv4-memory-facts.md");
}

}  // namespace peakcast::model::detail
