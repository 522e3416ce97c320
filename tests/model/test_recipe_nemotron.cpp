// Bridge's Nemotron-family recipes (configs/recipes/): the model from Nemotron 3 Nano's config.json through
// NemotronHBridge, Nemotron 3.5 Lightning's MTP joined onto the hybrid pattern as HybridModelProvider.finalize
// joins it, the latent-MoE Super / Ultra from their shipped configs, and the vocabulary setup() gives each.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/static_memory.hpp"
#include "peakcast/model/validate.hpp"

using namespace peakcast;

namespace {
// Nemotron 3 Nano 30B-A3B's layer pattern (its config.json's hybrid_override_pattern, configs/hf/).
const std::string kNanoPattern = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME";

model::ParseResult parse(const std::string& recipe, const std::vector<std::string>& sets = {}) {
  auto r = model::parse_spec_input("bridge:" + recipe, "", sets);
  for (const auto& d : r.diagnostics) UNSCOPED_INFO(model::format(d));
  return r;
}
}  // namespace

TEST_CASE("Nemotron 3 Nano SFT: the model from the HF config, the recipe's settings on top", "[model][recipes][nemotron]") {
  const auto r = parse("nemotron_3_nano_sft_8gpu_h100_bf16_config");
  REQUIRE(r.spec);
  const auto& m = r.spec->model;
  CHECK(m.hybrid_override_pattern == kNanoPattern);
  CHECK(m.num_layers == 52);
  CHECK(r.origins.at("model.num_layers").origin == "Hugging Face config");
  CHECK(m.seq_length == 2048);  // nemotron_3_nano.py:300, over the config's 262144
  CHECK(m.expert_model_parallel_size == 8);
  // The HF vocabulary as is: a model vocab_size set, so setup() does not pad (setup.py:772-780).
  CHECK(m.vocab_size == 131072);
  CHECK_FALSE(m.should_pad_vocab);
  CHECK_FALSE(model::has_errors(model::validate(*r.spec)));
}

TEST_CASE("Nemotron 3.5 Lightning: two repeated '*E' MTP depths joined onto the pattern", "[model][recipes][nemotron][mtp]") {
  // The recipe names no GPU count: the catalogue entry cites its base's, the 8-GPU Nano SFT recipe whose
  // layout it keeps (num_gpus_source; test_catalogue_inputs.cpp checks every such citation).
  const auto r = parse("nemotron_3_5_lightning_sft_config");
  REQUIRE(r.spec);
  CHECK(r.spec->cluster.num_gpus == 8);
  const auto& m = r.spec->model;
  // hybrid_provider.py:196-231: mtp_num_layers copies of mtp_hybrid_override_pattern after '/'.
  CHECK(m.hybrid_override_pattern == kNanoPattern + "/*E/*E");
  CHECK(m.mtp_num_layers == 2);
  CHECK(m.mtp_use_repeated_layer);
  CHECK(m.num_layers == 52);
  // One depth's weights (repeated layer): Nano's 31,577,940,288 elements with the expert-bias buffers
  // plus the wrapper (enorm, hnorm, eh_proj [h, 2h]), an attention and a MoE layer and the depth's final
  // norm, with the MoE layer's 128 buffers. Bridge's verification card for the Lightning checkpoint,
  // the same shapes with one MTP depth, counts 32,913,266,240 (600d069b examples/
  // model_verification_cards/nemotron-3.5-lightning/card.yaml:62).
  const std::int64_t h = 2688;
  const std::int64_t wrapper = 2 * h + 2 * h * h + h;
  const std::int64_t attention = h * (32 + 2 * 2) * 128 + h + 32 * 128 * h;
  const std::int64_t moe = h + 128 * h + 128 * 2 * h * 1856 + 2 * h * 3712 + 128;
  CHECK(31577940288 + wrapper + attention + moe == 32913266240);
  const auto d = model::derive(*r.spec);
  CHECK(model::total_parameters(*r.spec, d, true) + model::total_checkpointed_buffers(*r.spec, d, true) == 32913266240);
  CHECK_FALSE(model::has_errors(model::validate(*r.spec)));
  // finalize re-takes the main pattern before '/', so an already joined pattern (as a run_config.yaml
  // written after finalize carries it) is joined once, not twice.
  const auto joined = parse("nemotron_3_5_lightning_sft_config", {"cluster.num_gpus=8", "model.hybrid_layer_pattern=" + kNanoPattern + "/*E/*E"});
  REQUIRE(joined.spec);
  CHECK(joined.spec->model.hybrid_override_pattern == kNanoPattern + "/*E/*E");
}

