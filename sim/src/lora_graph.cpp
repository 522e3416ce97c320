// A LoRA adapter beside one frozen linear, as Megatron-Bridge's LoRALinear runs it (bridge:src/megatron/
// bridge/peft/lora_layers.py:65-88) with a ParallelLinearAdapter (peft/utils.py:1208-1279). A and B are
// local Megatron linears with trainable weights, so each saves its input (tensor_parallel/layers.py:
// 543-547); the facts and their lines: docs/research/lora-memory-facts.md sections 3-4.
#include "graph_builder.hpp"

namespace peakcast::sim::detail {

bool GraphBuilder::lora_targeted(const std::string& name) const {
  if (c_.lora_rank <= 0) return false;
  const auto dot = name.rfind('.');
  const std::string attr = dot == std::string::npos ? name : name.substr(dot + 1);
  for (const auto& t : c_.lora_targets)
    if (t == attr) return true;
  return false;
}

int GraphBuilder::lora_adapter(const std::string& name, int input, int base_out, std::int64_t k, std::int64_t n, Parallel par,
                               std::uint32_t region, std::int64_t rows) {
  const std::int64_t r = c_.lora_rank;
  const bool expert = name.rfind("experts.", 0) == 0;  // routed experts: the adapter splits over ETP
  const std::int64_t g = expert ? c_.etp : c_.tp;
  const bool sp = c_.sequence_parallel && c_.tp > 1 && !expert;
  const bool column = par == Parallel::column, row = par == Parallel::row;
  const std::int64_t out_rows = row && sp ? rows / c_.tp : rows;
  const double ring = g > 1 ? static_cast<double>(g - 1) / static_cast<double>(g) : 0.0;
  // sequence_parallel_input_regather applies to linear_qkv and linear_fc1 only (peft/utils.py:1109-1148).
  const bool regather = c_.lora_input_regather && column && sp && (name == "linear_qkv" || name == "mlp.linear_fc1");
  int x = input;
  if (column && sp && !regather) {
    // The LN-fused base returns its gathered ln_out (return_layernorm_output_gathered, peft/utils.py:635-638);
    // other column bases gather in the adapter (:1240-1245). Either way A saves the full [rows, k].
    x = tensor(name + ".adapter.input", act(rows, k));
    op(name + ".adapter.gather", {.in = {input}, .out = {x}, .region = region, .movement = true, .comm = ring * static_cast<double>(act(rows, k).value)});
  }
  // The adapter's dropout (pre: on A's input, post: on B's output) saves its byte mask.
  const auto dropout = [&](int in, std::int64_t r_rows, std::int64_t cols) {
    const int dropped = tensor(name + ".adapter.dropout.out", act(r_rows, cols));
    const int mask = tensor(name + ".adapter.dropout.mask", Bytes{r_rows * cols}, false);
    op(name + ".adapter.dropout", {.in = {in}, .out = {dropped, mask}, .save = {mask}, .region = region});
    return dropped;
  };
  if (c_.lora_dropout > 0 && !c_.lora_dropout_post) x = dropout(x, rows, k);
  // A: ColumnParallelLinear(k, r, gather_output) beside a column base, RowParallelLinear(k, r) (all-reduced)
  // beside a row one; its output is the full [rows, r] either way.
  const int a = tensor(name + ".adapter.linear_in.out", act(rows, r));
  const double a_flops = 2.0 * static_cast<double>(rows) * static_cast<double>(k) * static_cast<double>(row ? r : r / g);
  op(name + ".adapter.linear_in", {.in = {x}, .out = {a}, .save = {x}, .region = region, .flops = a_flops, .ws = regather ? act(rows, k) : Bytes{}, .bws = regather ? act(rows, k) : Bytes{}, .gemm = true, .comm = (row ? 2 : 1) * ring * static_cast<double>(act(rows, r).value)});
  // B: [n_local, r] beside a column base (the base's own output split); beside a row base it gathers the
  // full [rows, n] and, under SP, scatters it back to the sequence shard (:1258-1267).
  const int b = tensor(name + ".adapter.linear_out.out", act(out_rows, n));
  const double b_cols = column || name.find("fc1") != std::string::npos ? static_cast<double>(n) : static_cast<double>(n / g);
  op(name + ".adapter.linear_out", {.in = {a}, .out = {b}, .save = {a}, .region = region, .flops = 2.0 * static_cast<double>(rows) * static_cast<double>(r) * b_cols, .ws = row && sp ? act(rows, n) : Bytes{}, .gemm = true, .comm = column ? 0.0 : ring * static_cast<double>(act(rows, n).value)});
  if (c_.grad_accumulation_fusion) {
    g_.dummy_wgrad_shapes.emplace_back(row ? r : r / g, k);
    g_.dummy_wgrad_shapes.emplace_back(column ? n : n / g, r);
  }
  int y = b;
  if (c_.lora_dropout > 0 && c_.lora_dropout_post) y = dropout(y, out_rows, n);
  const int scaled = tensor(name + ".adapter.scaled", act(out_rows, n));  // x * (alpha / dim)
  op(name + ".adapter.scale", {.in = {y}, .out = {scaled}, .region = region, .passthrough = true});
  const int sum = tensor(name + ".lora_sum", act(out_rows, n));  // out + adapter_output
  op(name + ".lora_sum", {.in = {base_out, scaled}, .out = {sum}, .region = region, .passthrough = true});
  return sum;
}

}  // namespace peakcast::sim::detail
