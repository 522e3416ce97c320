// The loss module under each cross-entropy implementation, against sizes written out from the shapes:
// tokens x (padded vocabulary / TP) elements of fp32 for the softmax the unfused and fused native paths
// save, and for the gradient buffer the fused native path's compiled backward adds.
#include <catch2/catch.hpp>

#include <string>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/sim/layer_graph.hpp"
#include "peakcast/sim/module_graphs.hpp"

using namespace peakcast;

namespace {
sim::ModuleProfile loss_profile(const std::string& model_extra, std::int64_t tp, const std::string& cluster_extra = "") {
  auto r = model::parse_run_spec(R"({
    "defaults": "megatron-core", "model": {"preset": "llama3-8b", "num_layers": 2, "seq_length": 1024, "bf16": true,
              "tensor_model_parallel_size": )" +
                                 std::to_string(tp) + model_extra + R"(},
    "train": {"micro_batch_size": 2, "global_batch_size": 2},
    "cluster": {"num_gpus": )" + std::to_string(tp) +
                                 R"(, "gpu": "h100-sxm-80gb")" + cluster_extra + "}}");
  REQUIRE(r.spec);
  const model::Derived d = model::derive(*r.spec);
  const sim::ShapeContext ctx = sim::make_shape_context(*r.spec, d);
  return sim::profile_module(sim::build_output_graph(*r.spec, d, ctx), sim::CheckpointSet{});
}

// Llama 3 8B: vocabulary 128256, padded to a multiple of 128 x TP.
std::int64_t padded_vocab(std::int64_t tp) {
  const std::int64_t m = 128 * tp;
  return (128256 + m - 1) / m * m;
}
}  // namespace

TEST_CASE("the fused native cross-entropy's backward adds an fp32 gradient buffer to the bf16 one",
          "[sim][graph][loss]") {
  for (const std::int64_t tp : {1, 2}) {
    const std::int64_t N = 1024 * 2, V = padded_vocab(tp) / tp;
    const auto unfused = loss_profile("", tp);
    const auto fused = loss_profile(R"(, "cross_entropy_loss_fusion": true, "cross_entropy_fusion_impl": "native")", tp);
    INFO("tp " << tp << " fused " << fused.backward_peak_excess.value << " unfused " << unfused.backward_peak_excess.value);
    // Both save the same fp32 softmax.
    CHECK(fused.held == unfused.held);
    CHECK(unfused.held >= Bytes{N * V * 4});
    // Fused: at the loss backward the new fp32 gradient and the bf16 gradient of the logits are both
    // alive beyond what was held (plus the loss gradient, a few bytes a token).
    const Bytes both{N * V * 4 + N * V * 2};
    CHECK(fused.backward_peak_excess >= both);
    CHECK(fused.backward_peak_excess - both <= Bytes{16 * N});
    // Unfused: the gradient is written into the saved softmax; no fp32 buffer appears.
    CHECK(unfused.backward_peak_excess < Bytes{N * V * 4});
    CHECK(fused.forward_peak_excess == unfused.forward_peak_excess);
  }
}

TEST_CASE("TE's cross-entropy saves the bf16 logits, not an fp32 softmax", "[sim][graph][loss]") {
  const std::int64_t N = 1024 * 2, V = padded_vocab(1);
  const auto te = loss_profile(R"(, "transformer_impl": "transformer_engine", "cross_entropy_loss_fusion": true, "cross_entropy_fusion_impl": "te")", 1);
  const auto native = loss_profile(R"(, "transformer_impl": "transformer_engine")", 1);
  // Native: the fp32 softmax and the target mask (bool + int64, 9 bytes a token). TE: the bf16 logits
  // (their gradient is written over them) and three fp32 statistics a token.
  CHECK(native.held - te.held == Bytes{(N * V * 4 + N * 9) - (N * V * 2 + N * 12)});
}

TEST_CASE("TE's cross-entropy from 2.18 saves an fp32 gradient instead of the bf16 logits", "[sim][graph][loss]") {
  const std::int64_t N = 1024 * 2, V = padded_vocab(1);
  const std::string te = R"(, "transformer_impl": "transformer_engine", "cross_entropy_loss_fusion": true, "cross_entropy_fusion_impl": "te")";
  const auto before = loss_profile(te, 1);  // the default release, 2.16
  const auto after = loss_profile(te, 1, R"(, "transformer_engine_version": "2.18.0")");
  // 2.16: the bf16 logits and three fp32 statistics a token are saved; 2.18: the fp32 gradient
  // (triton/cross_entropy.py:58, cross_entropy.py:62), the statistics freed with the forward.
  CHECK(after.held - before.held == Bytes{N * V * 4 - (N * V * 2 + N * 12)});
  // Its backward returns the fp32 gradient; autograd casts it to the logits' bf16, a new tensor, while
  // the saved fp32 one is still alive. Before 2.18 the gradient is written over the logits.
  INFO("backward excess before " << before.backward_peak_excess.value << " after " << after.backward_peak_excess.value);
  CHECK(after.backward_peak_excess >= Bytes{N * V * 2});
  // So the module's backward peak is one bf16 logits higher (the statistics' few bytes a token aside).
  const Bytes rise = after.held + after.backward_peak_excess - (before.held + before.backward_peak_excess);
  CHECK(rise >= Bytes{N * V * 2 - N * 16});
  CHECK(rise <= Bytes{N * V * 2 + N * 16});
}
