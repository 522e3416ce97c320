// convert_bridge_container: the ConfigContainer's sections one by one (section 7 of
// docs/bridge/run-config-yaml.md), every value decoded from Bridge's YAML encodings (section 4).
#include "bridge_container.hpp"
#include "peakcast/model/caching_allocator.hpp"

#include <set>

#include "bridge_defaults.hpp"
#include "spec_parser_detail.hpp"
#include "spec_schema.hpp"
#include "spec_suggest.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

constexpr const char* kContainer = "megatron.bridge.training.config.ConfigContainer";

// Sections without a memory effect: read, listed once as ignored (bridge:src/megatron/bridge/training/config.py:964-1010).
const std::set<std::string>& ignored_sections() {
  static const std::set<std::string> s = {"rng", "rerun_state_machine", "validation", "scheduler", "logger", "tokenizer",
                                          "checkpoint", "ft", "straggler", "nvrx_straggler", "profiling", "tensor_inspect",
                                          "inprocess_restart", "optimizer_config_override_provider", "dataset"};
  return s;
}
const std::set<std::string>& mapped_sections() {
  static const std::set<std::string> s = {"model", "train", "optimizer", "ddp", "mixed_precision", "comm_overlap", "dist", "env_vars", "peft"};
  return s;
}

// Model fields that hold host objects Bridge's setup() installs or the weight initializers: no bytes on
// the GPU depend on them (timers, DDP's sync hooks, the grad-scale and finalize hooks, init partials).
const std::set<std::string>& host_model_fields() {
  static const std::set<std::string> s = {"timers", "no_sync_func", "grad_sync_func", "param_sync_func", "finalize_model_grads_func",
                                          "grad_scale_func", "init_method", "output_layer_init_method", "embedding_init_method"};
  return s;
}

std::string short_name(const std::string& target) {
  const auto dot = target.rfind('.');
  return dot == std::string::npos ? target : target.substr(dot + 1);
}

// Bridge's encodings (yaml_utils.py representers) -> the plain value a run spec holds: a dtype or
// function as its name, an enum as its member name, a partial or an object as its target, a nested
// dataclass as its fields.
json decode(const json& v) {
  if (v.is_array()) {
    json out = json::array();
    for (const auto& e : v) out.push_back(decode(e));
    return out;
  }
  if (!v.is_object()) return v;
  if (!v.contains("_target_")) {
    json out = json::object();
    for (const auto& [k, e] : v.items()) out[k] = decode(e);
    return out;
  }
  const std::string target = v["_target_"].is_string() ? v["_target_"].get<std::string>() : "";
  if (v.contains("_name_") && v["_name_"].is_string()) return v["_name_"];   // enum member
  if (v.contains("_partial_") || v.contains("_call_")) return json(target);  // partial, function, dtype, object
  json out = json::object();                                                 // a dataclass nested in a section
  for (const auto& [k, e] : v.items())
    if (k.empty() || k[0] != '_') out[k] = decode(e);
  return out;
}

// Activation functions are written as their defining module's path (torch.nn.functional.silu,
// megatron.core.activations.squared_relu, torch._C._nn.gelu): the run spec names the function.
json decode_model_field(const std::string& key, const json& v) {
  json d = decode(v);
  if ((key == "activation_func" || key == "activation_func_fp8_input_store") && d.is_string() && d.get<std::string>().find('.') != std::string::npos)
    return json(short_name(d.get<std::string>()));
  return d;
}

struct Converter {
  const BridgeDocument& d;
  Diagnostics& out;
  BridgeConversion result;

  std::string where(const std::string& path) const {
    const auto it = d.lines.find(path);
    return d.file + (it != d.lines.end() ? ":" + std::to_string(it->second) : "");
  }
  void error(const std::string& path, const char* rule, const std::string& message) {
    out.push_back({Severity::error, path, rule, where(path) + ": " + message});
  }
  void warning(const std::string& path, const char* rule, const std::string& message) {
    out.push_back({Severity::warning, path, rule, where(path) + ": " + message});
  }
  void put(const std::string& section, const std::string& key, json value, const std::string& from) {
    KeyOrigin o{"Bridge config", where(from) + " (" + from + ")", value.dump()};
    if (const auto it = d.origins.find(from); it != d.origins.end()) o = {it->second.origin, it->second.source, value.dump()};
    result.spec[section][key] = std::move(value);
    result.origins[section + "." + key] = std::move(o);
  }

