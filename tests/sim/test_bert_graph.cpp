// BertModel's tensors (docs/research/encoder-models-memory-facts.md): the encoder layer's padding-mask attention,
// the embedding with positions and token types, and the last stage's head. Expectations from shapes and dtypes.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/validate.hpp"
#include "peakcast/sim/layer_graph.hpp"
#include "peakcast/sim/module_graphs.hpp"
#include "spec_layer.hpp"

using namespace peakcast;

namespace {

constexpr std::int64_t kB = 4, kS = 512, kH = 1024, kHeads = 16, kV = 30592;

// BERT-large's layer at the functional tests' shapes (seq 512, micro-batch 4, bf16, Megatron-LM's dropout).
std::string spec_text(const char* architecture) {
  return std::string(R"({"model": {"architecture": ")") + architecture + R"(", "num_layers": 2, "hidden_size": 1024,
      "num_attention_heads": 16, "vocab_size": 30522, "should_pad_vocab": true, "seq_length": 512, "bf16": true,
      "attention_backend": "unfused", "masked_softmax_fusion": true, "attention_softmax_in_fp32": false},
    "train": {"micro_batch_size": 4, "global_batch_size": 32},
    "cluster": {"num_gpus": 8, "gpu": "h100-sxm-80gb"}})";
}

const model::LayerSpec kLayer{0, model::MixerKind::attention, model::FfnKind::dense, false};

sim::LayerGraph layer(const char* architecture, const std::vector<std::string>& sets = {}) {
  return test::spec_layer(spec_text(architecture).c_str(), sets, kLayer);
}

struct Built {
  model::RunSpec spec;
  model::Derived d;
  sim::ShapeContext ctx;
};

Built build(const std::vector<std::string>& sets = {}) {
  auto r = model::parse_run_spec(spec_text("bert"), sets);
  for (const auto& d : r.diagnostics) INFO(model::format(d));
  REQUIRE(r.spec);
  REQUIRE_FALSE(model::has_errors(model::validate(*r.spec)));
  const auto d = model::derive(*r.spec);
  return {*r.spec, d, sim::make_shape_context(*r.spec, d)};
}

std::string held_names(const sim::ModuleProfile& p) {
  std::string out;
  for (const auto& t : p.held_tensors) out += t.name + " ";
  return out;
}

}  // namespace

TEST_CASE("BERT, TE unfused: each layer builds the full padding mask, saves it for its masked_fill, masks out of place",
          "[sim][graph][bert]") {
  const sim::LayerGraph bert = layer("bert"), gpt = layer("gpt");
  // get_full_mask's result, [b, 1, s, s] bool, saved by MaskedFillBackward0: the one saved tensor more than GPT's
  // causal layer (the fused ScaledMaskedSoftmax saves only its output, as the causal kernel does).
  const std::int64_t mask = kB * kS * kS;
  CHECK((sim::profile_module(bert, {}).held - sim::profile_module(gpt, {}).held).value == mask);
  const sim::OpNode* full = test::named(bert.ops, "get_full_mask");
  REQUIRE(full != nullptr);
  // Beside it while it runs: the OR-ed mask and its negation (bool), the int64 left and right window bounds, three
  // bool comparisons, and the int32 [s, s] position difference.
  CHECK(full->forward_workspace.value == mask * (1 + 1 + 8 + 8 + 3 - 1) + kS * kS * 4);
  const sim::OpNode* fill = test::named(bert.ops, "probs_masked_fill");
  REQUIRE(fill != nullptr);
  const std::int64_t scores = kB * kHeads * kS * kS * 2;  // bf16 [b, np, s, s]
  CHECK(bert.tensors.at(static_cast<std::size_t>(fill->outputs.front())).bytes.value == scores);
  CHECK(test::named(gpt.ops, "probs_masked_fill") == nullptr);
}

