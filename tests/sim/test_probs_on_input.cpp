// moe_apply_probs_on_input: the router probabilities scale the experts' rows before fc1 (top-1 only).
// The multiply keeps the unscaled rows and fc1 the scaled ones; the experts then get probs of ones,
// which need no gradient, so the unfused GLU's per-token scale no longer keeps its input (measured,
// calibration/data/h200_probs_on_input.jsonl). The fused weighted SwiGLU keeps its input either way.
#include <catch2/catch.hpp>

#include <string>

#include "held_tensors.hpp"

using namespace peakcast;

namespace {
constexpr std::int64_t kSeq = 1024, kHidden = 1024, kExpertFfn = 512;

std::string spec_text(bool on, bool fused, int topk = 1) {
  return R"({"model": {"num_layers": 1, "hidden_size": 1024, "num_attention_heads": 8, "ffn_hidden_size": 2048,
      "vocab_size": 1024, "seq_length": 1024, "bf16": true, "transformer_impl": "local", "attention_backend": "unfused",
      "normalization": "RMSNorm", "gated_linear_unit": true, "activation_func": "silu", "add_bias_linear": false, "hidden_dropout": 0.0,
      "num_moe_experts": 4, "moe_ffn_hidden_size": 512, "moe_router_topk": )" +
         std::to_string(topk) +
         R"(, "moe_router_pre_softmax": true, "moe_grouped_gemm": false, "moe_layer_freq": 1,
      "bias_activation_fusion": )" +
         (fused ? "true" : "false") + R"(, "moe_apply_probs_on_input": )" +
         (on ? "true" : "false") + R"(},
    "train": {"micro_batch_size": 1, "global_batch_size": 1}, "cluster": {"num_gpus": 1, "gpu": "h100-sxm-80gb"}})";
}

Bytes layer0_saved(bool on, bool fused) {
  auto held = test::held_by_module(test::valid_spec(spec_text(on, fused)));
  REQUIRE(held.count("L0"));
  return test::total_bytes(held["L0"]);
}
}  // namespace

TEST_CASE("probs on the experts' input: one more [rows, h] kept, one [rows, F] less under the unfused GLU",
          "[sim][graph][moe]") {
  const std::int64_t rows = kSeq;  // top-1, one rank: every token once
  const Bytes unfused = layer0_saved(true, false) - layer0_saved(false, false);
  CHECK(unfused.value == rows * kHidden * 2 - rows * kExpertFfn * 2);
  const Bytes fused = layer0_saved(true, true) - layer0_saved(false, true);
  CHECK(fused.value == rows * kHidden * 2);
}

TEST_CASE("probs on the experts' input needs top-1 routing", "[validate][moe]") {
  auto r = model::parse_run_spec(spec_text(true, false, 2));
  REQUIRE(r.spec);
  bool found = false;
  for (const auto& d : model::validate(*r.spec))
    found = found || (d.rule == "probs_on_input_needs_top1" && d.path == "model.moe_apply_probs_on_input");
  CHECK(found);
}
