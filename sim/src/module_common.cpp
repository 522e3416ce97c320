// Pieces every module kind uses: norms, the residual add, MLP activations (fused and unfused).
#include "module_blocks.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "peakcast/sim/torch_reduce.hpp"

namespace peakcast::sim::detail {

using Parallel = GraphBuilder::Parallel;

// A norm module: RMSNorm saves its input and the fp32 inverse RMS per row; LayerNorm also the mean.
int norm(GraphBuilder& b, const std::string& name, int x, std::int64_t rows, std::int64_t cols,
         bool layer_norm, std::uint32_t region) {
  const int out = b.tensor(name + ".out", b.act(rows, cols));
  const int stats = b.tensor(name + ".rstd", Bytes{rows * kFp32 * (layer_norm ? 2 : 1)}, false, kFp32);
  b.op(name, {.in = {x}, .out = {out, stats}, .save = {x, stats}, .region = region, .flops = 5.0 * rows * cols});
  return out;
}

int row_linear(GraphBuilder& b, const model::ModelSpec& m, const std::string& name, int input, std::int64_t k, std::int64_t n,
               std::uint32_t region, bool keep_original_input) {
  if (!m.post_linear_layernorm) return b.linear(name, input, k, n, Parallel::row, region, -1, true, keep_original_input);
  // TERowParallelLinearLayerNorm.forward (Bridge common/te_layers.py:49-57): the TE linear, then
  // post_layernorm = TENorm(config, output_size) (:47) on its output, [s/tp under SP, b, h]. TE 2.16's RMSNorm
  // saves that input and the fp32 inverse RMS per row (ops/basic/rmsnorm.py:187-203), as norm() records.
  const int out = b.linear(name, input, k, n, Parallel::row, region, -1, true, keep_original_input, /*with_adapter=*/false);
  const ShapeContext& c = b.ctx();
  const int normed = norm(b, name + ".post_layernorm", out, c.local_tokens, n, m.normalization == model::Normalization::layer_norm, region);
  // LoRALinear wraps the module and adds the adapter to its (normalized) output (peft/lora_layers.py:80-84).
  return b.lora_targeted(name) ? b.lora_adapter(name, input, normed, k, n, Parallel::row, region, c.tokens) : normed;
}

Bytes bias_grad_transient(const GraphBuilder& b, std::int64_t rows, std::int64_t cols) {
  return outer_sum_transient(outer_sum_launch(rows, cols, b.ctx().act_bytes, b.ctx().gpu));
}

int residual_add(GraphBuilder& b, const std::string& name, int residual, int branch, std::int64_t rows,
                 double dropout, bool branch_bias, bool fused) {
  const ShapeContext& c = b.ctx();
  // fused_bias_dropout.py:_bias_dropout_add_func adds the bias first (x = x + bias, :46); autograd sums its
  // gradient over the rows once the output's gradient arrives. Unfused, that sum is a tensor of its own
  // while the caller's tuple still holds the linear's output (measured: fam_gpt3, one more hidden-sized
  // block a layer); bias_dropout_fusion compiles the steps into one kernel (jit_fuser).
  Bytes bias_sum = branch_bias ? bias_grad_transient(b, rows, c.hidden) : Bytes{};
  int x = branch;
  if (branch_bias && !fused) {
    x = b.tensor(name + ".bias_add", b.act(rows, c.hidden));
    b.op(name + ".bias_add", {.in = {branch}, .out = {x}, .flops = 1.0 * rows * c.hidden, .bws = bias_sum, .passthrough = true});
    bias_sum = Bytes{};
  }
  const int out = b.tensor(name + ".out", b.act(rows, c.hidden));
  int op = -1;
  if (dropout > 0) {
    // Bias-dropout-add keeps a 1-byte mask per element for its backward.
    const int mask = b.tensor(name + ".dropout_mask", Bytes{rows * c.hidden}, false, 1);
    op = b.op(name, {.in = {residual, x}, .out = {out, mask}, .save = {mask}, .flops = 3.0 * rows * c.hidden, .bws = bias_sum});
  } else {
    op = b.op(name, {.in = {residual, x}, .out = {out}, .flops = 1.0 * rows * c.hidden, .bws = bias_sum, .passthrough = true});
  }
  if (x != branch) b.graph().ops[static_cast<std::size_t>(op)].keeps_alive.push_back(branch);
  return out;
}

namespace {

int activation_ops(GraphBuilder& b, const std::string& name, int fc1, std::int64_t rows, std::int64_t ffn,
                   bool gated, bool fused, std::uint32_t region, const ActivationOptions& o) {
  const int out = b.tensor(name + ".out", b.act(rows, ffn));
  const double flops = (gated ? 6.0 : 3.0) * rows * ffn;
  const double half_traffic = 2.0 * static_cast<double>(b.act(rows, ffn).value);
  if (fused || !gated) {
    // bias_swiglu / weighted_swiglu / squared ReLU fusions save only their inputs. With
    // activation_func_fp8_input_store the SwiGLU saves an FP8 copy of its input instead
    // (fused_bias_swiglu.py:117, :195): one byte an element, and fc1's bf16 output is let go.
    int saved = fc1;
    if (o.clamped) {
      // weighted_bias_quick_geglu_impl (fused_bias_geglu.py:421-431) clamps both halves out of place
      // and concatenates them: each clamp saves its input (a view of fc1's output, which so stays), and
      // the fused function saves the clamped copy. The two clamped halves live until the cat: the workspace.
      saved = b.tensor(name + ".clamped", b.act(rows, 2 * ffn));
      b.op(name + ".clamp", {.in = {fc1}, .out = {saved}, .save = {fc1}, .region = region, .flops = 2.0 * rows * ffn, .ws = b.act(rows, 2 * ffn), .bytes_moved = 4.0 * half_traffic});
    }
    if (fused && gated && o.fp8_input_store) {
      const int bf16 = saved;
      saved = b.tensor(name + ".input_fp8", Bytes{rows * 2 * ffn}, false, 1);
      b.op(name + ".to_fp8", {.in = {bf16}, .out = {saved}, .region = region, .flops = 2.0 * rows * ffn});
    }
    if (o.probs >= 0) {
      b.op(name, {.in = {saved, o.probs}, .out = {out}, .save = {saved, o.probs}, .region = region, .flops = flops});
    } else {
      b.op(name, {.in = {saved}, .out = {out}, .save = {saved}, .region = region, .flops = flops});
    }
    return out;
  }
  // Unfused GLU (mlp.py glu, experts.py): chunk views, act(x0) saves x0 (so all of fc1's output
  // stays), and act(x0) * (x1 + glu_linear_offset): the addition makes a new tensor even for the
  // default offset 0.0, and the product saves both of its operands. With a clamp value each half is
  // clamped out of place first (mlp.py:322-324, experts.py:865-867): the clamps save fc1's halves, the
  // activation saves the clamped x0, and the clamped x1 lives until the offset is added.
  // Each of the two reads one half of fc1's output and writes a tensor of that half's size.
  // glu(x)'s argument keeps fc1's output until the product is made, and the caller's variable until glu
  // returns (mlp.py:322-332, experts.py:859-873): without grad (a recomputed module's first forward) it
  // is freed after the product, not after its last reader (measured on layout_fake_ep8_moonlight4_moe_r0's
  // trace: fc1's output, silu's, the offset sum and the product alive together, then two frees and fc1's).
  int x0 = fc1, x1 = fc1;
  if (o.clamped) {
    x0 = b.tensor(name + ".clamp_glu", b.act(rows, ffn));
    b.op(name + ".clamp_glu", {.in = {fc1}, .out = {x0}, .save = {fc1}, .region = region, .flops = 1.0 * rows * ffn, .bytes_moved = half_traffic});
    x1 = b.tensor(name + ".clamp_linear", b.act(rows, ffn));
    b.op(name + ".clamp_linear", {.in = {fc1}, .out = {x1}, .save = {fc1}, .region = region, .flops = 1.0 * rows * ffn, .bytes_moved = half_traffic});
  }
  const int act0 = b.tensor(name + ".silu", b.act(rows, ffn));
  b.op(name + ".silu", {.in = {x0}, .out = {act0}, .save = {x0}, .region = region, .flops = 4.0 * rows * ffn, .bytes_moved = half_traffic});
  const int lin = b.tensor(name + ".linear_plus_offset", b.act(rows, ffn));
  b.op(name + ".linear_offset", {.in = {x1}, .out = {lin}, .region = region, .flops = 1.0 * rows * ffn, .bytes_moved = half_traffic});
  if (o.probs < 0) {
    b.op(name + ".glu_mul", {.in = {act0, lin}, .out = {out}, .save = {act0, lin}, .keep = {fc1}, .region = region, .flops = 1.0 * rows * ffn});
    return out;
  }
  const int glu = b.tensor(name + ".glu", b.act(rows, ffn));
  b.op(name + ".glu_mul", {.in = {act0, lin}, .out = {glu}, .save = {act0, lin}, .keep = {fc1}, .region = region, .flops = 1.0 * rows * ffn});
  // MLP.forward(per_token_scale=probs) multiplies by the router probabilities and saves both; probs of
  // ones (moe_apply_probs_on_input) need no gradient, so the product keeps only them (measured).
  if (o.probs_need_grad) {
    b.op(name + ".prob_mul", {.in = {glu, o.probs}, .out = {out}, .save = {glu, o.probs}, .region = region, .flops = 1.0 * rows * ffn});
  } else {
    b.op(name + ".prob_mul", {.in = {glu, o.probs}, .out = {out}, .save = {o.probs}, .region = region, .flops = 1.0 * rows * ffn});
  }
  return out;
}
}  // namespace

// Activation of an MLP whose fc1 output has `width` columns per rank (2x for gated units).
int activation(GraphBuilder& b, const std::string& name, int fc1, std::int64_t rows, std::int64_t ffn,
               bool gated, bool fused, std::uint32_t region, ActivationOptions o) {
  // fc1's bias, added here (mlp.py:268-320: bias_swiglu_impl / bias_gelu_impl, or `+ bias_parallel`
  // first), has its gradient summed when the activation's backward has finished: in the backward of the
  // fused activation's first op, or of the unfused addition.
  // Unfused, `intermediate_parallel + bias_parallel` is a tensor of its own (the linear's output goes).
  const std::int64_t width = (gated ? 2 : 1) * ffn;
  if (o.fc1_bias && !fused) {
    const int biased = b.tensor(name + ".bias_add", b.act(rows, width));
    b.op(name + ".bias_add", {.in = {fc1}, .out = {biased}, .region = region, .flops = 1.0 * rows * width, .bws = bias_grad_transient(b, rows, width), .passthrough = true});
    return activation_ops(b, name, biased, rows, ffn, gated, fused, region, o);
  }
  const std::size_t first = b.graph().ops.size();
  const int out = activation_ops(b, name, fc1, rows, ffn, gated, fused, region, o);
  if (o.fc1_bias && first < b.graph().ops.size()) b.graph().ops[first].backward_workspace += bias_grad_transient(b, rows, width);
  return out;
}

// The clamp applies to a gated unit's Python GLU and to the fused quick-GeGLU, not to the fused SwiGLU
// (bias_swiglu_impl takes no clamp, mlp.py:305-312) nor to TE's activation op (experts.py:815-826).
ActivationOptions activation_options(const model::ModelSpec& m, bool fused) {
  ActivationOptions o;
  o.fp8_input_store = m.activation_func_fp8_input_store;
  o.clamped = m.activation_func_clamp_value.has_value() && m.gated_linear_unit && !m.use_te_activation_func &&
              (!fused || m.activation_func_name == "quick_gelu");
  return o;
}

bool fused_activation(const model::ModelSpec& m) { return m.bias_activation_fusion || m.use_te_activation_func; }

}  // namespace peakcast::sim::detail
