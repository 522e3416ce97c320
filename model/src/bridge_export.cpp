// A parsed run spec written back as a Megatron-Bridge run_config.yaml: every key the typed spec read,
// in Bridge's sections and encodings (dtypes and functions as _target_ mappings, as
// yaml_utils.py's representers write them), keys sorted and block style as yaml.safe_dump writes them
// (docs/bridge/run-config-yaml.md sections 2 and 4). Reading it back gives the same typed spec.
#include <cmath>
#include <cstdio>
#include <regex>
#include <set>

#include "bridge_defaults.hpp"
#include "peakcast/model/spec_parser.hpp"
#include "spec_parser_detail.hpp"

namespace peakcast::model {

using nlohmann::json;

namespace {

const std::set<std::string>& dtype_fields() {
  static const std::set<std::string> s = {"params_dtype", "pipeline_dtype", "autocast_dtype", "main_grads_dtype", "main_params_dtype",
                                          "exp_avg_dtype", "exp_avg_sq_dtype", "moe_router_dtype"};
  return s;
}

json torch_dtype(const std::string& name) {
  static const std::map<std::string, std::string> t = {{"bf16", "torch.bfloat16"}, {"bfloat16", "torch.bfloat16"}, {"fp16", "torch.float16"}, {"float16", "torch.float16"}, {"fp32", "torch.float32"}, {"float32", "torch.float32"}};
  const auto it = t.find(name);
  if (it == t.end()) return json(name);
  return json{{"_call_", false}, {"_target_", it->second}};
}

// Bridge's encodings of the values a run spec names (yaml_utils.py:88-103).
json encode(const std::string& key, const json& v) {
  if (v.is_string() && dtype_fields().count(key) && key != "moe_router_dtype") return torch_dtype(v.get<std::string>());
  if (v.is_string() && key == "activation_func") {
    const std::string n = v.get<std::string>();
    const std::string mod = n == "squared_relu" ? "megatron.core.activations." : "torch.nn.functional.";
    return json{{"_call_", false}, {"_target_", mod + n}};
  }
  return v;
}

// A scalar as PyYAML's safe_dump writes it: strings that would read back as another type quoted.
std::string scalar(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return v.dump();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isinf(d)) return d > 0 ? ".inf" : "-.inf";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", d);
    std::string s = buf;
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    else if (s.find('.') == std::string::npos) s.insert(s.find('e'), ".0");  // PyYAML's float regex needs a dot
    const auto e = s.find('e');
    if (e != std::string::npos && s[e + 1] != '-' && s[e + 1] != '+') s.insert(e + 1, "+");
    return s;
  }
  const std::string s = v.get<std::string>();
  static const std::regex plain("[A-Za-z_][A-Za-z0-9_.\\-/]*");
  static const std::regex typed("yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|null|Null|NULL|~");
  if (std::regex_match(s, plain) && !std::regex_match(s, typed)) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("''") : std::string(1, c);
  return q + "'";
}

void emit(std::string& out, const json& v, int indent);

void emit_map(std::string& out, const json& m, int indent) {
  std::vector<std::string> keys;
  for (const auto& [k, e] : m.items()) keys.push_back(k);
  std::sort(keys.begin(), keys.end());  // sort_keys=True
  for (const auto& k : keys) {
    const json& e = m[k];
    out += std::string(static_cast<std::size_t>(indent), ' ') + k + ":";
    if ((e.is_object() && !e.empty()) || (e.is_array() && !e.empty())) {
      out += "\n";
      emit(out, e, e.is_array() ? indent : indent + 2);
    } else {
      out += " " + (e.is_object() ? std::string("{}") : e.is_array() ? std::string("[]")
                                                                     : scalar(e)) +
             "\n";
    }
  }
}

void emit(std::string& out, const json& v, int indent) {
  if (v.is_object()) return emit_map(out, v, indent);
  for (const auto& e : v) {  // a block sequence, not indented under its key
    out += std::string(static_cast<std::size_t>(indent), ' ') + "-";
    if (e.is_object() && !e.empty()) {
      std::string inner;
      emit_map(inner, e, indent + 2);
      out += " " + inner.substr(static_cast<std::size_t>(indent) + 2);
    } else if (e.is_array() && !e.empty()) {
      out += "\n";
      emit(out, e, indent + 2);
    } else {
      out += " " + (e.is_object() ? std::string("{}") : e.is_array() ? std::string("[]")
                                                                     : scalar(e)) +
             "\n";
    }
  }
}

}  // namespace

std::string to_bridge_run_config_yaml(const ParseResult& parsed, const std::string& model_class) {
  json doc = {{"_target_", "megatron.bridge.training.config.ConfigContainer"}};
  for (const char* s : {"model", "train", "optimizer", "ddp"}) doc[s] = json::object();
  doc["model"]["_target_"] = model_class;
  doc["train"]["_target_"] = "megatron.bridge.training.config.TrainingConfig";
  doc["optimizer"]["_target_"] = "megatron.bridge.training.config.OptimizerConfig";
  doc["ddp"]["_target_"] = "megatron.core.distributed.distributed_data_parallel_config.DistributedDataParallelConfig";
  const bool peft = parsed.spec && parsed.spec->peft.enabled;
  if (peft) doc["peft"] = {{"_target_", "megatron.bridge.peft.lora.LoRA"}};  // the only PEFT class simulated
  std::int64_t world = 1;
  bool expandable = false;
  std::string alloc_conf, cublas_config;
  for (const auto& [path, o] : parsed.origins) {
    const auto dot = path.find('.');
    const std::string section = path.substr(0, dot), key = path.substr(dot + 1);
    const json value = json::parse(o.value, nullptr, false);
    if (section == "cluster") {
      if (key == "num_gpus" && value.is_number_integer()) world = value.get<std::int64_t>();
      if (key == "expandable_segments" && value.is_boolean()) expandable = value.get<bool>();
      if (key == "pytorch_cuda_alloc_conf" && value.is_string()) alloc_conf = value.get<std::string>();
      if (key == "cublas_workspace_config" && value.is_string()) cublas_config = value.get<std::string>();
      continue;  // the GPU is not part of a ConfigContainer
    }
    if (key == "preset" || !doc.contains(section) || (section == "peft" && key == "method")) continue;
    doc[section][key] = encode(key, value);
  }
  const json& m = doc["model"];
  const auto size = [&](const char* k) { return m.contains(k) && m[k].is_number_integer() ? m[k].get<std::int64_t>() : std::int64_t{1}; };
  doc["comm_overlap"] = {{"_target_", "megatron.bridge.training.comm_overlap.CommOverlapConfig"},
                         {"data_parallel_size", world / std::max<std::int64_t>(1, size("tensor_model_parallel_size") *
                                                                                      size("pipeline_model_parallel_size") *
                                                                                      size("context_parallel_size"))}};
  if (alloc_conf.empty() && expandable) alloc_conf = "expandable_segments:True";
  doc["env_vars"] = json::object();
  if (!alloc_conf.empty()) doc["env_vars"]["PYTORCH_CUDA_ALLOC_CONF"] = alloc_conf;
  if (!cublas_config.empty()) doc["env_vars"]["CUBLAS_WORKSPACE_CONFIG"] = cublas_config;
  doc["mixed_precision"] = nullptr;  // its effect is in the sections already
  if (!peft) doc["peft"] = nullptr;
  std::string out;
  emit(out, doc, 0);
  return out;
}

}  // namespace peakcast::model
