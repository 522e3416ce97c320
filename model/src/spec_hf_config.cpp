// model.hf_config: the architecture from a Hugging Face config.json, mapped as Megatron-Bridge's
// AutoBridge maps it (hf_config.cpp, configs/hf/architectures.json), under the file's own model keys.
//   - A key the config gives (or a shape the bridge fixes: RMSNorm, gated MLP, qk-norm, MLA, ...) that
//     the spec also sets to another value is an error naming both.
//   - The bridge's training settings (fusions, dropout, token dispatcher, grouped GEMM, aux-loss
//     coefficient, vocabulary padding) are the provider's defaults, which a Bridge recipe overrides
//     on the provider as the spec's keys do here: the spec's value wins, said in one line.
//   - The checkpoint dtype (torch_dtype -> params_dtype/bf16/fp16, model_bridge.py:639-643) applies
//     only where the spec sets none of the three: Bridge's mixed-precision config replaces it on the
//     provider (bridge:src/megatron/bridge/training/mixed_precision.py:138-155).
//   - The provider's max sequence length (HF max_position_embeddings, Bridge's seq_length) is the
//     run spec's max_position_embeddings: model.seq_length is the training sequence, the spec's.
// Keys of the config that nothing reads (token ids, use_cache, ...) are listed as ignored in one line.
#include <filesystem>
#include <fstream>
#include <set>

#include "bridge_defaults.hpp"
#include "hf_config.hpp"
#include "spec_parser_detail.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

constexpr std::size_t kMaxHfConfigBytes = 4 * 1024 * 1024;  // a config.json is a few kB

// Provider fields a bridge sets that are training choices, not the checkpoint's architecture.
const std::set<std::string>& settings() {
  static const std::set<std::string> s = {
      "apply_rope_fusion", "attention_softmax_in_fp32", "bias_activation_fusion", "bias_dropout_fusion",
      "cross_entropy_fusion_impl", "cross_entropy_loss_fusion", "deallocate_pipeline_outputs",
      "gradient_accumulation_fusion", "masked_softmax_fusion", "persist_layer_norm", "hidden_dropout",
      "attention_dropout", "init_method_std", "moe_aux_loss_coeff", "moe_grouped_gemm", "moe_permute_fusion",
      "moe_router_dtype", "moe_router_load_balancing_type", "moe_shared_expert_overlap", "moe_token_dispatcher_type",
      "make_vocab_size_divisible_by"};
  return s;
}
const std::set<std::string>& precision() {
  static const std::set<std::string> s = {"params_dtype", "bf16", "fp16"};
  return s;
}

bool is_set(const json& model, const std::string& key) { return model.contains(key) && !model[key].is_null(); }

// Numbers compare by value (HF writes 1e-05, a spec 0.00001; 500000 and 500000.0 are one value).
bool same(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
  return a == b;
}

std::string shown(const json& v) {
  std::string s = v.dump();
  return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

// The file's text, or an error naming it; `path` as the spec names it, `resolved` as opened.
std::optional<std::string> read_file(const std::string& path, const std::filesystem::path& resolved, Diagnostics& out) {
  std::ifstream in(resolved, std::ios::binary);
  if (!in) {
    out.push_back({Severity::error, "model.hf_config", "hf_config_unreadable",
                   "cannot open the Hugging Face config \"" + path + "\" (" + resolved.string() +
                       "; a relative path is relative to the run spec's directory)"});
    return std::nullopt;
  }
  std::string text(kMaxHfConfigBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxHfConfigBytes) {
    out.push_back({Severity::error, "model.hf_config", "hf_config_too_large",
                   path + " is larger than 4 MiB; a Hugging Face config.json is a few kB"});
    return std::nullopt;
  }
  return text;
}

// The mapped provider fields as run-spec model keys.
json run_spec_fields(const HfModel& m) {
  json f = m.fields;
  if (f.contains("seq_length")) {
    f["max_position_embeddings"] = f["seq_length"];
    f.erase("seq_length");
  }
  return f;
}

}  // namespace

