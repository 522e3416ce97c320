// parse_run_spec: keys, types, paths, presets, --set, and the shipped run specs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

#include "peakcast/model/embedded_configs.hpp"
#include "peakcast/model/spec_parser.hpp"

using namespace peakcast::model;

namespace {

// A small valid spec without presets, so these tests do not depend on configs/models. `model_extra`
// (model keys) and `rest` (more sections) are JSON fragments that replace the base keys they name.
std::string tiny_spec(const std::string& model_extra = "", const std::string& rest = "") {
  nlohmann::json doc = nlohmann::json::parse(R"({
    "model": {"num_layers": 4, "hidden_size": 256, "num_attention_heads": 8, "vocab_size": 1000, "seq_length": 128},
    "train": {"micro_batch_size": 1, "global_batch_size": 2},
    "cluster": {"num_gpus": 2, "gpu": {"name": "test-gpu", "memory_bytes": 80000000000}}})");
  if (!model_extra.empty()) {
    const auto extra = nlohmann::json::parse("{" + model_extra + "}");  // named: items() must not outlive it
    for (const auto& [k, v] : extra.items()) doc["model"][k] = v;
  }
  if (!rest.empty()) {
    const auto sections = nlohmann::json::parse("{" + rest + "}");
    for (const auto& [k, v] : sections.items()) doc[k] = v;
  }
  return doc.dump();
}

const Diagnostic* find_diag(const ParseResult& r, const std::string& path, const std::string& rule = "") {
  for (const auto& d : r.diagnostics) {
    if (d.path == path && (rule.empty() || d.rule == rule)) return &d;
  }
  return nullptr;
}

std::string dump(const ParseResult& r) {
  std::string s;
  for (const auto& d : r.diagnostics) s += format(d) + "\n";
  return s;
}

}  // namespace

TEST_CASE("a minimal spec parses and keeps the pinned defaults for keys left out", "[spec]") {
  const auto r = parse_run_spec(tiny_spec());
  INFO(dump(r));
  REQUIRE(r.spec.has_value());
  CHECK(r.spec->model.num_layers == 4);
  CHECK(r.spec->model.tensor_model_parallel_size == 1);
  CHECK(r.spec->model.recompute_granularity == RecomputeGranularity::none);
  CHECK(r.spec->model.normalization == Normalization::layer_norm);
  CHECK(r.spec->cluster.gpu.memory_bytes.value == 80000000000);
  CHECK(r.spec->model.max_position_embeddings == 128);
}

TEST_CASE("unknown keys are errors with a did-you-mean", "[spec]") {
  SECTION("misspelt key in its own section") {
    const auto r = parse_run_spec(tiny_spec(R"("num_layer": 3)"));
    const auto* d = find_diag(r, "model.num_layer", "unknown_key");
    REQUIRE(d != nullptr);
    CHECK(d->message.find("model.num_layers") != std::string::npos);
    CHECK_FALSE(r.spec.has_value());
  }
  SECTION("key of another section") {
    const auto r = parse_run_spec(tiny_spec(R"("micro_batch_size": 2)"));
    const auto* d = find_diag(r, "model.micro_batch_size", "unknown_key");
    REQUIRE(d != nullptr);
    CHECK(d->message.find("train.micro_batch_size") != std::string::npos);
  }
  SECTION("misspelt section") {
    const auto r = parse_run_spec(R"({"modle": {}})");
    const auto* d = find_diag(r, "modle", "unknown_key");
    REQUIRE(d != nullptr);
    CHECK(d->message.find("model") != std::string::npos);
  }
  SECTION("nothing close") {
    const auto r = parse_run_spec(tiny_spec(R"("zzzzzzzzzzzzzzzzzzzzzz": 1)"));
    const auto* d = find_diag(r, "model.zzzzzzzzzzzzzzzzzzzzzz", "unknown_key");
    REQUIRE(d != nullptr);
    CHECK(d->message.find("did you mean") == std::string::npos);
  }
}

