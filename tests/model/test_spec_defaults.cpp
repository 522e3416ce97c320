// One source of defaults: a spec that leaves every optional key out parses to exactly the RunSpec the
// member initializers give, because both are the megatron-core defaults of configs/schema (the table
// the parser reads). A difference means a C++ initializer disagrees with the extracted Megatron default.
#include <catch2/catch.hpp>

#include "peakcast/model/spec_parser.hpp"

using namespace peakcast::model;

TEST_CASE("member initializers are the schema's megatron-core defaults", "[model][defaults]") {
  const auto r = parse_run_spec(R"({"model": {"num_layers": 2, "hidden_size": 256, "num_attention_heads": 4,
                                              "vocab_size": 1000, "seq_length": 128}})");
  for (const auto& d : r.diagnostics) INFO(format(d));
  REQUIRE(r.spec);
  CHECK(r.defaults == DefaultsProfile::megatron_core);
  RunSpec expected;
  expected.model.num_layers = 2;
  expected.model.hidden_size = 256;
  expected.model.num_attention_heads = 4;
  expected.model.vocab_size = 1000;
  expected.model.seq_length = 128;
  expected.model.max_position_embeddings = 128;  // Megatron-LM: seq_length when unset
  // The parser names the loss path in one field: without cross_entropy_loss_fusion the impl is moot.
  expected.model.cross_entropy_fusion_impl = CrossEntropyImpl::unfused;
  CHECK(r.spec->model == expected.model);
  CHECK(r.spec->train == expected.train);
  CHECK(r.spec->optimizer == expected.optimizer);
  CHECK(r.spec->ddp == expected.ddp);
  CHECK(r.spec->cluster.num_gpus == expected.cluster.num_gpus);
  CHECK(r.spec->cluster.expandable_segments == expected.cluster.expandable_segments);
}

TEST_CASE("every key the typed spec reads says where its value came from", "[model][defaults]") {
  const auto r = parse_run_spec(R"({"model": {"preset": "llama3-8b", "seq_length": 4096}, "defaults": "megatron-core"})");
  REQUIRE(r.spec);
  REQUIRE(r.origins.count("model.seq_length"));
  CHECK(r.origins.at("model.seq_length").origin == "user");
  CHECK(r.origins.at("model.hidden_size").origin == "preset");
  const auto& dealloc = r.origins.at("model.deallocate_pipeline_outputs");
  CHECK(dealloc.origin == "Megatron Core default");
  CHECK(dealloc.source == "mcore:megatron/core/model_parallel_config.py:405");
  CHECK(dealloc.value == "false");
  CHECK(r.origins.at("cluster.gpu").origin == "peakcast default");
}

TEST_CASE("the bridge profile takes the model class's defaults, not Megatron Core's", "[model][defaults]") {
  const auto r = parse_run_spec(R"({"model": {"preset": "llama3-8b", "seq_length": 4096}, "defaults": "bridge"})");
  REQUIRE(r.spec);
  CHECK(r.defaults == DefaultsProfile::bridge);
  // GPTModelProvider re-declares these (bridge:src/megatron/bridge/models/gpt_provider.py:160-205).
  CHECK(r.spec->model.deallocate_pipeline_outputs);
  CHECK(r.spec->model.cross_entropy_loss_fusion);
  CHECK(r.spec->model.masked_softmax_fusion);
  CHECK_FALSE(r.spec->model.attention_softmax_in_fp32);
  CHECK(r.spec->model.gradient_accumulation_fusion);  // Transformer Engine importable
  CHECK(r.origins.at("model.deallocate_pipeline_outputs").origin == "Bridge default");
  // MixedPrecisionConfig.setup copies its fp8_recipe default onto the model and optimizer, and its
  // grad_reduce_in_fp32 onto DDP (bridge:src/megatron/bridge/training/mixed_precision.py:113-157).
  CHECK(r.spec->model.fp8_recipe == Fp8Recipe::tensorwise);
  CHECK(r.spec->ddp.grad_reduce_in_fp32);
}