  void top_level();
  void packing(const json& ds);
  void peft();
  void model();
  void plain_section(const char* section);
  void dist();
  void env_vars();
  void cluster();
};

void Converter::top_level() {
  const json& doc = d.doc;
  if (string_or(doc, "_target_", kContainer) != kContainer)
    error("_target_", "bridge_not_container", "the document's _target_ is not " + std::string(kContainer) + ": not a Megatron-Bridge run_config.yaml");
  std::vector<std::string> known(mapped_sections().begin(), mapped_sections().end());
  known.insert(known.end(), ignored_sections().begin(), ignored_sections().end());
  std::string ignored;
  for (const auto& [key, value] : doc.items()) {
    if (key == "_target_" || mapped_sections().count(key)) continue;
    if (ignored_sections().count(key)) {
      ignored += (ignored.empty() ? "" : ", ") + key;
      continue;
    }
    std::string msg = "\"" + key.substr(0, 60) + "\" is not a section of Bridge 600d069b's ConfigContainer (training/config.py:964-1010)";
    if (auto s = closest_name(key, known)) msg += "; did you mean \"" + *s + "\"?";
    error(key, "unknown_key", msg);
  }
  if (!ignored.empty()) result.ignored.push_back("sections without a memory effect: " + ignored);
  // Bridge's validate() requires the dataset's sequence length to be the model's (config.py:1640-1646).
  const json* ds = doc.contains("dataset") && doc["dataset"].is_object() ? &doc["dataset"] : nullptr;
  static const json empty = json::object();
  const json& m = doc.contains("model") ? doc["model"] : empty;
  const json* seq = m.is_object() && m.contains("seq_length") ? &m["seq_length"] : nullptr;
  if (ds && seq && ds->contains("seq_length") && !(*ds)["seq_length"].is_null() && (*ds)["seq_length"] != *seq)
    error("dataset.seq_length", "bridge_seq_length_mismatch",
          "dataset.seq_length (" + (*ds)["seq_length"].dump() + ") differs from model.seq_length (" + seq->dump() +
              "); Bridge refuses that (training/config.py:1640-1646)");
  if (ds) packing(*ds);
}

// Packed batches (gpt_step.py:109-117 _uses_packed_sequence_metadata): offline packing unless its
// packed_sequence_size is not positive, or in-batch packing. The model then runs with packed_seq_params.
void Converter::packing(const json& ds) {
  const json* specs = ds.contains("offline_packing_specs") && ds["offline_packing_specs"].is_object() ? &ds["offline_packing_specs"] : nullptr;
  const json* size = specs && specs->contains("packed_sequence_size") ? &(*specs)["packed_sequence_size"] : nullptr;
  const bool offline = detail::is_true(ds, "enable_offline_packing") && !(size && size->is_number() && size->get<double>() <= 0);
  if (offline || detail::is_true(ds, "enable_in_batch_packing"))
    put("train", "packed_sequence", json(true), offline ? "dataset.enable_offline_packing" : "dataset.enable_in_batch_packing");
}

