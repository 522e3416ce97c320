// Latent MoE (moe_latent_size; docs/research/latent-moe-memory-facts.md): fc1_latent_proj takes the
// rank's [T, h] tokens down to [T, l] before dispatch (moe_layer.py:481-483), the routed experts run l
// wide (experts.py:216-251), fc2_latent_proj brings the combined [T, l] back to [T, h] (:583-585). A
// hybrid "*E" model's MoE layer (Nemotron 3 Super's kind: squared-ReLU experts, a shared expert, the
// sigmoid router with expert bias, alltoall with the fused permute), one rank, bf16. Expectations from
// the shapes: T = 1024 tokens, top-2 of 8 experts, so R = 2048 routed rows.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "held_tensors.hpp"
#include "peakcast/model/static_memory.hpp"
#include "peakcast/sim/layer_graph.hpp"
#include "peakcast/sim/module_graphs.hpp"
#include "spec_layer.hpp"

using namespace peakcast;

namespace {

constexpr std::int64_t kT = 1024, kH = 1024, kL = 256, kF = 512, kShared = 1024, kE = 8, kTopk = 2, kR = kT * kTopk, kBf16 = 2;

std::string spec_text(bool latent, const std::string& extra = "") {
  return std::string(R"({"model": {"hybrid_override_pattern": "*E", "hidden_size": 1024, "num_attention_heads": 8,
      "num_query_groups": 2, "kv_channels": 128, "ffn_hidden_size": 512, "vocab_size": 1024, "seq_length": 1024, "bf16": true,
      "normalization": "RMSNorm", "activation_func": "squared_relu", "gated_linear_unit": false, "add_bias_linear": false,
      "hidden_dropout": 0.0, "attention_dropout": 0.0, "position_embedding_type": "none",
      "num_moe_experts": 8, "moe_ffn_hidden_size": 512, "moe_router_topk": 2, "moe_grouped_gemm": true,
      "moe_shared_expert_intermediate_size": 1024, "moe_router_dtype": "fp32", "moe_router_score_function": "sigmoid",
      "moe_router_enable_expert_bias": true, "moe_token_dispatcher_type": "alltoall", "moe_permute_fusion": true)") +
         (latent ? R"(, "moe_latent_size": 256)" : "") + extra + R"(},
    "train": {"micro_batch_size": 1, "global_batch_size": 1}, "cluster": {"num_gpus": 1, "gpu": "h100-sxm-80gb"}})";
}

test::HeldTensors moe_layer_held(bool latent, const std::string& extra = "") {
  auto held = test::held_by_module(test::valid_spec(spec_text(latent, extra)));
  REQUIRE(held.count("L1"));
  for (const auto& t : held["L1"]) UNSCOPED_INFO(t.name << " " << t.bytes.value);
  return held["L1"];
}

sim::LayerGraph moe_graph(bool latent) {
  return test::spec_layer(spec_text(latent).c_str(), {}, {1, model::MixerKind::none, model::FfnKind::moe, false});
}

}  // namespace

