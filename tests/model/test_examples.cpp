// The run specs under examples/ are what the examples walk a user through: each must parse and pass
// Megatron's rules. The Qwen3-Next one must get Megatron's layer layout: GDN except every 4th layer.
#include <catch2/catch.hpp>

#include <string>

#include "../source_file.hpp"
#include "peakcast/model/layer_plan.hpp"
#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/validate.hpp"

using namespace peakcast;

TEST_CASE("the example run specs parse and validate", "[spec][examples]") {
  for (const char* path : {"examples/deepseek-v3-1024xh100.json", "examples/llama3-8b-tp2-pp2.json",
                           "examples/qwen3-next-80b-a3b-32xh100.json"}) {
    const std::string text = test::read_source_file(path);
    INFO(path);
    REQUIRE_FALSE(text.empty());
    const auto r = model::parse_run_spec(text);
    REQUIRE(r.spec);
    CHECK_FALSE(model::has_errors(model::validate(*r.spec)));
  }
}

TEST_CASE("Qwen3-Next example: 36 GDN layers and 12 gated attention layers, all MoE, one MTP depth",
          "[spec][examples][gdn]") {
  const auto r = model::parse_run_spec(test::read_source_file("examples/qwen3-next-80b-a3b-32xh100.json"));
  REQUIRE(r.spec);
  const auto plan = model::build_layer_plan(*r.spec, model::derive(*r.spec));
  int gdn = 0, attention = 0, moe = 0;
  for (const auto& l : plan.decoder_layers) {
    gdn += l.mixer == model::MixerKind::gdn ? 1 : 0;
    attention += l.mixer == model::MixerKind::attention ? 1 : 0;
    moe += l.ffn == model::FfnKind::moe ? 1 : 0;
  }
  CHECK(gdn == 36);
  CHECK(attention == 12);
  CHECK(moe == 48);
  CHECK(plan.decoder_layers[3].mixer == model::MixerKind::attention);
  CHECK(plan.stages.back().chunks.back().mtp_layers == 1);
}
