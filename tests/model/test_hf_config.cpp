// model.hf_config: a Hugging Face config.json under the spec's own model keys (spec_hf_config.cpp).
// Strict: a key of the config that nothing maps is an error naming the file and the key, a model key
// of the spec that disagrees with the config is an error naming both; keys without a shape effect are
// listed as ignored in one line; the bridge's training settings yield to the spec's.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/static_memory.hpp"
#include "test_hf_configs.hpp"

using nlohmann::json;
using namespace peakcast::model;

namespace {

namespace fs = std::filesystem;

fs::path scratch() {
  const auto dir = fs::temp_directory_path() / ("peakcast-hf-config-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

std::string write(const std::string& name, const std::string& text) {
  const auto p = scratch() / name;
  std::ofstream(p) << text;
  return p.string();
}

// The public config.json of a preset's model (test_hf_configs.hpp).
json config_of(const std::string& preset) {
  for (const auto& c : hf_test::preset_configs())
    if (c.preset == preset) return json::parse(c.config);
  FAIL("no config for " << preset);
  return {};
}

ParseResult parse_model(const json& model, const std::string& extra = "") {
  json doc = {{"model", model}, {"cluster", {{"num_gpus", 8}, {"gpu", "h100-sxm-80gb"}}}};
  if (!extra.empty()) doc.update(json::parse(extra));
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

TEST_CASE("hf_config: the architecture from the config, the rest from the spec", "[model][hf]") {
  const std::string path = write("llama8b.json", config_of("llama3-8b").dump());
  const ParseResult r = parse_model({{"hf_config", path}, {"seq_length", 4096}, {"tensor_model_parallel_size", 2}});
  REQUIRE(r.spec);
  const ModelSpec& m = r.spec->model;
  CHECK(m.num_layers == 32);
  CHECK(m.hidden_size == 4096);
  CHECK(m.num_query_groups == 8);
  CHECK(m.vocab_size == 128256);
  CHECK(m.seq_length == 4096);               // the training sequence is the spec's
  CHECK(m.max_position_embeddings == 8192);  // HF max_position_embeddings (Bridge's provider seq_length)
  CHECK(m.tensor_model_parallel_size == 2);
  CHECK(r.spec->model.bf16);                     // torch_dtype bfloat16 (model_bridge.py:639-643)
  CHECK(r.defaults == DefaultsProfile::bridge);  // a Bridge model, as a preset is
  CHECK(r.origins.at("model.hidden_size").origin == "Hugging Face config");
  CHECK(r.origins.at("model.hidden_size").source.find("LlamaBridge") != std::string::npos);
  CHECK(r.origins.at("model.seq_length").origin == "user");
}

TEST_CASE("hf_config: a spec key that disagrees with the config is an error naming both", "[model][hf]") {
  const std::string path = write("llama8b.json", config_of("llama3-8b").dump());
  const ParseResult r = parse_model({{"hf_config", path}, {"hidden_size", 2048}, {"num_layers", 32}});
  CHECK_FALSE(r.spec);
  const Diagnostic* d = find(r, "hf_config_conflict", "model.hidden_size");
  REQUIRE(d);
  CHECK(d->message.find("2048") != std::string::npos);
  CHECK(d->message.find("4096") != std::string::npos);
  CHECK(d->message.find(path) != std::string::npos);
  CHECK(find(r, "hf_config_conflict", "model.num_layers") == nullptr);  // agrees: no error
  // A shape the bridge fixes is the config's too (llama_bridge.py:52-65: RMSNorm).
  CHECK(find(parse_model({{"hf_config", path}, {"normalization", "LayerNorm"}}), "hf_config_conflict", "model.normalization"));
  // Numbers compare by value: 1e-05 is 0.00001, 500000.0 is 500000.
  CHECK(parse_model({{"hf_config", path}, {"layernorm_epsilon", 0.00001}, {"rotary_base", 500000}}).spec);
}

TEST_CASE("hf_config: training settings and precision are the spec's, said in one line", "[model][hf]") {
  const std::string path = write("qwen3moe.json", config_of("qwen3-30b-a3b").dump());
  const ParseResult r = parse_model({{"hf_config", path}, {"moe_token_dispatcher_type", "allgather"}, {"fp16", true}, {"expert_model_parallel_size", 8}});
  REQUIRE(r.spec);
  CHECK(r.spec->model.fp16);
  CHECK_FALSE(r.spec->model.bf16);  // the checkpoint's bfloat16 is not the training precision
  int kept = 0, unread = 0;
  for (const auto& line : r.ignored) {
    if (line.find("training settings") != std::string::npos) {
      ++kept;
      CHECK(line.find("moe_token_dispatcher_type \"allgather\" (the bridge sets \"alltoall\")") != std::string::npos);
      CHECK(line.find("mixed_precision.py:138-155") != std::string::npos);
    }
    if (line.find("keys read by no mapping") != std::string::npos) {
      ++unread;
      CHECK(line.find("bos_token_id") != std::string::npos);
      CHECK(line.find("use_cache") != std::string::npos);
      CHECK(line.find("hidden_size") == std::string::npos);
    }
  }
  CHECK(kept == 1);
  CHECK(unread == 1);
}

TEST_CASE("hf_config: keys nothing maps, unknown architectures and bad files are errors naming them", "[model][hf]") {
  json cfg = config_of("qwen3-8b");
  cfg["layer_scaling_size"] = 3;  // not a key any bridge reads
  const std::string unknown = write("unknown_key.json", cfg.dump());
  const ParseResult r = parse_model({{"hf_config", unknown}});
  CHECK_FALSE(r.spec);
  const Diagnostic* d = find(r, "hf_unknown_key", "model.hf_config.layer_scaling_size");
  REQUIRE(d);
  CHECK(d->message.find(unknown) != std::string::npos);

  json mixtral = config_of("llama3-8b");
  mixtral["architectures"] = {"MixtralForCausalLM"};
  const ParseResult m = parse_model({{"hf_config", write("mixtral.json", mixtral.dump())}});
  const Diagnostic* a = find(m, "hf_unknown_architecture", "model.hf_config.architectures");
  REQUIRE(a);
  CHECK(a->message.find("no Mixtral bridge") != std::string::npos);

  CHECK(find(parse_model({{"hf_config", (scratch() / "absent.json").string()}}), "hf_config_unreadable", "model.hf_config"));
  CHECK(find(parse_model({{"hf_config", write("broken.json", "{\"hidden_size\": ")}}), "json_syntax", "model.hf_config.hidden_size"));
  CHECK(find(parse_model({{"hf_config", unknown}, {"preset", "llama3-8b"}}), "hf_config_with_preset", "model.hf_config"));
  CHECK(find(parse_model({{"hf_config", 3}}), "wrong_type", "model.hf_config"));
}

TEST_CASE("hf_config: a relative path is relative to the spec file", "[model][hf]") {
  const fs::path dir = scratch() / "specdir";
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << config_of("qwen2.5-7b").dump();
  const std::string spec = R"({"model": {"hf_config": "config.json"}, "cluster": {"num_gpus": 8, "gpu": "h100-sxm-80gb"}})";
  const ParseResult r = parse_spec_input((dir / "run.json").string(), spec);
  for (const auto& d : r.diagnostics) UNSCOPED_INFO(format(d));
  REQUIRE(r.spec);
  CHECK(r.spec->model.hidden_size == 3584);
  // The same text through SpecText (what a sweep parses per point) reads it the same way.
  const SpecText text(spec, (dir / "run.json").string());
  const ParseResult s = text.parse({"model.tensor_model_parallel_size=2"});
  REQUIRE(s.spec);
  CHECK(s.spec->model.hidden_size == 3584);
  // With no file location the working directory is the base: not found here.
  CHECK(find(parse_run_spec(spec), "hf_config_unreadable", "model.hf_config"));
}

TEST_CASE("hf_config: given as an override (--hf-config)", "[model][hf]") {
  const std::string path = write("dsv3.json", config_of("deepseek-v3").dump());
  const std::string spec = R"({"model": {"seq_length": 4096, "expert_model_parallel_size": 8},
                               "cluster": {"num_gpus": 64, "gpu": "h100-sxm-80gb"}})";
  const ParseResult r = parse_run_spec(spec, {"model.hf_config=" + json(path).dump()});
  for (const auto& d : r.diagnostics) UNSCOPED_INFO(format(d));
  REQUIRE(r.spec);
  CHECK(r.spec->model.multi_latent_attention);
  CHECK(r.spec->model.num_moe_experts == 256);
  CHECK(r.spec->model.mtp_num_layers == 1);
}

// zai-org/GLM-4.5-Air's config.json (as configs/hf/zai-org--GLM-4.5-Air.json transcribes it; written
// here so the test does not read the file it checks).
constexpr const char* kGlm45Air = R"({"architectures": ["Glm4MoeForCausalLM"], "attention_bias": true,
"attention_dropout": 0.0, "pad_token_id": 151329, "eos_token_id": [151329, 151336, 151338], "head_dim": 128,
"hidden_act": "silu", "hidden_size": 4096, "partial_rotary_factor": 0.5, "initializer_range": 0.02,
"intermediate_size": 10944, "max_position_embeddings": 131072, "model_type": "glm4_moe",
"moe_intermediate_size": 1408, "norm_topk_prob": true, "num_attention_heads": 96, "n_group": 1, "topk_group": 1,
"n_routed_experts": 128, "n_shared_experts": 1, "routed_scaling_factor": 1.0, "num_experts_per_tok": 8,
"first_k_dense_replace": 1, "num_hidden_layers": 46, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
"rope_scaling": null, "rope_theta": 1000000, "num_nextn_predict_layers": 1, "tie_word_embeddings": false,
"torch_dtype": "bfloat16", "use_cache": true, "use_qk_norm": false, "vocab_size": 151552})";

