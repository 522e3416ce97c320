// torch's CUDA sum over the outer dimension (sim/include/peakcast/sim/torch_reduce.hpp) and the bias
// gradients that use it. The first five expectations are the staging buffers traced on the H200
// (docs/research/reduce-staging-buffer.md: _record_memory_history around grad.sum(dim=0)); the rest are
// worked by hand from setReduceConfig's steps, written out in each comment.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/validate.hpp"
#include "peakcast/sim/layer_graph.hpp"
#include "peakcast/sim/module_graphs.hpp"
#include "peakcast/sim/torch_reduce.hpp"
#include "spec_layer.hpp"

using namespace peakcast;

namespace {

model::GpuSpec h200() {
  model::GpuSpec g;
  g.multiprocessor_count = 132;
  g.max_threads_per_multiprocessor = 2048;
  return g;
}

}  // namespace

TEST_CASE("torch's outer sum stages the traced buffers on the H200", "[torch_reduce]") {
  struct Row {
    std::int64_t rows, cols, staging, semaphores;
  };
  // bf16 inputs; each measured buffer and semaphore block from the H200 traces.
  const std::vector<Row> traced = {{8192, 2560, 138936320, 80},
                                   {8192, 10240, 141557760, 320},
                                   {4096, 4096, 134217728, 128},
                                   {8192, 1024, 67108864, 32},
                                   {4096, 128256, 262668288, 4008}};
  for (const auto& r : traced) {
    INFO(r.rows << " x " << r.cols);
    const auto l = sim::outer_sum_launch(r.rows, r.cols, 2, h200());
    CHECK(l.staging.value == r.staging);
    CHECK(l.semaphores.value == r.semaphores);
    CHECK(l.accumulation.value == 0);
    CHECK(sim::outer_sum_transient(l).value == r.staging + r.semaphores);
  }
}

TEST_CASE("the outer sum's launch follows setReduceConfig's steps", "[torch_reduce]") {
  SECTION("four outputs a thread: 32 x 4 threads, 16 blocks an SM, 2112 target blocks") {
    // [8192, 2560]: grid_x = 2560 / 4 / 32 = 20; 8192 / 4 = 2048 values a thread;
    // ctas = max(min(ceil(2112 / 20) = 106, 2048 / 16 = 128), 2048 / 256 = 8) = 106.
    const auto l = sim::outer_sum_launch(8192, 2560, 2, h200());
    CHECK(l.output_vec_size == 4);
    CHECK(l.block_x == 32);
    CHECK(l.block_y == 4);
    CHECK(l.grid_x == 20);
    CHECK(l.ctas_per_output == 106);
    CHECK(l.staging.value == 4 * 2560 * 106 * 32 * 4);
  }
  SECTION("an odd width is not vectorised: 32 x 16 threads, 4 blocks an SM") {
    // 2561 columns: grid_x = ceil(2561 / 32) = 81; 8192 / 16 = 512 values a thread; target 132 x 4 = 528;
    // ctas = max(min(ceil(528 / 81) = 7, 512 / 16 = 32), 512 / 256 = 2) = 7.
    const auto l = sim::outer_sum_launch(8192, 2561, 2, h200());
    CHECK(l.output_vec_size == 1);
    CHECK(l.block_y == 16);
    CHECK(l.ctas_per_output == 7);
    CHECK(l.staging.value == 4 * 2561 * 7 * 32);
    CHECK(l.semaphores.value == 4 * 81);
  }
  SECTION("fp32 inputs stage the same fp32 partials") {
    CHECK(sim::outer_sum_launch(8192, 2560, 4, h200()).staging.value == 138936320);
  }
  SECTION("few rows: one block per output, nothing staged") {
    // 512 rows / 4 = 128 values a thread, under 256.
    const auto l = sim::outer_sum_launch(512, 2560, 2, h200());
    CHECK(l.ctas_per_output == 1);
    CHECK(sim::outer_sum_transient(l).value == 0);
  }
  SECTION("fewer multiprocessors, fewer blocks: A100's 108") {
    // target 108 x 16 = 1728; ctas = max(min(ceil(1728 / 20) = 87, 128), 8) = 87.
    model::GpuSpec a100 = h200();
    a100.multiprocessor_count = 108;
    CHECK(sim::outer_sum_launch(8192, 2560, 2, a100).staging.value == 4 * 2560 * 87 * 32 * 4);
  }
  SECTION("over 2 GiB: halved along the rows, an fp32 accumulation buffer for a bf16 output") {
    // 65536 x 20480 bf16 = 2.5 GiB, so two pieces of 32768 rows: grid_x = 160, 8192 values a thread;
    // ctas = max(min(ceil(2112 / 160) = 14, 512), 32) = 32.
    const auto l = sim::outer_sum_launch(65536, 20480, 2, h200());
    CHECK(l.pieces == 2);
    CHECK(l.ctas_per_output == 32);
    CHECK(l.accumulation.value == 4 * 20480);
    CHECK(sim::outer_sum_transient(l).value == 4 * 20480 * 32 * 32 * 4 + 4 * 160 + 4 * 20480);
    // An fp32 output accumulates in place across pieces.
    CHECK(sim::outer_sum_launch(65536, 20480, 4, h200()).accumulation.value == 0);
  }
}