TEST_CASE("every pinned dataclass field is accepted, also those that do not change memory", "[spec]") {
  const auto r = parse_run_spec(tiny_spec(
      R"("init_method_std": 0.02, "layernorm_epsilon": 1e-6, "rotary_base": 500000, "apply_rope_fusion": true,
         "activation_func": "silu", "params_dtype": "torch.bfloat16", "init_method": "my.init", "timers": null,
         "moe_router_load_balancing_type": "seq_aux_loss", "hf_model_id": "meta-llama/x", "mamba_chunk_size": 128)",
      R"("optimizer": {"lr": 3e-4, "adam_beta2": 0.95, "clip_grad": 1.0, "params_dtype": "bf16"},
         "ddp": {"bucket_size": 40000000, "average_in_collective": true, "data_parallel_sharding_strategy": "no_shard"})"));
  INFO(dump(r));
  CHECK(r.spec.has_value());
}

TEST_CASE("wrong JSON types name the key and what was expected", "[spec]") {
  SECTION("string where an integer belongs") {
    const auto r = parse_run_spec(tiny_spec(R"("tensor_model_parallel_size": "2")"));
    const auto* d = find_diag(r, "model.tensor_model_parallel_size", "wrong_type");
    REQUIRE(d != nullptr);
    CHECK(d->message.find("an integer") != std::string::npos);
  }
  SECTION("bool where an integer belongs") {
    CHECK(find_diag(parse_run_spec(tiny_spec(R"("hidden_size": true)")), "model.hidden_size", "wrong_type"));
  }
  SECTION("float where an integer belongs") {
    CHECK(find_diag(parse_run_spec(tiny_spec(R"("hidden_size": 256.5)")), "model.hidden_size", "wrong_type"));
  }
  SECTION("null where a number belongs") {
    CHECK(find_diag(parse_run_spec(tiny_spec(R"("hidden_size": null)")), "model.hidden_size", "wrong_type"));
  }
  SECTION("integer where a bool belongs") {
    CHECK(find_diag(parse_run_spec(tiny_spec(R"("sequence_parallel": 1)")), "model.sequence_parallel", "wrong_type"));
  }
  SECTION("string where a list belongs") {
    CHECK(find_diag(parse_run_spec(tiny_spec(R"("recompute_modules": "core_attn")")), "model.recompute_modules", "wrong_type"));
  }
  SECTION("nested path inside a list") {
    const auto r = parse_run_spec(tiny_spec(R"("recompute_granularity": "selective", "recompute_modules": ["core_attn", 7])"));
    CHECK(find_diag(r, "model.recompute_modules[1]", "wrong_type"));
  }
  SECTION("integer beyond int64") {
    std::string text = tiny_spec();
    text.replace(text.find("\"hidden_size\":256"), 17, "\"hidden_size\":99999999999999999999");
    const auto r = parse_run_spec(text);
    CHECK(find_diag(r, "model.hidden_size"));
  }
  SECTION("number beyond double") {
    std::string text = tiny_spec();
    text.replace(text.find("\"hidden_size\":256"), 17, "\"hidden_dropout\":1e400");
    const auto r = parse_run_spec(text);
    INFO(dump(r));
    CHECK_FALSE(r.spec.has_value());
    CHECK(find_diag(r, "model.hidden_dropout"));
  }
  SECTION("enum value with a did-you-mean") {
    const auto r = parse_run_spec(tiny_spec(R"("recompute_granularity": "selectve")"));
    const auto* d = find_diag(r, "model.recompute_granularity", "wrong_type");
    REQUIRE(d != nullptr);
    CHECK(d->message.find("selective") != std::string::npos);
  }
  SECTION("section that is not an object") {
    CHECK(find_diag(parse_run_spec(R"({"model": [1, 2]})"), "model", "wrong_type"));
  }
}

TEST_CASE("unknown recompute tags are rule 11 under selective, warnings otherwise", "[spec]") {
  const auto bad = parse_run_spec(tiny_spec(R"("recompute_granularity": "selective", "recompute_modules": ["core_attn", "mhc"])"));
  const auto* d = find_diag(bad, "model.recompute_modules[1]", "recompute_module_unknown");
  REQUIRE(d != nullptr);
  CHECK(d->severity == Severity::error);
  const auto ignored = parse_run_spec(tiny_spec(R"("recompute_modules": ["mhc"])"));
  const auto* w = find_diag(ignored, "model.recompute_modules[0]", "recompute_module_unknown");
  REQUIRE(w != nullptr);
  CHECK(w->severity == Severity::warning);
  CHECK(ignored.spec.has_value());
}

