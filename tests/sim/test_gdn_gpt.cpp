// Qwen3-Next's layout: a GPT model whose attention is Gated DeltaNet except every
// linear_attention_freq-th layer, which is gated standard attention (experimental_attention_variant).
#include <catch2/catch.hpp>

#include <string>

#include "held_tensors.hpp"

using namespace peakcast;

using test::holds_suffix;

TEST_CASE("GDN layers and gated attention layers in one GPT model", "[sim][graph][gdn]") {
  const std::string text = R"({
    "model": {"num_layers": 4, "hidden_size": 2048, "num_attention_heads": 16, "num_query_groups": 2,
              "kv_channels": 256, "ffn_hidden_size": 5120, "vocab_size": 151936, "seq_length": 4096, "bf16": true,
              "normalization": "RMSNorm", "gated_linear_unit": true, "activation_func": "silu", "add_bias_linear": false, "qk_layernorm": true,
              "attention_output_gate": true, "experimental_attention_variant": "gated_delta_net",
              "linear_attention_freq": 4, "linear_num_key_heads": 16, "linear_num_value_heads": 32,
              "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4},
    "train": {"micro_batch_size": 1, "global_batch_size": 1},
    "cluster": {"num_gpus": 1, "gpu": "h100-sxm-80gb"}})";
  auto held = test::held_by_module(test::valid_spec(text));
  for (const char* gdn : {"L0", "L1", "L2"}) {
    REQUIRE(held.count(gdn));
    CHECK(holds_suffix(held[gdn], "gdn.core_out"));
    CHECK_FALSE(holds_suffix(held[gdn], "core_attention.out"));
  }
  REQUIRE(held.count("L3"));
  CHECK(holds_suffix(held["L3"], "core_attention.out"));
  CHECK(holds_suffix(held["L3"], "output_gate.out"));
  CHECK_FALSE(holds_suffix(held["L3"], "gdn.core_out"));
}
