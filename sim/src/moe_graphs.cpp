// The MoE layer (moe_layer.py): shared experts, router, token dispatch, experts, combine.
#include "module_blocks.hpp"
#include "moe_router.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace peakcast::sim::detail {

using Parallel = GraphBuilder::Parallel;

namespace {

// Shared experts (shared_experts.py): a dense MLP over the TP group beside the routed experts; with
// moe_shared_expert_overlap under SP it runs on its own gathered copy of the input. -1: none.
int shared_experts(GraphBuilder& b, const model::RunSpec& spec, int ln, LayerGraph& g) {
  const ShapeContext& c = b.ctx();
  const auto& m = spec.model;
  const std::int64_t h = c.hidden;
  const bool gated = m.gated_linear_unit;
  const std::uint32_t moe_region = kMoe;
  int shared_out = -1;
  if (m.moe_shared_expert_intermediate_size) {
    const std::int64_t Fs = *m.moe_shared_expert_intermediate_size / c.tp;
    const std::uint32_t region = moe_region | (m.moe_shared_expert_overlap ? 0u : kSharedExperts);
    int fc1_in = ln;
    if (m.moe_shared_expert_overlap && c.sequence_parallel) {
      // Overlapped shared experts gather their input inside the dispatcher (cached_fc1_input,
      // shared_experts.py pre_forward_comm) and run fc1 on the gathered copy, which fc1 saves.
      fc1_in = b.tensor("shared_experts.gathered_input", b.act(c.tokens, h));
      const double gathered = static_cast<double>(b.act(c.tokens, h).value) * (c.tp - 1) / c.tp;
      // A collective's time is its wire time (comm); its HBM traffic overlaps it, so no bytes_moved.
      b.op("shared_experts.all_gather", {.in = {ln}, .out = {fc1_in}, .region = region, .bytes_moved = 0, .comm = gathered});
      ShapeContext no_sp = c;
      no_sp.sequence_parallel = false;
      GraphBuilder gb(g, no_sp, g.name + ".");
      const int f1 = gb.linear("shared_experts.linear_fc1", fc1_in, h, (gated ? 2 : 1) * Fs, Parallel::column, region);
      const int a = activation(gb, "shared_experts.activation", f1, c.tokens, Fs, gated, fused_activation(m), region,
                               activation_options(m, fused_activation(m)));
      const int full = gb.linear("shared_experts.linear_fc2", a, Fs, h, Parallel::row, region);
      // The output is reduce-scattered back to the sequence-parallel shard in the combine.
      shared_out = b.tensor("shared_experts.output", b.act(c.local_tokens, h));
      b.op("shared_experts.reduce_scatter", {.in = {full}, .out = {shared_out}, .region = region, .bytes_moved = 0, .comm = gathered});
    }
  }
  if (m.moe_shared_expert_intermediate_size && !(m.moe_shared_expert_overlap && c.sequence_parallel)) {
    const std::int64_t Fs = *m.moe_shared_expert_intermediate_size / c.tp;
    const std::uint32_t region = moe_region | (m.moe_shared_expert_overlap ? 0u : kSharedExperts);
    const int f1 = b.linear("shared_experts.linear_fc1", ln, h, (gated ? 2 : 1) * Fs, Parallel::column, region);
    const int a = activation(b, "shared_experts.activation", f1, c.tokens, Fs, gated, fused_activation(m), region,
                             activation_options(m, fused_activation(m)));
    shared_out = b.linear("shared_experts.linear_fc2", a, Fs, h, Parallel::row, region);
  }
  return shared_out;
}

// Wire bytes per rank of one dispatch (and of its combine). R_ep: rows received from the EP
// all-to-all, R: after the ETP all-gather; h: the width of a dispatched row (hidden, or the latent width).
double dispatch_wire_bytes(GraphBuilder& b, const model::ModelSpec& m, std::int64_t R_ep, std::int64_t R, Bytes gather_ws, std::int64_t h) {
  const ShapeContext& c = b.ctx();
  const std::int64_t E = m.num_moe_experts.value_or(1), k = m.moe_router_topk;
  // Wire bytes per rank: alltoall sends the (ep-1)/ep of its routed rows that leave the rank;
  // allgather gathers the hidden states of the EP x TP group (and reduce-scatters them back).
  double dispatch_comm = 0;
  if (m.moe_token_dispatcher_type == model::Dispatcher::allgather) {
    const std::int64_t group = c.ep * c.tp;
    if (group > 1) dispatch_comm = static_cast<double>(gather_ws.value) * (group - 1) / group;
  } else if (c.ep > 1 && m.moe_token_dispatcher_type == model::Dispatcher::flex) {
    // DeepEP / HybridEP send a token once to each rank that holds one of its experts, not once per
    // expert: with E experts over ep ranks and top-k routing spread evenly, a token reaches
    // ep (1 - C(E - E/ep, k) / C(E, k)) ranks, (ep - 1) / ep of them remote.
    const double E_ = static_cast<double>(E), per_rank = E_ / static_cast<double>(c.ep);
    double miss = 1.0;  // C(E - E/ep, k) / C(E, k): no expert of a given rank among the k
    for (std::int64_t i = 0; i < k; ++i) miss *= std::max(0.0, (E_ - per_rank - static_cast<double>(i)) / (E_ - static_cast<double>(i)));
    const double ranks_hit = static_cast<double>(c.ep) * (1.0 - miss);
    const double tokens_sent = static_cast<double>(R) / static_cast<double>(k) * ranks_hit;
    dispatch_comm = static_cast<double>(b.act(1, h).value) * tokens_sent * (c.ep - 1) / c.ep;
  } else if (c.ep > 1) {
    dispatch_comm = static_cast<double>(b.act(R_ep, h).value) * (c.ep - 1) / c.ep;
  }
  // The ETP all-gather after the all-to-all (and its reduce-scatter in the combine): a ring moves
  // (etp - 1) of the etp shares to each rank.
  if (m.moe_token_dispatcher_type != model::Dispatcher::allgather && c.etp > 1)
    dispatch_comm += static_cast<double>(b.act(R_ep, h).value) * static_cast<double>(c.etp - 1);
  return dispatch_comm;
}

}  // namespace

