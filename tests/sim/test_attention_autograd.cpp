// The unfused local attention's backward through the in-place masked scores
// (sim/src/attention_graphs.cpp): Megatron fills the causal mask into a view of the baddbmm result,
// so autograd runs the view's AsStridedBackward0 and CopySlices before the baddbmm's own backward.
// Expectations from shapes: scores [b x np, s, s] bf16 = 4 x 32 x 2048 x 2048 x 2 = 1 GiB; and from
// the H200 trace of the same shapes (fam_gpt3_pp2_sel_empty_r1): after the softmax's gradient,
// four score-sized blocks live at once, three of them let go before the query and key gradients,
// seven requests in all.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "module_script.hpp"
#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/validate.hpp"
#include "peakcast/sim/layer_graph.hpp"
#include "peakcast/sim/module_graphs.hpp"
#include "script_walk.hpp"
#include "spec_layer.hpp"

using namespace peakcast;

namespace {

constexpr std::int64_t kScores = 4LL * 32 * 2048 * 2048 * 2;

const char* kLocal = R"({
  "model": {"num_layers": 2, "hidden_size": 2560, "num_attention_heads": 32, "ffn_hidden_size": 10240,
            "vocab_size": 50304, "seq_length": 2048, "bf16": true, "transformer_impl": "local",
            "attention_backend": "unfused", "masked_softmax_fusion": false, "attention_softmax_in_fp32": false,
            "normalization": "LayerNorm", "gated_linear_unit": false, "activation_func": "gelu",
            "add_bias_linear": false, "hidden_dropout": 0.0, "attention_dropout": 0.0,
            "position_embedding_type": "learned_absolute"},
  "train": {"micro_batch_size": 4, "global_batch_size": 8},
  "cluster": {"num_gpus": 1, "gpu": "h200-141gb", "transformer_engine_available": false}})";

sim::LayerGraph layer(const std::vector<std::string>& sets) { return test::spec_layer(kLocal, sets, {0, model::MixerKind::attention, model::FfnKind::dense, false}); }

const sim::OpNode& baddbmm(const sim::LayerGraph& g) {
  for (const auto& o : g.ops)
    if (o.name.size() >= 7 && o.name.compare(o.name.size() - 7, 7, "baddbmm") == 0) return o;
  FAIL("no baddbmm");
  return g.ops.front();
}

}  // namespace

TEST_CASE("the masked scores' view costs three score-sized blocks ahead of the baddbmm's backward", "[sim][attention]") {
  const auto g = layer({});
  const auto& qk = baddbmm(g);
  CHECK(qk.backward_workspace.value == 3 * kScores);
  REQUIRE(qk.backward_blocks.size() == 3);
  for (const auto b : qk.backward_blocks) CHECK(b.value == kScores);
  CHECK(qk.backward_scratch_first);

  // The backward script: the probabilities' gradient, the softmax's input gradient and its scratch;
  // AsStridedBackward0's zeroed gradient while the softmax's lives, then CopySlices' new gradient for
  // the baddbmm with its clone and the mask's gradient: seven requests as traced, at most four live.
  const auto script = sim::detail::module_script(g, sim::CheckpointSet{});
  std::vector<std::int64_t> live(static_cast<std::size_t>(script.slots()), 0);
  int requests = 0, most = 0, now = 0;
  for (const auto& st : script.backward) {
    auto& b = live[static_cast<std::size_t>(st.slot)];
    if (st.kind == sim::detail::ModuleScript::Kind::alloc && st.bytes == kScores) {
      ++requests;
      most = std::max(most, ++now);
    } else if (st.kind == sim::detail::ModuleScript::Kind::free && b == kScores) {
      --now;
    }
    if (st.kind == sim::detail::ModuleScript::Kind::alloc) b = st.bytes;
    if (st.kind == sim::detail::ModuleScript::Kind::free) b = 0;
  }
  CHECK(requests == 7);
  CHECK(most == 4);  // CopySlices' result, its clone, the mask's gradient, the zeroed one

  // Neither the fp32 softmax (its input is a new fp32 tensor, not a view) nor TE's modules do this.
  CHECK(baddbmm(layer({"model.attention_softmax_in_fp32=true"})).backward_blocks.empty());
}

TEST_CASE("Megatron's default causal mask: fp32 ones and triu's fp32 copy alive together, then the bool mask", "[sim][attention]") {
  // get_default_causal_mask (utils.py:37-39): torch.triu(torch.ones(s, s), diagonal=1).bool() on every forward.
  constexpr std::int64_t kSquare = 2048LL * 2048 * 4, kMask = 2048LL * 2048;
  const auto g = layer({});
  const auto index = [&g](const std::string& tail) { return test::tensor_index(g, tail); };
  const std::int32_t ones = index("causal_mask.ones"), upper = index("causal_mask.triu"), mask = index("causal_mask");
  CHECK(g.tensors[static_cast<std::size_t>(ones)].bytes.value == kSquare);
  CHECK(g.tensors[static_cast<std::size_t>(upper)].bytes.value == kSquare);
  CHECK(g.tensors[static_cast<std::size_t>(mask)].bytes.value == kMask);
  const auto script = sim::detail::module_script(g, sim::CheckpointSet{});
  // The order of the five requests: +ones +triu -ones +mask -triu.
  std::vector<std::string> seen;
  for (const auto& st : script.forward) {
    const char* name = st.slot == ones ? "ones" : st.slot == upper ? "triu"
                                              : st.slot == mask    ? "mask"
                                                                   : nullptr;
    if (name == nullptr) continue;
    if (st.kind == sim::detail::ModuleScript::Kind::alloc) seen.push_back(std::string("+") + name);
    if (st.kind == sim::detail::ModuleScript::Kind::free) seen.push_back(std::string("-") + name);
  }
  CHECK(seen == std::vector<std::string>{"+ones", "+triu", "-ones", "+mask", "-triu"});
  // The mask is saved for the backward (masked_fill_), the two fp32 squares are not.
  CHECK(std::find(script.held.begin(), script.held.end(), mask) != script.held.end());
  CHECK(std::find(script.held.begin(), script.held.end(), ones) == script.held.end());
  CHECK(std::find(script.held.begin(), script.held.end(), upper) == script.held.end());
}

TEST_CASE("core_attn recompute's first forward keeps the scores and the probabilities until the context is made", "[sim][attention]") {
  // Without grad nothing is saved; DotProductAttention.forward's locals attention_scores and attention_probs live
  // until it returns, after the context's permute (dot_product_attention.py). Both are [4 x 32, 2048, 2048] bf16.
  const auto g = layer({});
  const std::int32_t scores = test::tensor_index(g, "scores"), probs = test::tensor_index(g, "softmax.out"),
                     ctx = test::tensor_index(g, "core_attention.out");
  CHECK(g.tensors[static_cast<std::size_t>(scores)].bytes.value == kScores);
  CHECK(g.tensors[static_cast<std::size_t>(probs)].bytes.value == kScores);
  const auto live = test::live_at_alloc(g, sim::kCoreAttn, ctx);
  REQUIRE_FALSE(live.empty());
  CHECK(live[static_cast<std::size_t>(scores)]);
  CHECK(live[static_cast<std::size_t>(probs)]);
}