void Converter::model() {
  const json* mp = d.doc.contains("model") ? &d.doc["model"] : nullptr;
  if (!mp || !mp->is_object()) {
    error("model", "bridge_model_missing", "no model section (a provider or a model config)");
    return;
  }
  json m = *mp;
  std::map<std::string, std::string> from;  // field -> its path in the document
  for (const auto& [k, v] : m.items()) from[k] = "model." + k;
  const std::string cls = string_or(m, "_target_");
  if (m.contains("_builder_")) {
    // A builder model config (BridgeGPTModelConfig): its transformer: mapping carries most fields
    // (mcore:megatron/training/models/gpt.py:153-186); the reader merges it into the outer map.
    if (m.contains("transformer") && m["transformer"].is_object())
      for (const auto& [k, v] : m["transformer"].items()) {
        m[k] = v;
        from[k] = "model.transformer." + k;
      }
    m.erase("transformer");
    if (m.contains("extra_checkpoint_metadata")) {
      m.erase("extra_checkpoint_metadata");
      result.ignored.push_back("model.extra_checkpoint_metadata (checkpoint metadata)");
    }
  }
  if (!cls.empty() && BridgeDefaults::for_provider(cls)) result.spec["bridge_model_class"] = cls;
  if (m.contains("_builder_")) {
  } else if (!cls.empty() && !BridgeDefaults::for_provider(cls)) {
    error("model._target_", "bridge_unknown_model_class",
          "model class " + cls.substr(0, 120) + " is not one of Bridge 600d069b's providers (configs/bridge/defaults.json)");
  }
  std::string host;
  for (const auto& [key, value] : m.items()) {
    if (key.empty() || key[0] == '_') continue;
    if (host_model_fields().count(key)) {
      host += (host.empty() ? "" : ", ") + key;
      continue;
    }
    if (key == "transformer_layer_spec") {
      // The layer spec function Bridge calls; its use_transformer_engine must agree with transformer_impl.
      if (value.is_object() && value.contains("use_transformer_engine") && value["use_transformer_engine"].is_boolean()) {
        const bool te = value["use_transformer_engine"].get<bool>();
        const std::string impl = string_or(m, "transformer_impl", "transformer_engine");
        if (te != (impl == "transformer_engine"))
          error(from[key], "bridge_layer_spec_vs_impl",
                "transformer_layer_spec builds " + std::string(te ? "Transformer Engine" : "local") + " modules but transformer_impl is \"" +
                    impl + "\"");
      }
      continue;
    }
    if (!find_field("model", key)) {
      std::string msg = "model field \"" + key.substr(0, 60) + "\" is not one peakcast knows (not in the pinned Megatron / Bridge model classes)";
      if (auto s = suggest_key("model", key)) msg += "; did you mean " + *s + "?";
      error(from[key], "unknown_key", msg);
      continue;
    }
    put("model", key, decode_model_field(key, value), from[key]);
  }
  if (!host.empty()) result.ignored.push_back("model host objects and initializers: " + host);
}

void Converter::plain_section(const char* section) {
  const json* s = d.doc.contains(section) ? &d.doc[section] : nullptr;
  if (!s || s->is_null()) return;
  if (!s->is_object()) {
    error(section, "type_mismatch", std::string("expected the ") + section + " mapping");
    return;
  }
  for (const auto& [key, value] : s->items()) {
    if (key.empty() || key[0] == '_') continue;
    const std::string path = std::string(section) + "." + key;
    if (!find_field(section, key)) {
      std::string msg = "\"" + key.substr(0, 60) + "\" is not a field of Bridge's " + section + " config";
      if (auto h = suggest_key(section, key)) msg += "; did you mean " + *h + "?";
      error(path, "unknown_key", msg);
      continue;
    }
    if (std::string(section) == "optimizer" && key == "timers") continue;  // a host object (setup.py:409-410)
    put(section, key, decode(value), path);
  }
}

// PEFTConfig: LoRA's fields become the run spec's peft section; the other PEFT classes are refused
// (bridge:src/megatron/bridge/peft/: dora.py, canonical_lora.py, multi_lora.py).
void Converter::peft() {
  const json* s = d.doc.contains("peft") ? &d.doc["peft"] : nullptr;
  if (!s || s->is_null()) return;
  if (!s->is_object()) {
    error("peft", "type_mismatch", "expected the peft mapping (a PEFT dataclass) or null");
    return;
  }
  const std::string target = string_or(*s, "_target_", "megatron.bridge.peft.lora.LoRA");
  if (target != "megatron.bridge.peft.lora.LoRA") {
    error("peft._target_", "not_simulated", "PEFT class " + short_name(target).substr(0, 60) + " is not simulated (LoRA is)");
    return;
  }
  result.spec["peft"] = json::object();
  for (const auto& [key, value] : s->items()) {
    if (key.empty() || key[0] == '_' || key == "params_to_save") continue;  // init=False state (peft/base.py:57)
    const std::string path = "peft." + key;
    if (key == "canonical_mapping") {
      if (!value.is_null() && !value.empty()) error(path, "not_simulated", "a canonical_mapping (CanonicalLoRA's) is not simulated");
      continue;
    }
    if (!find_field("peft", key)) {
      std::string msg = "\"" + key.substr(0, 60) + "\" is not a field of Bridge's LoRA (peft/lora.py:101-115)";
      if (auto h = suggest_key("peft", key)) msg += "; did you mean " + *h + "?";
      error(path, "unknown_key", msg);
      continue;
    }
    put("peft", key, decode(value), path);
  }
}