// SequentialMLP (experts.py:1321-1372): one local expert runs its MLP on the rows as they are; more
// split the rows and the probabilities per expert (torch.split: views, each expert's share of the rows
// in turn, balanced), run each expert's MLP (mlp.py with per_token_scale) and cat the outputs. A view
// keeps its base, so a saved piece keeps the whole input. In backward CatBackward hands each expert a
// view of the one output gradient, which the first expert's, the last to run, holds until it is done;
// each expert's input gradient is its own tensor until SplitBackward cats them (measured:
// layout_fake_ep8_moonlight4_moe_r0's trace, eight per-expert gradients, then one of all the rows).
// h: the experts' input and output width (hidden, or the latent width: mlp.py:215-255 with is_expert).
int sequential_mlp(GraphBuilder& b, const model::ModelSpec& m, int rows_in, int probs, std::int64_t R, std::int64_t L,
                   std::int64_t Fe, std::int64_t h) {
  const bool gated = m.gated_linear_unit;
  const auto expert = [&](const std::string& name, int in, int p, std::int64_t rows) {
    const int f1 = b.linear(name + ".linear_fc1", in, h, (gated ? 2 : 1) * Fe, Parallel::none, kMoe, rows);
    ActivationOptions o = activation_options(m, m.bias_activation_fusion);
    o.probs = p;
    o.probs_need_grad = !m.moe_apply_probs_on_input;  // else probs of ones
    const int a = activation(b, name + ".activation", f1, rows, Fe, gated, m.bias_activation_fusion, kMoe, o);
    return b.linear(name + ".linear_fc2", a, Fe, h, Parallel::none, kMoe, rows);
  };
  if (L == 1) return expert("experts.local_experts.0", rows_in, probs, R);         // the caller's routed_rows(1, 1)
  const auto share = [&](std::int64_t e) { return R / L + (e < R % L ? 1 : 0); };  // expert e's rows
  LayerGraph& g = b.graph();
  const bool split_probs = !m.moe_apply_probs_on_input;
  std::vector<int> pieces, prob_pieces;
  std::vector<int> split_in{rows_in};
  if (split_probs) split_in.push_back(probs);
  const auto groups = static_cast<std::int16_t>(L);
  for (std::int64_t e = 0; e < L; ++e) {
    const std::int64_t rows = share(e);
    const std::string name = "experts.local_experts." + std::to_string(e);
    b.routed_rows(static_cast<std::int16_t>(e), groups);
    pieces.push_back(b.tensor(name + ".input", Bytes{0}));
    g.tensors.back().grad_block = b.act(rows, h);
    if (split_probs) {
      prob_pieces.push_back(b.tensor(name + ".probs", Bytes{0}));
      g.tensors.back().grad_block = Bytes{rows * kFp32};
    }
  }
  std::vector<int> split_out = pieces;
  split_out.insert(split_out.end(), prob_pieces.begin(), prob_pieces.end());
  b.op("experts.split", split_in, split_out, {.region = kMoe, .bytes_moved = 0});
  std::vector<int> outs;
  const std::size_t first_op = g.ops.size();
  for (std::int64_t e = 0; e < L; ++e) {
    const auto u = static_cast<std::size_t>(e);
    b.routed_rows(static_cast<std::int16_t>(e), groups);
    outs.push_back(expert("experts.local_experts." + std::to_string(e), pieces[u], split_probs ? prob_pieces[u] : probs, share(e)));
  }
  b.routed_rows(groups, groups);  // the cat: all the rank's rows
  // A saved piece keeps its base.
  for (std::size_t i = first_op; i < g.ops.size(); ++i) {
    auto& saves = g.ops[i].saves;
    const auto keeps = [&saves](int piece, int base) {
      if (std::find(saves.begin(), saves.end(), piece) != saves.end() && std::find(saves.begin(), saves.end(), base) == saves.end())
        saves.push_back(base);
    };
    for (std::size_t e = 0; e < pieces.size(); ++e) {
      keeps(pieces[e], rows_in);
      if (split_probs) keeps(prob_pieces[e], probs);
    }
  }
  const int out = b.tensor("experts.cat", b.act(R, h));
  b.op("experts.cat", outs, {out}, {.region = kMoe, .passthrough = true, .movement = true});
  g.tensors[static_cast<std::size_t>(outs.front())].grad_block = b.act(R, h);
  return out;
}

