// Layer plan: layer kinds, pipeline splits (even, uneven, embedding/loss accounting, VPP, layout
// strings, hybrid '|'), MTP placement.
#include <catch2/catch.hpp>

#include "peakcast/model/layer_plan.hpp"
#include "test_params_models.hpp"

using namespace peakcast::model;

namespace {

RunSpec tiny_gpt(std::int64_t layers) {
  RunSpec s;
  peakcast::test_models::small_sizes(s.model, layers, 64, 128, 2, 32, 512);
  s.model.normalization = Normalization::rms_norm;
  s.model.bf16 = true;
  return s;
}

std::vector<std::int64_t> indices(const ModelChunk& c) {
  std::vector<std::int64_t> out;
  for (const auto& l : c.layers) out.push_back(l.index);
  return out;
}

LayerPlan plan_of(RunSpec& s) { return build_layer_plan(s, derive(s)); }

}  // namespace

TEST_CASE("moe_layer_freq picks MoE layers; MTP copies the last layer's kind", "[model][layer_plan]") {
  auto s = peakcast::test_models::deepseek_v3();
  const auto plan = plan_of(s);
  REQUIRE(plan.decoder_layers.size() == 61);
  CHECK(plan.decoder_layers[2].ffn == FfnKind::dense);
  CHECK(plan.decoder_layers[3].ffn == FfnKind::moe);
  CHECK(plan.decoder_layers[0].mixer == MixerKind::mla);
  const auto& last = plan.stages.back().chunks.back();
  CHECK(last.mtp_layers == 1);
  REQUIRE(last.layers.back().is_mtp);
  CHECK(last.layers.back().ffn == FfnKind::moe);
  CHECK(last.layers.back().index == 61);

  auto q = tiny_gpt(4);
  q.model.num_moe_experts = 4;
  q.model.moe_layer_freq = std::int64_t{2};  // i % 2 == 0 is MoE
  const auto p2 = plan_of(q);
  CHECK(p2.decoder_layers[0].ffn == FfnKind::moe);
  CHECK(p2.decoder_layers[1].ffn == FfnKind::dense);
  CHECK(p2.decoder_layers[2].ffn == FfnKind::moe);
}

TEST_CASE("Even PP split puts the embedding first and the head last", "[model][layer_plan]") {
  auto s = tiny_gpt(8);
  s.model.pipeline_model_parallel_size = 4;
  s.cluster.num_gpus = 4;
  const auto plan = plan_of(s);
  REQUIRE(plan.stages.size() == 4);
  CHECK(indices(plan.stages[0].chunks[0]) == std::vector<std::int64_t>{0, 1});
  CHECK(indices(plan.stages[3].chunks[0]) == std::vector<std::int64_t>{6, 7});
  CHECK(plan.stages[0].chunks[0].has_embedding);
  CHECK_FALSE(plan.stages[3].chunks[0].has_embedding);
  CHECK(plan.stages[3].chunks[0].has_output_layer);
  CHECK(plan.stages[3].chunks[0].has_final_norm);
  CHECK_FALSE(plan.stages[0].chunks[0].has_final_norm);
}

TEST_CASE("VPP: chunk v of rank r holds slice v*PP + r", "[model][layer_plan]") {
  auto s = tiny_gpt(8);
  s.model.pipeline_model_parallel_size = 2;
  s.model.virtual_pipeline_model_parallel_size = 2;
  s.cluster.num_gpus = 2;
  const auto plan = plan_of(s);
  // 8 layers / (2 ranks * 2 chunks) = 2 per chunk: slices 0..3 in order r0v0, r1v0, r0v1, r1v1.
  CHECK(indices(plan.stages[0].chunks[0]) == std::vector<std::int64_t>{0, 1});
  CHECK(indices(plan.stages[1].chunks[0]) == std::vector<std::int64_t>{2, 3});
  CHECK(indices(plan.stages[0].chunks[1]) == std::vector<std::int64_t>{4, 5});
  CHECK(indices(plan.stages[1].chunks[1]) == std::vector<std::int64_t>{6, 7});
  CHECK(plan.stages[0].chunks[0].has_embedding);
  CHECK_FALSE(plan.stages[0].chunks[1].has_embedding);
  CHECK(plan.stages[1].chunks[1].has_output_layer);
  CHECK_FALSE(plan.stages[1].chunks[0].has_output_layer);
}

TEST_CASE("Uneven first/last stages and embedding/loss accounting", "[model][layer_plan]") {
  auto s = tiny_gpt(6);
  s.model.pipeline_model_parallel_size = 3;
  s.cluster.num_gpus = 3;
  s.model.num_layers_in_first_pipeline_stage = 1;
  s.model.num_layers_in_last_pipeline_stage = 1;
  auto plan = plan_of(s);
  CHECK(indices(plan.stages[0].chunks[0]) == std::vector<std::int64_t>{0});
  CHECK(indices(plan.stages[1].chunks[0]) == std::vector<std::int64_t>{1, 2, 3, 4});
  CHECK(indices(plan.stages[2].chunks[0]) == std::vector<std::int64_t>{5});

  auto a = tiny_gpt(6);
  a.model.pipeline_model_parallel_size = 4;
  a.cluster.num_gpus = 4;
  a.model.account_for_embedding_in_pipeline_split = true;
  a.model.account_for_loss_in_pipeline_split = true;
  plan = plan_of(a);
  // (6 + 2) / 4 = 2 slots per rank; the embedding and loss take one slot each.
  CHECK(indices(plan.stages[0].chunks[0]) == std::vector<std::int64_t>{0});
  CHECK(indices(plan.stages[1].chunks[0]) == std::vector<std::int64_t>{1, 2});
  CHECK(indices(plan.stages[2].chunks[0]) == std::vector<std::int64_t>{3, 4});
  CHECK(indices(plan.stages[3].chunks[0]) == std::vector<std::int64_t>{5});
}

