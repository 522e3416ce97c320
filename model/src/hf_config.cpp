// map_hf_config: dispatch (auto_bridge.py:2131-2192), the shared mapping and its post-processing
// (model_bridge.py:548-649, base provider_bridge :738-804), then the architecture's constants and
// rules, as configs/hf/architectures.json and docs/hf-config-mapping.md give them.
#include "hf_config.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "hf_config_mapper.hpp"
#include "peakcast/model/embedded_configs.hpp"
#include "spec_parser_detail.hpp"
#include "spec_suggest.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

const json& hf_table() {
  static const json t = [] {
    const auto text = embedded_config("hf/architectures.json");
    json j = text ? json::parse(text->begin(), text->end(), nullptr, false) : json();
    return j.is_object() ? j : json::object();
  }();
  return t;
}

}  // namespace

// Gemma3ModelBridge.provider_bridge (gemma3_bridge.py:65-72): the window as an int (Gemma3TEDotProductAttention
// makes it (window - 1, 0)), the (local, global) RoPE bases, the softmax scale and the RoPE scaling factor.
void Mapper::gemma3_provider_fields() {
  const json* w = get("sliding_window");
  if (w && w->is_number_integer() && w->get<std::int64_t>() >= 1) model.fields["window_size"] = *w;
  else error("sliding_window", "hf_value_out_of_range", "Gemma3ModelBridge sets window_size = sliding_window (gemma3_bridge.py:66): sliding_window " + (w ? w->dump().substr(0, 40) : std::string("is missing")) + ", not a positive window");
  const json* local = get("rope_local_base_freq");
  const json* global = get("rope_theta");
  if (local && global && local->is_number() && global->is_number()) model.fields["rotary_base"] = json::array({*local, *global});
  else error(local && local->is_number() ? "rope_theta" : "rope_local_base_freq", "hf_value_out_of_range", "Gemma3ModelBridge reads rope_local_base_freq and rope_theta (gemma3_bridge.py:67-70, transformers_compat.py:27-128), which raise when missing");
  if (const json* q = get("query_pre_attn_scalar"); q && q->is_number() && q->get<double>() > 0) model.fields["softmax_scale"] = 1.0 / std::sqrt(q->get<double>());
  const json* rs = get("rope_scaling");
  model.fields["rope_scaling_factor"] = rs && rs->is_object() && rs->contains("factor") && (*rs)["factor"].is_number() ? (*rs)["factor"] : json(1.0);
  // Keys the bridge does not read although they change the model (docs/hf-config-mapping.md 4.13): a config that
  // sets them describes a model Bridge does not build.
  for (const char* k : {"attn_logit_softcapping", "final_logit_softcapping"})
    if (const json* v = get(k); v && !v->is_null())
      error(k, "hf_unmapped_shape_key", std::string(k) + " " + v->dump().substr(0, 40) + ": Gemma3ModelBridge does not read it (gemma3_bridge.py:53-74), so the Megatron model has no soft-cap");
  const json* lt = get("layer_types");
  bool five_one = !lt || lt->is_array();
  for (std::size_t i = 0; lt && five_one && i < lt->size(); ++i) five_one = (*lt)[i] == (i % 6 < 5 ? "sliding_attention" : "full_attention");
  if (const json* p = get("sliding_window_pattern"); (p && *p != 6) || !five_one)
    error(p && *p != 6 ? "sliding_window_pattern" : "layer_types", "hf_unmapped_shape_key",
          "not 5 local layers then 1 global: Gemma3ModelBridge does not read the pattern and builds interleaved_attn_pattern (5, 1) (gemma3_provider.py:73)");
}

