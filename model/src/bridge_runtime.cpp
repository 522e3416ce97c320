// What Bridge 600d069b's runtime_config_update (training/config.py:1990-2030) does to the sections
// before training, for the fields that change memory: MixedPrecisionConfig.setup, CommOverlapConfig
// .setup, the providers' finalize() defaults and validate()'s optimizer / DDP sync. Each step cites
// the lines docs/bridge/run-config-yaml.md sections 9-11 and configs/bridge/runtime_rules.json give.
#include <algorithm>
#include <set>

#include "bridge_container.hpp"
#include "bridge_defaults.hpp"
#include "peakcast/model/embedded_configs.hpp"
#include "spec_parser_detail.hpp"
#include "spec_schema.hpp"
#include "spec_suggest.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

// A default as a value: torch dtype expressions become the names the run spec takes.
json plain(const json& v) {
  if (v.is_object() && v.contains("expr")) {
    const std::string e = v["expr"].get<std::string>();
    if (e == "torch.bfloat16") return "bf16";
    if (e == "torch.float16") return "fp16";
    if (e == "torch.float32") return "fp32";
    return nullptr;
  }
  return v;
}

// The section a model field lives in: a builder config keeps most fields under transformer:.
json& model_slot(json& model, const std::string& key) {
  if (model.contains("transformer") && model["transformer"].is_object() && !model.contains(key)) return model["transformer"][key];
  return model[key];
}
// A model field's value, null when absent (reads never create a field).
json model_get(const json& model, const char* key) {
  if (model.contains(key)) return model[key];
  if (model.contains("transformer") && model["transformer"].is_object() && model["transformer"].contains(key)) return model["transformer"][key];
  return nullptr;
}
std::int64_t model_int(const json& model, const char* key, std::int64_t fallback) {
  const json* v = model.contains(key) ? &model[key] : nullptr;
  if (!v && model.contains("transformer") && model["transformer"].contains(key)) v = &model["transformer"][key];
  return v && v->is_number_integer() ? v->get<std::int64_t>() : fallback;
}
bool model_flag(const json& model, const char* key) {
  const json* v = model.contains(key) ? &model[key] : nullptr;
  if (!v && model.contains("transformer") && model["transformer"].contains(key)) v = &model["transformer"][key];
  return v && v->is_boolean() && v->get<bool>();
}

// The resolved MixedPrecisionConfig: a preset name (mixed_precision.py:432-448, "-" spellings too) or
// the section's fields over the class defaults; fp8_param / fp4_param equal their *_gather twins
// (__setattr__, :77-95).
std::optional<json> mixed_precision_fields(const json& mp, Diagnostics& out) {
  json fields = json::object();
  for (const auto& [k, f] : bridge_defaults_table()["sections"]["mixed_precision"]["fields"].items()) fields[k] = plain(f.value("default", json()));
  if (mp.is_string()) {
    std::string name = mp.get<std::string>();
    for (char& c : name)
      if (c == '-') c = '_';
    const json& presets = bridge_defaults_table()["mixed_precision_presets"];
    if (!presets.contains(name)) {
      std::vector<std::string> names;
      for (const auto& [k, v] : presets.items()) names.push_back(k);
      std::string msg = "no Bridge mixed-precision preset \"" + name.substr(0, 60) + "\" (mixed_precision.py:164-448)";
      if (auto s = closest_name(name, names)) msg += "; did you mean \"" + *s + "\"?";
      out.push_back({Severity::error, "mixed_precision", "unknown_mixed_precision_preset", msg});
      return std::nullopt;
    }
    for (const auto& [k, v] : presets[name]["fields"].items()) fields[k] = plain(v);
    return fields;
  }
  if (!mp.is_object()) return std::nullopt;
  if (mp.contains("_preset") && mp["_preset"].is_string()) {  // a catalogue recipe's preset with its own changes
    auto base = mixed_precision_fields(mp["_preset"], out);
    if (!base) return std::nullopt;
    fields = *base;
  }
  for (const auto& [k, v] : mp.items()) {
    if (k.empty() || k[0] == '_') continue;
    fields[k] = v.is_object() && v.contains("_target_") ? json(v["_target_"]) : v;
  }
  for (const auto& pair : {std::pair{"fp8_param", "fp8_param_gather"}, std::pair{"fp4_param", "fp4_param_gather"}})
    if (fields[pair.first].is_null()) fields[pair.first] = fields[pair.second];
  return fields;
}

