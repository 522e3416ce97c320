// Mamba mixers (ssm/mamba_mixer.py) and Gated DeltaNet (ssm/gated_delta_net).
#include "module_blocks.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace peakcast::sim::detail {

using Parallel = GraphBuilder::Parallel;

// Mamba mixer (ssm/mamba_mixer.py, training path with the fused split-conv1d-scan kernel).
int mamba_block(GraphBuilder& b, const model::RunSpec& spec, int ln) {
  const ShapeContext& c = b.ctx();
  const auto& m = spec.model;
  const std::int64_t N = c.tokens, h = c.hidden;
  const std::int64_t heads = m.mamba_num_heads.value_or((2 * h) / m.mamba_head_dim) / c.tp;
  const std::int64_t d_in = heads * m.mamba_head_dim;
  const std::int64_t groups = std::max<std::int64_t>(1, m.mamba_num_groups / c.tp);
  const std::int64_t ds = m.mamba_state_dim;
  const std::int64_t width = 2 * d_in + 2 * groups * ds + heads;
  const int zx = b.linear("mixer.in_proj", ln, h, width, Parallel::column);
  // rearrange(zxBCdt, "l b d -> b l d").contiguous() (mamba_mixer.py:686) and its inverse on y
  // (:722) copy only when b > 1: with one sequence per micro-batch the permuted tensor is already
  // contiguous (dimensions of size 1 do not count), so .contiguous() returns it as it is.
  const bool copies = c.batch > 1;
  int zx_t = zx;
  if (copies) {
    zx_t = b.tensor("mixer.zxbcdt_contiguous", b.act(N, width));
    b.op("mixer.transpose", {.in = {zx}, .out = {zx_t}, .movement = true});
  }
  const int y = b.tensor("mixer.scan_out", b.act(N, d_in));
  const int out_x = b.tensor("mixer.out_x", b.act(N, d_in), false);
  const std::int64_t chunks = (c.seq + 127) / 128;
  const Bytes scan_ws = b.act(N, d_in + 2 * groups * ds) +                                // conv output
                        Bytes{c.batch * heads * c.seq * kFp32 * 2} +                      // dt, dA_cumsum
                        Bytes{c.batch * chunks * heads * m.mamba_head_dim * ds * kFp32};  // chunk states
  b.op("mixer.split_conv1d_scan", {.in = {zx_t}, .out = {y, out_x}, .save = {zx_t, out_x}, .flops = 2.0 * N * d_in * ds * 3 + 2.0 * N * (d_in + 2 * groups * ds) * m.mamba_d_conv, .backward_flops = 2.0 * (2.0 * N * d_in * ds * 3), .ws = scan_ws, .bws = scan_ws});
  int y_t = y;
  if (copies) {
    y_t = b.tensor("mixer.y_contiguous", b.act(N, d_in));
    b.op("mixer.y_transpose", {.in = {y}, .out = {y_t}, .movement = true});
  }
  const int yn = b.tensor("mixer.norm.out", b.act(N, d_in));
  b.op("mixer.norm", {.in = {y_t, zx_t}, .out = {yn}, .save = {y_t}, .flops = 8.0 * N * d_in});
  return b.linear("mixer.out_proj", yn, d_in, h, Parallel::row);
}

// Gated DeltaNet (ssm/gated_delta_net): in_proj, causal conv, FLA chunked delta rule, gated norm.
int gdn_block(GraphBuilder& b, const model::RunSpec& spec, int ln, LayerGraph& g) {
  const ShapeContext& c = b.ctx();
  const auto& m = spec.model;
  const std::int64_t N = c.tokens, h = c.hidden;
  const std::int64_t nk = m.linear_num_key_heads / c.tp, nv = m.linear_num_value_heads / c.tp;
  const std::int64_t qk_dim = nk * m.linear_key_head_dim, v_dim = nv * m.linear_value_head_dim;
  const int proj = b.linear("gdn.in_proj", ln, h, 2 * qk_dim + 2 * v_dim + 2 * nv, Parallel::column);
  const int conv = b.tensor("gdn.conv_out", b.act(N, 2 * qk_dim + v_dim));
  b.op("gdn.conv1d", {.in = {proj}, .out = {conv}, .save = {proj}, .flops = 2.0 * N * (2 * qk_dim + v_dim) * m.linear_conv_kernel_dim});
  const int qkv = b.tensor("gdn.qkv", b.act(N, 2 * nv * m.linear_key_head_dim + v_dim));
  const int gates = b.tensor("gdn.g_beta", Bytes{N * nv * kFp32 * 2});
  b.op("gdn.prepare", {.in = {conv, proj}, .out = {qkv, gates}, .save = {conv}});
  const int core = b.tensor("gdn.core_out", b.act(N, v_dim));
  b.op("gdn.chunk_delta_rule", {.in = {qkv, gates}, .out = {core}, .save = {qkv, gates}, .flops = 4.0 * N * nv * m.linear_key_head_dim * m.linear_value_head_dim, .attention = true});
  const int normed = b.tensor("gdn.norm_out", b.act(N, v_dim));
  b.op("gdn.gated_norm", {.in = {core, proj}, .out = {normed}, .save = {core}, .region = kGdnNormOut, .flops = 8.0 * N * v_dim});
  const int out = b.linear("gdn.out_proj", normed, v_dim, h, Parallel::row);
  g.discards.push_back({kGdnNormOut, {normed}, static_cast<int>(g.ops.size()) - 1});
  return out;
}

}  // namespace peakcast::sim::detail
