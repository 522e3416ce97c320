// SequentialMLP (experts.py:1321-1372, sim/src/moe_graphs.cpp sequential_mlp): the local stack's
// experts without grouped GEMM. Expectations from shapes: 4096 tokens x top-6 = 24576 rows on the
// rank (EP8 under a single-rank harness: the all-to-all returns what it sends), hidden 2048 bf16,
// 64 experts over 8 ranks = 8 local experts of 3072 rows each.
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
#include "sequential_mlp_spec.hpp"
#include "spec_layer.hpp"

using namespace peakcast;

namespace {

constexpr std::int64_t kRows = 4096 * 6, kHidden = 2048, kBf16 = 2;

const char* const kSpec = test::kSequentialMlpSpec;

sim::LayerGraph moe_layer(const std::vector<std::string>& sets = {}) { return test::spec_layer(kSpec, sets, {1, model::MixerKind::attention, model::FfnKind::moe, false}); }

using test::ends_with;

int count_ops(const sim::LayerGraph& g, const std::string& tail) {
  int n = 0;
  for (const auto& o : g.ops) n += ends_with(o.name, tail) ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("SequentialMLP runs each local expert on its share of the rows, split as views and catted", "[sim][moe]") {
  const auto g = moe_layer();
  constexpr std::int64_t kLocal = 8, kShare = kRows / kLocal;
  CHECK(count_ops(g, ".local_experts.0.linear_fc1") == 1);
  CHECK(count_ops(g, ".local_experts.7.linear_fc2") == 1);
  CHECK(count_ops(g, ".local_experts.8.linear_fc1") == 0);
  for (const auto& o : g.ops)
    if (o.name.find(".local_experts.") != std::string::npos && ends_with(o.name, ".linear_fc1"))
      CHECK(o.forward_flops == Approx(2.0 * kShare * kHidden * 2 * 1408));  // gated fc1: 2 x 1408 columns
  const sim::OpNode* split = nullptr;
  const sim::OpNode* cat = nullptr;
  for (const auto& o : g.ops) {
    if (ends_with(o.name, "experts.split")) split = &o;
    if (ends_with(o.name, "experts.cat")) cat = &o;
  }
  REQUIRE(split);
  REQUIRE(cat);
  // torch.split's pieces are views: no bytes of their own; each one's gradient is its own tensor.
  REQUIRE(split->outputs.size() == 2 * kLocal);  // rows and probabilities
  for (std::size_t e = 0; e < static_cast<std::size_t>(kLocal); ++e) {
    const auto& rows = g.tensors[static_cast<std::size_t>(split->outputs[e])];
    const auto& probs = g.tensors[static_cast<std::size_t>(split->outputs[kLocal + e])];
    CHECK(rows.bytes.value == 0);
    CHECK(rows.gradient_bytes().value == kShare * kHidden * kBf16);
    CHECK(probs.bytes.value == 0);
    CHECK(probs.gradient_bytes().value == kShare * 4);  // fp32 router probabilities
  }
  // The cat hands every expert a view of its output gradient; the first expert's holds the block.
  CHECK(cat->grad_passthrough);
  REQUIRE(cat->inputs.size() == kLocal);
  CHECK(g.tensors[static_cast<std::size_t>(cat->inputs.front())].gradient_bytes().value == kRows * kHidden * kBf16);
  CHECK(g.tensors[static_cast<std::size_t>(cat->inputs.back())].gradient_bytes().value == kShare * kHidden * kBf16);
}

TEST_CASE("SequentialMLP's backward: eight per-expert input gradients, then SplitBackward's cat of all rows beside them", "[sim][moe]") {
  const auto g = moe_layer();
  constexpr std::int64_t kShareBytes = kRows / 8 * kHidden * kBf16, kAllBytes = kRows * kHidden * kBf16;
  const auto script = sim::detail::module_script(g, sim::CheckpointSet{});
  std::vector<std::int64_t> live(static_cast<std::size_t>(script.slots()), 0);
  int share_grads_live = 0, most = 0;
  bool cat_seen = false;
  int live_at_cat = -1;
  for (const auto& st : script.backward) {
    auto& b = live[static_cast<std::size_t>(st.slot)];
    if (st.kind == sim::detail::ModuleScript::Kind::alloc) {
      if (st.slot >= script.tensors && st.slot < 2 * script.tensors && st.bytes == kShareBytes) most = std::max(most, ++share_grads_live);
      if (st.bytes == kAllBytes && share_grads_live == 8 && !cat_seen) {
        cat_seen = true;
        live_at_cat = share_grads_live;
      }
      b = st.bytes;
    } else if (st.kind == sim::detail::ModuleScript::Kind::free) {
      if (st.slot >= script.tensors && st.slot < 2 * script.tensors && b == kShareBytes) --share_grads_live;
      b = 0;
    }
  }
  CHECK(most == 8);
  CHECK(cat_seen);
  CHECK(live_at_cat == 8);
  CHECK(share_grads_live == 0);
}

TEST_CASE("SequentialMLP with one local expert runs it on the rows as they are: no split, no cat", "[sim][moe]") {
  const auto g = moe_layer({"model.expert_model_parallel_size=64", "cluster.num_gpus=64", "train.global_batch_size=64"});
  CHECK(count_ops(g, ".local_experts.0.linear_fc1") == 1);
  CHECK(count_ops(g, ".local_experts.1.linear_fc1") == 0);
  CHECK(count_ops(g, "experts.split") == 0);
  CHECK(count_ops(g, "experts.cat") == 0);
}

TEST_CASE("SequentialMLP under moe recompute: an expert's fc1 output lives until glu's product, beside silu's and the offset sum", "[sim][moe]") {
  // Without grad nothing is saved, so a tensor goes when Python drops its last reference: glu(x)'s argument
  // holds fc1's output until act(x0) * (x1 + 0.0) is made (mlp.py:322-332), then the two factors go with the
  // expression, then fc1's output when the caller's variable is rebound (traced: layout_fake_ep8_moonlight4_moe_r0).
  const auto g = moe_layer();
  constexpr std::int64_t kShare = kRows / 8, kFfn = 1408;
  const auto index = [&g](const std::string& tail) { return test::tensor_index(g, tail); };
  const std::int32_t fc1 = index("local_experts.0.linear_fc1.out"), silu = index("local_experts.0.activation.silu"),
                     sum = index("local_experts.0.activation.linear_plus_offset"), glu = index("local_experts.0.activation.glu");
  CHECK(g.tensors[static_cast<std::size_t>(fc1)].bytes.value == kShare * 2 * kFfn * kBf16);
  for (const std::int32_t t : {silu, sum, glu}) CHECK(g.tensors[static_cast<std::size_t>(t)].bytes.value == kShare * kFfn * kBf16);
  sim::CheckpointSet moe;
  moe.keep_inputs = sim::kMoe;
  const auto script = sim::detail::module_script(g, moe);
  bool glu_made = false;
  test::walk_forward(script, [&](std::int32_t slot, const std::vector<bool>& live) {
    if (slot != glu) return;
    glu_made = true;
    CHECK(live[static_cast<std::size_t>(fc1)]);
    CHECK(live[static_cast<std::size_t>(silu)]);
    CHECK(live[static_cast<std::size_t>(sum)]);
  });
  REQUIRE(glu_made);
  // Nothing of the expert is held for backward: the checkpoint keeps only the layer's inputs.
  for (const std::int32_t t : {fc1, silu, sum, glu}) CHECK(std::find(script.held.begin(), script.held.end(), t) == script.held.end());
}

TEST_CASE("TEGroupedMLP under moe recompute: fc1's output outlives the activation until linear_fc2 is done", "[sim][moe]") {
  // TEGroupedMLP.forward's local fc1_output keeps fc1's output until the forward returns (experts.py:795-905);
  // without grad that is after linear_fc2 has made its output.
  const auto g = moe_layer({"model.transformer_impl=\"transformer_engine\"", "model.moe_grouped_gemm=true",
                            "model.attention_backend=\"auto\"", "cluster.transformer_engine_available=true"});
  const auto index = [&g](const std::string& tail) { return test::tensor_index(g, tail); };
  const std::int32_t fc1 = index("experts.linear_fc1.out"), fc2 = index("experts.linear_fc2.out");
  CHECK(g.tensors[static_cast<std::size_t>(fc1)].bytes.value == kRows * 2 * 1408 * kBf16);
  CHECK(g.tensors[static_cast<std::size_t>(fc2)].bytes.value == kRows * kHidden * kBf16);
  sim::CheckpointSet moe;
  moe.keep_inputs = sim::kMoe;
  const auto script = sim::detail::module_script(g, moe);
  bool fc1_live = false, fc2_made = false;
  for (const auto& st : script.forward) {
    if (st.slot == fc1) fc1_live = st.kind == sim::detail::ModuleScript::Kind::alloc;
    if (st.slot == fc2 && st.kind == sim::detail::ModuleScript::Kind::alloc) {
      fc2_made = true;
      CHECK(fc1_live);
    }
  }
  CHECK(fc2_made);
  CHECK_FALSE(fc1_live);  // and freed before the layer's forward ends
}

TEST_CASE("MoE layer: custom_forward's locals keep the permuted and received rows to the layer's end, the sorted rows to the sort back", "[sim][moe]") {
  // moe_layer.py:651-692: hidden_states is rebound to preprocess's permuted rows and dispatched_input to the
  // dispatch's received rows; routed_experts_compute's dispatched_input (the rows sorted by expert) lives until it
  // returns after combine_preprocess. Sizes: 24576 rows x 2048 bf16 each.
  const auto g = moe_layer();
  const auto index = [&g](const std::string& tail) { return test::tensor_index(g, tail); };
  const std::int32_t permuted = index("dispatch.permuted_tokens"), received = index("dispatch.received"), sorted = index("dispatch.sorted"),
                     unsorted = index("combine.unsorted"), unpermuted = index("combine.unpermuted");
  for (const std::int32_t t : {permuted, received, sorted}) CHECK(g.tensors[static_cast<std::size_t>(t)].bytes.value == kRows * kHidden * kBf16);
  for (const bool recompute : {false, true}) {
    sim::CheckpointSet ckpt;
    if (recompute) ckpt.keep_inputs = sim::kMoe;
    const auto script = sim::detail::module_script(g, ckpt);
    bool checked_unsorted = false, checked_unpermuted = false;
    test::walk_forward(script, [&](std::int32_t slot, const std::vector<bool>& live) {
      if (slot == unsorted) {
        checked_unsorted = true;
        CHECK(live[static_cast<std::size_t>(sorted)]);
      }
      if (slot == unpermuted) {
        checked_unpermuted = true;
        CHECK(live[static_cast<std::size_t>(permuted)]);
        CHECK(live[static_cast<std::size_t>(received)]);
        // Without grad it went when routed_experts_compute returned; with grad the experts' fc1 saved views of it.
        CHECK(live[static_cast<std::size_t>(sorted)] == !recompute);
      }
    });
    CHECK(checked_unsorted);
    CHECK(checked_unpermuted);
  }
}

TEST_CASE("MoE layer with probabilities on the input: the sort back keeps the sorted rows, not the scaled ones", "[sim][moe]") {
  // routed_experts_compute's dispatched_input is the sorted rows; the experts' scaled copy (experts.py:1329-1338) is
  // their own local, gone when they return.
  const auto g = moe_layer({"model.moe_router_topk=1", "model.moe_router_pre_softmax=true", "model.moe_apply_probs_on_input=true"});
  const std::int32_t sorted = test::tensor_index(g, "dispatch.sorted"), scaled = test::tensor_index(g, "experts.probs_on_input"),
                     unsorted = test::tensor_index(g, "combine.unsorted");
  const auto live = test::live_at_alloc(g, sim::kMoe, unsorted);
  REQUIRE_FALSE(live.empty());
  CHECK(live[static_cast<std::size_t>(sorted)]);
  CHECK_FALSE(live[static_cast<std::size_t>(scaled)]);
}