TEST_CASE("hf_config: GLM-4.5 through GLM45Bridge", "[model][hf]") {
  const std::string path = write("glm45_air.json", kGlm45Air);
  const ParseResult r = parse_model({{"hf_config", path}, {"seq_length", 4096}, {"expert_model_parallel_size", 8}});
  REQUIRE(r.spec);
  const ModelSpec& m = r.spec->model;
  // glm45_bridge.py:90-92: the first first_k_dense_replace layers dense, the rest MoE.
  std::vector<std::int64_t> freq(46, 1);
  freq[0] = 0;
  CHECK(m.moe_layer_freq == MoeLayerFreq{freq});
  CHECK(m.moe_shared_expert_intermediate_size == 1408);  // :88, moe_intermediate_size
  CHECK(m.mtp_num_layers == 1);                          // :86, num_nextn_predict_layers
  CHECK(m.add_qkv_bias);                                 // attention_bias (model_bridge.py CONFIG_MAPPING)
  CHECK_FALSE(m.qk_layernorm);                           // use_qk_norm false for Air
  CHECK(m.rotary_percent == 0.5);
  CHECK(m.moe_router_enable_expert_bias);  // :76
  CHECK(m.kv_channels == 128);
  CHECK(r.origins.at("model.moe_shared_expert_intermediate_size").source.find("GLM45Bridge") != std::string::npos);

  // Parameters from the shapes (no MTP): embedding and output layer untied (:67); per layer the
  // attention (q 96x128, k/v 8x128 with biases, the projection, the input norm fused into linear_qkv);
  // one dense layer (gated FFN 10944); 45 MoE layers (norm, router, 128 routed and one shared gated
  // expert of 1408).
  const std::int64_t h = 4096, vocab = 151552, f = 1408;
  const std::int64_t attention = h * 96 * 128 + 2 * h * 8 * 128 + (96 * 128 + 2 * 8 * 128) + 96 * 128 * h + h;
  const std::int64_t dense = 3 * h * 10944 + h;
  const std::int64_t moe = h + 128 * h + 128 * 3 * h * f + 3 * h * f;
  const std::int64_t expected = 2 * vocab * h + h + 46 * attention + dense + 45 * moe;
  CHECK(total_parameters(*r.spec, derive(*r.spec), false) == expected);

  json two = json::parse(kGlm45Air);
  two["n_shared_experts"] = 2;  // the bridge would still build one shared expert
  const ParseResult bad = parse_model({{"hf_config", write("glm45_two_shared.json", two.dump())}});
  CHECK_FALSE(bad.spec);
  CHECK(find(bad, "hf_unmapped_shape_key", "model.hf_config.n_shared_experts"));
}

