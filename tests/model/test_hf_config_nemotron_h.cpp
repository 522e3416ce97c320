// model.hf_config for NemotronHForCausalLM: NVIDIA-Nemotron-3-Nano-30B-A3B's config.json (test_hf_configs.hpp)
// mapped as Bridge 600d069b's NemotronHBridge maps it (nemotron_h_bridge.py:233-332, HybridModelProvider) and
// the transformers NemotronHConfig reads it; the keys the bridge does not read but that shape the checkpoint
// are refused by name. Nemotron 3 Super / Ultra's shipped configs (configs/hf/) with their latent MoE.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/static_memory.hpp"
#include "peakcast/sim/prediction.hpp"
#include "test_hf_configs.hpp"

using nlohmann::json;
using namespace peakcast::model;

namespace {

json nano_config() {
  for (const auto& c : hf_test::preset_configs())
    if (std::string(c.preset) == "nemotron-3-nano-30b-a3b") return json::parse(c.config);
  FAIL("no Nemotron 3 Nano config");
  return {};
}

std::string write(const std::string& name, const json& config) {
  const auto dir = std::filesystem::temp_directory_path() / ("peakcast-hf-nemotron-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto p = dir / name;
  std::ofstream(p) << config.dump();
  return p.string();
}

ParseResult parse_config(const std::string& name, const json& config) {
  const json doc = {{"model", {{"hf_config", write(name, config)}, {"seq_length", 4096}, {"expert_model_parallel_size", 8}}},
                    {"cluster", {{"num_gpus", 8}, {"gpu", "h100-sxm-80gb"}}}};
  ParseResult r = parse_run_spec(doc.dump());
  for (const auto& d : r.diagnostics) UNSCOPED_INFO(format(d));
  return r;
}

const Diagnostic* find(const ParseResult& r, const std::string& rule, const std::string& path) {
  for (const auto& d : r.diagnostics)
    if (d.rule == rule && d.path == path) return &d;
  return nullptr;
}

}  // namespace

TEST_CASE("hf_config: Nemotron 3 Nano through NemotronHBridge", "[model][hf][nemotron]") {
  const json config = nano_config();
  const ParseResult r = parse_config("nano.json", config);
  REQUIRE(r.spec);
  const ModelSpec& m = r.spec->model;
  const std::string pattern = config["hybrid_override_pattern"];
  CHECK(m.hybrid_override_pattern == pattern);  // hybrid_layer_pattern (nemotron_h_bridge.py:262)
  CHECK(m.num_layers == 52);                    // the pattern's length (hybrid_provider.py:233-249)
  CHECK(r.origins.at("model.num_layers").origin == "Hugging Face config");
  CHECK(r.origins.at("model.hidden_size").source.find("NemotronHBridge") != std::string::npos);
  CHECK(m.mamba_num_heads == 64);  // CONFIG_MAPPING extension (:257-261)
  CHECK(m.mamba_head_dim == 64);
  CHECK(m.mamba_state_dim == 128);
  CHECK(m.mamba_num_groups == 8);
  CHECK(m.kv_channels == 128);  // head_dim (:306-308)
  CHECK(m.num_query_groups == 2);
  CHECK(m.activation_func_name == "squared_relu");  // :297, whatever mlp_hidden_act says
  CHECK_FALSE(m.gated_linear_unit);                 // HybridModelProvider default
  CHECK(m.num_moe_experts == 128);
  CHECK(m.moe_router_topk == 6);
  CHECK(m.moe_ffn_hidden_size == 1856);
  CHECK(m.moe_shared_expert_intermediate_size == 3712);  // :267
  CHECK(m.moe_router_topk_scaling_factor == 2.5);
  CHECK(m.moe_router_enable_expert_bias);  // :312
  CHECK(m.mtp_num_layers == 0);            // no num_nextn_predict_layers (:276-280)

  // Parameters from the shapes, as Megatron builds them: untied embedding and output layer, the final
  // norm; each Mamba layer (in_proj to z, x, B, C and dt with the fused input norm, the depthwise conv
  // over x, B, C with its bias, dt_bias / A_log / D per head, the gated norm over d_inner, out_proj);
  // each attention layer (qkv with the fused norm, 32 query and 2 key/value heads of 128, the
  // projection); each MoE layer (norm, router, 128 squared-ReLU experts of 1856 without a gate, the
  // shared expert of 3712).
  const std::int64_t h = 2688, vocab = 131072, d_inner = 64 * 64, bc = 2 * 8 * 128, heads = 64;
  const std::int64_t mamba = h * (2 * d_inner + bc + heads) + h + (d_inner + bc) * 4 + (d_inner + bc) + 3 * heads + d_inner + d_inner * h;
  const std::int64_t attention = h * (32 + 2 * 2) * 128 + h + 32 * 128 * h;
  const std::int64_t moe = h + 128 * h + 128 * 2 * h * 1856 + 2 * h * 3712;
  const auto count = [&](char c) { return static_cast<std::int64_t>(std::count(pattern.begin(), pattern.end(), c)); };
  REQUIRE(count('M') + count('*') + count('E') == 52);
  const std::int64_t expected = 2 * vocab * h + h + count('M') * mamba + count('*') * attention + count('E') * moe;
  const Derived d = derive(*r.spec);
  CHECK(total_parameters(*r.spec, d, false) == expected);
  // The seed study's published count adds the 23 fp32 expert-bias buffers of 128 (configs/models/nemotron-3-nano-30b-a3b.json).
  CHECK(expected + count('E') * 128 == 31577940288);
  CHECK(total_checkpointed_buffers(*r.spec, d, false) == count('E') * 128);
}

TEST_CASE("hf_config: Nemotron-H's layers_block_type and MTP keys as the transformers class reads them", "[model][hf][nemotron]") {
  json config = nano_config();
  const std::string pattern = config["hybrid_override_pattern"];
  // layers_block_type in either spelling (configuration_nemotron_h.py: _list_to_pattern, legacy names)
  // gives the same pattern; a list wins over the string.
  json legacy = json::array(), current = json::array();
  for (char c : pattern) {
    legacy.push_back(c == 'M' ? "mamba" : c == '*' ? "attention"
                                                   : "moe");
    current.push_back(c == 'M' ? "linear_attention" : c == '*' ? "full_attention"
                                                               : "moe");
  }
  for (const json& list : {legacy, current}) {
    json c = config;
    c["layers_block_type"] = list;
    c["hybrid_override_pattern"] = "M-M";
    const ParseResult r = parse_config("nano_list.json", c);
    REQUIRE(r.spec);
    CHECK(r.spec->model.hybrid_override_pattern == pattern);
    CHECK(r.spec->model.num_layers == 52);
  }
  // One MTP depth: the pattern "*E" (the class's default), a repeated layer and a BF16 spec by default,
  // the loss factor 0.3 (nemotron_h_bridge.py:324-330).
  config["num_nextn_predict_layers"] = 1;
  const ParseResult r = parse_config("nano_mtp.json", config);
  REQUIRE(r.spec);
  CHECK(r.spec->model.mtp_num_layers == 1);
  CHECK(r.spec->model.mtp_hybrid_override_pattern == std::optional<std::string>("*E"));
  CHECK(r.spec->model.mtp_use_repeated_layer);
  config["mtp_layers_block_type"] = json::array({"attention", "moe", "mamba"});
  const ParseResult listed = parse_config("nano_mtp_list.json", config);
  REQUIRE(listed.spec);
  CHECK(listed.spec->model.mtp_hybrid_override_pattern == std::optional<std::string>("*EM"));
}

TEST_CASE("hf_config: Nemotron-H keys the bridge does not read are refused by name", "[model][hf][nemotron]") {
  struct Case {
    const char* key;
    json value;
    const char* rule;
  };
  const std::vector<Case> cases = {
      {"conv_kernel", 3, "hf_unmapped_shape_key"},                   // Megatron's d_conv is 4
      {"use_conv_bias", false, "hf_unmapped_shape_key"},             // Megatron asserts a conv bias
      {"mamba_proj_bias", true, "hf_unmapped_shape_key"},            // Megatron's projections have none
      {"use_bias", true, "hf_unmapped_shape_key"},                   // mlp_bias wins the mapping
      {"n_shared_experts", 2, "hf_unmapped_shape_key"},              // one shared expert is built
      {"sliding_window", 4096, "hf_unmapped_shape_key"},             // full causal attention is built
      {"attention_head_dim", 64, "hf_unmapped_shape_key"},           // head_dim is taken first
      {"hybrid_override_pattern", "MEX*", "hf_value_out_of_range"},  // not a symbol the class reads
      {"num_nextn_predict_layers", -1, "hf_value_out_of_range"},     // the bridge raises
      {"mamba_chunk_scan", 1, "hf_unknown_key"},                     // read by nothing
  };
  for (const auto& c : cases) {
    INFO(c.key << " = " << c.value.dump());
    json config = nano_config();
    config[c.key] = c.value;
    const ParseResult r = parse_config(std::string("nano_") + c.key + ".json", config);
    CHECK_FALSE(r.spec);
    const Diagnostic* d = find(r, c.rule, std::string("model.hf_config.") + c.key);
    REQUIRE(d);
  }
  // The neighbours: the values the bridge builds are accepted.
  json config = nano_config();
  config["moe_latent_size"] = nullptr;  // the transformers class's default: no latent projections
  config["attention_head_dim"] = 128;
  config["mlp_hidden_act"] = "silu";  // the bridge forces squared ReLU anyway (:297)
  const ParseResult ok = parse_config("nano_neighbours.json", config);
  REQUIRE(ok.spec);
  CHECK(ok.spec->model.activation_func_name == "squared_relu");
}

TEST_CASE("hf_config: the seed study's Nemotron run with its model from the HF config", "[model][hf][nemotron][sim]") {
  // configs/runs/nemotron-3-nano-16xh100.json builds the model from the hand-written preset; the same run
  // with the model from the config.json instead has the same layers and sizes, so the same prediction.
  std::ifstream in(std::string(PEAKCAST_SOURCE_DIR) + "/configs/runs/nemotron-3-nano-16xh100.json");
  std::stringstream text;
  text << in.rdbuf();
  const ParseResult preset = parse_run_spec(text.str());
  const ParseResult hf = parse_run_spec(text.str(), {"model.preset=null", "model.hf_config=" + json(write("nano_seed.json", nano_config())).dump()});
  for (const auto& d : hf.diagnostics) UNSCOPED_INFO(format(d));
  REQUIRE(preset.spec);
  REQUIRE(hf.spec);
  CHECK(hf.origins.at("model.num_layers").origin == "Hugging Face config");
  CHECK(hf.spec->model.hybrid_override_pattern == preset.spec->model.hybrid_override_pattern);
  CHECK(total_parameters(*hf.spec, derive(*hf.spec), true) == total_parameters(*preset.spec, derive(*preset.spec), true));
  CHECK(peakcast::sim::predict(*hf.spec).max_peak_allocated.value == peakcast::sim::predict(*preset.spec).max_peak_allocated.value);
}

namespace {

json shipped(const std::string& file) {
  std::ifstream in(std::string(PEAKCAST_SOURCE_DIR) + "/configs/hf/" + file);
  REQUIRE(in);
  return json::parse(in);
}

// One Nemotron 3 layer's parameters from its shapes, as Megatron builds them (the Nano test above): a
// Mamba layer, an attention layer, a latent-MoE layer (norm, router, the fp32 expert bias, E squared-ReLU
// experts of `latent` in and out around F, fc1_latent_proj [latent, h] and fc2_latent_proj [h, latent]
// duplicated over TP (moe_layer.py:273-296), the shared expert on the full width).
struct Nemotron3 {
  std::int64_t h, heads, mamba_heads, experts, ffn, latent, shared;
  std::int64_t mamba() const {
    const std::int64_t d_inner = mamba_heads * 64, bc = 2 * 8 * 128;
    return h * (2 * d_inner + bc + mamba_heads) + h + (d_inner + bc) * 4 + (d_inner + bc) + 3 * mamba_heads + d_inner + d_inner * h;
  }
  std::int64_t attention() const { return h * (heads + 2 * 2) * 128 + h + heads * 128 * h; }
  std::int64_t moe() const { return h + experts * h + experts * 2 * latent * ffn + 2 * h * latent + 2 * h * shared; }
  std::int64_t mtp_depth() const { return 2 * h + 2 * h * h + h + attention() + moe(); }  // enorm, hnorm, eh_proj, final norm; "*E"
};

}  // namespace

TEST_CASE("hf_config: Nemotron 3 Super's config with latent MoE gives Bridge's element count", "[model][hf][nemotron]") {
  const json config = shipped("nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-BF16.json");
  const ParseResult r = parse_config("super.json", config);
  REQUIRE(r.spec);
  const ModelSpec& m = r.spec->model;
  CHECK(m.moe_latent_size == 1024);          // nemotron_h_bridge.py:320-321
  CHECK_FALSE(m.moe_shared_expert_overlap);  // the config's false after the bridge's true (:318, :322-323)
  CHECK(m.mtp_num_layers == 1);
  CHECK(m.mtp_hybrid_override_pattern == std::optional<std::string>("*E"));
  const std::string pattern = config["hybrid_override_pattern"];
  CHECK(m.hybrid_override_pattern == pattern);
  const auto count = [&](char c) { return static_cast<std::int64_t>(std::count(pattern.begin(), pattern.end(), c)); };
  REQUIRE(count('M') == 40);
  REQUIRE(count('E') == 40);
  REQUIRE(count('*') == 8);
  const Nemotron3 s{4096, 32, 128, 512, 2688, 1024, 5376};
  const std::int64_t vocab = 131072;
  const std::int64_t main = 2 * vocab * s.h + s.h + 40 * s.mamba() + 8 * s.attention() + 40 * s.moe();
  const Derived d = derive(*r.spec);
  CHECK(total_parameters(*r.spec, d, false) == main);
  CHECK(total_checkpointed_buffers(*r.spec, d, false) == 40 * 512);
  // Bridge's verification card for the BF16 release: 123,611,033,088 elements with the checkpoint's MTP
  // depth and the 41 fp32 router correction biases (card.yaml:72-74). The MTP depth is built once
  // HybridModelProvider.finalize joins its pattern: the recipe test (test_recipe_nemotron.cpp) counts it.
  CHECK(main + s.mtp_depth() + 41 * 512 == 123611033088);
}

TEST_CASE("hf_config: Nemotron 3 Ultra's config: layers_block_type, latent MoE, 550B", "[model][hf][nemotron]") {
  const json config = shipped("nvidia--NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16.json");
  const ParseResult r = parse_config("ultra.json", config);
  REQUIRE(r.spec);
  const ModelSpec& m = r.spec->model;
  // The pinned Megatron-LM's own pattern for this release (examples/post_training/modelopt/conf/nvidia/
  // NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16.sh:38), from the config's layers_block_type.
  CHECK(m.hybrid_override_pattern == std::optional<std::string>("MEMEMEM*EMEMEM*EMEMEMEM*EMEMEMEM*EMEMEM*EMEMEMEM*EMEMEMEM*EMEMEM*EMEMEMEM*EMEMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"));
  CHECK(m.num_layers == 108);
  CHECK(m.moe_latent_size == 2048);
  CHECK(m.mtp_hybrid_override_pattern == std::optional<std::string>("*E"));
  const Nemotron3 u{8192, 64, 256, 512, 5120, 2048, 10240};
  const std::int64_t main = 2 * 131072 * u.h + u.h + 48 * u.mamba() + 12 * u.attention() + 48 * u.moe();
  const Derived d = derive(*r.spec);
  CHECK(total_parameters(*r.spec, d, false) == main);
  // No published count: the shapes give 549.3e9 without the MTP depth (the "550B" of the name), and with
  // it and the 49 fp32 biases 560.5e9 elements, 1121 GB in bf16 (the deployment note in configs/hf/index.json).
  CHECK(main + 48 * 512 == 549308993536);
  CHECK(main + u.mtp_depth() + 49 * 512 == 560524603904);
}
