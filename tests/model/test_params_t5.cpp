// T5Model's parameters (docs/research/encoder-models-memory-facts.md): the whole-model count against a formula written
// from the modules' shapes, that formula against the published size, and a tensor-parallel rank's share.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "peakcast/model/layer_plan.hpp"
#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/static_memory.hpp"
#include "peakcast/model/validate.hpp"

using namespace peakcast;
using namespace peakcast::model;

namespace {

RunSpec t5_base(const std::vector<std::string>& sets = {}) {
  const char* text = R"({"model": {"architecture": "t5", "num_layers": 12, "hidden_size": 768, "num_attention_heads": 12,
      "kv_channels": 64, "ffn_hidden_size": 3072, "vocab_size": 29096, "seq_length": 512, "decoder_seq_length": 128,
      "max_position_embeddings": 512, "bf16": true},
    "train": {"micro_batch_size": 4, "global_batch_size": 32},
    "cluster": {"num_gpus": 8, "gpu": "h100-sxm-80gb"}})";
  auto r = parse_run_spec(text, sets);
  for (const auto& d : r.diagnostics) INFO(format(d));
  REQUIRE(r.spec);
  const auto problems = validate(*r.spec);
  for (const auto& d : problems) INFO(format(d));
  REQUIRE_FALSE(has_errors(problems));
  return *r.spec;
}

// An encoder layer (t5_spec.py:56-83, Megatron-LM's defaults: biases, GeLU, LayerNorm): QKV and proj, fc1 and fc2,
// two LayerNorms. A decoder layer adds the cross-attention: its LayerNorm, Q, KV and proj with biases (:86-125).
std::int64_t encoder_layer(std::int64_t h, std::int64_t f, std::int64_t tp) {
  return (3 * h * h + 3 * h) / tp + (h * h / tp + h) + (f * h + f) / tp + (h * f / tp + h) + 2 * (2 * h);
}
std::int64_t cross_attention(std::int64_t h, std::int64_t tp) { return 2 * h + (h * h + h) / tp + (2 * h * h + 2 * h) / tp + (h * h / tp + h); }

}  // namespace

TEST_CASE("T5: whole-model parameters from the modules' shapes and against the published size", "[model][params][t5]") {
  const RunSpec s = t5_base();
  const std::int64_t h = 768, f = 3072, v = 29096, layers = 12;
  // Embedding (word + learned positions, shared by both stacks and tied to the output layer), the layers, the two
  // blocks' final norms, and the tied output layer's bias (t5_model.py:55-69).
  const std::int64_t expected = v * h + 512 * h + layers * encoder_layer(h, f, 1) + layers * (encoder_layer(h, f, 1) + cross_attention(h, 1)) +
                                2 * (2 * h) + v;
  CHECK(total_parameters(s, derive(s)) == expected);
  // Raffel et al. 2020, T5-Base: 220M (Megatron-LM's examples/t5/train_t5_220m_distributed.sh).
  CHECK(std::abs(double(expected) / 220e6 - 1.0) < 0.01);
}

TEST_CASE("T5: a tensor-parallel rank's parameters, one stage", "[model][params][t5]") {
  const RunSpec s = t5_base({"model.tensor_model_parallel_size=4", "model.should_pad_vocab=true"});
  const std::int64_t h = 768, f = 3072, v = 29184;  // padded to a multiple of 128 x 4
  const Derived d = derive(s);
  const auto ranks = static_memory_per_rank(s, d, build_layer_plan(s, d));
  REQUIRE(ranks.size() == 1);
  CHECK(ranks[0].memory.params.dense ==
        v / 4 * h + 512 * h + 12 * encoder_layer(h, f, 4) + 12 * (encoder_layer(h, f, 4) + cross_attention(h, 4)) + 2 * (2 * h) + v / 4);
}