TEST_CASE("latent MoE: the routed path is latent wide between fc1_latent_proj and fc2_latent_proj", "[sim][graph][moe]") {
  const auto g = moe_graph(true);
  const sim::OpNode* fc1 = test::named(g.ops, "fc1_latent_proj");
  const sim::OpNode* fc2 = test::named(g.ops, "fc2_latent_proj");
  REQUIRE(fc1);
  REQUIRE(fc2);
  // Both are TE linears on the rank's T tokens: 2 T h l FLOPs forward, twice that backward (dgrad + wgrad).
  CHECK(fc1->forward_flops == Approx(2.0 * kT * kH * kL));
  CHECK(fc2->forward_flops == Approx(2.0 * kT * kL * kH));
  CHECK(fc1->backward_flops == Approx(2 * fc1->forward_flops));
  CHECK(g.tensors.at(static_cast<std::size_t>(fc1->outputs.front())).bytes.value == kT * kL * kBf16);
  CHECK(g.tensors.at(static_cast<std::size_t>(fc2->outputs.front())).bytes.value == kT * kH * kBf16);
  // fc1_latent_proj runs after the router and before the permute (moe_layer.py:655-656, :481-486), which
  // takes its output; fc2_latent_proj takes the unpermuted output (:583-585).
  const sim::OpNode* permute = test::named(g.ops, "dispatch.permute");
  const sim::OpNode* unpermute = test::named(g.ops, "combine.unpermute");
  REQUIRE(permute);
  REQUIRE(unpermute);
  CHECK(permute->inputs.front() == fc1->outputs.front());
  CHECK(fc2->inputs.front() == unpermute->outputs.front());
  CHECK(fc1 < permute);
  // The experts' GEMMs: fc1 [R, l] -> [R, F], fc2 [R, F] -> [R, l] (experts.py:216-251).
  const sim::OpNode* e1 = test::named(g.ops, ".experts.linear_fc1");  // not shared_experts.linear_fc1
  const sim::OpNode* e2 = test::named(g.ops, ".experts.linear_fc2");
  REQUIRE(e1);
  REQUIRE(e2);
  CHECK(e1->forward_flops == Approx(2.0 * kR * kL * kF));
  CHECK(e2->forward_flops == Approx(2.0 * kR * kF * kL));
  CHECK(g.tensors.at(static_cast<std::size_t>(e1->inputs.front())).bytes.value == kR * kL * kBf16);
  // The shared experts stay on the full width (mlp.py:215-217).
  const sim::OpNode* s1 = test::named(g.ops, "shared_experts.linear_fc1");
  REQUIRE(s1);
  CHECK(s1->forward_flops == Approx(2.0 * kT * kH * kShared));
  const auto plain = moe_graph(false);
  CHECK(test::named(plain.ops, "fc1_latent_proj") == nullptr);
}

TEST_CASE("latent MoE: one layer's saved bytes per micro-batch", "[sim][graph][moe]") {
  const auto latent = moe_layer_held(true);
  const auto plain = moe_layer_held(false);
  // What the latent layer keeps beyond the plain one: the experts' fc1 input is [R, l] instead of
  // [R, h]; fc2_latent_proj keeps its [T, l] input for its wgrad. fc1_latent_proj's own input, the
  // pre-MLP norm output [T, h], the router and the shared experts keep already.
  CHECK((test::total_bytes(latent) - test::total_bytes(plain)).value == kR * (kL - kH) * kBf16 + kT * kL * kBf16);
  CHECK(test::holds_suffix(latent, "combine.unpermuted"));
  CHECK_FALSE(test::holds_suffix(plain, "combine.unpermuted"));
  // The whole layer, from its shapes (hybrid "E" layer: the pre-MLP norm and the MoE block):
  constexpr std::int64_t kFp32 = 4, kI64 = 8, kI32 = 4, kBool = 1;
  const std::int64_t expected = kT * kH * kBf16             // the layer input, kept by the pre-MLP RMSNorm
                                + kT * kH * kBf16           // its output, kept by the router GEMM, fc1_latent_proj and shared fc1
                                + kT * kFp32                // the norm's rstd
                                + 2 * kT * kShared * kBf16  // shared expert: fc1 output (squared ReLU) and activation (fc2)
                                + kT * kE * kFp32           // router: sigmoid scores
                                + kT * kTopk * kI64         // top-k indices
                                + kT * kTopk * kFp32        // gathered top-k scores
                                + kT * kFp32                // their normalising denominator
                                + kT * kE * kBool           // routing map
                                + kT * kE * kI32            // the fused permute's row-id map
                                + kR * kL * kBf16           // experts' fc1 input, latent wide
                                + kR * kFp32                // the rows' probabilities (weighted activation)
                                + 2 * kR * kF * kBf16       // experts' fc1 output (squared ReLU) and activation (fc2)
                                + kT * kL * kBf16;          // fc2_latent_proj's input
  CHECK(test::total_bytes(latent).value == expected);
}
