// "bridge:<recipe function>": a pinned Megatron-Bridge recipe from the catalogue (configs/recipes/,
// each file what the recipe function assigns, traced from the code at 600d069b) resolved as Bridge
// runs it: the model from its Hugging Face config through AutoBridge's mapping (hf_config.cpp) or
// from the recipe's provider arguments, the recipe's assignments on top, setup()'s vocabulary, then
// runtime_config_update (bridge_runtime.cpp) and the same conversion a run_config.yaml takes.
#include "bridge_recipe.hpp"

#include <map>

#include "bridge_container.hpp"
#include "bridge_defaults.hpp"
#include "hf_config.hpp"
#include "peakcast/model/embedded_configs.hpp"
#include "peakcast/model/recipes.hpp"
#include "spec_parser_detail.hpp"
#include "spec_suggest.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

const json& provider_table() {
  static const json t = [] {
    const auto text = embedded_config("bridge/defaults.json");
    json j = text ? json::parse(text->begin(), text->end(), nullptr, false) : json();
    return j.is_object() && j.contains("providers") ? j["providers"] : json::object();
  }();
  return t;
}

// The recipe's provider class ("MLAModelProvider", "BridgeGPTModelConfig (nested ...)") by its full name.
std::string full_class(const std::string& name) {
  const std::string short_name = name.substr(0, name.find(' '));
  for (const auto& [k, v] : provider_table().items())
    if (k.size() > short_name.size() && k.compare(k.size() - short_name.size() - 1, std::string::npos, "." + short_name) == 0) return k;
  return "";
}

// Whether `key` is a dataclass field of the provider class (any class of its MRO declares it).
bool is_model_field(const std::string& cls, const std::string& key) {
  static const json& bases = []() -> const json& {
    static json b;
    const auto text = embedded_config("bridge/defaults.json");
    json j = text ? json::parse(text->begin(), text->end(), nullptr, false) : json();
    b = j.is_object() && j.contains("base_classes") ? j["base_classes"] : json::object();
    return b;
  }();
  const json& providers = provider_table();
  if (!providers.contains(cls)) return true;
  for (const auto& c : providers[cls]["mro"]) {
    const std::string n = c.get<std::string>();
    const json* e = providers.contains(n) ? &providers[n] : bases.contains(n) ? &bases[n]
                                                                              : nullptr;
    if (e && e->contains("fields") && (*e)["fields"].contains(key)) return true;
  }
  // A builder config (BridgeGPTModelConfig) carries TransformerConfig's fields under transformer:.
  return cls.find("BridgeGPTModelConfig") != std::string::npos && bases.contains("megatron.core.transformer.transformer_config.TransformerConfig") &&
         bases["megatron.core.transformer.transformer_config.TransformerConfig"]["fields"].contains(key);
}

// Model classes whose own layer specs or attention peakcast does not simulate.
std::optional<std::string> unsupported_class(const std::string& cls) {
  static const std::map<std::string, std::string> s = {
      {"Gemma4DenseProvider",
       "Gemma 4's own local layer (modeling_gemma4.py:518-717): per-layer embeddings (a [262144, layers x 256] table and "
       "projection, :884-957), global layers with their own head width and KV groups (:301-314), K/V shared across the last "
       "num_kv_shared_layers layers (:326-354); docs/research/gemma-memory-facts.md section 7"},
      {"ExaoneMoeModelProvider",
       "EXAONE MoE's own layer spec (exaone_moe_provider.py:47-164): per-layer SwiGLU limits (activation_func_clamp_value from "
       "swiglu_limits, :88-90), a dense MTP layer under a MoE decoder (_MTPDenseLayerSpecsList, :47-57, :155-162) and RoPE skipped "
       "on the full-attention layers (no_rope_freq, exaone_moe_bridge.py:118-131), none of which peakcast simulates; no config.json "
       "of K-EXAONE-236B-A23B or K-EXAONE-2.0-750B-A37B was found either (configs/hf/index.json); "
       "docs/research/exaone-qwen35-memory-facts.md section 2"},
      {"MiniMaxM3ModelProvider", "MiniMax M3's sparse attention"},
      {"Step35ModelProvider", "Step 3.5's own layer spec"}};
  const std::string short_name = cls.substr(cls.rfind('.') + 1);
  const auto it = s.find(short_name);
  if (it == s.end()) return std::nullopt;
  return it->second;
}