// MixedPrecisionConfig.setup: every field a target has is overwritten, None included (:113-157).
void mixed_precision_setup(BridgeDocument& d, Diagnostics& out) {
  json& doc = d.doc;
  if (!doc.contains("mixed_precision") || doc["mixed_precision"].is_null()) return;
  const auto fields = mixed_precision_fields(doc["mixed_precision"], out);
  if (!fields) return;
  static const std::map<std::string, std::vector<const char*>> copies = {
      {"model", {"fp16", "bf16", "params_dtype", "pipeline_dtype", "autocast_dtype", "fp8", "fp8_recipe", "first_last_layers_bf16", "fp8_margin", "fp8_amax_history_len", "fp8_amax_compute_algo", "fp8_wgrad", "fp8_dot_product_attention", "fp8_multi_head_attention", "fp8_param", "fp4", "fp4_recipe", "fp4_param", "num_layers_at_start_in_bf16", "num_layers_at_end_in_bf16"}},
      {"optimizer", {"fp16", "bf16", "params_dtype", "fp8_recipe", "loss_scale", "initial_loss_scale", "min_loss_scale", "loss_scale_window", "hysteresis", "reuse_grad_buf_for_mxfp8_param_ag"}},
      {"ddp", {"grad_reduce_in_fp32", "fp8_param_gather", "fp4_param_gather", "reuse_grad_buf_for_mxfp8_param_ag"}}};
  const std::string what = doc["mixed_precision"].is_string() ? "mixed_precision preset " + doc["mixed_precision"].get<std::string>()
                                                              : std::string("mixed_precision");
  for (const auto& [section, keys] : copies) {
    json& s = doc[section];
    for (const char* k : keys) {
      json& slot = section == "model" ? model_slot(s, k) : s[k];
      const auto set = d.origins.find(section + "." + k);
      if (set != d.origins.end() && set->second.origin == "--set" && slot != (*fields)[k])
        out.push_back({Severity::warning, section + "." + k, "overridden_by_mixed_precision",
                       "--set " + section + "." + k + " is overwritten by MixedPrecisionConfig.setup with the mixed_precision value " +
                           (*fields)[k].dump() + " (mixed_precision.py:113-157); set mixed_precision." + k + " instead"});
      slot = (*fields)[k];
      d.origins[section + "." + k] = {"Bridge runtime", what + " via MixedPrecisionConfig.setup (bridge:src/megatron/bridge/training/mixed_precision.py:113-157)", ""};
    }
  }
}

// CommOverlapConfig.setup (comm_overlap.py:604-643): the model's defaults, TE's userbuffers off below
// TP 2 or without SP, the pipeline overlap by PP / VP, user values on top; then with the distributed
// optimizer the DDP and optimizer overlap (128 MiB buckets when DP > 1).
void comm_overlap_setup(BridgeDocument& d) {
  json& doc = d.doc;
  if (!doc.contains("comm_overlap") || !doc["comm_overlap"].is_object()) return;
  const json& co = doc["comm_overlap"];
  json& m = doc["model"];
  const std::int64_t tp = model_int(m, "tensor_model_parallel_size", 1), pp = model_int(m, "pipeline_model_parallel_size", 1);
  const std::int64_t vp = model_int(m, "virtual_pipeline_model_parallel_size", 1);
  const std::int64_t dp = co.contains("data_parallel_size") && co["data_parallel_size"].is_number_integer() ? co["data_parallel_size"].get<std::int64_t>() : 1;
  json model_cfg = {{"tp_comm_overlap", false}, {"tp_comm_overlap_cfg", nullptr}, {"defer_embedding_wgrad_compute", false}, {"wgrad_deferral_limit", -1}, {"overlap_moe_expert_parallel_comm", false}, {"delay_wgrad_compute", false}, {"overlap_p2p_comm", pp > 1 && vp > 1}, {"batch_p2p_comm", pp > 1 && vp <= 1}};
  for (const auto& [k, v] : model_cfg.items())
    if (co.contains(k) && !co[k].is_null()) model_cfg[k] = co[k];
  if (model_cfg["tp_comm_overlap"] == true && (tp < 2 || !model_flag(m, "sequence_parallel"))) model_cfg["tp_comm_overlap"] = false;
  if (model_cfg["tp_comm_overlap"] != true) model_cfg["tp_comm_overlap_cfg"] = nullptr;
  const KeyOrigin setup{"Bridge runtime", "CommOverlapConfig.setup (bridge:src/megatron/bridge/training/comm_overlap.py:604-643)", ""};
  for (const auto& [k, v] : model_cfg.items()) {
    model_slot(m, k) = v;
    d.origins["model." + k] = setup;
  }
  if (!detail::is_true(doc["ddp"], "use_distributed_optimizer")) return;
  json opt_cfg = {{"bucket_size", dp > 1 ? json(134217728) : json(nullptr)}, {"overlap_grad_reduce", dp > 1}, {"overlap_param_gather", dp > 1}, {"overlap_param_gather_with_optimizer_step", false}, {"align_param_gather", dp > 1 && pp > 1 && vp > 1}};
  for (const auto& [k, v] : opt_cfg.items())
    if (co.contains(k) && !co[k].is_null()) opt_cfg[k] = co[k];
  for (const char* k : {"overlap_param_gather", "overlap_param_gather_with_optimizer_step"}) {
    doc["optimizer"][k] = opt_cfg[k];
    d.origins[std::string("optimizer.") + k] = setup;
  }
  for (const char* k : {"overlap_grad_reduce", "overlap_param_gather", "align_param_gather", "bucket_size"}) {
    doc["ddp"][k] = opt_cfg[k];
    d.origins[std::string("ddp.") + k] = setup;
  }
  doc["ddp"]["delay_wgrad_compute"] = co.contains("delay_wgrad_compute") ? co["delay_wgrad_compute"] : json(nullptr);
}

