// Gemma 2 and Gemma 3 through Gemma2Bridge / Gemma3ModelBridge (docs/research/gemma-memory-facts.md):
// the Hugging Face mappings, the parameter totals against the published counts, the Gemma layer specs'
// refusals, and the Bridge recipes. The config.json texts are the public ones of google/gemma-2-2b, -9b,
// -27b and google/gemma-3-1b-pt (huggingface.co/<repo>/blob/main/config.json, transcribed in configs/hf/),
// written here so the test does not read the files it checks.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
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

struct Gemma2Size {
  std::int64_t hidden, heads, groups, head_dim, ffn, layers, scalar;
  std::int64_t published_non_embedding;  // Gemma 2 report (arXiv:2408.00118) Table 2
};
// 2B, 9B, 27B: hidden, heads, KV heads, head_dim, intermediate, layers, query_pre_attn_scalar.
constexpr Gemma2Size k2b{2304, 8, 4, 256, 9216, 26, 256, 2'024'517'888};
constexpr Gemma2Size k9b{3584, 16, 8, 256, 14336, 42, 256, 8'324'201'984};
constexpr Gemma2Size k27b{4608, 32, 16, 128, 36864, 46, 144, 26'047'480'320};

std::string gemma2_config(const Gemma2Size& s) {
  return json{{"architectures", {"Gemma2ForCausalLM"}}, {"attention_bias", false}, {"attention_dropout", 0.0}, {"attn_logit_softcapping", 50.0}, {"bos_token_id", 2}, {"cache_implementation", "hybrid"}, {"eos_token_id", 1}, {"final_logit_softcapping", 30.0}, {"head_dim", s.head_dim}, {"hidden_act", "gelu_pytorch_tanh"}, {"hidden_activation", "gelu_pytorch_tanh"}, {"hidden_size", s.hidden}, {"initializer_range", 0.02}, {"intermediate_size", s.ffn}, {"max_position_embeddings", 8192}, {"model_type", "gemma2"}, {"num_attention_heads", s.heads}, {"num_hidden_layers", s.layers}, {"num_key_value_heads", s.groups}, {"pad_token_id", 0}, {"query_pre_attn_scalar", s.scalar}, {"rms_norm_eps", 1e-06}, {"rope_theta", 10000.0}, {"sliding_window", 4096}, {"torch_dtype", "float32"}, {"transformers_version", "4.42.4"}, {"use_cache", true}, {"vocab_size", 256000}}
      .dump();
}

const char* kGemma3_1b = R"({"architectures": ["Gemma3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
"attn_logit_softcapping": null, "bos_token_id": 2, "cache_implementation": "hybrid", "eos_token_id": 1,
"final_logit_softcapping": null, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152,
"initializer_range": 0.02, "intermediate_size": 6912, "max_position_embeddings": 32768, "model_type": "gemma3_text",
"num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1, "pad_token_id": 0, "query_pre_attn_scalar": 256,
"rms_norm_eps": 1e-06, "rope_local_base_freq": 10000, "rope_scaling": null, "rope_theta": 1000000, "sliding_window": 512,
"sliding_window_pattern": 6, "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0", "use_cache": true,
"vocab_size": 262144})";

std::string write_config(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / ("peakcast-gemma-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / (name + ".json");
  std::ofstream(path) << text;
  return path.string();
}

ParseResult mapped(const std::string& name, const std::string& config) {
  const json doc = {{"model", {{"hf_config", write_config(name, config)}, {"seq_length", 4096}}},
                    {"train", {{"micro_batch_size", 1}, {"global_batch_size", 8}}},
                    {"cluster", {{"num_gpus", 1}, {"gpu", "h100-sxm-80gb"}}}};
  auto r = parse_run_spec(doc.dump());
  for (const auto& d : r.diagnostics) UNSCOPED_INFO(format(d));
  return r;
}

// A Gemma 2 layer as the Gemma 2 report counts it: q, k, v, o, the GeGLU's three matrices and four
// RMSNorm weights (input, post-attention, pre-MLP, post-MLP).
std::int64_t gemma2_layer(const Gemma2Size& s) {
  const std::int64_t q = s.heads * s.head_dim, kv = s.groups * s.head_dim;
  return s.hidden * (q + 2 * kv) + q * s.hidden + 3 * s.hidden * s.ffn + 4 * s.hidden;
}

}  // namespace

TEST_CASE("gemma 2: Gemma2ForCausalLM maps onto Gemma2ModelProvider and its layer spec", "[model][hf][gemma]") {
  const auto r = mapped("gemma-2-2b", gemma2_config(k2b));
  REQUIRE(r.spec);
  const ModelSpec& m = r.spec->model;
  CHECK(m.post_linear_layernorm);                                 // gemma2_layer_spec: TERowParallelLinearLayerNorm
  CHECK(m.core_attention_module == CoreAttentionModule::gemma2);  // Gemma2FlexDotProductAttention
  CHECK(m.scale_embeddings_by_hidden_size);                       // EmbeddingScalingMixin (provide())
  CHECK(m.final_logit_softcapping == 30.0);                       // read by Gemma2Bridge
  CHECK(m.activation_func_name == "fast_gelu");
  CHECK(m.gated_linear_unit);
  CHECK(m.share_embeddings_and_output_weights);
  CHECK(m.layernorm_zero_centered_gamma);
  CHECK(m.attention_dropout == 0.0);
  CHECK(r.origins.at("model.window_size").value == "[4095,0]");  // (sliding_window - 1, 0), gemma2_bridge.py:55
  Diagnostics out;
  const auto fields = detail::map_hf_config(json::parse(gemma2_config(k27b)), "gemma-2-27b", out);
  REQUIRE(fields);
  CHECK(fields->fields.at("query_pre_attn_scalar") == 144);  // gemma2_bridge.py:52-54
  CHECK(fields->fields.at("attn_logit_softcapping") == 50.0);
  CHECK(fields->provider_class == "megatron.bridge.models.gemma.gemma2_provider.Gemma2ModelProvider");
}

TEST_CASE("gemma 2: 2B, 9B and 27B carry the Gemma 2 report's non-embedding parameters", "[model][params][hf][gemma]") {
  for (const auto& [name, s] : {std::pair{"2b", k2b}, std::pair{"9b", k9b}, std::pair{"27b", k27b}}) {
    INFO(name);
    CHECK(s.layers * gemma2_layer(s) + s.hidden == s.published_non_embedding);  // the architecture, + the final norm
    const auto r = mapped(std::string("gemma-2-") + name, gemma2_config(s));
    REQUIRE(r.spec);
    const Derived d = derive(*r.spec);
    CHECK(d.padded_vocab == 256000);  // 256000 is a multiple of 128: no padding rows
    // Tied embeddings: one [V, h] table for the embedding and the output layer.
    CHECK(total_parameters(*r.spec, d) - d.padded_vocab * s.hidden == s.published_non_embedding);
  }
}

TEST_CASE("gemma 3: Gemma3ForCausalLM maps onto Gemma3ModelProvider; 1B carries 302M + 698M parameters", "[model][params][hf][gemma]") {
  const auto r = mapped("gemma-3-1b-pt", kGemma3_1b);
  REQUIRE(r.spec);
  const ModelSpec& m = r.spec->model;
  CHECK(m.post_linear_layernorm);
  CHECK(m.core_attention_module == CoreAttentionModule::gemma3);
  CHECK(m.scale_embeddings_by_hidden_size);
  CHECK(m.qk_layernorm);  // Gemma3ModelProvider's default (gemma3_provider.py:71)
  CHECK_FALSE(m.final_logit_softcapping.has_value());
  CHECK(m.window_size_is_int);  // window_size = sliding_window (gemma3_bridge.py:66)
  CHECK(r.origins.at("model.window_size").value == "512");
  Diagnostics out;
  const auto fields = detail::map_hf_config(json::parse(kGemma3_1b), "gemma-3-1b-pt", out);
  REQUIRE(fields);
  CHECK(fields->fields.at("rotary_base") == json::array({10000, 1000000}));  // (local, global), gemma3_bridge.py:67-70
  CHECK(fields->fields.at("softmax_scale").get<double>() == 1.0 / 16.0);     // 1/sqrt(256), :71
  // The bridge reads neither soft-cap nor the layer pattern: a config that sets them is refused.
  json capped = json::parse(kGemma3_1b);
  capped["final_logit_softcapping"] = 30.0;
  capped["sliding_window_pattern"] = 4;
  Diagnostics refused;
  CHECK_FALSE(detail::map_hf_config(capped, "capped", refused));
  CHECK(has_rule(refused, "hf_unmapped_shape_key", "final_logit_softcapping"));
  CHECK(has_rule(refused, "hf_unmapped_shape_key", "sliding_window_pattern"));
  REQUIRE(m.interleaved_attn_pattern);
  CHECK(*m.interleaved_attn_pattern == std::vector<std::int64_t>{5, 1});
  CHECK_FALSE(has_errors(validate(*r.spec)));
  // Gemma 3 report (arXiv:2503.19786) Table 1: 1B = 302M embedding + 698M non-embedding parameters. Per
  // layer: q (4 heads x 256), k and v (one group), o, the GeGLU, four norms and the two [256] q/k norms.
  const std::int64_t h = 1152, layer = h * (1024 + 2 * 256) + 1024 * h + 3 * h * 6912 + 4 * h + 2 * 256;
  const std::int64_t non_embedding = 26 * layer + h, embedding = 262144 * h;
  CHECK(std::llabs(non_embedding - 698'000'000) < 500'000);
  CHECK(std::llabs(embedding - 302'000'000) < 500'000);
  const Derived d = derive(*r.spec);
  CHECK(total_parameters(*r.spec, d) == embedding + non_embedding);
}

TEST_CASE("gemma: the Gemma layer specs' refusals", "[validate][gemma]") {
  const std::vector<std::string> gemma2 = {"model.core_attention_module=gemma2", "model.post_linear_layernorm=true", "model.add_bias_linear=false"};
  const std::vector<std::string> gemma3 = {"model.core_attention_module=gemma3", "model.post_linear_layernorm=true", "model.add_bias_linear=false",
                                           "model.interleaved_attn_pattern=[5,1]", "model.window_size=512"};
  check_rule_cases({
      {"gemma2_attention_context_parallel", "model.context_parallel_size", Severity::error, plus(gemma2, {"model.context_parallel_size=2"}),
       plus(gemma2, {"model.context_parallel_size=2", "model.attention_backend=local"})},
      {"gemma2_attention_packed_sequence", "train.packed_sequence", Severity::error, plus(gemma2, {"train.packed_sequence=true"}),
       plus(gemma3, {"train.packed_sequence=true"})},
      {"gemma2_unfused_attention_not_simulated", "model.attention_dropout", Severity::error, plus(gemma2, {"model.attention_dropout=0.1"}),
       gemma2},
      {"gemma_layer_spec_needs_te", "model.transformer_impl", Severity::error, plus(gemma2, {"model.transformer_impl=local"}), gemma2},
      {"post_layernorm_linear_bias", "model.add_bias_linear", Severity::error, plus(gemma2, {"model.add_bias_linear=true"}), {"model.add_bias_linear=true"}},
      {"post_layernorm_dense_only", "model.post_linear_layernorm", Severity::error, plus(gemma2, kMoe),
       kMoe},
      {"window_size_int", "model.window_size", Severity::error, {"model.window_size=512"}, {"model.window_size=[511,0]"}},
      {"gemma3_window_size_int", "model.window_size", Severity::error, plus(gemma3, {"model.window_size=[511,0]"}), gemma3},
      {"gemma3_attn_pattern", "model.interleaved_attn_pattern", Severity::error, plus(gemma3, {"model.interleaved_attn_pattern=[0,0]"}),
       plus(gemma3, {"model.interleaved_attn_pattern=[0,1]", "model.window_size=null"})},
      {"gemma3_vision_language_not_simulated", "model.is_vision_language", Severity::error, plus(gemma3, {"model.is_vision_language=true"}),
       gemma3},
  });
}

TEST_CASE("gemma: the Bridge recipes predict or name what they need", "[model][recipes][gemma]") {
  SECTION("Gemma 2 pretraining takes len(tokenizer) of google/gemma-2-2b (configs/tokenizers.json), and predicts") {
    const auto r = parse_spec_input("bridge:gemma2_2b_pretrain_2gpu_h100_bf16_config", "", {});
    for (const auto& d : r.diagnostics) UNSCOPED_INFO(format(d));
    REQUIRE(r.spec);
    CHECK_FALSE(has_errors(validate(*r.spec)));
    CHECK(r.spec->model.tensor_model_parallel_size == 2);  // recipes/gemma/h100/gemma2.py:48
    CHECK(r.spec->train.micro_batch_size == 2);            // _pretrain_common
    CHECK(r.spec->model.core_attention_module == CoreAttentionModule::gemma2);
    CHECK(r.spec->model.should_pad_vocab);  // setup() pads the tokenizer's vocabulary
  }
  SECTION("Gemma 2 SFT packs its sequences, which Gemma 2's attention refuses") {
    const auto r = parse_spec_input("bridge:gemma2_2b_sft_1gpu_h100_bf16_config", "", {});
    REQUIRE(r.spec);
    CHECK(r.spec->train.packed_sequence);  // _sft_common's offline packing, recipes/common.py:163-165
    CHECK(has_rule(validate(*r.spec), "gemma2_attention_packed_sequence", "train.packed_sequence"));
  }
  SECTION("Gemma 3 SFT grows its vocabulary to the tokenizer's, and predicts") {
    const auto r = parse_spec_input("bridge:gemma3_1b_sft_1gpu_h100_bf16_config", "", {});
    REQUIRE(r.spec);
    CHECK_FALSE(has_errors(validate(*r.spec)));
    CHECK(r.spec->model.core_attention_module == CoreAttentionModule::gemma3);
    CHECK(r.origins.at("model.vocab_size").source.find("gemma3.py:157") != std::string::npos);  // _adjust_gemma3_vocab_size
    // A user's vocabulary replaces the tokenizer's.
    const auto given = parse_spec_input("bridge:gemma3_1b_sft_1gpu_h100_bf16_config", "", {"model.vocab_size=262144"});
    REQUIRE(given.spec);
    CHECK(given.spec->model.vocab_size == 262144);
  }
  SECTION("Gemma 3 pretraining takes the NullTokenizer's 32000 and needs nothing") {
    const auto r = parse_spec_input("bridge:gemma3_1b_pretrain_1gpu_h100_bf16_config", "", {});
    REQUIRE(r.spec);
    CHECK(r.spec->model.vocab_size == 32000);
    CHECK(r.spec->model.seq_length == 32768);  // recipes/gemma/h100/gemma3.py:66
    CHECK_FALSE(has_errors(validate(*r.spec)));
  }
  SECTION("Gemma 4 stays refused, naming its per-layer embeddings and shared K/V") {
    const auto r = parse_spec_input("bridge:gemma4_e4b_pretrain_2gpu_h100_bf16_config", "", {});
    REQUIRE(has_rule(r.diagnostics, "recipe_model_not_simulated"));
    for (const auto& d : r.diagnostics)
      if (d.rule == "recipe_model_not_simulated") CHECK(d.message.find("per-layer embeddings") != std::string::npos);
  }
}
