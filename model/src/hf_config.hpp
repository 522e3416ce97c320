#pragma once
// A Hugging Face config.json -> the fields of the Megatron-Bridge provider AutoBridge builds from it
// (Bridge 600d069b: conversion/auto_bridge.py dispatch, model_bridge.py's shared mapping, each
// architecture's bridge), from the table configs/hf/architectures.json. Every key of the config is
// either mapped, known to have no shape effect, or an error naming it. Private to peakcast_model.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "peakcast/model/diagnostics.hpp"

namespace peakcast::model::detail {

struct HfModel {
  nlohmann::json fields = nlohmann::json::object();  // provider field -> value, run-spec names and encodings
  std::string provider_class;                        // "megatron.bridge.models.mla_provider.MLAModelProvider"
  std::string architecture, bridge;                  // the dispatch key and the bridge class that maps it
  std::vector<std::string> sources;                  // where the mapping and the constants are
  std::vector<std::string> ignored;                  // keys of the config no mapping read (no shape effect)
};

// `file` names the config in messages ("config.json", "configs/hf/Qwen--Qwen3-8B.json").
std::optional<HfModel> map_hf_config(const nlohmann::json& config, const std::string& file, Diagnostics& out);
// The same mapping's fields whatever it reports (an architecture the pinned Megatron does not build still maps as its
// bridge maps it: DeepseekV4ForCausalLM, hf_config_dsv4.cpp).
HfModel map_hf_fields(const nlohmann::json& config, const std::string& file, Diagnostics& out);

// A shipped public config.json of the catalogue, by Hugging Face id ("moonshotai/Moonlight-16B-A3B").
std::optional<nlohmann::json> shipped_hf_config(const std::string& hf_id);

// For an id with no shipped config.json that configs/hf/index.json records as using a mechanism peakcast
// does not simulate: that mechanism, with the evidence it was found in ("latent MoE (...)").
std::optional<std::string> hf_not_simulated(const std::string& hf_id);

}  // namespace peakcast::model::detail