// HybridModelProvider.finalize joins mtp_hybrid_override_pattern onto the main pattern, once per MTP
// depth (at least once with a repeated layer) after '/', the form Megatron's HybridModel parses; the main
// part is re-taken before the '/', so a finalized pattern stays as it is; mtp_num_layers None takes the
// count (bridge:src/megatron/bridge/models/hybrid/hybrid_provider.py:196-231).
void join_hybrid_mtp_pattern(json& m) {
  const json main = model_get(m, "hybrid_layer_pattern");
  const json mtp = model_get(m, "mtp_hybrid_override_pattern");
  if (!main.is_string() || !mtp.is_string() || mtp.get<std::string>().empty()) return;
  const json depths = model_get(m, "mtp_num_layers");
  const std::int64_t n = depths.is_number_integer() ? std::max<std::int64_t>(0, depths.get<std::int64_t>()) : 0;
  const std::int64_t copies = model_flag(m, "mtp_use_repeated_layer") ? std::max<std::int64_t>(1, n) : n;
  std::string joined = main.get<std::string>().substr(0, main.get<std::string>().find('/'));
  for (std::int64_t k = 0; k < copies && k < 4096; ++k) joined += "/" + mtp.get<std::string>();
  model_slot(m, "hybrid_layer_pattern") = joined;
  if (depths.is_null() && copies > 0) model_slot(m, "mtp_num_layers") = copies;
}

