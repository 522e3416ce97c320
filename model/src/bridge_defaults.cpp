#include "bridge_defaults.hpp"

#include <memory>
#include <mutex>
#include <set>

#include "peakcast/model/embedded_configs.hpp"
#include "spec_parser_detail.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

const json& bridge_defaults_table() {
  static const json t = [] {
    const auto text = embedded_config("bridge/defaults.json");
    if (!text) return json::object();
    json j = json::parse(text->begin(), text->end(), nullptr, /*allow_exceptions=*/false);
    return j.is_object() ? j : json::object();
  }();
  return t;
}

namespace {

// The few expression defaults that decide memory, evaluated as in the environment peakcast assumes
// (Transformer Engine installed, as in every NeMo / Bridge container); nullopt for the rest.
std::optional<json> evaluate(const json& expr) {
  const std::string e = expr.value("expr", "");
  // utils/fusions.py:34-68: True when transformer_engine.pytorch (or APEX's fused wgrad) imports.
  if (e == "fusions.can_enable_gradient_accumulation_fusion()") return json(true);
  if (e == "torch.bfloat16") return json("bf16");
  if (e == "torch.float16") return json("fp16");
  if (e == "torch.float32") return json("fp32");
  return std::nullopt;
}

// A default as the run spec takes it; nullopt for what peakcast does not evaluate.
std::optional<json> literal(const json& d) {
  if (d.is_object()) {
    if (d.contains("expr")) return evaluate(d);
    return std::nullopt;  // {"required": true} and the like
  }
  return d;
}

// Python's dataclass field resolution for `cls`: every class of its MRO from the far end, each
// applying the fields it declares, then the "shadowed" exceptions.
std::map<std::string, BridgeDefault> provider_fields(const std::string& cls) {
  std::map<std::string, BridgeDefault> out;
  const json& providers = bridge_defaults_table()["providers"];
  const json& bases = bridge_defaults_table()["base_classes"];
  const auto it = providers.find(cls);
  if (it == providers.end()) return out;
  const json& mro = (*it)["mro"];
  for (auto c = mro.rbegin(); c != mro.rend(); ++c) {
    const std::string name = c->get<std::string>();
    const json* entry = nullptr;
    if (providers.contains(name)) entry = &providers[name];
    else if (bases.contains(name)) entry = &bases[name];
    if (!entry || !entry->contains("fields")) continue;
    for (const auto& [field, f] : (*entry)["fields"].items()) {
      if (f.contains("declared_in") && f["declared_in"] != name) continue;  // base tables list inherited fields too
      if (auto v = literal(f.value("default", json()))) out[field] = {*v, f.value("source", "")};
      else out.erase(field);
    }
  }
  if (it->contains("shadowed")) {
    for (const auto& [field, s] : (*it)["shadowed"].items()) {
      if (auto v = literal(s.value("effective_default", json()))) out[field] = {*v, s.value("effective_source", "")};
      else out.erase(field);
    }
  }
  return out;
}

std::map<std::string, BridgeDefault> section_fields(const std::string& section) {
  std::map<std::string, BridgeDefault> out;
  const json& s = bridge_defaults_table()["sections"][section];
  if (!s.is_object() || !s.contains("fields")) return out;
  for (const auto& [field, f] : s["fields"].items())
    if (auto v = literal(f.value("default", json()))) out[field] = {*v, f.value("source", "")};
  return out;
}

// MixedPrecisionConfig fields setup() copies onto each section (mixed_precision.py:138-157), less the
// precision switches a run spec states itself (bf16 / fp16 / params_dtype / pipeline_dtype /
// autocast_dtype): those keep the spec's own values or the model class's defaults.
const std::map<std::string, std::set<std::string>>& precision_copies() {
  static const std::map<std::string, std::set<std::string>> m = {
      {"model", {"fp8", "fp8_recipe", "first_last_layers_bf16", "fp8_margin", "fp8_amax_history_len", "fp8_amax_compute_algo", "fp8_wgrad", "fp8_dot_product_attention", "fp8_multi_head_attention", "fp8_param", "fp4", "fp4_recipe", "fp4_param", "num_layers_at_start_in_bf16", "num_layers_at_end_in_bf16"}},
      {"optimizer", {"fp8_recipe", "loss_scale", "initial_loss_scale", "min_loss_scale", "loss_scale_window", "hysteresis", "reuse_grad_buf_for_mxfp8_param_ag"}},
      {"ddp", {"grad_reduce_in_fp32", "fp8_param_gather", "fp4_param_gather", "reuse_grad_buf_for_mxfp8_param_ag"}}};
  return m;
}

}  // namespace