// A Python list-of-strings literal as the catalogue records a recipe's assignment ("['Qwen3_5ForCausalLM']").
std::optional<json> python_string_list(const std::string& text) {
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') return std::nullopt;
  json out = json::array();
  std::size_t i = 1;
  while (i + 1 < text.size()) {
    while (i + 1 < text.size() && (text[i] == ' ' || text[i] == ',')) ++i;
    if (i + 1 >= text.size()) break;
    const char q = text[i];
    if (q != '\'' && q != '"') return std::nullopt;
    const auto end = text.find(q, i + 1);
    if (end == std::string::npos) return std::nullopt;
    out.push_back(text.substr(i + 1, end - i - 1));
    i = end + 1;
  }
  return out;
}

// The config object the recipe hands AutoBridge: the published config.json, or one of its nested configs
// (AutoConfig.from_pretrained(id).text_config, e.g. recipes/qwen/gb200/qwen35.py:37) with the recipe's own
// assignments on it (text_config.architectures, :40). `why` names what could not be read.
std::optional<json> recipe_hf_view(const json& hf, const json& mp, std::string& why) {
  if (!mp.contains("hf_config") || !mp["hf_config"].is_object()) return hf;
  const json& h = mp["hf_config"];
  json view = hf;
  if (const std::string sub = string_or(h, "hf_config_sub"); !sub.empty()) {
    if (!hf.contains(sub) || !hf[sub].is_object()) {
      why = "the recipe takes the config's " + sub + ", which the shipped config.json lacks";
      return std::nullopt;
    }
    view = hf[sub];
  }
  const json set = h.value("hf_config_set", json::object());
  for (const auto& [k, v] : set.items()) {
    const auto parsed = v.is_array() && !v.empty() && v[0].is_string() ? python_string_list(v[0].get<std::string>()) : std::nullopt;
    if (!parsed) {
      why = "the recipe sets the config's " + k + " to " + v.dump().substr(0, 60) + ", which peakcast cannot read";
      return std::nullopt;
    }
    view[k] = *parsed;
  }
  return view;
}

// The GPU of the recipe's folder (recipes/<family>/<gpu>/), as a shipped GPU preset.
std::optional<std::string> gpu_preset_of(const std::string& folder) {
  if (folder == "h100") return "h100-sxm-80gb";
  if (folder == "h200") return "h200-141gb";
  if (folder == "b200") return "b200";
  if (folder == "a100") return "a100-80gb";
  if (folder == "gb200") return "gb200";  // configs/gpus/gb200.json: a GB200 superchip's Blackwell GPU
  if (folder == "gb300") return "gb300";  // configs/gpus/gb300.json: a GB300 superchip's Blackwell Ultra GPU
  return std::nullopt;
}

// A catalogue value: a recipe's own value, or one it copies from the HF-built provider.
std::optional<json> resolve(const json& v, const json& model, std::string& why) {
  if (v.is_object() && v.contains("_unknown")) {
    const std::string what = v["_unknown"].get<std::string>();
    const std::string prefix = "hf_provider.";
    if (what.rfind(prefix, 0) == 0 && model.contains(what.substr(prefix.size()))) return model[what.substr(prefix.size())];
    // float(hf_provider.x): the provider's value as a float (e.g. deepseek_v2.py's rotary_base).
    const std::string as_float = "float(" + prefix;
    if (what.rfind(as_float, 0) == 0 && what.back() == ')') {
      const std::string field = what.substr(as_float.size(), what.size() - as_float.size() - 1);
      if (model.contains(field) && model[field].is_number()) return json(model[field].get<double>());
    }
    why = what;
    return std::nullopt;
  }
  if (v.is_object() && v.contains("_symbol")) return v["_symbol"];  // a function, as its dotted name
  return v;
}

struct RecipeBuilder {
  const json& recipe;
  const std::string& file;
  Diagnostics& out;
  json doc = json::object();
  std::map<std::string, KeyOrigin> origins;

  void error(const std::string& path, const char* rule, const std::string& message) {
    out.push_back({Severity::error, path, rule, file + ": " + message});
  }
  // The line the recipe assigns a key at (the catalogue's "sources"), else the recipe function's.
  std::string source_of(const std::string& path) const {
    if (recipe.contains("sources") && recipe["sources"].contains(path) && recipe["sources"][path].is_string())
      return recipe["sources"][path].get<std::string>();
    return string_or(recipe, "source");
  }
  bool model();
  void sections();
  void vocabulary(bool vocab_given);
  std::string vocab_growth() const;
};

