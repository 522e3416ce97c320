#include "graph_builder.hpp"

namespace peakcast::sim::detail {

int GraphBuilder::op(const std::string& name, const OpArgs& a) {
  return op(name, std::vector<int>(a.in.begin(), a.in.end()), std::vector<int>(a.out.begin(), a.out.end()), a);
}

int GraphBuilder::op(const std::string& name, const std::vector<int>& in, const std::vector<int>& out, const OpArgs& a) {
  OpNode o;
  o.name = prefix_ + name;
  o.inputs = in;
  o.outputs = out;
  o.saves.assign(a.save.begin(), a.save.end());
  o.keeps_alive.assign(a.keep.begin(), a.keep.end());
  o.regions = a.region;
  o.forward_flops = a.flops;
  o.backward_flops = a.backward_flops >= 0 ? a.backward_flops : (a.gemm ? 2 * a.flops : a.flops);
  o.forward_workspace = a.ws;
  o.backward_workspace = a.bws;
  o.param_grad = a.param_grad;
  o.is_gemm = a.gemm;
  o.is_attention_core = a.attention;
  o.is_fused_attention = a.fused_attention;
  o.is_movement = a.movement;
  o.grad_passthrough = a.passthrough;
  o.host_calls = a.calls;
  o.host_sync = a.sync;
  o.comm_bytes = a.comm;
  o.backward_comm_bytes = a.bcomm >= 0 ? a.bcomm : a.comm;
  if (a.bytes_moved >= 0) {
    o.forward_bytes_moved = a.bytes_moved;
  } else {
    double moved = 0;
    for (int t : in) moved += static_cast<double>(g_.tensors.at(t).bytes.value);
    for (int t : out) moved += static_cast<double>(g_.tensors.at(t).bytes.value);
    o.forward_bytes_moved = moved;
  }
  return g_.add_op(std::move(o));
}

void GraphBuilder::offload_group(OffloadGroup group, std::size_t first, int commit, std::vector<int> forced) {
  if (first >= g_.ops.size()) return;
  for (std::size_t i = first; i < g_.ops.size(); ++i) g_.ops[i].offload_group = group;
  const int op = commit >= 0 ? commit : static_cast<int>(g_.ops.size()) - 1;
  g_.offload_commits.push_back({group, op, std::move(forced)});
}

int GraphBuilder::linear(const std::string& name, int input, std::int64_t k, std::int64_t n, Parallel par,
                         std::uint32_t region, std::int64_t rows, bool save_input, bool keep_original_input,
                         bool with_adapter) {
  const bool sp = c_.sequence_parallel && c_.tp > 1;
  if (rows < 0) rows = c_.tokens;
  const std::int64_t local_rows = sp ? rows / c_.tp : rows;
  // PEFT: a frozen base computes no wgrad and saves no input (TE linear.py:298, :551-554; grouped_linear.py:
  // 263-277; local layers.py:414-422), except that the LayerNorm-fused one keeps its ln_out when it
  // returns it to an adapter (layernorm_linear.py:396-398; Bridge sets return_layernorm_output, peft/utils.py:625-627).
  const bool frozen = c_.frozen_base;
  const bool adapted = lora_targeted(name);
  const bool ln_fused = c_.te && (name == "linear_qkv" || name == "mlp.linear_fc1" || name == "mixer.in_proj" || name == "gdn.in_proj");
  if (frozen) save_input = save_input && adapted && ln_fused;
  Bytes ws{}, bws{};
  if (par == Parallel::column && sp) {
    // TE gathers into a transient; Megatron's own linears use the global buffer (counted once).
    if (c_.te) ws += act(rows, k);
    if (c_.te && !frozen) bws += act(rows, k);  // backward re-gathers the saved local input for wgrad
    bws += act(rows, k);                        // full dgrad before its reduce-scatter
  }
  std::int64_t out_rows = rows;
  if (par == Parallel::row && sp) {
    ws += act(rows, n);   // GEMM result before the reduce-scatter
    bws += act(rows, n);  // output gradient all-gathered for dgrad and wgrad
    out_rows = local_rows;
  }
  // Collectives (ring: each rank moves (tp-1)/tp of the full tensor; an all-reduce twice that).
  // Column: SP all-gathers its input forward, and in backward re-gathers it for the wgrad and
  // reduce-scatters the dgrad; without SP the dgrad is all-reduced. Row: SP reduce-scatters its
  // output forward and all-gathers the output gradient backward; without SP it all-reduces forward.
  double comm = 0, bcomm = 0;
  if (c_.tp > 1 && par != Parallel::none) {
    const double ring = static_cast<double>(c_.tp - 1) / static_cast<double>(c_.tp);
    const double in_full = static_cast<double>(act(rows, k).value), out_full = static_cast<double>(act(rows, n).value);
    if (par == Parallel::column) {
      comm = sp ? ring * in_full : 0;
      bcomm = sp ? 2 * ring * in_full : 2 * ring * in_full;
    } else {
      comm = sp ? ring * out_full : 2 * ring * out_full;
      bcomm = sp ? ring * out_full : 0;
    }
  }
  // Unfused, param.grad lives until the DDP hook adds it into main_grad; fused, the GEMM writes
  // main_grad and autograd gets the cached dummy of this shape (tensor_parallel/layers.py:690-716,
  // TE's get_dummy_wgrad for its own modules).
  Bytes wgrad{};
  if (frozen) {
  } else if (c_.grad_accumulation_fusion) {
    g_.dummy_wgrad_shapes.emplace_back(n, k);
  } else {
    wgrad = act(k, n);
    bws += wgrad;
  }
  const int out = tensor(name + ".out", act(out_rows, n));
  const double flops = 2.0 * static_cast<double>(rows) * static_cast<double>(k) * static_cast<double>(n);
  OpNode o;
  o.name = prefix_ + name;
  o.inputs = {input};
  o.outputs = {out};
  if (save_input) {
    if (c_.fp8 && !keep_original_input) {
      // FP8 GEMMs keep a 1-byte quantised copy of their input for the wgrad.
      const int q = tensor(name + ".input_fp8", Bytes{(par == Parallel::column && sp ? local_rows : rows) * k}, false, 1);
      o.outputs.push_back(q);
      o.saves = {q};
    } else {
      o.saves = {input};
    }
  }
  o.regions = region;
  o.forward_flops = flops;
  o.backward_flops = frozen ? flops : 2 * flops;  // dgrad only when frozen
  o.forward_workspace = ws;
  o.backward_workspace = bws;
  o.param_grad = wgrad;
  o.is_gemm = true;
  o.comm_bytes = comm;
  o.backward_comm_bytes = bcomm;
  o.forward_bytes_moved = static_cast<double>(act(rows, k).value + act(k, n).value + act(rows, n).value);
  g_.add_op(std::move(o));
  return adapted && with_adapter ? lora_adapter(name, input, out, k, n, par, region, rows) : out;
}

}  // namespace peakcast::sim::detail