namespace {

const char* kBiased = R"({
  "model": {"num_layers": 2, "hidden_size": 2560, "num_attention_heads": 32, "ffn_hidden_size": 10240,
            "vocab_size": 50304, "seq_length": 2048, "bf16": true, "transformer_impl": "local",
            "attention_backend": "unfused", "normalization": "LayerNorm", "gated_linear_unit": false,
            "activation_func": "gelu", "add_bias_linear": true, "hidden_dropout": 0.0, "attention_dropout": 0.0,
            "position_embedding_type": "learned_absolute"},
  "train": {"micro_batch_size": 4, "global_batch_size": 8},
  "cluster": {"num_gpus": 1, "gpu": "h200-141gb", "transformer_engine_available": false}})";

sim::LayerGraph biased_layer(const std::vector<std::string>& sets) { return test::spec_layer(kBiased, sets, {0, model::MixerKind::attention, model::FfnKind::dense, false}); }

using test::ends_with;

const sim::OpNode& op(const sim::LayerGraph& g, const std::string& suffix) {
  for (const auto& o : g.ops)
    if (ends_with(o.name, suffix)) return o;
  FAIL("no op " << suffix);
  return g.ops.front();
}

std::int64_t bws(const sim::LayerGraph& g, const std::string& suffix) { return op(g, suffix).backward_workspace.value; }

std::int64_t tensor_bytes(const sim::LayerGraph& g, const std::string& suffix) {
  for (const auto& t : g.tensors)
    if (ends_with(t.name, suffix)) return t.bytes.value;
  return -1;
}

}  // namespace

TEST_CASE("each bias gradient holds the sum's staging buffer in its op's backward", "[torch_reduce]") {
  // 2048 x 4 = 8192 rows. linear_proj's and fc2's biases [2560] are added by the bias-dropout-adds,
  // fc1's [10240] before the activation (both skip_bias_add): unfused, each addition is an op of its
  // own whose backward sums the bias gradient; qkv's [7680] is added by the local linear itself.
  constexpr std::int64_t kProj = 138936320 + 80, kFc1 = 141557760 + 320;
  constexpr std::int64_t kQkv = 4 * 7680 * 36 * 32 * 4 + 4 * 60;  // grid_x 60, ctas max(min(36, 128), 8) = 36
  constexpr std::int64_t kQkvOut = 8192LL * 7680 * 2;             // the GEMM's result before `+ bias`
  const std::int64_t qkv_wgrad = 2560 * 7680 * 2;                 // unfused wgrad beside it
  const auto biased = biased_layer({"model.gradient_accumulation_fusion=false"});
  CHECK(bws(biased, "self_attn_bda.bias_add") == kProj);
  CHECK(bws(biased, "self_attn_bda") == 0);
  CHECK(bws(biased, "mlp_bda.bias_add") == kProj);
  CHECK(bws(biased, "mlp.activation.bias_add") == kFc1);
  CHECK(bws(biased, "linear_qkv") == qkv_wgrad + kQkv);
  CHECK(op(biased, "linear_qkv").forward_workspace.value == kQkvOut);
  // The addition makes a hidden-sized tensor; the bias-dropout-add keeps the linear's output until it ends.
  CHECK(tensor_bytes(biased, "self_attn_bda.bias_add") == 8192LL * 2560 * 2);

  // Fused, the bias-dropout-add and the bias-GeLU sum the gradient in their own backward.
  const auto fused = biased_layer({"model.gradient_accumulation_fusion=false", "model.bias_dropout_fusion=true",
                                   "model.bias_activation_fusion=true"});
  CHECK(bws(fused, "self_attn_bda") == kProj);
  CHECK(bws(fused, "mlp.activation") == kFc1);
  CHECK(tensor_bytes(fused, "self_attn_bda.bias_add") == -1);

  const auto plain = biased_layer({"model.gradient_accumulation_fusion=false", "model.add_bias_linear=false"});
  CHECK(bws(plain, "self_attn_bda") == 0);
  CHECK(bws(plain, "mlp.activation") == 0);
  CHECK(bws(plain, "linear_qkv") == qkv_wgrad);
  CHECK(op(plain, "linear_qkv").forward_workspace.value == 0);
}