// window_size (sliding_window - 1, 0) from the config's sliding_window, as the Mistral and GPT-OSS
// bridges set it; GPT-OSS reads the key unconditionally, so there a missing one is an error too.
void Mapper::window_from_sliding_window(bool required, const char* source) {
  const json* v = get("sliding_window");
  if (!v || !v->is_number_integer()) {
    if (required) error("sliding_window", "hf_value_out_of_range", std::string("sliding_window is missing; the bridge sets window_size from it (") + source + ")");
  } else if (v->get<std::int64_t>() >= 1) {
    model.fields["window_size"] = json::array({v->get<std::int64_t>() - 1, 0});
  } else {
    error("sliding_window", "hf_value_out_of_range", "sliding_window " + v->dump() + " is not a positive window (" + source + ")");
  }
}

// Keys GPTOSSBridge does not read because it sets their effect as a constant (gpt_oss_bridge.py:84-102;
// docs/hf-config-mapping.md 4.11): a config they would contradict is refused, not silently remapped.
void Mapper::gpt_oss_constant_keys() {
  const json clamp = arch.value("constants", json::object()).value("activation_func_clamp_value", json());  // the bridge's constant
  if (const json* v = get("swiglu_limit"); v && !(v->is_number() && *v == clamp))
    error("swiglu_limit", "hf_unmapped_shape_key", "swiglu_limit " + v->dump().substr(0, 40) + ": GPTOSSBridge clamps at the constant " + clamp.dump() + " (activation_func_clamp_value, gpt_oss_bridge.py:85)");
  const json* k = get("num_experts_per_tok");
  if (const json* v = get("experts_per_token"); v && k && *v != *k)
    error("experts_per_token", "hf_unmapped_shape_key", "experts_per_token " + v->dump().substr(0, 40) + " differs from num_experts_per_tok " + k->dump().substr(0, 40) + ", which the bridge reads (model_bridge.py:481)");
  if (const json* lt = get("layer_types"); lt) {
    bool alternating = lt->is_array();
    for (std::size_t i = 0; alternating && i < lt->size(); ++i) alternating = (*lt)[i] == (i % 2 == 0 ? "sliding_attention" : "full_attention");
    if (!alternating)
      error("layer_types", "hf_unmapped_shape_key", "layer_types is not sliding / full alternating from the first layer: GPTOSSBridge builds that alternation whatever the config says (window_attn_skip_freq 2, gpt_oss_bridge.py:93)");
  }
  get("initial_context_length");  // the YaRN original length is the constant 4096 (gpt_oss_bridge.py:98)
}

namespace {

std::vector<std::pair<std::string, std::string>> pairs_of(const json& list) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& p : list)
    if (p.is_array() && p.size() == 2) out.emplace_back(p[0].get<std::string>(), p[1].get<std::string>());
  return out;
}

// Activation names of Bridge's ACTIVATION_FUNC_MAP (utils/activation_map.py:41-63) as the run spec names them.
std::optional<std::string> activation(const std::string& hf_act) {
  if (hf_act == "silu" || hf_act == "swish") return "silu";
  if (hf_act == "gelu") return "gelu";
  if (hf_act == "relu") return "relu";
  if (hf_act == "relu2" || hf_act == "squared_relu") return "squared_relu";
  if (hf_act == "gelu_pytorch_tanh" || hf_act == "fast_gelu") return "fast_gelu";
  if (hf_act == "quick_gelu") return "quick_gelu";
  return std::nullopt;
}

}  // namespace