TEST_CASE("malformed documents are diagnostics, never crashes", "[spec][hostile]") {
  for (const char* text : {"", "   ", "not json", "[1,2,3]", "42", "\"str\"", "null", "{", "{\"model\": }",
                           "{\"model\": {\"num_layers\": 1,}}", "\xff\xfe\x00garbage", "{\"a\":1,\"a\":2}"}) {
    const auto r = parse_run_spec(std::string(text));
    INFO(text);
    CHECK_FALSE(r.spec.has_value());
    CHECK(has_errors(r.diagnostics));
  }
  SECTION("deep nesting") {
    const std::string deep = std::string(100000, '[') + std::string(100000, ']');
    const auto r = parse_run_spec(deep);
    CHECK(has_errors(r.diagnostics));
    const std::string deep_model = "{\"model\": {\"recompute_modules\": " + std::string(5000, '[') + std::string(5000, ']') + "}}";
    CHECK(has_errors(parse_run_spec(deep_model).diagnostics));
  }
  SECTION("megabytes of garbage") {
    std::string junk(10u << 20, 'x');
    for (std::size_t i = 0; i < junk.size(); i += 7) junk[i] = static_cast<char>(i % 251);
    CHECK(has_errors(parse_run_spec(junk).diagnostics));
  }
  SECTION("duplicate keys name the path") {
    const auto r = parse_run_spec(R"({"model": {"num_layers": 1, "num_layers": 2}})");
    CHECK(find_diag(r, "model.num_layers", "duplicate_key"));
  }
}

TEST_CASE("set overrides (--set) keys with JSON values", "[spec][set]") {
  SECTION("integer") {
    const auto r = parse_run_spec(tiny_spec(), {"model.seq_length=8192"});
    REQUIRE(r.spec.has_value());
    CHECK(r.spec->model.seq_length == 8192);
  }
  SECTION("list") {
    const auto r = parse_run_spec(tiny_spec(), {"model.recompute_granularity=selective", R"(model.recompute_modules=["mlp","core_attn"])"});
    INFO(dump(r));
    REQUIRE(r.spec.has_value());
    REQUIRE(r.spec->model.recompute_modules.has_value());
    CHECK(r.spec->model.recompute_modules->size() == 2);
  }
  SECTION("bare string only for string fields") {
    CHECK(parse_run_spec(tiny_spec(), {"model.recompute_granularity=full", "model.recompute_method=uniform",
                                       "model.recompute_num_layers=1"})
              .spec.has_value());
    const auto r = parse_run_spec(tiny_spec(), {"model.hidden_size=abc"});
    CHECK(find_diag(r, "model.hidden_size", "set_syntax"));
  }
  SECTION("unknown key") {
    const auto r = parse_run_spec(tiny_spec(), {"model.seq_lenght=1"});
    const auto* d = find_diag(r, "model.seq_lenght", "unknown_key");
    REQUIRE(d != nullptr);
    CHECK(d->message.find("model.seq_length") != std::string::npos);
  }
  SECTION("wrong section suggests the right one") {
    const auto r = parse_run_spec(tiny_spec(), {"model.global_batch_size=8"});
    const auto* d = find_diag(r, "model.global_batch_size", "unknown_key");
    REQUIRE(d != nullptr);
    CHECK(d->message.find("train.global_batch_size") != std::string::npos);
  }
  SECTION("no equals sign") {
    CHECK(find_diag(parse_run_spec(tiny_spec(), {"model.seq_length"}), "--set", "set_syntax"));
  }
  SECTION("type errors after override name the key") {
    CHECK(find_diag(parse_run_spec(tiny_spec(), {"model.seq_length=\"long\""}), "model.seq_length", "wrong_type"));
  }
  SECTION("gpu memory on a named gpu") {
    const auto r = parse_run_spec(tiny_spec(), {"cluster.gpu.memory_bytes=1000"});
    REQUIRE(r.spec.has_value());
    CHECK(r.spec->cluster.gpu.memory_bytes.value == 1000);
  }
}

