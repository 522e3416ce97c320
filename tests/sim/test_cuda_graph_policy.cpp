// Checkpoints inside CUDA-graph scopes: tensor_parallel.checkpoint is bypassed while a graph is
// captured (random.py:677); with FP8 the mlp/moe regions use TE's checkpoint, which is not.
#include <catch2/catch.hpp>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/validate.hpp"
#include "peakcast/sim/policy.hpp"
#include "peakcast/sim/prediction.hpp"

using namespace peakcast;

namespace {
model::RunSpec spec(const std::string& fp8, const std::string& modules) {
  const std::string text = R"({
    "model": {"preset": "llama3-8b", "num_layers": 4, "seq_length": 8192, "bf16": true,
              "transformer_impl": "transformer_engine", )" +
                           fp8 + R"(
              "cuda_graph_impl": "transformer_engine", "cuda_graph_modules": ["mlp"], "use_te_rng_tracker": true,
              "recompute_granularity": "selective", "recompute_modules": )" +
                           modules + R"(},
    "train": {"micro_batch_size": 4, "global_batch_size": 4},
    "cluster": {"num_gpus": 1, "gpu": "h100-sxm-80gb"}})";
  auto r = model::parse_run_spec(text);
  REQUIRE(r.spec);
  REQUIRE_FALSE(model::has_errors(model::validate(*r.spec)));
  return *r.spec;
}
const model::LayerSpec kDense{0, model::MixerKind::attention, model::FfnKind::dense, false};
}  // namespace

TEST_CASE("an mlp scope capture bypasses bf16 mlp recompute but not FP8's TE checkpoint", "[sim][cuda_graph]") {
  const auto bf16 = spec("", R"(["mlp"])");
  const auto fp8 = spec(R"("fp8": "hybrid", "fp8_recipe": "tensorwise",)", R"(["mlp"])");
  CHECK((sim::regions_bypassed_by_cuda_graphs(bf16, kDense) & sim::kMlp) != 0);
  CHECK((sim::regions_bypassed_by_cuda_graphs(fp8, kDense) & sim::kMlp) == 0);
  // The attention scope is not captured here, so core_attn is never bypassed.
  CHECK((sim::regions_bypassed_by_cuda_graphs(bf16, kDense) & sim::kCoreAttn) == 0);

  // bf16: the eager warm-up iterations before the capture (cuda_graph_warmup_steps, 3) still
  // recompute the MLP and allocate less, but the replaying iterations keep the whole MLP's saved
  // set in the graph pool: what the device must hold is the same as without recompute.
  const auto none_bf16 = spec("", "[]");
  const auto p_bf16 = sim::predict(bf16), p_none_bf16 = sim::predict(none_bf16);
  CHECK(p_bf16.max_peak_allocated < p_none_bf16.max_peak_allocated);
  CHECK(p_bf16.ranks[0].reserved_outside_allocated == p_none_bf16.ranks[0].reserved_outside_allocated);
  CHECK(p_bf16.ranks[0].peak_with_graph_pool == p_none_bf16.ranks[0].peak_with_graph_pool);
  // FP8: TE's checkpoint works inside the capture, so the pool holds less.
  const auto none_fp8 = spec(R"("fp8": "hybrid", "fp8_recipe": "tensorwise",)", "[]");
  const auto p_fp8 = sim::predict(fp8), p_none_fp8 = sim::predict(none_fp8);
  CHECK(p_fp8.max_peak_allocated < p_none_fp8.max_peak_allocated);
  CHECK(p_fp8.ranks[0].reserved_outside_allocated < p_none_fp8.ranks[0].reserved_outside_allocated);
  CHECK(p_fp8.ranks[0].peak_with_graph_pool < p_none_fp8.ranks[0].peak_with_graph_pool);
}

TEST_CASE("a captured layer's forward is one graph replay on the host, not one call per op", "[sim][cuda_graph][time]") {
  // Whole-layer capture (no scope list): each extra layer adds one host call when captured and its
  // op calls when not; the difference between 4 and 2 layers isolates the two added layers.
  const auto calls = [](int layers, bool captured) {
    const std::string text = R"({
      "model": {"preset": "llama3-8b", "num_layers": )" +
                             std::to_string(layers) + R"(, "seq_length": 4096, "bf16": true,
                "transformer_impl": "transformer_engine", "use_te_rng_tracker": true, "cuda_graph_impl": ")" +
                             (captured ? "transformer_engine" : "none") + R"("},
      "train": {"micro_batch_size": 1, "global_batch_size": 1},
      "cluster": {"num_gpus": 1, "gpu": "h100-sxm-80gb"}})";
    auto r = model::parse_run_spec(text);
    REQUIRE(r.spec);
    REQUIRE_FALSE(model::has_errors(model::validate(*r.spec)));
    return sim::predict(*r.spec).ranks.front().time.host_forward_calls;
  };
  const double per_layer_eager = (calls(4, false) - calls(2, false)) / 2.0;
  const double per_layer_captured = (calls(4, true) - calls(2, true)) / 2.0;
  CHECK(per_layer_eager > 5);  // a transformer layer is many op calls
  CHECK(per_layer_captured == Approx(1.0));
  // Embedding and output are not captured: the same calls either way.
  CHECK(calls(2, true) - 2 * per_layer_captured == Approx(calls(2, false) - 2 * per_layer_eager));
}
