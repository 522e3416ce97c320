// Every shipped model preset parses, and its parameter count matches the public total it states:
// trainable parameters (without MTP), plus the fp32 expert-bias buffers where the public figure
// counts the checkpoint's tensors (Moonlight, Nemotron).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "peakcast/model/embedded_configs.hpp"
#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/static_memory.hpp"
#include "test_params_models.hpp"

using namespace peakcast::model;

namespace {

std::optional<RunSpec> parse_preset(const std::string& name) {
  const std::string text = R"({"model": {"preset": ")" + name + R"(", "bf16": true}, "cluster": {"num_gpus": 1, "gpu": "h100-sxm-80gb"}})";
  ParseResult r = parse_run_spec(text);
  for (const auto& diag : r.diagnostics) UNSCOPED_INFO(format(diag));
  return r.spec;
}

}  // namespace

TEST_CASE("Shipped model presets reproduce their public parameter counts", "[model][params][presets]") {
  const auto paths = embedded_config_paths("models/");
  REQUIRE(paths.size() >= 6);
  for (const auto& path : paths) {
    const std::string name = path.substr(7, path.size() - 7 - 5);  // "models/<name>.json"
    INFO("preset " << name);
    const auto doc = nlohmann::json::parse(*embedded_config(path));
    REQUIRE(doc.contains("public_parameter_count"));
    const auto spec = parse_preset(name);
    REQUIRE(spec.has_value());
    const Derived d = derive(*spec);
    const std::int64_t params = total_parameters(*spec, d, false);
    const std::int64_t with_buffers = params + total_checkpointed_buffers(*spec, d, false);
    const auto expected = doc["public_parameter_count"].get<std::int64_t>();
    CHECK((params == expected || with_buffers == expected));
  }
}

TEST_CASE("Presets parse to the same architecture as the hand-built test models", "[model][params][presets]") {
  struct Case {
    const char* name;
    RunSpec built;
  };
  const Case cases[] = {{"llama3-70b", peakcast::test_models::llama3_70b()},
                        {"moonlight-16b", peakcast::test_models::moonlight_16b()},
                        {"deepseek-v3", peakcast::test_models::deepseek_v3()},
                        {"nemotron-3-nano-30b-a3b", peakcast::test_models::nemotron3_nano()},
                        {"qwen3-30b-a3b", peakcast::test_models::qwen3_30b_a3b()}};
  for (const auto& c : cases) {
    INFO("preset " << c.name);
    const auto spec = parse_preset(c.name);
    REQUIRE(spec.has_value());
    CHECK(total_parameters(*spec, derive(*spec), true) == total_parameters(c.built, derive(c.built), true));
  }
}