// moonshotai/Kimi-K2-Instruct's config.json (configs/hf/index.json says where the copy was found).
constexpr const char* kKimiK2 = R"({"architectures": ["DeepseekV3ForCausalLM"], "attention_bias": false,
"attention_dropout": 0.0, "auto_map": {"AutoConfig": "configuration_deepseek.DeepseekV3Config", "AutoModel":
"modeling_deepseek.DeepseekV3Model", "AutoModelForCausalLM": "modeling_deepseek.DeepseekV3ForCausalLM"},
"aux_loss_alpha": 0.001, "bos_token_id": 163584, "eos_token_id": 163585, "first_k_dense_replace": 1,
"hidden_act": "silu", "hidden_size": 7168, "initializer_range": 0.02, "intermediate_size": 18432,
"kv_lora_rank": 512, "max_position_embeddings": 131072, "model_type": "kimi_k2", "moe_intermediate_size": 2048,
"moe_layer_freq": 1, "n_group": 1, "n_routed_experts": 384, "n_shared_experts": 1, "norm_topk_prob": true,
"num_attention_heads": 64, "num_experts_per_tok": 8, "num_hidden_layers": 61, "num_key_value_heads": 64,
"num_nextn_predict_layers": 0, "pretraining_tp": 1, "q_lora_rank": 1536, "qk_nope_head_dim": 128,
"qk_rope_head_dim": 64, "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method":
"fp8", "weight_block_size": [128, 128]}, "rms_norm_eps": 1e-06, "rope_theta": 50000.0, "routed_scaling_factor":
2.827, "rope_scaling": {"beta_fast": 1.0, "beta_slow": 1.0, "factor": 32.0, "mscale": 1.0, "mscale_all_dim": 1.0,
"original_max_position_embeddings": 4096, "type": "yarn"}, "scoring_func": "sigmoid", "seq_aux": true,
"tie_word_embeddings": false, "topk_group": 1, "topk_method": "noaux_tc", "torch_dtype": "bfloat16",
"transformers_version": "4.48.3", "use_cache": true, "v_head_dim": 128, "vocab_size": 163840})";