TEST_CASE("hybrid_layer_pattern is Bridge's name for hybrid_override_pattern", "[spec]") {
  const auto r = parse_run_spec(tiny_spec(R"("hybrid_layer_pattern": "M*MEE")"));
  INFO(dump(r));
  CHECK(find_diag(r, "model.num_layers", "num_layers_vs_hybrid_pattern"));
  const auto ok = parse_run_spec(tiny_spec(R"("hybrid_layer_pattern": "M*-E")"));
  REQUIRE(ok.spec.has_value());
  CHECK(ok.spec->model.hybrid_override_pattern == std::optional<std::string>("M*-E"));
  const auto both = parse_run_spec(tiny_spec(R"("hybrid_layer_pattern": "M*-E", "hybrid_override_pattern": "M*-E")"));
  CHECK(find_diag(both, "model.hybrid_override_pattern", "hybrid_pattern_twice"));
}

TEST_CASE("ddp.fp8_param_gather keeps parameters in FP8 like model.fp8_param", "[spec]") {
  const auto r = parse_run_spec(tiny_spec(R"("fp8": "hybrid")", R"("ddp": {"fp8_param_gather": true})"));
  REQUIRE(r.spec.has_value());
  CHECK(r.spec->model.fp8_param);
}

TEST_CASE("model presets load and the file's keys override them", "[spec][preset]") {
  if (!embedded_config("models/moonlight-16b.json")) return;
  const auto r = parse_run_spec(tiny_spec(R"("preset": "moonlight-16b", "moe_router_score_function": "sigmoid")"));
  INFO(dump(r));
  REQUIRE(r.spec.has_value());
  CHECK(r.spec->model.hidden_size == 256);  // the file wins
  CHECK(r.spec->model.num_moe_experts == std::optional<std::int64_t>(64));
  CHECK(r.spec->model.multi_latent_attention);  // the preset fills the rest
  CHECK(r.spec->model.preset == std::optional<std::string>("moonlight-16b"));
  const auto bad = parse_run_spec(tiny_spec(R"("preset": "moonlite-16b")"));
  const auto* d = find_diag(bad, "model.preset", "unknown_preset");
  REQUIRE(d != nullptr);
  CHECK(d->message.find("moonlight-16b") != std::string::npos);
}

TEST_CASE("the shipped run specs parse", "[spec][runs]") {
  for (const auto& path : embedded_config_paths("runs/")) {
    const auto text = embedded_config(path);
    REQUIRE(text.has_value());
    const auto r = parse_run_spec(*text);
    INFO(path << "\n"
              << dump(r));
    if (!embedded_config("gpus/h100-sxm-80gb.json")) continue;  // GPU presets land separately
    CHECK(r.spec.has_value());
  }
  CHECK(default_run_spec_text().find("moonlight-16b") != std::string_view::npos);
}

TEST_CASE("a pipeline layout without a VPP size sets it, as Megatron does", "[spec]") {
  // Four stages over PP 2: two virtual stages per rank (transformer_config.py:2006-2007).
  const auto r = parse_run_spec(tiny_spec(), {"model.num_layers=8", "model.pipeline_model_parallel_size=2",
                                              "model.pipeline_model_parallel_layout=Ett|tt|tt|ttL"});
  INFO(dump(r));
  REQUIRE(r.spec.has_value());
  CHECK(r.spec->model.virtual_pipeline_model_parallel_size == 2);
  // Two stages over PP 2: no virtual stages, the size stays unset.
  const auto one = parse_run_spec(tiny_spec(), {"model.num_layers=8", "model.pipeline_model_parallel_size=2",
                                                "model.pipeline_model_parallel_layout=Etttt|ttttL"});
  REQUIRE(one.spec.has_value());
  CHECK_FALSE(one.spec->model.virtual_pipeline_model_parallel_size.has_value());
}