// MoE layer (moe_layer.py custom_forward, :651-692): shared experts, router, [fc1_latent_proj,] dispatch,
// experts, combine, [fc2_latent_proj,] the shared experts' output added.
int moe_block(GraphBuilder& b, const model::RunSpec& spec, const model::Derived& d, int ln, LayerGraph& g) {
  const ShapeContext& c = b.ctx();
  const auto& m = spec.model;
  const std::int64_t T = c.local_tokens, h = c.hidden;
  // Latent MoE: the routed path is moe_latent_size wide (dispatch takes its width from the tensor,
  // token_dispatcher.py:638-644; the experts' fc1 input and fc2 output, experts.py:216-251, mlp.py:215-255).
  const std::int64_t w = m.moe_latent_size.value_or(h);
  const std::int64_t E = m.num_moe_experts.value_or(1), k = m.moe_router_topk;
  const std::int64_t local_experts = std::max<std::int64_t>(1, E / c.ep);
  const std::int64_t Fe = d.moe_ffn / c.etp;
  const bool gated = m.gated_linear_unit;
  // Dropless routing: each routed token-expert pair becomes one row on the receiving rank.
  std::int64_t R_ep = static_cast<std::int64_t>(std::ceil(double(T) * k * c.moe_routing_imbalance));
  if (m.moe_expert_capacity_factor && m.moe_pad_expert_input_to_capacity) {
    const auto cap = static_cast<std::int64_t>(std::ceil(double(T) * k / E * *m.moe_expert_capacity_factor));
    R_ep = cap * E;  // every rank sends full capacity to every expert
  }
  // Under expert tensor parallelism the dispatcher all-gathers the received rows over the ETP group
  // (dispatch_postprocess, token_dispatcher.py:738): every ETP rank runs its slice of the experts
  // on the rows of all of them, and reduce-scatters the output back (combine_preprocess).
  const std::int64_t R = R_ep * c.etp;
  const std::uint32_t moe_region = kMoe;

  const int shared_out = shared_experts(b, spec, ln, g);

  const RouterOutput routed = router(b, m, ln, moe_region);
  const int probs = routed.probs, routing_map = routed.routing_map;
  // preprocess (moe_layer.py:481-483): fc1_latent_proj, a TELinear(h, latent) duplicated over TP
  // (moe_layer.py:273-284), on the rank's [T, h] tokens; it saves that input for its wgrad.
  const int routed_in = m.moe_latent_size ? b.linear("fc1_latent_proj", ln, h, w, Parallel::none, moe_region, T) : ln;
  const int permuted = b.tensor("dispatch.permuted_tokens", b.act(T * k, w));
  const int permuted_probs = b.tensor("dispatch.permuted_probs", Bytes{T * k * kFp32}, true, kFp32);
  const int row_map = b.tensor("dispatch.row_id_map", Bytes{T * E * 4}, false, 4);
  // Where the dispatcher takes the new probabilities (dispatch_preprocess, token_dispatcher.py:639-640; allgather: :313).
  g.dispatcher_takes_probs = b.op("dispatch.permute", {.in = {routed_in, probs, routing_map}, .out = {permuted, permuted_probs, row_map}, .save = {row_map}, .region = moe_region, .movement = true});
  // The allgather dispatcher gathers the hidden states over the EP x ETP group (tp_ep_group).
  const Bytes gather_ws = m.moe_token_dispatcher_type == model::Dispatcher::allgather ? b.act(T * c.ep * c.etp, w) : Bytes{};
  // From here to the combine's all-to-all, tensors have the rows the rank receives (TensorNode::row_group).
  const auto local_groups = static_cast<std::int16_t>(local_experts);
  const std::size_t first_routed = g.tensors.size();
  b.routed_rows(local_groups, local_groups);
  const int received = b.tensor("dispatch.received", b.act(R, w));
  const int recv_probs = b.tensor("dispatch.received_probs", Bytes{R * kFp32}, true, kFp32);
  const double dispatch_comm = dispatch_wire_bytes(b, m, R_ep, R, gather_ws, w);
  // The token counts per expert go to the host before the experts run (alltoall splits,
  // SequentialMLP's and the grouped GEMM's per-expert row counts): one blocking sync per layer.
  b.op("dispatch.all_to_all", {.in = {permuted, permuted_probs}, .out = {received, recv_probs}, .region = moe_region, .ws = gather_ws, .bws = gather_ws, .bytes_moved = 0, .sync = true, .comm = dispatch_comm});
  int expert_in = received;
  // Rows arrive grouped by source rank (EP, then ETP); more than one local expert needs them
  // regrouped by expert, a copy (sort_chunks_by_idxs, token_dispatcher.py:779).
  const bool sorts = (c.ep > 1 || c.etp > 1) && local_experts > 1;
  if (sorts) {
    expert_in = b.tensor("dispatch.sorted", b.act(R, w));
    b.op("dispatch.sort_chunks", {.in = {received}, .out = {expert_in}, .region = moe_region, .movement = true});
  }
  const int dispatched = expert_in;  // routed_experts_compute's dispatched_input: lives to the sort back (moe_layer.py:532-570)
  const bool grouped = m.moe_grouped_gemm && c.te;
  if (m.moe_apply_probs_on_input) {
    // experts.py:782-790 (grouped) and :1329-1338 (SequentialMLP): the probabilities scale the rows before
    // fc1 (measured: a new activation-dtype block per layer); the multiply saves both its inputs, so the
    // unscaled rows stay beside fc1's saved, scaled ones. The experts then get probs of ones.
    const int scaled = b.tensor("experts.probs_on_input", b.act(R, w));
    b.op("experts.apply_probs_on_input", {.in = {expert_in, recv_probs}, .out = {scaled}, .save = {expert_in, recv_probs}, .region = moe_region, .flops = 2.0 * R * w});
    expert_in = scaled;
  }
  int expert_out = -1;
  if (grouped) {
    // Offloading expert_fc1 makes TE's fc1 save its original bf16 input unless the recipe is MXFP8 or NVFP4
    // (experts.py:277-283, set_save_original_input).
    const bool fc1_offloaded = m.fine_grained_activation_offloading &&
                               std::find(m.offload_modules.begin(), m.offload_modules.end(), "expert_fc1") != m.offload_modules.end();
    const bool fc1_original = fc1_offloaded && !(m.fp8 && m.fp8_recipe == model::Fp8Recipe::mxfp8) && !(m.fp4 && m.fp4_recipe == "nvfp4");
    // expert_fc1's hooks cover linear_fc1; it commits right after, force-freeing its input (experts.py:792-803).
    const std::size_t fc1_first = g.ops.size();
    const int f1 = b.linear("experts.linear_fc1", expert_in, w, (gated ? 2 : 1) * Fe, Parallel::none, moe_region, R, true, fc1_original);
    b.offload_group(kOffExpertFc1, fc1_first, -1, {expert_in});
    // TEGroupedMLP applies the probs inside the weighted activation (experts.py:728-900).
    ActivationOptions o = activation_options(m, fused_activation(m));
    o.probs = recv_probs;
    const std::size_t act_first = g.ops.size();
    const int a = activation(b, "experts.activation", f1, R, Fe, gated, fused_activation(m), moe_region | kMoeAct, o);
    const std::size_t act_end = g.ops.size();
    expert_out = b.linear("experts.linear_fc2", a, Fe, w, Parallel::none, moe_region, R);
    // TEGroupedMLP.forward's local fc1_output holds fc1's output until the forward returns (experts.py:795-905):
    // without grad (a recomputed layer's first forward) it outlives the activation until after linear_fc2.
    g.ops.back().keeps_alive.push_back(f1);
    g.discards.push_back({kMoeAct, {a}, static_cast<int>(g.ops.size()) - 1});
    // moe_act's hooks cover the activation (or its checkpoint); it commits after linear_fc2, so that fc1's output is
    // back before the recompute, and force-frees fc1's output (experts.py:881-901).
    for (std::size_t i = act_first; i < act_end; ++i) g.ops[i].offload_group = kOffMoeAct;
    g.offload_commits.push_back({kOffMoeAct, static_cast<int>(g.ops.size()) - 1, {f1}});
  } else {
    expert_out = sequential_mlp(b, m, expert_in, recv_probs, R, local_experts, Fe, w);
  }
  int back = expert_out;
  if (sorts) {
    back = b.tensor("combine.unsorted", b.act(R, w));
    b.op("combine.sort_chunks", {.in = {expert_out}, .out = {back}, .keep = {dispatched}, .region = moe_region, .movement = true});
  }
  b.routed_rows(-1, 0);
  if (m.moe_expert_capacity_factor && m.moe_pad_expert_input_to_capacity)  // padded to capacity: rows fixed
    for (std::size_t t = first_routed; t < g.tensors.size(); ++t) g.tensors[t].row_group = -1;
  const int returned = b.tensor("combine.returned", b.act(T * k, w));
  b.op("combine.all_to_all", {.in = {back}, .out = {returned}, .region = moe_region, .ws = gather_ws, .bws = gather_ws, .bytes_moved = 0, .comm = dispatch_comm});
  const int unpermuted = b.tensor("combine.unpermuted", b.act(T, w));
  b.op("combine.unpermute", {.in = {returned}, .out = {unpermuted}, .region = moe_region, .flops = 1.0 * T * k * w, .movement = true});
  // postprocess (moe_layer.py:583-585): fc2_latent_proj, TELinear(latent, h) duplicated over TP (:285-296),
  // back to [T, h]; it saves the unpermuted [T, latent] for its wgrad.
  const int out = m.moe_latent_size ? b.linear("fc2_latent_proj", unpermuted, w, h, Parallel::none, moe_region, T) : unpermuted;
  // custom_forward's locals hold the permuted and the received rows until the layer's forward returns, with or without
  // grad (moe_layer.py:651-692; traced on layout_fake_ep8_moonlight4_moe_r0: both freed after the shared experts' sum).
  int result = out;
  if (shared_out >= 0) {
    result = b.tensor("moe.output", b.act(T, h));
    b.op("moe.add_shared", {.in = {out, shared_out}, .out = {result}, .region = moe_region, .passthrough = true});
  }
  g.ops.back().keeps_alive.insert(g.ops.back().keeps_alive.end(), {permuted, received});
  return result;
}

}  // namespace peakcast::sim::detail