TEST_CASE("hf_config: Kimi K2 dispatches on auto_map to DeepSeekV3Bridge", "[model][hf]") {
  const ParseResult r = parse_model({{"hf_config", write("kimi_k2.json", kKimiK2)}, {"seq_length", 4096}, {"expert_model_parallel_size", 8}});
  REQUIRE(r.spec);
  const ModelSpec& m = r.spec->model;
  CHECK(r.origins.at("model.hidden_size").source.find("DeepSeekV3Bridge") != std::string::npos);
  CHECK(m.mtp_num_layers == 0);  // num_nextn_predict_layers 0 (deepseek_v3_bridge.py:97)
  CHECK(m.moe_shared_expert_intermediate_size == 2048);
  // Parameters from the shapes, as the checkpoint's tensor list gives them: per layer MLA (q down
  // 1536 x h with its norm, q up 64 x 192 x 1536, kv down 576 x h with the 512 norm, kv up 64 x 256 x
  // 512, the projection h x 64 x 128) and two norms; one dense layer (gated 18432); 60 MoE layers (384
  // routed and one shared gated expert of 2048, the router); untied embedding and output layer.
  const std::int64_t h = 7168, vocab = 163840, f = 2048;
  const std::int64_t mla = h * 1536 + 1536 + 1536 * 64 * 192 + h * 576 + 512 + 512 * 64 * 256 + 64 * 128 * h;
  const std::int64_t moe = 384 * 3 * h * f + 3 * h * f + 384 * h;
  const std::int64_t expected = 2 * vocab * h + h + 61 * (mla + 2 * h) + 3 * h * 18432 + 60 * moe;
  CHECK(total_parameters(*r.spec, derive(*r.spec), false) == expected);
}