TEST_CASE("Nemotron 3 Super and Ultra: latent MoE from the shipped configs, the recipes' MTP joined", "[model][recipes][nemotron]") {
  // Super's convergence recipe (nemotron_3_super.py:160-247): two MTP depths over the config's one '*E'
  // block, one repeated layer (:96-102), joined as HybridModelProvider.finalize joins them.
  const std::string super_pattern = "MEMEMEM*EMEMEMEM*EMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEM*EMEMEMEME";
  const auto super = parse("nemotron_3_super_pretrain_config");
  REQUIRE(super.spec);
  const auto& m = super.spec->model;
  CHECK(m.moe_latent_size == 1024);
  CHECK(m.hybrid_override_pattern == super_pattern + "/*E/*E");
  CHECK(m.mtp_use_repeated_layer);
  CHECK_FALSE(m.moe_shared_expert_overlap);  // latent MoE refuses it in training (moe_layer.py:472)
  CHECK_FALSE(model::has_errors(model::validate(*super.spec)));
  // One depth of weights (the repeated layer) and 41 routers' expert biases: Bridge's verification card's
  // 123,611,033,088 elements for the BF16 release (card.yaml:72-74).
  const auto d = model::derive(*super.spec);
  CHECK(model::total_parameters(*super.spec, d, true) + model::total_checkpointed_buffers(*super.spec, d, true) == 123611033088);
  // Ultra: SFT keeps the config's vocabulary (use_tokenizer_vocab_size unset, setup.py:772-780);
  // pretraining sizes it from len(tokenizer) of Ultra's own tokenizer, which is not sourced.
  const auto ultra = parse("nemotron_3_ultra_sft_192gpu_h100_bf16_openmathinstruct2_packed_config");
  REQUIRE(ultra.spec);
  CHECK(ultra.spec->model.moe_latent_size == 2048);
  CHECK(ultra.spec->model.num_layers == 108);
  CHECK(ultra.spec->model.vocab_size == 131072);
  CHECK_FALSE(model::has_errors(model::validate(*ultra.spec)));
  const auto pretrain = parse("nemotron_3_ultra_pretrain_24gpu_h100_bf16_config");
  CHECK_FALSE(pretrain.spec);
  bool named = false;
  for (const auto& diag : pretrain.diagnostics)
    named = named || (diag.rule == "recipe_vocab_unknown" && diag.message.find("Nemotron-3-Ultra") != std::string::npos);
  CHECK(named);
}

TEST_CASE("a recipe's vocabulary: the provider's own, or the tokenizer's padded", "[model][recipes][vocab]") {
  // OLMoE SFT: OlMoEModelProvider's vocab_size 50304 (olmoe_provider.py:61) is set, so setup() keeps it
  // unpadded and needs no tokenizer size (setup.py:772-780).
  const auto olmoe = parse("olmoe_7b_sft_8gpu_h100_bf16_config");
  REQUIRE(olmoe.spec);
  CHECK(olmoe.spec->model.vocab_size == 50304);
  CHECK_FALSE(olmoe.spec->model.should_pad_vocab);
  // Lightning pretraining: use_tokenizer_vocab_size, so len(tokenizer), 131072 (configs/tokenizers.json),
  // padded to a multiple of 128 x TP 1 (setup.py:761-765, hybrid_provider.py:294-298).
  const auto lightning = parse("nemotron_3_5_lightning_pretrain_config", {"cluster.num_gpus=16"});
  REQUIRE(lightning.spec);
  CHECK(lightning.spec->model.vocab_size == 131072);
  CHECK(lightning.spec->model.should_pad_vocab);
  CHECK(model::derive(*lightning.spec).padded_vocab == 131072);
}

TEST_CASE("Nemotron 3 Nano 4B's recipe model has the checkpoint's published parameter count", "[model][recipes][nemotron][params]") {
  // The recipe's literal HybridModelProvider (nemotron_3_nano_4b.py:35-81): 21 Mamba layers (96 heads of 80,
  // 8 groups, state 128), 17 squared-ReLU MLPs of 12544, 4 attention layers (40 heads, 8 groups of 128),
  // hidden 3136, untied 131072 vocabulary. Bridge's verification card counts 3,973,556,832 parameters in
  // nvidia/NVIDIA-Nemotron-3-Nano-4B-BF16 (600d069b examples/model_verification_cards/nemotron-3-nano-4b/card.yaml:46).
  const auto r = parse("nemotron_3_nano_4b_pretrain_8gpu_h100_bf16_config");
  REQUIRE(r.spec);
  const std::string pattern = *r.spec->model.hybrid_override_pattern;
  const auto count = [&](char c) { return static_cast<std::int64_t>(std::count(pattern.begin(), pattern.end(), c)); };
  const std::int64_t h = 3136, d_inner = 96 * 80, bc = 2 * 8 * 128;
  const std::int64_t mamba = h * (2 * d_inner + bc + 96) + h + (d_inner + bc) * 5 + 3 * 96 + d_inner + d_inner * h;
  const std::int64_t mlp = h + 2 * h * 12544;
  const std::int64_t attention = h * (40 + 2 * 8) * 128 + h + 40 * 128 * h;
  const std::int64_t expected = 2 * 131072 * h + h + count('M') * mamba + count('-') * mlp + count('*') * attention;
  CHECK(count('M') == 21);
  CHECK(expected == 3973556832);
  CHECK(model::total_parameters(*r.spec, model::derive(*r.spec), false) == expected);
}
