// T5Model's tensors (docs/research/encoder-models-memory-facts.md): the decoder layer's cross-attention, the step
// between the stacks, the local decoder's given causal mask, and the one stage's segments with the gradients carried
// across them. Expectations from shapes and dtypes.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "module_blocks.hpp"
#include "peakcast/model/layer_plan.hpp"
#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/validate.hpp"
#include "peakcast/sim/fitted_constants.hpp"
#include "peakcast/sim/layer_graph.hpp"
#include "peakcast/sim/module_graphs.hpp"
#include "peakcast/sim/time_model.hpp"
#include "spec_layer.hpp"
#include "stage_builder.hpp"

using namespace peakcast;

namespace {

// T5-base at the functional tests' shapes: encoder 512, decoder 128 tokens, micro-batch 4, bf16, 12 heads of 64.
constexpr std::int64_t kB = 4, kSe = 512, kSd = 128, kH = 768, kHeads = 12, kHd = 64, kV = 29184;

struct Built {
  model::RunSpec spec;
  model::Derived d;
  sim::ShapeContext enc, dec;
};

Built build(const std::vector<std::string>& sets = {}) {
  const char* text = R"({"model": {"architecture": "t5", "num_layers": 2, "hidden_size": 768, "num_attention_heads": 12,
      "kv_channels": 64, "ffn_hidden_size": 3072, "vocab_size": 29096, "should_pad_vocab": true, "seq_length": 512,
      "decoder_seq_length": 128, "max_position_embeddings": 512, "bf16": true, "attention_backend": "unfused",
      "bias_activation_fusion": true, "bias_dropout_fusion": true, "masked_softmax_fusion": true},
    "train": {"micro_batch_size": 4, "global_batch_size": 32},
    "cluster": {"num_gpus": 8, "gpu": "h100-sxm-80gb"}})";
  auto r = model::parse_run_spec(text, sets);
  for (const auto& d : r.diagnostics) INFO(model::format(d));
  REQUIRE(r.spec);
  const auto problems = model::validate(*r.spec);
  for (const auto& d : problems) INFO(model::format(d));
  REQUIRE_FALSE(model::has_errors(problems));
  const auto d = model::derive(*r.spec);
  const auto enc = sim::make_shape_context(*r.spec, d);
  return {*r.spec, d, enc, sim::t5_decoder_shape_context(*r.spec, d, enc)};
}

model::LayerSpec decoder_layer(bool cross) {
  model::LayerSpec l{2, model::MixerKind::attention, model::FfnKind::dense, false};
  l.cross_attention = cross;
  return l;
}

std::string held_names(const sim::ModuleProfile& p) {
  std::string out;
  for (const auto& t : p.held_tensors) out += t.name + " ";
  return out;
}

}  // namespace

TEST_CASE("T5's decoder layer: what its cross-attention saves, TE unfused", "[sim][graph][t5]") {
  const Built b = build();
  const auto with = sim::profile_module(sim::build_layer_graph(b.spec, b.d, b.dec, decoder_layer(true), false), {});
  const auto without = sim::profile_module(sim::build_layer_graph(b.spec, b.d, b.dec, decoder_layer(false), false), {});
  const std::int64_t nd = kB * kSd, ne = kB * kSe, width = kHeads * kHd;
  const std::int64_t e = kB * kHeads * kSd * kSe;  // cross scores [b, np, s_dec, s_enc]
  // The cross-attention's residual stream (cross_attn_bda's output, saved by the pre-MLP norm), the pre-norm's
  // output and row statistics, linear_kv's [s_enc, b, 2 np hn] (K and V are views), linear_q's output, the full
  // [b, 1, s_dec, s_enc] bool mask, the masked kernel's bf16 output, the dropout's mask and output, the core's output
  // (linear_proj's input) and the bias-dropout-add's mask. The encoder's output itself is held elsewhere (0 here).
  const std::int64_t cross = nd * kH * 2 + nd * kH * 2 + nd * 4 * 2 + ne * 2 * width * 2 + nd * width * 2 + kB * kSd * kSe +
                             e * 2 + e + e * 2 + nd * width * 2 + nd * kH;
  CHECK((with.held - without.held).value == cross);
}

TEST_CASE("T5's local decoder: the causal softmax takes the batch's mask, none is built", "[sim][graph][t5]") {
  // TP 4: b x np = 4 x 3 = 12, not a multiple of the causal kernel's 8 rows a block at 128 keys: PyTorch's softmax,
  // masked in place with the given [b, 1, s, s] mask (fused_softmax.py:323-327), not a causal mask of its own.
  const Built b = build({"model.transformer_impl=local", "model.attention_backend=auto", "model.tensor_model_parallel_size=4"});
  const std::string names = held_names(sim::profile_module(sim::build_layer_graph(b.spec, b.d, b.dec, decoder_layer(true), false), {}));
  CHECK(names.find("causal_mask") == std::string::npos);
  CHECK(names.find("given_attention_mask") != std::string::npos);
}

TEST_CASE("T5's step between the stacks: the encoder's final norm and output, the decoder tokens' embedding", "[sim][graph][t5]") {
  const Built b = build();
  const sim::LayerGraph g = sim::detail::t5_bridge_graph(b.spec, b.d, b.enc, b.dec);
  const std::int64_t nd = kB * kSd, ne = kB * kSe;
  // Held: the encoder's last hidden state (the norm's input) and row statistics, the norm's output (what every
  // decoder layer's linear_kv saves), the decoder token ids, their positions (arange(s_dec)) and the dropout mask.
  CHECK(sim::profile_module(g, {}).held.value == ne * kH * 2 + ne * 8 + ne * kH * 2 + nd * 8 + kSd * 8 + nd * kH);
  // Last in forward order: its backward, the first, makes the encoder output's gradient.
  REQUIRE_FALSE(g.ops.empty());
  CHECK(test::ends_with(g.ops.back().name, "output_for_cross_attention"));
}

TEST_CASE("T5's one stage: encoder, the step, decoder, head; the gradients carried across the stacks", "[sim][graph][t5]") {
  const Built b = build({"model.gradient_accumulation_fusion=true"});
  const auto plan = model::build_layer_plan(b.spec, b.d);
  REQUIRE(plan.stages.size() == 1);
  sim::detail::StageBuilder sb(b.spec, b.d);
  const sim::TimeModel time(b.spec.cluster.gpu, sim::FittedConstants{});
  const auto chunks = sb.stage(b.spec, b.d, plan.stages[0], 0, sim::GraphBypass::none, time);
  REQUIRE(chunks.size() == 1);
  std::vector<std::string> names;
  for (const auto& s : chunks[0].segments) names.push_back(s.name);
  CHECK(names == std::vector<std::string>{"embedding", "L0", "L1", "t5_bridge", "L2", "L3", "output"});
  const auto& segs = chunks[0].segments;
  // The last decoder layer starts the [s_enc, b, h] gradient of the encoder's output; the step takes it over.
  CHECK(segs[5].carried_activation_grad.value == kB * kSe * kH * 2);
  CHECK(segs[3].takes_carried_activation_grad);
  // Under gradient-accumulation fusion the tied output layer writes main_grad, so the decoder tokens' lookup
  // starts the embedding weight's dense [V, h] gradient, kept until the encoder tokens' lookup.
  CHECK(segs[3].carried_weight_grad.value == kV * kH * 2);
  CHECK(segs[6].carried_weight_grad.value == 0);
}