void Mapper::post_process(bool mla) {
  const json* rs = get("rope_scaling");
  std::string rope_type;
  if (rs && rs->is_object()) rope_type = string_or(*rs, "type", string_or(*rs, "rope_type"));
  // The base provider_bridge (model_bridge.py:790-802) and the YaRN / MLA rope handling (:595-632).
  // position_embedding_type: yarn for a YaRN config on a GPT provider, rope otherwise (:790-797).
  model.fields["position_embedding_type"] = !mla && rope_type == "yarn" ? "yarn" : "rope";
  if (mla) {
    if (rope_type == "yarn") {
      for (const auto& [h, m] : std::vector<std::pair<std::string, std::string>>{{"factor", "rotary_scaling_factor"},
                                                                                 {"mscale", "mscale"},
                                                                                 {"mscale_all_dim", "mscale_all_dim"},
                                                                                 {"beta_fast", "beta_fast"},
                                                                                 {"beta_slow", "beta_slow"}})
        if (rs->contains(h)) model.fields[m] = (*rs)[h];
    } else {
      model.fields["rotary_scaling_factor"] = 1.0;
      model.fields["mscale_all_dim"] = 1.0;
    }
  } else {
    if (rope_type == "yarn")
      for (const auto& [h, m] : std::vector<std::pair<std::string, std::string>>{{"factor", "yarn_rotary_scaling_factor"},
                                                                                 {"original_max_position_embeddings", "yarn_original_max_position_embeddings"},
                                                                                 {"beta_fast", "yarn_beta_fast"},
                                                                                 {"beta_slow", "yarn_beta_slow"},
                                                                                 {"mscale", "yarn_mscale"},
                                                                                 {"mscale_all_dim", "yarn_mscale_all_dim"}})
        if (rs->contains(h)) model.fields[m] = (*rs)[h];
  }
  // make_vocab_size_divisible_by: the largest power of two <= 128 dividing the vocabulary (:634-637, :1716-1747).
  if (const json* v = get("vocab_size"); v && v->is_number_integer() && v->get<std::int64_t>() > 0) {
    std::int64_t d = 128;
    while (d > 1 && v->get<std::int64_t>() % d != 0) d /= 2;
    model.fields["make_vocab_size_divisible_by"] = d;
  }
  // torch_dtype (TF 5: dtype) -> params_dtype, bf16, fp16; fp32 when absent (:639-643, :1660-1714).
  const json* dt = hf.contains("torch_dtype") ? get("torch_dtype") : get("dtype");
  const std::string dtype = dt && dt->is_string() ? dt->get<std::string>() : "float32";
  model.fields["params_dtype"] = dtype == "bfloat16" ? "bf16" : dtype == "float16" ? "fp16"
                                                                                   : "fp32";
  model.fields["bf16"] = dtype == "bfloat16";
  model.fields["fp16"] = dtype == "float16";
  // hidden_act, else hidden_activation, else silu (:645-647); an unknown name raises there.
  const json* act = hf.contains("hidden_act") ? get("hidden_act") : get("hidden_activation");
  const std::string a = act && act->is_string() ? act->get<std::string>() : "silu";
  if (const auto name = activation(a)) model.fields["activation_func"] = *name;
  else error("hidden_act", "hf_unknown_activation", "hidden_act \"" + a.substr(0, 40) + "\" is not in Bridge's ACTIVATION_FUNC_MAP (utils/activation_map.py:41-63)");
  // MLA-only fields are not fields of a GPT provider: the base provider_bridge drops them (:782-783).
  if (!mla)
    for (const auto& f : hf_table()["mla_only_fields"]) model.fields.erase(f.get<std::string>());
}