// DistributedInitConfig: Megatron-FSDP replaces DDP and the distributed optimizer (config.py:1064-1196).
void Converter::dist() {
  const json* s = d.doc.contains("dist") ? &d.doc["dist"] : nullptr;
  if (!s || !s->is_object()) return;
  if (detail::is_true(*s, "use_torch_fsdp2"))
    error("dist.use_torch_fsdp2", "fsdp_not_simulated",
          "use_torch_fsdp2 wraps the model in PyTorch FSDP2 instead of Megatron's DDP and distributed optimizer; not simulated");
  // _validate_and_apply_megatron_fsdp_configs sets ddp.use_megatron_fsdp (config.py:1064-1068).
  if (detail::is_true(*s, "use_megatron_fsdp")) put("ddp", "use_megatron_fsdp", json(true), "dist.use_megatron_fsdp");
  result.ignored.push_back("dist (process-group settings)");
}

// env_vars are set before training (config.py:1982-1987); PYTORCH_CUDA_ALLOC_CONF configures the
// caching allocator the replay models.
void Converter::env_vars() {
  const json* s = d.doc.contains("env_vars") ? &d.doc["env_vars"] : nullptr;
  if (!s || !s->is_object()) return;
  std::string others;
  for (const auto& [key, value] : s->items()) {
    if (key == "CUBLAS_WORKSPACE_CONFIG") {  // each of PyTorch's cuBLAS workspaces (cluster.cublas_workspace_config)
      put("cluster", "cublas_workspace_config", value.is_string() ? value : json(value.dump()), "env_vars.CUBLAS_WORKSPACE_CONFIG");
      continue;
    }
    if (key != "PYTORCH_CUDA_ALLOC_CONF") {
      others += (others.empty() ? "" : ", ") + key;
      continue;
    }
    // The whole string (cluster.pytorch_cuda_alloc_conf): the spec's reader checks it as torch does
    // and names the options the allocator replay does not follow.
    const std::string conf = value.is_string() ? value.get<std::string>() : value.dump();
    const AllocConfParse parsed = parse_alloc_conf(conf);
    AllocatorSettings rest = parsed.settings;
    rest.expandable_segments = false;
    const bool only_expandable = parsed.error.empty() && parsed.unmodelled.empty() && rest == AllocatorSettings{};
    if (parsed.expandable_given && only_expandable)
      put("cluster", "expandable_segments", json(parsed.settings.expandable_segments), "env_vars.PYTORCH_CUDA_ALLOC_CONF");
    else
      put("cluster", "pytorch_cuda_alloc_conf", json(conf), "env_vars.PYTORCH_CUDA_ALLOC_CONF");
  }
  if (!others.empty()) result.ignored.push_back("env_vars without a memory effect: " + others);
}

// The world size is recorded only as comm_overlap.data_parallel_size, when comm_overlap is set
// (comm_overlap.py:396, config.py:1039-1040): world = DP x TP x PP x CP (config.py:1018-1026).
void Converter::cluster() {
  const json* co = d.doc.contains("comm_overlap") ? &d.doc["comm_overlap"] : nullptr;
  if (!co || !co->is_object() || !(*co).contains("data_parallel_size") || !(*co)["data_parallel_size"].is_number_integer()) return;
  const json& m = result.spec["model"];
  const auto size = [&](const char* k) { return m.contains(k) && m[k].is_number_integer() ? m[k].get<std::int64_t>() : std::int64_t{1}; };
  const std::int64_t dp = (*co)["data_parallel_size"].get<std::int64_t>();
  put("cluster", "num_gpus",
      json(dp * size("tensor_model_parallel_size") * size("pipeline_model_parallel_size") * size("context_parallel_size")),
      "comm_overlap.data_parallel_size");
}

}  // namespace

BridgeConversion convert_bridge_container(const BridgeDocument& d, Diagnostics& out) {
  Converter c{d, out, {}};
  if (!d.doc.is_object()) {
    c.error("", "spec_not_object", "a ConfigContainer is a mapping of sections");
    return c.result;
  }
  c.result.spec["defaults"] = "bridge";
  c.top_level();
  c.model();
  c.peft();
  for (const char* s : {"train", "optimizer", "ddp"}) c.plain_section(s);
  c.dist();
  c.env_vars();
  c.cluster();
  for (const auto& [k, v] : d.cluster.items()) {
    c.result.spec["cluster"][k] = v;
    if (const auto it = d.origins.find("cluster." + k); it != d.origins.end()) c.result.origins["cluster." + k] = it->second;
  }
  c.result.ignored.push_back(!d.emulated ? "mixed_precision and comm_overlap: already applied to model, optimizer and ddp before the file was written"
                                         : "mixed_precision and comm_overlap: applied to model, optimizer and ddp as runtime_config_update does");
  return c.result;
}

}  // namespace peakcast::model::detail