HfApplied merge_hf_model(json& model, const HfModel& mapped, const std::string& file, Diagnostics& out) {
  HfApplied applied;
  applied.file = file;
  applied.bridge = mapped.bridge;
  applied.provider_class = mapped.provider_class;
  const std::string via = file + " through Bridge's " + mapped.bridge + " (" + mapped.sources.front() + ")";
  const json fields = run_spec_fields(mapped);
  bool spec_precision = false, precision_differs = false;
  for (const auto& k : precision()) {
    spec_precision = spec_precision || is_set(model, k);
    precision_differs = precision_differs || (is_set(model, k) && fields.contains(k) && !same(model[k], fields.at(k)));
  }
  std::vector<std::string> kept;
  for (const auto& [k, v] : fields.items()) {
    if (precision().count(k) && spec_precision) continue;
    if (!is_set(model, k)) {
      model[k] = v;
      applied.keys[k] = via;
      continue;
    }
    if (same(model[k], v)) continue;
    if (settings().count(k)) {
      kept.push_back(k + " " + shown(model[k]) + " (the bridge sets " + shown(v) + ")");
      continue;
    }
    out.push_back({Severity::error, "model." + k, "hf_config_conflict",
                   "model." + k + " is " + shown(model[k]) + " but " + file + " gives " + shown(v) + " (through " +
                       mapped.bridge + "); the architecture comes from one place: drop model." + k + " or use another config"});
  }
  if (precision_differs)
    kept.push_back("precision from the spec, not the checkpoint dtype (params_dtype " + (fields.contains("params_dtype") ? shown(fields.at("params_dtype")) : std::string("fp32")) +
                   "), as Bridge's mixed_precision config replaces it (mixed_precision.py:138-155)");
  if (!kept.empty()) {
    std::string line = "model.hf_config: the spec's training settings over the bridge's: ";
    for (std::size_t i = 0; i < kept.size(); ++i) line += (i ? "; " : "") + kept[i];
    applied.ignored.push_back(line);
  }
  if (!mapped.ignored.empty()) {
    std::string line = "model.hf_config: " + file + " keys read by no mapping (no shape effect): ";
    for (std::size_t i = 0; i < mapped.ignored.size(); ++i) line += (i ? ", " : "") + mapped.ignored[i];
    applied.ignored.push_back(line);
  }
  return applied;
}

HfApplied apply_hf_config(json& doc, const std::string& base_dir, Diagnostics& out) {
  if (!doc.is_object() || !doc.contains("model") || !doc["model"].is_object()) return {};
  json& model = doc["model"];
  if (!model.contains("hf_config") || !model["hf_config"].is_string()) return {};  // null/absent: none; else a type error
  const std::string path = model["hf_config"].get<std::string>();
  if (is_set(model, "preset")) {
    out.push_back({Severity::error, "model.hf_config", "hf_config_with_preset",
                   "model.preset and model.hf_config both give the architecture; give one of them (on the command line, --set model.preset=null drops the spec's preset)"});
    return {};
  }
  std::filesystem::path resolved(path);
  if (resolved.is_relative() && !base_dir.empty()) resolved = std::filesystem::path(base_dir) / resolved;
  const auto text = read_file(path, resolved, out);
  if (!text) return {};
  Diagnostics mapping;
  const auto hf = parse_json_text(*text, "model.hf_config", path, mapping);
  const auto mapped = hf ? map_hf_config(*hf, path, mapping) : std::nullopt;
  for (auto d : mapping) {  // the config's own key paths, under model.hf_config
    if (d.path.rfind("model.hf_config", 0) != 0) d.path = d.path.empty() ? "model.hf_config" : "model.hf_config." + d.path;
    out.push_back(std::move(d));
  }
  if (!mapped) return {};
  HfApplied applied = merge_hf_model(model, *mapped, path, out);
  // A Bridge model: the keys it leaves out take its provider's defaults, as a preset's do.
  if (!doc.contains("defaults")) doc["defaults"] = "bridge";
  if (!doc.contains("bridge_model_class") && BridgeDefaults::for_provider(mapped->provider_class))
    doc["bridge_model_class"] = mapped->provider_class;
  return applied;
}

}  // namespace peakcast::model::detail