void Mapper::rules() {
  const std::int64_t layers = int_or(hf, "num_hidden_layers", 0);
  for (const auto& r : arch.value("rules", json::array())) {
    const std::string rule = r.get<std::string>();
    if (exaone_rule(rule) || qwen35_rule(rule)) continue;
    if (rule == "moe_layer_freq_from_first_k_dense") {  // deepseek_v2_bridge.py:79-81, deepseek_v3_bridge.py:92-94
      // A layer count past any model's is left to the run spec's size check (model.num_layers), unbuilt.
      if (layers <= 0 || layers > (std::int64_t{1} << 20)) continue;
      const json* k = get("first_k_dense_replace");
      const std::int64_t dense = k && k->is_number_integer() ? k->get<std::int64_t>() : 0;
      json freq = json::array();
      for (std::int64_t i = 0; i < layers; ++i) freq.push_back(i < dense ? 0 : 1);
      model.fields["moe_layer_freq"] = freq;
    } else if (rule == "shared_experts_product") {  // deepseek_v2_bridge.py:82, deepseek_v3_bridge.py:95
      const json* n = get("n_shared_experts");
      const json* f = get("moe_intermediate_size");
      constexpr std::int64_t kBound = std::int64_t{1} << 30;  // keeps the product exact; sizes are checked later
      if (n && f && n->is_number_integer() && f->is_number_integer() && n->get<std::int64_t>() != 0) {
        const std::int64_t ns = n->get<std::int64_t>(), fs = f->get<std::int64_t>();
        if (ns > 0 && ns < kBound && fs > 0 && fs < kBound) model.fields["moe_shared_expert_intermediate_size"] = ns * fs;
        else error("n_shared_experts", "hf_value_out_of_range",
                   "n_shared_experts " + n->dump() + " x moe_intermediate_size " + f->dump() + " is not a positive size");
      }
    } else if (rule == "shared_expert_is_moe_ffn") {  // glm45_bridge.py:88: one shared expert of the routed size
      if (const json* n = get("n_shared_experts"); n && *n != 1)
        error("n_shared_experts", "hf_unmapped_shape_key",
              "n_shared_experts " + n->dump() + " is not read by GLM45Bridge, which builds one shared expert of moe_intermediate_size");
      if (const json* f = get("moe_intermediate_size")) model.fields["moe_shared_expert_intermediate_size"] = *f;
    } else if (rule == "mtp_zero_is_none") {  // deepseek_v3_bridge.py:97: value or None
      if (model.fields.contains("mtp_num_layers") && model.fields["mtp_num_layers"] == 0) model.fields["mtp_num_layers"] = nullptr;
    } else if (rule == "default_aux_loss_alpha") {  // deepseek_v3_bridge.py:71
      if (!hf.contains("aux_loss_alpha")) model.fields["moe_aux_loss_coeff"] = 0.0001;
    } else if (rule == "refuse_deepseek_moe_layer_freq") {
      if (const json* v = get("moe_layer_freq"); v && *v != 1)
        error("moe_layer_freq", "hf_unmapped_shape_key", "moe_layer_freq " + v->dump() + " is not read by the DeepSeek bridge, which makes every layer after first_k_dense_replace MoE");
    } else if (rule == "refuse_mla_attention_bias") {
      if (const json* v = get("attention_bias"); v && *v == true)
        error("attention_bias", "hf_unmapped_shape_key", "attention_bias true: Megatron's MLA linears have no such bias");
      model.fields.erase("add_qkv_bias");
    } else if (rule == "refuse_sliding_window") {
      if (const json* v = get("use_sliding_window"); v && *v == true)
        error("use_sliding_window", "hf_unmapped_shape_key", "use_sliding_window true: Bridge's bridge builds full causal attention (docs/hf-config-mapping.md 4.4)");
    } else if (rule == "mistral_sliding_window") {
      window_from_sliding_window(false, "mistral_bridge.py:56-59, :73-74");
    } else if (rule == "gemma2_sliding_window") {
      window_from_sliding_window(true, "gemma2_bridge.py:55");
    } else if (rule == "gemma3_provider_fields") {
      gemma3_provider_fields();
    } else if (rule == "gpt_oss_sliding_window") {
      window_from_sliding_window(true, "gpt_oss_bridge.py:92");
    } else if (rule == "moe_ffn_is_intermediate") {  // gpt_oss_bridge.py:96
      if (const json* f = get("intermediate_size")) model.fields["moe_ffn_hidden_size"] = *f;
    } else if (rule == "olmoe_checks") {  // olmoe_bridge.py:91-93; clip_qkv is not implemented in Megatron
      if (const json* v = get("scoring_func"); v && *v != "softmax")
        error("scoring_func", "hf_value_out_of_range", "OlMoE only supports scoring_func='softmax', got " + v->dump().substr(0, 40) + " (olmoe_bridge.py:92)");
      if (const json* v = get("clip_qkv"); v && !v->is_null())
        error("clip_qkv", "hf_unmapped_shape_key", "clip_qkv " + v->dump().substr(0, 40) + ": OlMoEBridge does not read it and Megatron has no QKV clipping");
    } else if (rule == "gpt_oss_constant_keys") {
      gpt_oss_constant_keys();
    } else if (rule == "nemotron_h_pattern") {
      nemotron_h_pattern();
    } else if (rule == "nemotron_h_kv_channels") {
      nemotron_h_kv_channels();
    } else if (rule == "nemotron_h_mtp") {
      nemotron_h_mtp();
    } else if (rule == "nemotron_h_checks") {
      nemotron_h_checks();
    } else if (rule == "glm5_dsa") {
      glm5_dsa();
    } else if (rule == "dsv4") {
      dsv4();
    } else if (rule == "pre_softmax_from_norm_topk_prob") {  // qwen3_moe_bridge.py:66
      const json* v = get("norm_topk_prob");
      model.fields["moe_router_pre_softmax"] = !(v && *v == true);
    } else if (rule == "every_layer_moe") {
      if (const json* v = get("decoder_sparse_step"); v && *v != 1)
        error("decoder_sparse_step", "hf_unmapped_shape_key", "decoder_sparse_step " + v->dump() + ": the bridge builds every layer as MoE");
      if (const json* v = get("mlp_only_layers"); v && v->is_array() && !v->empty())
        error("mlp_only_layers", "hf_unmapped_shape_key", "mlp_only_layers is not read: the bridge builds every layer as MoE");
    } else if (rule == "qwen3_next_linear_attention") {  // qwen3_next_bridge.py:86, transformers_compat.py:196-229
      if (const json* lt = get("layer_types"); lt && lt->is_array()) {
        json freq = json::array();
        for (const auto& t : *lt) freq.push_back(t == "linear_attention" ? 1 : 0);
        model.fields["linear_attention_freq"] = freq;
      } else if (const json* iv = get("full_attention_interval")) {
        model.fields["linear_attention_freq"] = *iv;
      }
    } else if (rule == "llama_rope_scaling") {  // llama_bridge.py:67-73
      const json* rs = get("rope_scaling");
      if (rs && rs->is_object()) {
        const std::string t = string_or(*rs, "rope_type", string_or(*rs, "type"));
        if (t == "llama3") {
          model.fields["rope_scaling"] = true;
          model.fields["rope_scaling_factor"] = rs->contains("factor") ? (*rs)["factor"] : json(8.0);
        } else if (t == "linear") {
          model.fields["seq_len_interpolation_factor"] = rs->contains("factor") ? (*rs)["factor"] : json(1.0);
        }
      }
    }
  }
}

