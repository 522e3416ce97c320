#pragma once
// The state of one config.json's mapping (map_hf_config, hf_config.cpp): the config, its architecture's
// row of configs/hf/architectures.json, the provider fields made so far and the keys read. The
// architecture-specific rules live beside it (hf_config_nemotron_h.cpp, hf_config_exaone.cpp, hf_config_qwen35.cpp,
// hf_config_glm5.cpp, hf_config_dsv4.cpp). Private to peakcast_model.
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "hf_config.hpp"

namespace peakcast::model::detail {

struct Mapper {
  const nlohmann::json& hf;
  const std::string& file;
  const nlohmann::json& arch;
  Diagnostics& out;
  HfModel model;
  std::set<std::string> known;  // HF keys read or classified

  void error(const std::string& key, const char* rule, const std::string& message) {
    out.push_back({Severity::error, key, rule, file + ": " + message});
  }
  const nlohmann::json* get(const std::string& key) {
    known.insert(key);
    if (hf.contains(key)) return &hf[key];
    if (!arch.contains("tf_defaults") || !arch["tf_defaults"].contains(key)) return nullptr;
    return &arch["tf_defaults"][key];
  }
  void copy(const std::vector<std::pair<std::string, std::string>>& pairs) {
    std::set<std::string> set;  // first match wins (model_bridge.py:561-580)
    for (const auto& [h, m] : pairs) {
      const nlohmann::json* v = get(h);
      if (v && !set.count(m)) {
        model.fields[m] = *v;
        set.insert(m);
      }
    }
  }
  void post_process(bool mla);
  void rules();
  void gpt_oss_constant_keys();
  void window_from_sliding_window(bool required, const char* source);
  void nemotron_h_pattern();
  void nemotron_h_kv_channels();
  void nemotron_h_mtp();
  void nemotron_h_checks();
  void glm5_dsa();
  void glm5_unread_keys();
  void dsv4();
  bool dsv4_require(const char* key, const char* field, const char* line);
  void dsv4_geometry();
  void dsv4_rope();
  void dsv4_compress_ratios();
  void dsv4_unread_lists(const nlohmann::json& ratios);
  void dsv4_moe();
  void refuse_unless(const char* key, const nlohmann::json& accepted, const std::string& why);
  void gemma3_provider_fields();
  // Family rules in their own files (hf_config_exaone.cpp, hf_config_qwen35.cpp): true when `rule` is theirs.
  bool exaone_rule(const std::string& rule);
  bool qwen35_rule(const std::string& rule);
};

}  // namespace peakcast::model::detail