// The recipe line that grows model.vocab_size to len(tokenizer) when the tokenizer is larger (Gemma 2 / 3's
// _adjust_gemma*_vocab_size, recipes/gemma/h100/gemma2.py:294-310), as the catalogue records the condition
// it could not evaluate; empty when the recipe has none.
std::string RecipeBuilder::vocab_growth() const {
  const std::string prefix = "harness: len(tokenizer) > model.vocab_size at ";
  for (const auto& n : recipe.value("notes", json::array())) {
    if (!n.is_string() || n.get<std::string>().rfind(prefix, 0) != 0) continue;
    const std::string rest = n.get<std::string>().substr(prefix.size());
    return rest.substr(0, rest.find(' '));
  }
  return "";
}

bool RecipeBuilder::model() {
  const json& mp = recipe["model_provider"];
  const std::string cls = full_class(string_or(mp, "provider_class"));
  if (cls.empty()) {
    error("model_provider", "recipe_unknown_provider", "provider class " + string_or(mp, "provider_class", "?") + " is not in Bridge's table");
    return false;
  }
  if (const auto why = unsupported_class(cls)) {
    error("model_provider", "recipe_model_not_simulated", cls + " is not simulated: " + *why);
    return false;
  }
  json m = json::object();
  if (string_or(mp, "kind") == "hf") {
    const std::string id = string_or(mp, "hf_model_id");
    auto hf = shipped_hf_config(id);
    std::string why_view;
    if (hf) hf = recipe_hf_view(*hf, mp, why_view);
    if (!why_view.empty()) {
      error("model_provider.hf_config", "recipe_value_unresolved", why_view + " (" + string_or(mp["hf_config"], "hf_config_src") + ")");
      return false;
    }
    if (const auto why = hf ? std::optional<std::string>() : hf_not_simulated(id)) {
      error("model_provider.hf_model_id", "recipe_model_not_simulated", id + " is not simulated: " + *why + "; its config.json is not shipped (configs/hf/index.json)");
      return false;
    }
    if (!hf) {
      error("model_provider.hf_model_id", "recipe_hf_config_missing",
            "no public config.json for " + id + " in configs/hf/ (give the model's config with --hf-config)");
      return false;
    }
    const auto mapped = map_hf_config(*hf, "configs/hf/" + id, out);
    if (!mapped) return false;
    m = mapped->fields;
    for (const auto& [k, v] : m.items())
      origins["model." + k] = {"Hugging Face config", id + " (configs/hf/) through " + mapped->bridge + " (" + mapped->sources.front() + ")", ""};
  }
  const json& rm = recipe["config"].value("model", json::object());
  json flat = rm;
  if (flat.contains("transformer") && flat["transformer"].is_object()) {
    for (const auto& [k, v] : rm["transformer"].items()) flat[k] = v;
    flat.erase("transformer");
  }
  for (const auto& [k, v] : flat.items()) {
    if (k.empty() || k[0] == '_') continue;
    if (!is_model_field(cls, k)) {
      // Python sets a plain attribute on the dataclass: nothing reads it (and to_dict never writes it).
      out.push_back({Severity::warning, "config.model." + k, "recipe_stray_attribute",
                     file + ": the recipe assigns " + k + ", which is not a field of " + cls + ": no effect"});
      continue;
    }
    std::string why;
    if (const auto r = resolve(v, m, why)) {
      m[k] = *r;
      origins["model." + k] = {"recipe", source_of("model." + k), ""};
    } else error("config.model." + k, "recipe_value_unresolved", "the recipe computes " + k + " from " + why + ", which peakcast cannot evaluate");
  }
  m["_target_"] = cls;
  doc["model"] = m;
  // The recipe entry point copies the dataset's sequence length into the model
  // (bridge:scripts/training/run_recipe.py:515), so the two agree (Kimi K2, Nemotron Nano v2).
  const json& ds = recipe["config"].value("dataset", json::object());
  if (ds.contains("seq_length") && ds["seq_length"].is_number_integer()) {
    doc["model"]["seq_length"] = ds["seq_length"];
    origins["model.seq_length"] = {"recipe", "dataset.seq_length copied by bridge:scripts/training/run_recipe.py:515", ""};
  }
  return true;
}

