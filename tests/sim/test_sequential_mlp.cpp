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