HfModel map_hf_fields(const json& hf, const std::string& file, Diagnostics& out) {
  if (!hf.is_object()) {
    out.push_back({Severity::error, "", "hf_not_object", file + ": a config.json is an object"});
    return {};
  }
  // Dispatch: auto_map's AutoModelForCausalLM class name, else the first architectures entry (auto_bridge.py:2131-2192).
  std::string key;
  if (hf.contains("auto_map") && hf["auto_map"].is_object() && hf["auto_map"].contains("AutoModelForCausalLM") &&
      hf["auto_map"]["AutoModelForCausalLM"].is_string()) {
    const std::string a = hf["auto_map"]["AutoModelForCausalLM"].get<std::string>();
    key = a.substr(a.rfind('.') + 1);
  } else if (hf.contains("architectures") && hf["architectures"].is_array() && !hf["architectures"].empty() && hf["architectures"][0].is_string()) {
    key = hf["architectures"][0].get<std::string>();
  }
  const json& archs = hf_table()["architectures"];
  if (!archs.contains(key)) {
    std::string msg = key.empty() ? "no architectures entry" : "architecture \"" + key.substr(0, 60) + "\" is not mapped";
    if (hf_table()["unsupported"].contains(key)) msg += ": " + hf_table()["unsupported"][key].get<std::string>();
    else {
      std::vector<std::string> names;
      for (const auto& [k, v] : archs.items()) names.push_back(k);
      msg += " (mapped: ";
      for (std::size_t i = 0; i < names.size(); ++i) msg += (i ? ", " : "") + names[i];
      msg += ")";
    }
    out.push_back({Severity::error, "architectures", "hf_unknown_architecture", file + ": " + msg});
    return {};
  }
  const json& arch = archs[key];
  Mapper m{hf, file, arch, out, {}, {}};
  m.model.architecture = key;
  m.model.bridge = string_or(arch, "bridge");
  m.model.provider_class = string_or(arch, "provider");
  m.model.sources = {string_or(arch, "source"), string_or(hf_table(), "base_mapping_source")};
  const bool mla = m.model.provider_class.find("MLAModelProvider") != std::string::npos;
  // A bridge's own pairs extend the shared CONFIG_MAPPING: one list, first match wins (model_bridge.py:561-580).
  const auto reads = pairs_of(arch.value("reads", json::array()));
  if (detail::is_true(arch, "base")) {
    auto pairs = pairs_of(hf_table()["base_mapping"]);
    pairs.insert(pairs.end(), reads.begin(), reads.end());
    m.copy(pairs);
    m.post_process(mla);
  } else {
    m.copy(reads);
  }
  m.rules();
  const json constants = arch.value("constants", json::object());
  for (const auto& [k, v] : constants.items()) m.model.fields[k] = v;
  std::set<std::string> read = m.known;  // what the dispatch, the mapping and the rules looked at
  read.insert({"architectures", "auto_map"});
  for (const auto& k : hf_table()["ignored"]) m.known.insert(k.get<std::string>());
  for (const auto& k : arch.value("ignored", json::array())) m.known.insert(k.get<std::string>());
  for (const auto& k : arch.value("semantic", json::array())) m.known.insert(k.get<std::string>());  // read, no shape effect
  for (const auto& p : pairs_of(hf_table()["base_mapping"])) m.known.insert(p.first);
  for (const auto& [k, v] : hf.items())
    if (!m.known.count(k))
      m.error(k, "hf_unknown_key", "\"" + k.substr(0, 60) + "\" is not read by Bridge's " + m.model.bridge + " and peakcast cannot tell whether it changes shapes (docs/hf-config-mapping.md)");
  for (const auto& [k, v] : hf.items())
    if (!read.count(k)) m.model.ignored.push_back(k);
  return m.model;
}