void RecipeBuilder::sections() {
  for (const auto& [section, v] : recipe["config"].items()) {
    if (section == "model") continue;
    if (!v.is_object()) {
      doc[section] = v;
      continue;
    }
    json s = json::object();
    // The recipe's PEFT object (default_peft_config / LoRA(...)) is the class its run_config.yaml names.
    if (section == "peft" && v.contains("_constructor") && v["_constructor"].is_string())
      s["_target_"] = v["_constructor"] == "LoRA" ? "megatron.bridge.peft.lora.LoRA" : "megatron.bridge.peft." + v["_constructor"].get<std::string>();
    for (const auto& [k, e] : v.items()) {
      if (k == "_constructor") continue;
      std::string why;
      if (const auto r = resolve(e, doc["model"], why)) {
        s[k] = *r;
        origins[section + "." + k] = {"recipe", source_of(section + "." + k), ""};
      } else if (section == "model" || section == "train" || section == "optimizer" || section == "ddp" || section == "mixed_precision")
        error("config." + section + "." + k, "recipe_value_unresolved", "the recipe computes " + k + " from " + why + ", which peakcast cannot evaluate");
    }
    doc[section] = s;
  }
  const std::int64_t world = int_or(recipe, "num_gpus", 0);
  const json& m = doc["model"];
  const auto size = [&](const char* k) { return m.contains(k) && m[k].is_number_integer() ? m[k].get<std::int64_t>() : std::int64_t{1}; };
  const std::int64_t tp_pp_cp = size("tensor_model_parallel_size") * size("pipeline_model_parallel_size") * size("context_parallel_size");
  if (!doc["comm_overlap"].is_object()) doc["comm_overlap"] = json::object();
  if (world > 0 && tp_pp_cp > 0) doc["comm_overlap"]["data_parallel_size"] = world / tp_pp_cp;
  doc["_target_"] = "megatron.bridge.training.config.ConfigContainer";
}

// len(tokenizer) of a Hugging Face tokenizer, from configs/tokenizers.json (each size with its source).
std::optional<std::int64_t> tokenizer_vocab(const std::string& name) {
  static const json t = [] {
    const auto text = embedded_config("tokenizers.json");
    json j = text ? json::parse(text->begin(), text->end(), nullptr, false) : json();
    return j.is_object() ? j : json::object();
  }();
  if (!t.contains("tokenizers") || !t["tokenizers"].contains(name)) return std::nullopt;
  const json& e = t["tokenizers"][name];
  return e.contains("vocab_size") && e["vocab_size"].is_number_integer() ? std::optional<std::int64_t>(e["vocab_size"].get<std::int64_t>())
                                                                         : std::nullopt;
}

// setup(): the tokenizer's vocabulary when use_tokenizer_vocab_size (or no model vocabulary), padded
// at build time (bridge:src/megatron/bridge/training/setup.py:321-327, :740-780).
// `vocab_given`: the user's --set model.vocab_size, which replaces whatever this finds.
void RecipeBuilder::vocabulary(bool vocab_given) {
  const json& tok = doc.value("tokenizer", json::object());
  json& m = doc["model"];
  // The model's vocabulary as setup() sees it: the recipe's or the HF config's, else the provider
  // class's own default (OlMoEModelProvider: 50304, bridge:src/megatron/bridge/models/olmoe/olmoe_provider.py:61).
  json model_vocab = m.contains("vocab_size") ? m["vocab_size"] : json();
  if (const BridgeDefaults* d = model_vocab.is_null() ? BridgeDefaults::for_provider(string_or(m, "_target_")) : nullptr)
    if (const BridgeDefault* v = d->lookup("model", "vocab_size"); v && v->value.is_number_integer()) model_vocab = v->value;
  const bool use_tok = detail::is_true(tok, "use_tokenizer_vocab_size") || model_vocab.is_null();
  if (!use_tok) {
    m["should_pad_vocab"] = false;
    const std::string grows = vocab_growth();
    if (grows.empty() || vocab_given) return;
    // The recipe's own growth: len(tokenizer) when larger than the model's, kept unpadded by setup()
    // (setup.py:772-780), the length from configs/tokenizers.json.
    const std::string name = string_or(tok, "tokenizer_model");
    if (const auto known = tokenizer_vocab(name); known && model_vocab.is_number_integer()) {
      if (*known > model_vocab.get<std::int64_t>()) {
        m["vocab_size"] = *known;
        origins["model.vocab_size"] = {"recipe", grows + ": len(tokenizer) of " + name + ", " + std::to_string(*known) + " (configs/tokenizers.json)", ""};
      }
      return;
    }
    error("config.tokenizer", "recipe_vocab_unknown",
          "the recipe sets model.vocab_size to len(tokenizer) of " + string_or(tok, "tokenizer_model", "?") + " when that is larger (" + grows +
              ", and its docstring says the model vocabulary is the smaller), a size the catalogue does not record "
              "(configs/tokenizers.json); give --set model.vocab_size=V with V = max(" +
              m.value("vocab_size", json()).dump() + ", len(tokenizer))");
    return;
  }
  const std::string name = string_or(tok, "tokenizer_model");
  const auto known = tokenizer_vocab(name);
  const KeyOrigin setup{"Bridge setup()", "tokenizer vocabulary, padded at build (bridge:src/megatron/bridge/training/setup.py:321-327, :740-780)", ""};
  if (vocab_given) {  // the user's len(tokenizer), padded as setup() pads the tokenizer's
    m["should_pad_vocab"] = true;
    origins["model.should_pad_vocab"] = setup;
    return;
  }
  if (tok.contains("vocab_size") && tok["vocab_size"].is_number_integer()) {
    m["vocab_size"] = tok["vocab_size"];
    m["should_pad_vocab"] = true;
    origins["model.vocab_size"] = origins["model.should_pad_vocab"] = setup;
  } else if (known) {
    m["vocab_size"] = *known;
    m["should_pad_vocab"] = true;
    origins["model.vocab_size"] = origins["model.should_pad_vocab"] = setup;
  } else {
    error("config.tokenizer", "recipe_vocab_unknown", "the vocabulary comes from tokenizer " + string_or(tok, "tokenizer_model", "?") + ", whose size the catalogue does not record; give --set model.vocab_size=V");
  }
}

}  // namespace