// Layer specs of a provider class that change what a layer saves, as the run spec's keys: the
// transformer_layer_spec default of the nearest class of the MRO that declares one.
void layer_spec_keys(const std::string& cls, std::map<std::string, BridgeDefault>& model) {
  const json& providers = bridge_defaults_table()["providers"];
  for (const auto& c : providers[cls]["mro"]) {
    const std::string n = c.get<std::string>();
    if (!providers.contains(n) || !providers[n].contains("fields") || !providers[n]["fields"].contains("transformer_layer_spec")) continue;
    const json& f = providers[n]["fields"]["transformer_layer_spec"];
    const std::string spec = f.contains("default") && f["default"].is_object() ? f["default"].value("expr", "") : "";
    const std::string src = f.value("source", "");
    if (spec == "olmoe_layer_spec")
      model["qk_layernorm_full_width"] = {true, src + " (olmoe_layer_spec: OLMoESelfAttention, olmoe_provider.py:88-186)"};
    // gemma2_layer_spec / gemma3_layer_spec (gemma2_provider.py:438-463, gemma3_provider.py:143-170): the
    // post-norm row-parallel linears and the family's core attention.
    if (spec == "gemma2_layer_spec" || spec == "gemma3_layer_spec") {
      const bool g2 = spec == "gemma2_layer_spec";
      model["post_linear_layernorm"] = {true, src + " (" + spec + ": TERowParallelLinearLayerNorm as linear_proj and linear_fc2)"};
      model["core_attention_module"] = {g2 ? "gemma2" : "gemma3", src + " (" + spec + (g2 ? ": Gemma2FlexDotProductAttention)" : ": Gemma3TEDotProductAttention)")};
    }
    return;
  }
}

// Model changes a provider's provide() makes after building the GPT model, as the run spec's keys.
void provide_keys(const std::string& cls, std::map<std::string, BridgeDefault>& model) {
  if (cls == "megatron.bridge.models.gemma.gemma2_provider.Gemma2ModelProvider")
    model["scale_embeddings_by_hidden_size"] = {true, "bridge:src/megatron/bridge/models/gemma/gemma2_provider.py:514-518 (EmbeddingScalingMixin)"};
  if (cls == "megatron.bridge.models.gemma.gemma3_provider.Gemma3ModelProvider")
    model["scale_embeddings_by_hidden_size"] = {true, "bridge:src/megatron/bridge/models/gemma/gemma3_provider.py:119-126 (Gemma3LanguageModelEmbedding)"};
}

struct BridgeDefaultsBuilder {
  static std::unique_ptr<BridgeDefaults> build(const std::string& cls) {
    if (!bridge_defaults_table()["providers"].contains(cls)) return nullptr;
    auto d = std::make_unique<BridgeDefaults>();
    d->provider_class_ = cls;
    d->by_section_["model"] = provider_fields(cls);
    layer_spec_keys(cls, d->by_section_["model"]);
    provide_keys(cls, d->by_section_["model"]);
    for (const char* s : {"train", "optimizer", "ddp"}) d->by_section_[s] = section_fields(s);
    auto mp = section_fields("mixed_precision");
    // __setattr__ keeps fp8_param == fp8_param_gather and fp4_param == fp4_param_gather (mixed_precision.py:77-95).
    for (const auto& [param, gather] : {std::pair{"fp8_param", "fp8_param_gather"}, std::pair{"fp4_param", "fp4_param_gather"}})
      if (mp.count(param) && mp.count(gather) && mp[param].value.is_null()) mp[param] = mp[gather];
    for (const auto& [section, fields] : precision_copies())
      for (const auto& f : fields)
        if (const auto it = mp.find(f); it != mp.end())
          d->by_section_[section][f] = {it->second.value, it->second.source + " (MixedPrecisionConfig.setup, mixed_precision.py:113-157)"};
    return d;
  }
};

const BridgeDefaults* BridgeDefaults::for_provider(const std::string& cls) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<BridgeDefaults>> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(cls);
  if (it == cache.end()) it = cache.emplace(cls, BridgeDefaultsBuilder::build(cls)).first;
  return it->second.get();
}

const BridgeDefault* BridgeDefaults::lookup(const std::string& section, const std::string& key) const {
  const auto s = by_section_.find(section);
  if (s == by_section_.end()) return nullptr;
  const auto f = s->second.find(key);
  return f == s->second.end() ? nullptr : &f->second;
}

std::string default_provider_class(const json& model) {
  const auto set = [&](const char* k) { return model.contains(k) && !model[k].is_null(); };
  if (set("hybrid_layer_pattern") || set("hybrid_override_pattern")) return "megatron.bridge.models.hybrid.hybrid_provider.HybridModelProvider";
  if (is_true(model, "multi_latent_attention")) return "megatron.bridge.models.mla_provider.MLAModelProvider";
  return "megatron.bridge.models.gpt_provider.GPTModelProvider";
}

}  // namespace peakcast::model::detail