std::optional<HfModel> map_hf_config(const json& hf, const std::string& file, Diagnostics& out) {
  HfModel model = map_hf_fields(hf, file, out);
  if (has_errors(out)) return std::nullopt;
  return model;
}

std::optional<json> shipped_hf_config(const std::string& hf_id) {
  std::string name = hf_id;
  const auto slash = name.find('/');
  if (slash == std::string::npos) return std::nullopt;
  name = name.substr(0, slash) + "--" + name.substr(slash + 1);
  const auto text = embedded_config("hf/" + name + ".json");
  if (!text) return std::nullopt;
  json j = json::parse(text->begin(), text->end(), nullptr, false);
  if (!j.is_object()) return std::nullopt;
  return j;
}

std::optional<std::string> hf_not_simulated(const std::string& hf_id) {
  static const json index = [] {
    const auto text = embedded_config("hf/index.json");
    json j = text ? json::parse(text->begin(), text->end(), nullptr, false) : json();
    return j.is_object() ? j : json::object();
  }();
  if (!index.contains(hf_id) || !index[hf_id].is_object() || !index[hf_id].contains("not_simulated")) return std::nullopt;
  const json& n = index[hf_id]["not_simulated"];
  std::string text = string_or(n, "mechanism");
  if (n.contains("evidence") && n["evidence"].is_array() && !n["evidence"].empty()) {
    text += " (found: ";
    for (std::size_t i = 0; i < n["evidence"].size(); ++i) text += (i ? "; " : "") + n["evidence"][i].get<std::string>();
    text += ")";
  }
  return text;
}

}  // namespace peakcast::model::detail
