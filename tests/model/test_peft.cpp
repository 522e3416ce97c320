// LoRA (the peft section), against values written out from shapes and dtypes: the frozen base keeps
// its bf16 weights and nothing else; each adapter's A and B are split over TP as Bridge's
// ParallelLinearAdapter builds them (docs/research/lora-memory-facts.md section 3) and carry the
// grads and Adam state.
#include <catch2/catch.hpp>

#include "peakcast/model/layer_plan.hpp"
#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/static_memory.hpp"
#include "peakcast/sim/layer_graph.hpp"
#include "peakcast/sim/module_graphs.hpp"
#include "test_params_models.hpp"

using namespace peakcast;
using namespace peakcast::model;

namespace {

// h=128, 4 heads of 32, 2 query groups, SwiGLU F=256, vocab 1024, 4 layers, untied, TP 2.
RunSpec tiny_lora(std::vector<std::string> targets) {
  RunSpec s;
  test_models::llama_common(s.model);
  test_models::small_sizes(s.model, 4, 128, 256, 4, 32, 1024);
  s.model.num_query_groups = 2;
  s.model.tensor_model_parallel_size = 2;
  s.cluster.num_gpus = 2;
  s.ddp.grad_reduce_in_fp32 = true;
  s.peft.enabled = true;
  s.peft.dim = 8;
  s.peft.target_modules = std::move(targets);
  return s;
}

// The base per rank at TP 2 (test_static_memory.cpp's kTp2Layer): norms, qkv, proj, fc1, fc2.
constexpr std::int64_t kLayer = 128 + (128 + 2 * 2 * 32) / 2 * 128 + 128 * (128 / 2) + 128 + (2 * 256) / 2 * 128 + 128 * (256 / 2);
constexpr std::int64_t kBase = 4 * kLayer + 2 * (1024 / 2 * 128) + 128;

}  // namespace

TEST_CASE("LoRA: frozen base weights only in bf16, adapters with fp32 grads and Adam state", "[model][static][peft]") {
  const RunSpec s = tiny_lora({"linear_qkv", "linear_proj", "linear_fc1", "linear_fc2"});
  const Derived d = derive(s);
  const auto ranks = static_memory_per_rank(s, d, build_layer_plan(s, d));
  REQUIRE(ranks.size() == 1);
  const auto& m = ranks[0].memory;
  // Column bases (qkv 128 -> 256, fc1 128 -> 512): A [r/TP, in], B [out/TP, r]. Row bases (proj 128 -> 128,
  // fc2 256 -> 128): A [r, in/TP], B [out/TP, r].
  const std::int64_t qkv = 8 / 2 * 128 + 256 / 2 * 8, fc1 = 8 / 2 * 128 + 512 / 2 * 8;
  const std::int64_t proj = 8 * (128 / 2) + 128 / 2 * 8, fc2 = 8 * (256 / 2) + 128 / 2 * 8;
  const std::int64_t adapters = 4 * (qkv + proj + fc1 + fc2);
  CHECK(m.params.dense == kBase + adapters);
  CHECK(m.parameters.value == 2 * (kBase + adapters));  // every weight bf16
  CHECK(m.gradients.value == 4 * adapters);             // the fp32 grad buffer holds the adapters alone
  CHECK(m.main_params.value == 4 * adapters);
  CHECK(m.optimizer_states.value == 8 * adapters);
}

TEST_CASE("LoRA: a frozen linear saves no input; its adapter saves its input and the rank-r middle", "[sim][peft]") {
  // One dense layer, TP 1, no SP: with only linear_fc2 adapted, fc1's input (the pre-MLP norm output,
  // [N, h], not LayerNorm-fused here: the local spec) is no longer saved by fc1; fc2's input [N, F] is
  // still saved, by the adapter's A; B saves A's output [N, r].
  RunSpec s = tiny_lora({"linear_fc2"});
  s.model.tensor_model_parallel_size = 1;
  s.cluster.num_gpus = 1;
  s.model.seq_length = 64;
  s.model.transformer_impl = TransformerImpl::local;
  const Derived d = derive(s);
  const LayerPlan plan = build_layer_plan(s, d);
  const LayerSpec& layer = plan.stages[0].chunks[0].layers[0];
  const auto held = [&](const RunSpec& spec) {
    const sim::LayerGraph g = sim::build_layer_graph(spec, d, sim::make_shape_context(spec, d), layer, false);
    return sim::profile_module(g, sim::CheckpointSet{}).held.value;
  };
  RunSpec full = s;
  full.peft = PeftSpec{};
  const std::int64_t N = 64, h = 128, r = 8;
  // Frozen: fc1 drops its saved input [N, h]; qkv and proj (frozen, not adapted) drop theirs too, [N, h] each
  // (the attention core keeps its own inputs). Adapted fc2: A keeps [N, F] as fc2 did, B adds [N, r].
  CHECK(held(full) - held(s) == 2 * (3 * N * h) - 2 * N * r);
}

TEST_CASE("LoRA: the peft section is as strict as the others", "[model][spec][peft]") {
  const std::string base = R"({"model": {"num_layers": 2, "hidden_size": 128, "num_attention_heads": 4, "vocab_size": 1024,
    "seq_length": 64, "max_position_embeddings": 64, "bf16": true, "tensor_model_parallel_size": 2},
    "optimizer": {"bf16": true}, "cluster": {"num_gpus": 2}, "peft": )";
  const auto rule_at = [](const ParseResult& r, const std::string& path) {
    for (const auto& d : r.diagnostics)
      if (d.path == path && d.severity == Severity::error) return d.rule;
    return std::string();
  };
  const auto ok = parse_run_spec(base + R"({"dim": 8, "target_modules": ["linear_qkv", "linear_proj"]}})");
  REQUIRE(ok.spec);
  CHECK(ok.spec->peft.enabled);
  CHECK(ok.spec->peft.alpha == 32);  // LoRA's default (peft/lora.py:105)
  CHECK(rule_at(parse_run_spec(base + R"({"dimm": 8}})"), "peft.dimm") == "unknown_key");
  CHECK(rule_at(parse_run_spec(base + R"({"dim": 3}})"), "peft.dim") == "peft_dim_not_divisible");  // A is [r/TP, in]
  CHECK(rule_at(parse_run_spec(base + R"({"dim": 1099511627776}})"), "peft.dim") == "value_out_of_range");
  CHECK(rule_at(parse_run_spec(base + R"({"target_modules": ["*.layers.0.*.linear_qkv"]}})"), "peft.target_modules[0]") == "not_simulated");
  CHECK(rule_at(parse_run_spec(base + R"({"method": "dora"}})"), "peft.method") != "");
}
