// EXAONE 4.0 through Exaone4Bridge and Qwen3.5 text through Qwen35Bridge / Qwen35MoEBridge
// (docs/research/exaone-qwen35-memory-facts.md): the Hugging Face mappings, the parameter totals against the
// published counts, EXAONE 4's layer-spec rules, and the Bridge recipes. The config.json texts are the copies
// configs/hf/index.json cites, written here so the test does not read the files it checks.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "hf_config.hpp"
#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/static_memory.hpp"
#include "peakcast/model/validate.hpp"
#include "rule_cases.hpp"

using nlohmann::json;
using namespace peakcast::model;
using namespace peakcast::model::test;

namespace {

// LGAI-EXAONE/EXAONE-4.0-1.2B (his0si/EXAONE-4.0-1.2B:model/config.json less its quantization_config).
json exaone4_1p2b() {
  return {{"architectures", {"Exaone4ForCausalLM"}}, {"attention_dropout", 0.0}, {"bos_token_id", 1}, {"dtype", "bfloat16"}, {"eos_token_id", 361}, {"head_dim", 64}, {"hidden_act", "silu"}, {"hidden_size", 2048}, {"initializer_range", 0.02}, {"intermediate_size", 4096}, {"layer_types", std::vector<std::string>(30, "full_attention")}, {"max_position_embeddings", 65536}, {"model_type", "exaone4"}, {"num_attention_heads", 32}, {"num_hidden_layers", 30}, {"num_key_value_heads", 8}, {"pad_token_id", 0}, {"rms_norm_eps", 1e-05}, {"rope_scaling", {{"factor", 16.0}, {"high_freq_factor", 4.0}, {"low_freq_factor", 1.0}, {"original_max_position_embeddings", 8192}, {"rope_type", "llama3"}}}, {"rope_theta", 1000000.0}, {"sliding_window", nullptr}, {"sliding_window_pattern", nullptr}, {"tie_word_embeddings", true}, {"transformers_version", "4.57.3"}, {"use_cache", true}, {"vocab_size", 102400}};
}

std::vector<std::string> qwen35_layer_types(int blocks) {
  std::vector<std::string> t;
  for (int i = 0; i < blocks; ++i) t.insert(t.end(), {"linear_attention", "linear_attention", "linear_attention", "full_attention"});
  return t;
}

json qwen35_rope() { return {{"mrope_interleaved", true}, {"mrope_section", {11, 11, 10}}, {"partial_rotary_factor", 0.25}, {"rope_theta", 10000000}, {"rope_type", "default"}}; }

// Qwen3.5-9B's text_config (the Unsloth copy configs/hf/index.json cites), architectures as the recipe sets them.
json qwen35_9b_text() {
  return {{"architectures", {"Qwen3_5ForCausalLM"}}, {"attention_bias", false}, {"attention_dropout", 0.0}, {"attn_output_gate", true}, {"bos_token_id", nullptr}, {"torch_dtype", "bfloat16"}, {"eos_token_id", 248044}, {"full_attention_interval", 4}, {"head_dim", 256}, {"hidden_act", "silu"}, {"hidden_size", 4096}, {"initializer_range", 0.02}, {"intermediate_size", 12288}, {"layer_types", qwen35_layer_types(8)}, {"linear_conv_kernel_dim", 4}, {"linear_key_head_dim", 128}, {"linear_num_key_heads", 16}, {"linear_num_value_heads", 32}, {"linear_value_head_dim", 128}, {"mamba_ssm_dtype", "float32"}, {"max_position_embeddings", 262144}, {"mlp_only_layers", json::array()}, {"model_type", "qwen3_5_text"}, {"mtp_num_hidden_layers", 1}, {"mtp_use_dedicated_embeddings", false}, {"num_attention_heads", 16}, {"num_hidden_layers", 32}, {"num_key_value_heads", 4}, {"pad_token_id", nullptr}, {"partial_rotary_factor", 0.25}, {"rms_norm_eps", 1e-06}, {"rope_parameters", qwen35_rope()}, {"tie_word_embeddings", false}, {"use_cache", true}, {"vocab_size", 248320}};
}

// Qwen3.5-35B-A3B's text_config (as transformers 5.7.0 prints it, configs/hf/index.json).
json qwen35_35b_text() {
  return {{"architectures", {"Qwen3_5MoeForCausalLM"}}, {"attention_bias", false}, {"attention_dropout", 0.0}, {"attn_output_gate", true}, {"bos_token_id", nullptr}, {"dtype", "bfloat16"}, {"eos_token_id", 248044}, {"full_attention_interval", 4}, {"head_dim", 256}, {"hidden_act", "silu"}, {"hidden_size", 2048}, {"initializer_range", 0.02}, {"layer_types", qwen35_layer_types(10)}, {"linear_conv_kernel_dim", 4}, {"linear_key_head_dim", 128}, {"linear_num_key_heads", 16}, {"linear_num_value_heads", 32}, {"linear_value_head_dim", 128}, {"mamba_ssm_dtype", "float32"}, {"max_position_embeddings", 262144}, {"mlp_only_layers", json::array()}, {"model_type", "qwen3_5_moe_text"}, {"moe_intermediate_size", 512}, {"mtp_num_hidden_layers", 1}, {"mtp_use_dedicated_embeddings", false}, {"num_attention_heads", 16}, {"num_experts", 256}, {"num_experts_per_tok", 8}, {"num_hidden_layers", 40}, {"num_key_value_heads", 2}, {"output_router_logits", false}, {"pad_token_id", nullptr}, {"partial_rotary_factor", 0.25}, {"rms_norm_eps", 1e-06}, {"rope_parameters", qwen35_rope()}, {"router_aux_loss_coef", 0.001}, {"shared_expert_intermediate_size", 512}, {"tie_word_embeddings", false}, {"use_cache", true}, {"vocab_size", 248320}};
}

std::string write_config(const std::string& name, const json& config) {
  const auto dir = std::filesystem::temp_directory_path() / ("peakcast-exaone-qwen35-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / (name + ".json");
  std::ofstream(path) << config.dump();
  return path.string();
}

ParseResult mapped(const std::string& name, const json& config, std::int64_t seq = 4096) {
  const json doc = {{"model", {{"hf_config", write_config(name, config)}, {"seq_length", seq}}},
                    {"train", {{"micro_batch_size", 1}, {"global_batch_size", 8}}},
                    {"cluster", {{"num_gpus", 8}, {"gpu", "h100-sxm-80gb"}}}};
  auto r = parse_run_spec(doc.dump());
  for (const auto& d : r.diagnostics) UNSCOPED_INFO(format(d));
  return r;
}

bool refuses(const json& config, const std::string& rule, const std::string& key) {
  Diagnostics out;
  const bool mapped_ok = detail::map_hf_config(config, "config", out).has_value();
  for (const auto& d : out) UNSCOPED_INFO(format(d));
  return !mapped_ok && has_rule(out, rule, key);
}

// A GDN layer's Megatron parameters (in_proj with its fused norm packing q, k, v, z, beta, alpha; conv1d without
// bias; dt_bias, A_log; the [value head] out_norm; out_proj), an output-gated attention layer's (fused norm, the
// gated QKV, proj, the q/k norms over one head), per the HF shapes of the same layers.
std::int64_t gdn_layer(std::int64_t h, std::int64_t kh, std::int64_t vh, std::int64_t d) {
  const std::int64_t qk = kh * d, v = vh * d;
  return h + h * (2 * qk + 2 * v + 2 * vh) + (2 * qk + v) * 4 + 2 * vh + d + v * h;
}
std::int64_t gated_attention_layer(std::int64_t h, std::int64_t heads, std::int64_t groups, std::int64_t d) {
  return h + h * (2 * heads * d + 2 * groups * d) + heads * d * h + 2 * d;
}

}  // namespace

TEST_CASE("exaone 4: Exaone4ForCausalLM maps onto GPTModelProvider with EXAONE 4's layer spec", "[model][hf][exaone]") {
  const auto r = mapped("exaone-4.0-1.2b", exaone4_1p2b());
  REQUIRE(r.spec);
  const ModelSpec& m = r.spec->model;
  CHECK_FALSE(m.pre_linear_layernorm);                                 // TEColumnParallelLinear, exaone4_provider.py:78, :87
  CHECK(m.post_linear_layernorm);                                      // TERowParallelLinearLayerNorm, :80, :88
  CHECK(m.core_attention_module == CoreAttentionModule::dot_product);  // DotProductAttention, :79
  CHECK(m.qk_layernorm);                                               // exaone4_bridge.py:112
  CHECK(m.share_embeddings_and_output_weights);
  CHECK(m.num_query_groups == std::optional<std::int64_t>(8));
  CHECK(m.kv_channels == std::optional<std::int64_t>(64));
  CHECK_FALSE(has_errors(validate(*r.spec)));
  Diagnostics out;
  const auto fields = detail::map_hf_config(exaone4_1p2b(), "exaone-4.0-1.2b", out);
  REQUIRE(fields);
  CHECK(fields->fields.at("rope_scaling") == true);  // llama3 scaling, exaone4_bridge.py:120-122
  CHECK(fields->fields.at("rope_scaling_factor") == 16.0);
  CHECK(fields->fields.at("attention_dropout") == 0.0);
  // The bridge reads no attention pattern: a config with windows describes a model it does not build.
  json windowed = exaone4_1p2b();
  windowed["sliding_window"] = 4096;
  windowed["sliding_window_pattern"] = "LLLG";
  windowed["layer_types"][3] = "sliding_attention";
  CHECK(refuses(windowed, "hf_unmapped_shape_key", "sliding_window"));
  CHECK(refuses(windowed, "hf_unmapped_shape_key", "sliding_window_pattern"));
  CHECK(refuses(windowed, "hf_unmapped_shape_key", "layer_types"));
}

TEST_CASE("exaone 4: 1.2B carries the model card's 1.07B parameters without embeddings", "[model][params][hf][exaone]") {
  const auto r = mapped("exaone-4.0-1.2b", exaone4_1p2b());
  REQUIRE(r.spec);
  // Per layer: QKV (32 heads, 8 groups of 64), proj, the SwiGLU's three matrices, two post-norms and the two [64]
  // q/k norms; no input or pre-MLP norm (exaone4_bridge.py:174-219 maps none).
  const std::int64_t h = 2048, q = 32 * 64, kv = 8 * 64, f = 4096;
  const std::int64_t layer = h * (q + 2 * kv) + q * h + 3 * h * f + 2 * h + 2 * 64;
  const std::int64_t non_embedding = 30 * layer + h;  // + the final norm
  CHECK(std::llround(non_embedding / 1e7) == 107);    // "Number of Parameters (without embeddings): 1.07B"
  const Derived d = derive(*r.spec);
  CHECK(d.padded_vocab == 102400);                                    // HF's vocabulary kept (docs/hf-config-mapping.md 2.3)
  CHECK(total_parameters(*r.spec, d) == non_embedding + 102400 * h);  // tied: one [V, h] table
}

TEST_CASE("exaone 4: the layer spec's rules", "[validate][exaone]") {
  const std::vector<std::string> exaone = {"model.pre_linear_layernorm=false", "model.post_linear_layernorm=true",
                                           "model.core_attention_module=dot_product", "model.add_bias_linear=false"};
  check_rule_cases({
      {"dot_product_attention_packed_sequence", "train.packed_sequence", Severity::error, plus(exaone, {"train.packed_sequence=true"}), {"train.packed_sequence=true"}},
      {"context_parallel_needs_te_attention", "model.context_parallel_size", Severity::error, plus(exaone, {"model.context_parallel_size=2"}), {"model.context_parallel_size=2"}},
      {"exaone4_layer_spec_needs_te", "model.transformer_impl", Severity::error, plus(exaone, {"model.transformer_impl=local"}), exaone},
      {"pre_layernorm_dense_only", "model.pre_linear_layernorm", Severity::error, plus({"model.pre_linear_layernorm=false"}, kMoe), kMoe},
      {"dot_product_attention_dense_only", "model.core_attention_module", Severity::error,
       plus({"model.core_attention_module=dot_product"}, kMoe), kMoe},
      {"layernorm_recompute_without_norms", "model.recompute_modules", Severity::warning, plus(exaone, {"model.recompute_granularity=selective", "model.recompute_modules=[\"layernorm\"]"}), {"model.recompute_granularity=selective", "model.recompute_modules=[\"layernorm\"]"}},
  });
}

TEST_CASE("exaone: the Bridge recipes predict or name what they need", "[model][recipes][exaone]") {
  SECTION("EXAONE 4 pretraining takes len(tokenizer), which is not sourced; given it, the recipe validates") {
    const auto r = parse_spec_input("bridge:exaone4_1p2b_pretrain_1gpu_h100_bf16_config", "", {});
    CHECK(has_rule(r.diagnostics, "recipe_vocab_unknown"));
    const auto given = parse_spec_input("bridge:exaone4_1p2b_pretrain_1gpu_h100_bf16_config", "", {"model.vocab_size=102400"});
    for (const auto& d : given.diagnostics) UNSCOPED_INFO(format(d));
    REQUIRE(given.spec);
    CHECK(given.spec->model.core_attention_module == CoreAttentionModule::dot_product);
    CHECK(given.spec->train.micro_batch_size == 2);  // _pretrain_common
    CHECK_FALSE(has_errors(validate(*given.spec)));
  }
  SECTION("EXAONE 4 SFT and PEFT pack their sequences, which DotProductAttention asserts away") {
    for (const char* name : {"bridge:exaone4_1p2b_sft_1gpu_h100_bf16_config", "bridge:exaone4_1p2b_peft_1gpu_h100_bf16_config"}) {
      INFO(name);
      const auto r = parse_spec_input(name, "", {});
      REQUIRE(r.spec);
      CHECK(r.spec->train.packed_sequence);
      CHECK(has_rule(validate(*r.spec), "dot_product_attention_packed_sequence", "train.packed_sequence"));
    }
  }
  SECTION("EXAONE MoE stays refused, naming what its layer spec does that peakcast does not simulate") {
    const auto r = parse_spec_input("bridge:exaone_moe_236b_a23b_sft_64gpu_h100_bf16_config", "", {});
    REQUIRE(has_rule(r.diagnostics, "recipe_model_not_simulated"));
    for (const auto& d : r.diagnostics)
      if (d.rule == "recipe_model_not_simulated") {
        CHECK(d.message.find("SwiGLU limits") != std::string::npos);
        CHECK(d.message.find("dense MTP layer") != std::string::npos);
      }
  }
}

TEST_CASE("qwen3.5: the text bridges map the recipes' text_config onto the gated-delta-net GPT spec", "[model][hf][qwen35]") {
  const auto dense = mapped("qwen3.5-9b", qwen35_9b_text());
  REQUIRE(dense.spec);
  const ModelSpec& m = dense.spec->model;
  CHECK(m.experimental_attention_variant == std::optional<std::string>("gated_delta_net"));
  CHECK(m.attention_output_gate);
  CHECK(m.layernorm_zero_centered_gamma);
  CHECK_FALSE(m.num_moe_experts.has_value());  // Qwen35Bridge: a dense MLP in every layer
  CHECK(m.rotary_percent == 0.25);             // rope_parameters.partial_rotary_factor, qwen35_bridge.py:67
  CHECK(m.mtp_num_layers == 1);                // mtp_num_hidden_layers, the shared mapping
  Diagnostics out;
  const auto fields = detail::map_hf_config(qwen35_9b_text(), "qwen3.5-9b", out);
  REQUIRE(fields);
  CHECK(fields->fields.at("mtp_loss_scaling_factor") == 0.1);      // qwen35_bridge.py:76-77
  CHECK(fields->fields.at("rotary_base") == 10000000);             // rope_parameters.rope_theta
  CHECK(fields->fields.at("linear_attention_freq").size() == 32);  // layer_types as 1 / 0
  CHECK(fields->fields.at("linear_attention_freq")[3] == 0);
  const auto moe = mapped("qwen3.5-35b-a3b", qwen35_35b_text());
  REQUIRE(moe.spec);
  CHECK(moe.spec->model.num_moe_experts == std::optional<std::int64_t>(256));
  CHECK(moe.spec->model.moe_shared_expert_gate);
  CHECK(moe.spec->model.moe_shared_expert_intermediate_size == std::optional<std::int64_t>(512));
  // The bridges fix the gate and share the model's embedding with the MTP depth: other values are refused.
  json ungated = qwen35_9b_text();
  ungated["attn_output_gate"] = false;
  CHECK(refuses(ungated, "hf_unmapped_shape_key", "attn_output_gate"));
  json odd = qwen35_9b_text();
  odd["layer_types"][0] = "sliding_attention";
  CHECK(refuses(odd, "hf_value_out_of_range", "layer_types"));
}

TEST_CASE("qwen3.5: 9B's text model is the published count less its vision tower; 35B-A3B's from the shapes", "[model][params][hf][qwen35]") {
  const std::int64_t V = 248320;
  {
    const auto r = mapped("qwen3.5-9b", qwen35_9b_text());
    REQUIRE(r.spec);
    const std::int64_t h = 4096, f = 12288;
    const std::int64_t mlp = h + 3 * h * f;  // the fused pre-MLP norm and the SwiGLU
    const std::int64_t layers = 24 * (gdn_layer(h, 16, 32, 128) + mlp) + 8 * (gated_attention_layer(h, 16, 4, 256) + mlp);
    const std::int64_t text = layers + h + 2 * V * h;  // the final norm; untied embedding and output layer
    // The vision tower of its vision_config (27 blocks of 1152 with 4304-wide MLPs, patch 16 x 16 x 2, 2304 positions,
    // the 2 x 2 merger into 4096), with biases and LayerNorm weights and biases.
    const std::int64_t vh = 1152, block = (vh * 3 * vh + 3 * vh) + (vh * vh + vh) + (vh * 4304 + 4304) + (4304 * vh + vh) + 4 * vh;
    const std::int64_t vision = 27 * block + (3 * 2 * 16 * 16 * vh + vh) + 2304 * vh + 2 * vh + (4608 * 4608 + 4608) + (4608 * h + h);
    CHECK(text + vision == 9'409'813'744);  // fine-tunes of Qwen3.5-9B-Base (configs/hf/index.json)
    CHECK(total_parameters(*r.spec, derive(*r.spec), false) == text);
  }
  {
    const auto r = mapped("qwen3.5-35b-a3b", qwen35_35b_text());
    REQUIRE(r.spec);
    const std::int64_t h = 2048;
    const std::int64_t moe = h + 256 * h + 256 * 3 * h * 512 + 3 * h * 512 + h;  // norm, router, experts, shared expert, its gate
    const std::int64_t layers = 30 * (gdn_layer(h, 16, 32, 128) + moe) + 10 * (gated_attention_layer(h, 16, 2, 256) + moe);
    CHECK(total_parameters(*r.spec, derive(*r.spec), false) == layers + h + 2 * V * h);
  }
}

TEST_CASE("qwen3.5: the GB200 recipes take the nested text_config and len(tokenizer), and predict", "[model][recipes][qwen35]") {
  for (const char* name : {"bridge:qwen35_text_9b_pretrain_8gpu_gb200_bf16_config", "bridge:qwen35_text_35b_a3b_pretrain_8gpu_gb200_bf16_config"}) {
    INFO(name);
    const auto r = parse_spec_input(name, "", {});
    for (const auto& d : r.diagnostics) UNSCOPED_INFO(format(d));
    REQUIRE(r.spec);
    CHECK(r.spec->model.experimental_attention_variant == std::optional<std::string>("gated_delta_net"));
    CHECK(r.spec->model.vocab_size == 248077);  // len(tokenizer) (configs/tokenizers.json), padded at build
    CHECK(r.spec->model.should_pad_vocab);
    CHECK_FALSE(has_errors(validate(*r.spec)));
  }
}