std::vector<std::string> recipe_names() {
  std::vector<std::string> names;
  for (const std::string& p : embedded_config_paths("recipes/"))
    if (p.size() > 13 && p.compare(p.size() - 5, 5, ".json") == 0) names.push_back(p.substr(8, p.size() - 13));
  return names;
}

std::optional<json> recipe_entry(const std::string& name) {
  const auto text = embedded_config("recipes/" + name + ".json");
  if (!text || name.find('/') != std::string::npos) return std::nullopt;
  json j = json::parse(text->begin(), text->end(), nullptr, false);
  if (!j.is_object()) return std::nullopt;
  return j;
}

std::optional<BridgeDocument> recipe_document(const std::string& name, Diagnostics& out, bool vocab_given) {
  const auto recipe = recipe_entry(name);
  const std::string file = "bridge:" + name;
  if (!recipe) {
    std::string msg = "no recipe " + name.substr(0, 80) + " in the catalogue of Bridge 600d069b (peakcast recipes lists them)";
    if (auto s = closest_name(name, recipe_names())) msg += "; did you mean bridge:" + *s + "?";
    out.push_back({Severity::error, "", "unknown_recipe", msg});
    return std::nullopt;
  }
  RecipeBuilder b{*recipe, file, out, json::object(), {}};
  if (!b.model()) return std::nullopt;
  b.sections();
  b.vocabulary(vocab_given);
  BridgeDocument d;
  const std::string where = string_or(*recipe, "source");
  if (int_or(*recipe, "num_gpus", 0) > 0) {
    d.cluster["num_gpus"] = (*recipe)["num_gpus"];
    // A recipe whose name carries no GPU count cites where its count comes from (num_gpus_source).
    const std::string cited = string_or(*recipe, "num_gpus_source");
    b.origins["cluster.num_gpus"] = {"recipe", cited.empty() ? "the recipe's name (" + name + ", " + where + ")" : cited, ""};
  }
  if (const auto gpu = gpu_preset_of(string_or(*recipe, "gpu"))) {
    d.cluster["gpu"] = *gpu;
    b.origins["cluster.gpu"] = {"recipe", "the recipe's folder (" + string_or(*recipe, "gpu") + "/, " + where + ")", ""};
  }
  d.doc = std::move(b.doc);
  d.origins = std::move(b.origins);
  d.file = file;
  d.resolved = false;
  return d;
}

}  // namespace peakcast::model::detail

namespace peakcast::model {

std::vector<RecipeInfo> recipe_catalogue() {
  std::vector<RecipeInfo> out;
  for (const auto& name : detail::recipe_names()) {
    const auto r = detail::recipe_entry(name);
    if (!r) continue;
    RecipeInfo i;
    i.name = name;
    i.source = detail::string_or(*r, "source");
    i.gpu = detail::string_or(*r, "gpu");
    i.num_gpus = detail::int_or(*r, "num_gpus", 0);
    i.task = name.find("_peft_") != std::string::npos ? "peft" : name.find("_sft_") != std::string::npos ? "sft"
                                                                                                         : "pretrain";
    const auto& mp = (*r)["model_provider"];
    i.model = detail::string_or(mp, "hf_model_id", detail::string_or(mp, "provider_class"));
    out.push_back(std::move(i));
  }
  return out;
}

}  // namespace peakcast::model