// Bridge's TransformerConfig.finalize (models/transformer_config.py:165-186), HybridModelProvider.
// finalize (hybrid_provider.py:170-251), validate()'s sync of the distributed optimizer and the
// parameter gather (config.py:2099-2135), GPTModelProvider.provide's RoPE fusion (gpt_provider.py:229-230)
// and the DDP wrap's bucket size (mcore:megatron/training/models/dist_utils.py:314-319).
void finalize_and_validate(json& doc) {
  json& m = doc["model"];
  if (model_int(m, "pipeline_model_parallel_size", 1) > 1 && model_get(m, "pipeline_dtype").is_null() && !model_get(m, "params_dtype").is_null())
    model_slot(m, "pipeline_dtype") = model_get(m, "params_dtype");
  if (model_int(m, "tensor_model_parallel_size", 1) <= 1 && model_flag(m, "sequence_parallel")) model_slot(m, "sequence_parallel") = false;
  if (model_get(m, "expert_tensor_parallel_size").is_null() && model_int(m, "expert_model_parallel_size", 1) > 1)
    model_slot(m, "expert_tensor_parallel_size") = 1;
  if (m.contains("hybrid_override_pattern") && !m["hybrid_override_pattern"].is_null() &&
      (!m.contains("hybrid_layer_pattern") || m["hybrid_layer_pattern"].is_null())) {
    m["hybrid_layer_pattern"] = m["hybrid_override_pattern"];
    m["hybrid_override_pattern"] = nullptr;
  }
  join_hybrid_mtp_pattern(m);
  const std::string cls = string_or(m, "_target_");
  if (cls.find("hybrid") == std::string::npos && model_get(m, "position_embedding_type") != "rope" && model_flag(m, "apply_rope_fusion"))
    model_slot(m, "apply_rope_fusion") = false;
  json& ddp = doc["ddp"];
  json& opt = doc["optimizer"];
  for (const char* k : {"use_distributed_optimizer", "overlap_param_gather"}) {
    const bool on = detail::is_true(ddp, k) || detail::is_true(opt, k);
    ddp[k] = on;
    opt[k] = on;
  }
  if (detail::is_true(ddp, "overlap_grad_reduce") && (!ddp.contains("bucket_size") || ddp["bucket_size"].is_null())) {
    const std::int64_t dp = doc["comm_overlap"].is_object() ? int_or(doc["comm_overlap"], "data_parallel_size", 1) : 1;
    ddp["bucket_size"] = std::max<std::int64_t>(40000000, 1000000 * dp * model_int(m, "context_parallel_size", 1));
  }
}

}  // namespace

std::vector<std::string> apply_bridge_overrides(BridgeDocument& d, const std::vector<std::string>& overrides, Diagnostics& out) {
  std::vector<std::string> rest;
  const json& sections = bridge_defaults_table()["sections"];
  for (const std::string& item : overrides) {
    // A whole mixed_precision section given as a preset name (mixed_precision.py:432-448).
    if (item.rfind("mixed_precision=", 0) == 0) {
      std::string v = item.substr(16);
      if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
      d.doc["mixed_precision"] = v;
      d.resolved = false;
      continue;
    }
    const std::size_t eq = item.find('='), dot = item.find('.');
    if (eq == std::string::npos || dot == std::string::npos || dot > eq || !sections.contains(item.substr(0, dot))) {
      rest.push_back(item);  // cluster.*, top-level keys, or a syntax error the run-spec overrides report
      continue;
    }
    const std::string section = item.substr(0, dot), key = item.substr(dot + 1, eq - dot - 1), text = item.substr(eq + 1);
    json& s = d.doc[section];
    if (section == "mixed_precision" && s.is_string()) s = json{{"_preset", s}};  // a preset with a changed field
    if (!s.is_object()) s = json::object();
    json* slot = nullptr;
    if (s.contains(key)) slot = &s[key];
    else if (section == "model" && s.contains("transformer") && s["transformer"].is_object() && s["transformer"].contains(key))
      slot = &s["transformer"][key];
    else if (sections[section].contains("fields") && sections[section]["fields"].contains(key)) slot = &s[key];
    else if (section == "model" && find_field("model", key)) slot = &s[key];
    if (!slot) {
      out.push_back({Severity::error, item.substr(0, eq), "unknown_key",
                     "--set names no field " + key.substr(0, 60) + " of the " + section + " section of " + d.file});
      continue;
    }
    Diagnostics ignored;
    const auto value = json::accept(text) ? parse_json_text(text, item.substr(0, eq), "--set", ignored) : std::optional<json>(json(text));
    *slot = value ? *value : json(text);
    d.origins[section + "." + key] = {"--set", "--set " + item.substr(0, 200), ""};
    // A recipe's entry point keeps the dataset's sequence length equal to the model's (run_recipe.py:515).
    if (!d.resolved && section == "model" && key == "seq_length" && d.doc.contains("dataset") && d.doc["dataset"].is_object())
      d.doc["dataset"]["seq_length"] = *slot;
    if (section == "mixed_precision" || section == "comm_overlap") d.resolved = false;
  }
  return rest;
}

void apply_bridge_runtime(BridgeDocument& d, Diagnostics& out) {
  if (d.resolved) return;
  for (const char* s : {"model", "optimizer", "ddp"})
    if (!d.doc.contains(s) || !d.doc[s].is_object()) d.doc[s] = json::object();
  mixed_precision_setup(d, out);
  comm_overlap_setup(d);
  finalize_and_validate(d.doc);
  d.resolved = true;
  d.emulated = true;
}

}  // namespace peakcast::model::detail