TEST_CASE("BERT, local spec: the padding kernel asks sq, not b x np, to fill whole blocks", "[sim][graph][bert]") {
  // sk 64: 32-thread warps, two rows a warp, 8 rows a block (fused_softmax.py get_batch_per_block). With b x np = 4
  // the causal kernel is refused (4 % 8) and PyTorch's softmax keeps its fp32 output; the padding kernel needs
  // sq % 8 == 0 and runs, saving only its bf16 output.
  const std::vector<std::string> sets = {"model.transformer_impl=local", "model.attention_backend=local", "model.seq_length=64",
                                         "model.num_attention_heads=4", "train.micro_batch_size=1",
                                         "model.attention_softmax_in_fp32=true"};
  const std::string bert = held_names(sim::profile_module(layer("bert", sets), {}));
  const std::string gpt = held_names(sim::profile_module(layer("gpt", sets), {}));
  CHECK(gpt.find("softmax.fp32") != std::string::npos);
  CHECK(bert.find("softmax.fp32") == std::string::npos);
  CHECK(bert.find("softmax.out") != std::string::npos);
}

TEST_CASE("BERT's embedding: positions, token types, their sums and the [s, b] copy", "[sim][graph][bert]") {
  const Built b = build();
  const sim::LayerGraph g = sim::build_embedding_graph(b.spec, b.d, b.ctx);
  const sim::ModuleProfile p = sim::profile_module(g, {});
  // Saved: the token ids (the input), the position ids (arange(s) expanded: s int64), the token types ([b, s]
  // int64) and the dropout's 1-byte mask.
  const std::int64_t n = kB * kS;
  CHECK(p.held.value == n * 8 + kS * 8 + n * 8 + n * kH);
  // Forward, beyond the ids: at the token-type sum the transposed copy, the token-type rows and their sum live.
  CHECK(test::named(g.ops, "add_position") != nullptr);
  CHECK(test::named(g.ops, "transpose_contiguous") != nullptr);
  const sim::OpNode* types = test::named(g.ops, "tokentype_embeddings");
  REQUIRE(types != nullptr);
  CHECK(types->backward_workspace.value == 2 * kH * 2);  // the dense [2, h] bf16 gradient
  // --bert-no-binary-head: no token types.
  const Built none = build({"model.bert_binary_head=false"});
  CHECK(sim::profile_module(sim::build_embedding_graph(none.spec, none.d, none.ctx), {}).held.value == n * 8 + kS * 8 + n * kH);
}

TEST_CASE("BERT's head: pooler, LM head, output layer with a bias, binary head, loss", "[sim][graph][bert]") {
  const std::int64_t n = kB * kS, act = n * kH * 2, stats = n * 4 * 2;
  const std::int64_t ce = n * kV * 4 + n * 9;  // vocab_parallel_cross_entropy's fp32 softmax and target mask
  SECTION("with the binary head") {
    const Built b = build();
    const sim::LayerGraph g = sim::build_output_graph(b.spec, b.d, b.ctx);
    // Saved: the final norm's input and row statistics, its output (pooler.dense and lm_head.dense save it),
    // tanh's [b, h], gelu's input (dense's output), the LM head norm's input and statistics, its output (the
    // output layer's input), the loss's fp32 softmax and mask, and the sentence-order log_softmax [b, 2] fp32.
    const std::int64_t expected = act + stats + act + kB * kH * 2 + act + act + stats + act + ce + kB * 2 * 4;
    CHECK(sim::profile_module(g, {}).held.value == expected);
    const sim::OpNode* out = test::named(g.ops, "output_layer");
    REQUIRE(out != nullptr);
    CHECK(out->forward_workspace.value == n * kV * 2);  // the GEMM's [s, b, V] before `+ bias`
    CHECK(out->backward_takes_workspaces);
  }
  SECTION("without it") {
    const Built b = build({"model.bert_binary_head=false"});
    const sim::LayerGraph g = sim::build_output_graph(b.spec, b.d, b.ctx);
    CHECK(sim::profile_module(g, {}).held.value == act + stats + act + act + act + stats + act + ce);
    CHECK(test::named(g.ops, "pooler.dense") == nullptr);
    CHECK(test::named(g.ops, "binary_head") == nullptr);
  }
}
