// Mamba mixer tensors whose existence depends on the micro-batch (mamba_mixer.py rearranges).
#include <catch2/catch.hpp>

#include <string>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/sim/layer_graph.hpp"
#include "peakcast/sim/module_graphs.hpp"

using namespace peakcast;

TEST_CASE("Mamba's l b d -> b l d rearranges copy only with more than one sequence per micro-batch", "[sim][graph]") {
  // Nemotron 3 Nano's Mamba mixer: 64 heads x 64, 8 groups x 128 states; in_proj width
  // 2 x 4096 + 2 x 8 x 128 + 64 = 10304.
  const auto graph = [](int mbs) {
    auto r = model::parse_run_spec(R"({"model":{"preset":"nemotron-3-nano-30b-a3b","seq_length":2048,"bf16":true},
      "train":{"micro_batch_size":)" +
                                   std::to_string(mbs) + R"(,"global_batch_size":)" + std::to_string(8 * mbs) + R"(},
      "cluster":{"num_gpus":8,"gpu":"h100-sxm-80gb"}})");
    REQUIRE(r.spec);
    const auto d = model::derive(*r.spec);
    const auto ctx = sim::make_shape_context(*r.spec, d);
    const model::LayerSpec layer{0, model::MixerKind::mamba, model::FfnKind::none, false};
    return sim::build_layer_graph(*r.spec, d, ctx, layer, true);
  };
  const auto find = [](const sim::LayerGraph& g, const std::string& suffix) -> const sim::OpNode* {
    for (const auto& op : g.ops)
      if (op.name.size() >= suffix.size() && op.name.compare(op.name.size() - suffix.size(), suffix.size(), suffix) == 0) return &op;
    return nullptr;
  };
  const auto one = graph(1);
  CHECK(find(one, "mixer.transpose") == nullptr);
  CHECK(find(one, "mixer.y_transpose") == nullptr);
  const auto two = graph(2);
  const sim::OpNode* t = find(two, "mixer.transpose");
  REQUIRE(t != nullptr);
  REQUIRE(find(two, "mixer.y_transpose") != nullptr);
  // The copy is [tokens, width] bf16: 2 x 2048 tokens x 10304 x 2 bytes.
  REQUIRE(t->outputs.size() == 1);
  CHECK(two.tensors.at(static_cast<std::size_t>(t->outputs.front())).bytes.value == 2LL * 2048 * 10304 * 2);
}
