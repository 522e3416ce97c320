// BertModel's parameters (docs/research/encoder-models-memory-facts.md): the whole-model count against a formula
// written from the modules' shapes, and that formula against the published sizes; the per-rank lists of a
// pipelined and a tensor-parallel layout.
#include <catch2/catch.hpp>

#include <string>

#include "peakcast/model/layer_plan.hpp"
#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/static_memory.hpp"
#include "peakcast/model/validate.hpp"

using namespace peakcast;
using namespace peakcast::model;

namespace {

RunSpec bert(std::int64_t layers, std::int64_t h, std::int64_t heads, const std::vector<std::string>& sets = {}) {
  const std::string text = R"({"model": {"architecture": "bert", "num_layers": )" + std::to_string(layers) +
                           R"(, "hidden_size": )" + std::to_string(h) + R"(, "num_attention_heads": )" + std::to_string(heads) +
                           R"(, "vocab_size": 30522, "seq_length": 512, "bf16": true},
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

// One encoder layer: QKV and proj with biases, the MLP's fc1 (F) and fc2 with biases, two LayerNorms (weight and
// bias), as bert_layer_specs.py builds it with Megatron-LM's defaults (add_bias_linear, GeLU, LayerNorm).
std::int64_t layer(std::int64_t h, std::int64_t f) { return (3 * h * h + 3 * h) + (h * h + h) + (f * h + f) + (h * f + h) + 2 * (2 * h); }
std::int64_t lm_head(std::int64_t h) { return h * h + h + 2 * h; }  // dense (weight, bias), LayerNorm
std::int64_t pooler(std::int64_t h) { return h * h + h; }
std::int64_t binary_head(std::int64_t h) { return 2 * h + 2; }

std::int64_t total_formula(std::int64_t layers, std::int64_t h, std::int64_t v) {
  const std::int64_t embedding = v * h + 512 * h + 2 * h;  // word, position (max_position_embeddings = seq 512), token type
  return embedding + layers * layer(h, 4 * h) + 2 * h /* final norm */ + lm_head(h) + v /* output bias */ + pooler(h) + binary_head(h);
}

std::vector<RankStatic> per_rank(const RunSpec& s) {
  const Derived d = derive(s);
  return static_memory_per_rank(s, d, build_layer_plan(s, d));
}

}  // namespace

TEST_CASE("BERT: whole-model parameters from the modules' shapes and against the published sizes", "[model][params][bert]") {
  // Unpadded vocabulary (should_pad_vocab off), as the published counts use bert-base-uncased's 30522 rows.
  const RunSpec base = bert(12, 768, 12), large = bert(24, 1024, 16);
  CHECK(total_parameters(base, derive(base)) == total_formula(12, 768, 30522));
  CHECK(total_parameters(large, derive(large)) == total_formula(24, 1024, 30522));
  // Devlin et al. 2019 (arXiv:1810.04805): BERT_BASE 110M, BERT_LARGE 340M parameters (rounded).
  CHECK(std::abs(double(total_formula(12, 768, 30522)) / 110e6 - 1.0) < 0.005);
  CHECK(std::abs(double(total_formula(24, 1024, 30522)) / 340e6 - 1.0) < 0.015);
  // --bert-no-binary-head: no token-type table, pooler or binary head.
  const RunSpec no_head = bert(12, 768, 12, {"model.bert_binary_head=false"});
  CHECK(total_parameters(no_head, derive(no_head)) == total_formula(12, 768, 30522) - 2 * 768 - pooler(768) - binary_head(768));
}

TEST_CASE("BERT: per-rank parameters under pipeline and tensor parallelism", "[model][params][bert]") {
  const std::int64_t h = 1024, f = 4096;
  SECTION("PP2: the embedding on the first stage, the tied output copy, its bias and the heads on the last") {
    const RunSpec s = bert(24, h, 16, {"model.pipeline_model_parallel_size=2", "model.pipeline_dtype=bf16", "model.should_pad_vocab=true"});
    const std::int64_t v = 30592;  // 30522 padded to a multiple of 128
    const auto ranks = per_rank(s);
    REQUIRE(ranks.size() == 2);
    CHECK(ranks[0].memory.params.dense == v * h + 512 * h + 2 * h + 12 * layer(h, f));
    CHECK(ranks[1].memory.params.dense == 12 * layer(h, f) + 2 * h + lm_head(h) + v * h + v + pooler(h) + binary_head(h));
  }
  SECTION("TP2 PP1: one vocabulary table, the output bias split, the torch heads replicated") {
    const RunSpec s = bert(24, h, 16, {"model.tensor_model_parallel_size=2", "model.should_pad_vocab=true"});
    const std::int64_t v = 30720;  // 30522 padded to a multiple of 128 x TP
    const std::int64_t tp_layer = (3 * h * h + 3 * h) / 2 + (h * h / 2 + h) + (f * h + f) / 2 + (h * f / 2 + h) + 2 * (2 * h);
    const auto ranks = per_rank(s);
    REQUIRE(ranks.size() == 1);
    CHECK(ranks[0].memory.params.dense ==
          v / 2 * h + 512 * h + 2 * h + 24 * tp_layer + 2 * h + lm_head(h) + v / 2 + pooler(h) + binary_head(h));
  }
}