TEST_CASE("pipeline_model_parallel_layout with repeats, VPP and a standalone MTP + loss stage", "[model][layer_plan]") {
  auto s = tiny_gpt(5);
  s.model.pipeline_model_parallel_size = 2;
  s.model.mtp_num_layers = 1;
  s.model.pipeline_model_parallel_layout = "Et|(tt|)*2mL";  // -> Et | tt | tt | mL
  s.cluster.num_gpus = 2;
  const auto plan = plan_of(s);
  REQUIRE(plan.stages[0].chunks.size() == 2);
  CHECK(indices(plan.stages[0].chunks[0]) == std::vector<std::int64_t>{0});
  CHECK(indices(plan.stages[1].chunks[0]) == std::vector<std::int64_t>{1, 2});
  CHECK(indices(plan.stages[0].chunks[1]) == std::vector<std::int64_t>{3, 4});
  const auto& tail = plan.stages[1].chunks[1];
  CHECK(tail.mtp_layers == 1);
  CHECK(tail.has_output_layer);
  REQUIRE(tail.layers.size() == 1);
  CHECK(tail.layers[0].is_mtp);
  // With MTP the final layernorm follows the last decoder layer (rank 0, chunk 1).
  CHECK(plan.stages[0].chunks[1].has_final_norm);
  CHECK_FALSE(tail.has_final_norm);
}

TEST_CASE("Hybrid pattern: one layer per symbol, '|' fixes stages, '/' adds MTP depths", "[model][layer_plan]") {
  auto s = tiny_gpt(4);
  s.model.hybrid_override_pattern = "M*|-E/M*/M*";
  s.model.num_moe_experts = 4;
  s.model.pipeline_model_parallel_size = 2;
  s.cluster.num_gpus = 2;
  const auto plan = plan_of(s);
  REQUIRE(plan.decoder_layers.size() == 4);
  CHECK(plan.decoder_layers[0].mixer == MixerKind::mamba);
  CHECK(plan.decoder_layers[0].ffn == FfnKind::none);
  CHECK(plan.decoder_layers[1].mixer == MixerKind::attention);
  CHECK(plan.decoder_layers[2].ffn == FfnKind::dense);
  CHECK(plan.decoder_layers[3].ffn == FfnKind::moe);
  CHECK(plan.decoder_layers[3].mixer == MixerKind::none);
  CHECK(indices(plan.stages[0].chunks[0]) == std::vector<std::int64_t>{0, 1});
  const auto& last = plan.stages[1].chunks[0];
  CHECK(last.mtp_layers == 2);
  // Two decoder layers, then two depths of "M*".
  CHECK(indices(last) == std::vector<std::int64_t>{2, 3, 4, 5, 6, 7});
  CHECK(last.layers[2].is_mtp);
  CHECK(last.layers[2].mixer == MixerKind::mamba);

  auto n = peakcast::test_models::nemotron3_nano();
  const auto np = plan_of(n);
  std::int64_t mamba = 0, moe = 0, attn = 0;
  for (const auto& l : np.decoder_layers) {
    mamba += l.mixer == MixerKind::mamba;
    attn += l.mixer == MixerKind::attention;
    moe += l.ffn == FfnKind::moe;
  }
  CHECK(mamba == 23);
  CHECK(moe == 23);
  CHECK(attn == 6);
}

TEST_CASE("gated_delta_net in a GPT model: linear_attention_freq places the standard attention layers",
          "[model][layer_plan][gdn]") {
  auto s = tiny_gpt(8);
  s.model.experimental_attention_variant = "gated_delta_net";
  s.model.num_moe_experts = 4;
  s.model.moe_layer_freq = std::int64_t{1};
  SECTION("an int N: every N-th layer (i + 1 divisible by N) is attention, the rest GDN") {
    s.model.linear_attention_freq = LayerPattern{std::int64_t{4}};
    const auto plan = plan_of(s);
    REQUIRE(plan.decoder_layers.size() == 8);
    for (std::int64_t i = 0; i < 8; ++i) {
      const bool attention = (i + 1) % 4 == 0;
      CHECK(plan.decoder_layers[static_cast<std::size_t>(i)].mixer == (attention ? MixerKind::attention : MixerKind::gdn));
      CHECK(plan.decoder_layers[static_cast<std::size_t>(i)].ffn == FfnKind::moe);  // the MLP pattern is independent
    }
  }
  SECTION("a list: 1 is GDN, 0 attention") {
    s.model.linear_attention_freq = LayerPattern{std::vector<std::int64_t>{0, 1, 1, 0, 1, 0, 0, 1}};
    const auto plan = plan_of(s);
    const MixerKind expected[] = {MixerKind::attention, MixerKind::gdn, MixerKind::gdn, MixerKind::attention,
                                  MixerKind::gdn, MixerKind::attention, MixerKind::attention, MixerKind::gdn};
    for (std::size_t i = 0; i < 8; ++i) CHECK(plan.decoder_layers[i].mixer == expected[i]);
  }
  SECTION("without the variant the frequency is not read") {
    s.model.experimental_attention_variant.reset();
    s.model.linear_attention_freq = LayerPattern{std::int64_t{4}};
    for (const auto& l : plan_of(s).decoder_layers) CHECK(l.mixer == MixerKind::attention);
  }
}
