// TopKRouter (router.py at 24bad8e6) and its helpers (moe_utils.py), op by op as autograd records them:
// what each op saves for backward and the working tensors it holds. Saves follow PyTorch's derivatives.yaml:
// topk keeps its indices, softmax / sigmoid / sqrt their result, softplus and logsumexp their input
// (logsumexp its result too), gather its input and index, scatter its index, masked_fill its mask, a
// tensor division both operands, a multiply the other operand where that one needs a gradient; sums,
// views and scalar ops keep shapes only; 0-dim losses are not counted. Fused kernels: Transformer Engine
// 2.17.1 (Bridge 600d069b's uv.lock), pytorch/router.py. A Python local keeps its tensor to its function's
// return; such tensors ride on that function's last op.
#include "moe_router.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "module_blocks.hpp"

namespace peakcast::sim::detail {

namespace {

constexpr std::int64_t kIndex = 8;  // int64: torch.topk indices, the routing-map scatter's int copy
constexpr std::int64_t kInt = 4;    // .int() of the routing map (moe_utils.py:954)

struct Dims {
  std::int64_t T = 0;  // tokens on this rank: the SP shard (router input [s/tp, b, h]) or all of them
  std::int64_t E = 0, k = 0, h = 0, batch = 1;
  std::int64_t rb = 0;                                                 // router dtype: fp32 4, fp64 8, unset the input's (router.py:105-111)
  std::int64_t act = 2;                                                // activation dtype, also the weights' (Float16Module)
  Bytes te(std::int64_t bytes) const { return Bytes{T * E * bytes}; }  // [T, E]
  Bytes tk(std::int64_t bytes) const { return Bytes{T * k * bytes}; }  // [T, k]
};

struct Groups {
  std::int64_t groups = 0, group_topk = 0;
};  // 0: no group-limited routing

// Group-limited routing (moe_utils.py:849-884 `if group_topk`): moe_router_group_topk with
// moe_router_num_groups, or the deprecated moe_router_topk_limited_devices, which Megatron turns into
// group_topk with one group per EP rank (transformer_config.py:2383-2389).
Groups router_groups(const model::ModelSpec& m) {
  if (m.moe_router_group_topk.value_or(0) > 0) return {m.moe_router_num_groups.value_or(0), *m.moe_router_group_topk};
  if (m.moe_router_topk_limited_devices.value_or(0) > 0) return {m.expert_model_parallel_size, *m.moe_router_topk_limited_devices};
  return {};
}

bool lb_type_is(const model::ModelSpec& m, const char* name) {
  const auto* s = std::get_if<std::string>(&m.moe_router_load_balancing_type);
  return s != nullptr && *s == name;  // a list never equals a name (router.py:769-771)
}

struct Router {
  GraphBuilder& b;
  const model::ModelSpec& m;
  Dims d;
  std::uint32_t region;
  // The time model's per-op host cost was fitted with the router as two ops (gating, routing); the
  // first two ops carry the calls, the others none, so the fit keeps its meaning.
  int host_calls_left = 2;

  int op(const std::string& name, GraphBuilder::OpArgs a) {
    a.region = region;
    a.calls = host_calls_left-- > 0 ? 1.0 : 0.0;
    return b.op(name, a);
  }
  int tensor(const std::string& name, Bytes bytes, bool grad = true) { return b.tensor(name, bytes, grad); }
  void keep_to_last_op(const std::vector<int>& locals) {
    auto& last = b.graph().ops.back();
    last.keeps_alive.insert(last.keeps_alive.end(), locals.begin(), locals.end());
  }
};

struct Routed {
  int probs = -1, map = -1;
};

// apply_input_jitter (router.py:709-728): input * Uniform(1 - eps, 1 + eps).rsample(shape). rsample makes
// rand and rand * (high - low) before the sum (torch/distributions/uniform.py); the multiply saves the
// noise (the input's gradient needs it), and the gating then saves the jittered copy.
int jitter(Router& r, int x) {
  const Dims& d = r.d;
  const Bytes row{d.T * d.h * d.act};
  const int noise = r.tensor("router.jitter_noise", row, false);
  r.op("router.jitter_sample", {.out = {noise}, .flops = 2.0 * d.T * d.h, .ws = Bytes{2 * row.value}});
  const int jittered = r.tensor("router.jittered_input", row);
  r.op("router.jitter", {.in = {x, noise}, .out = {jittered}, .save = {noise}, .flops = 1.0 * d.T * d.h});
  return jittered;
}

// RouterGatingLinearFunction (moe_utils.py:1355-1435): logits [T, E] in the router dtype; it saves its
// input. Transformer Engine's GEMM takes the bf16 operands as they are (te_general_gemm, :1384-1386; not
// for fp64); torch.mm needs copies cast to the router dtype (:1388-1391). The backward casts the weight
// and the input again either way and computes the input gradient in the router dtype before casting it
// back (:1417-1425); the weight gradient stays in param.grad until the DDP hook takes it.
int gating(Router& r, int x) {
  const Dims& d = r.d;
  const ShapeContext& c = r.b.ctx();
  const bool casts = d.rb != d.act;
  const bool te_gemm = c.te && d.rb != 8;
  const Bytes fwd_copies = casts && !te_gemm ? Bytes{(d.T + d.E) * d.h * d.rb} : Bytes{};
  const std::int64_t wgrad = d.E * d.h * d.act;
  const Bytes bwd = casts ? Bytes{std::max((d.T + d.E) * d.h * d.rb, d.E * d.h * d.rb + wgrad)} : Bytes{wgrad};
  const int logits = r.tensor("router.logits", d.te(d.rb));
  r.op("router.gating", {.in = {x}, .out = {logits}, .save = {x}, .flops = 2.0 * d.T * d.h * d.E, .ws = fwd_copies, .bws = bwd, .gemm = true});
  return logits;
}

// moe_router_force_load_balancing / moe_router_force_biased (router.py:859-867): RandomSTE clones the
// logits and fills them with normals (moe_utils.py:1265-1277); force_biased does that too and then adds
// a shared per-expert bias (:1317-1351). Each is a new [T, E] tensor; gradients pass straight through.
int benchmark_logits(Router& r, int logits) {
  const Dims& d = r.d;
  const auto random = [&](const char* name) {
    const int t = r.tensor(name, d.te(d.rb));
    r.op(name, {.in = {logits}, .out = {t}, .flops = 1.0 * d.T * d.E, .passthrough = true});
    return t;
  };
  if (r.m.moe_router_force_load_balancing) logits = random("router.random_logits");
  if (r.m.moe_router_force_biased) {
    logits = random("router.biased_random_logits");
    logits = random("router.biased_logits");
  }
  return logits;
}

// apply_z_loss (router.py:642-707), run whenever moe_z_loss_coeff is set: z_loss_func's logsumexp saves
// the logits and its [T] result, which square saves again (moe_utils.py:153-182); MoEAuxLossAutoScaler
// hands the logits on as a view. logsumexp works on logits - max (ATen logsumexp), its backward on
// (logits - lse).exp() before the product with the gradient.
void z_loss(Router& r, int logits) {
  const Dims& d = r.d;
  const int lse = r.tensor("router.z_loss_logsumexp", Bytes{d.T * d.rb});
  r.op("router.z_loss", {.in = {logits}, .out = {lse}, .save = {logits, lse}, .flops = 4.0 * d.T * d.E, .ws = d.te(d.rb) + Bytes{d.T * d.rb}, .bws = Bytes{2 * d.te(d.rb).value}});
}

// torch.softmax(x, dim=-1, dtype=torch.float32): a float32 copy first when x is not (aten softmax's
// toType), the result saved; its backward's float32 gradient is cast back to x's dtype.
int softmax_fp32(Router& r, const std::string& name, int x, std::int64_t rows_x_cols, std::int64_t x_bytes) {
  const Bytes out{rows_x_cols * kFp32};
  const Bytes copy = x_bytes != kFp32 ? out : Bytes{};
  const int s = r.tensor(name, out);
  r.op(name, {.in = {x}, .out = {s}, .save = {s}, .flops = 5.0 * rows_x_cols, .ws = copy, .bws = copy});
  return s;
}

// The fp32 [T, E] scores of sigmoid / sqrtsoftplus (moe_utils.py:926-930, :1001-1006): logits.float()
// is a copy unless the logits are fp32; sigmoid saves its result, softplus its (float) input, sqrt its result.
int sigmoid_scores(Router& r, const std::string& prefix, int logits) {
  const Dims& d = r.d;
  const Bytes copy = d.rb != kFp32 ? d.te(kFp32) : Bytes{};
  if (r.m.moe_router_score_function == "sqrtsoftplus") {
    int f = logits;
    if (d.rb != kFp32) {
      f = r.tensor(prefix + "logits_fp32", d.te(kFp32));
      r.op(prefix + "to_fp32", {.in = {logits}, .out = {f}, .flops = 1.0 * d.T * d.E});
    }
    const int sp = r.tensor(prefix + "softplus", d.te(kFp32));
    r.op(prefix + "softplus", {.in = {f}, .out = {sp}, .save = {f}, .flops = 4.0 * d.T * d.E});
    const int sq = r.tensor(prefix + "sqrt", d.te(kFp32));
    r.op(prefix + "sqrt", {.in = {sp}, .out = {sq}, .save = {sq}, .flops = 1.0 * d.T * d.E});
    return sq;
  }
  const int s = r.tensor(prefix + "sigmoid", d.te(kFp32));
  r.op(prefix + "sigmoid", {.in = {logits}, .out = {s}, .save = {s}, .flops = 4.0 * d.T * d.E, .ws = copy, .bws = copy});
  return s;
}

// scores / (scores.sum(dim=-1, keepdim=True) + 1e-20) over `cols` columns (moe_utils.py:940, :1003):
// the division saves both operands; its backward for the denominator, -grad * ((x / den) / den),
// holds four temporaries of x's shape beside the numerator's gradient.
int normalize(Router& r, const std::string& name, int x, std::int64_t cols) {
  const Dims& d = r.d;
  const Bytes full{d.T * cols * kFp32};
  const int out = r.tensor(name, full);
  const int den = r.tensor(name + "_denominator", Bytes{d.T * kFp32});
  r.op(name, {.in = {x}, .out = {out, den}, .save = {x, den}, .flops = 2.0 * d.T * cols, .ws = Bytes{d.T * kFp32}, .bws = Bytes{4 * full.value}});
  return out;
}

struct Selected {
  int values = -1, indices = -1, mask = -1;
};

// torch.topk(x, k, dim=1) (saves its indices), or group_limited_topk (moe_utils.py:673-728): the top
// k / group_topk scores per group summed, the best groups scattered into a [T, groups] mask expanded
// and copied to [T, E], masked_fill(~mask, -inf) (saves ~mask), then topk. Its locals stay to its return.
// A score tensor that needs no gradient (the expert-biased copy) gets nothing saved: its graph dies with
// the caller's locals.
Selected select_topk(Router& r, int x, std::int64_t xb, const Groups& g) {
  const Dims& d = r.d;
  const bool grad = r.b.graph().tensors.at(static_cast<std::size_t>(x)).requires_grad;
  Selected s;
  s.values = r.tensor("router.topk_values", d.tk(xb), grad);
  s.indices = r.tensor("router.topk_indices", d.tk(kIndex), false);
  const auto unsaved_without_grad = [&](int op) { if (!grad) r.b.graph().ops.at(static_cast<std::size_t>(op)).saves.clear(); };
  if (g.group_topk <= 0) {
    unsaved_without_grad(r.op("router.topk", {.in = {x}, .out = {s.values, s.indices}, .save = {s.indices}, .flops = 2.0 * d.T * d.E}));
    return s;
  }
  const std::int64_t G = g.groups, per_group = d.k / g.group_topk;
  s.mask = r.tensor("router.group_mask", d.te(1), false);
  // group scores and mask [T, G], the chosen groups [T, group_topk], and (with a gradient) the
  // per-group top-k indices [T, G, k / group_topk] that the group scores' graph keeps
  const Bytes locals{2 * d.T * G * xb + d.T * g.group_topk * kIndex + (grad ? d.T * G * per_group * kIndex : 0)};
  const Bytes ws = locals + Bytes{2 * d.te(xb).value} + d.te(1);  // score_mask, masked scores; .bool() copy
  unsaved_without_grad(r.op("router.group_limited_topk", {.in = {x}, .out = {s.values, s.indices, s.mask}, .save = {s.mask, s.indices}, .flops = 6.0 * d.T * d.E, .ws = ws, .bws = grad ? d.te(xb) : Bytes{}}));
  return s;
}

// torch.gather(x, 1, indices): saves x and the index (gather_backward needs self).
int gather(Router& r, int x, int indices, std::int64_t xb) {
  const int out = r.tensor("router.gathered", r.d.tk(xb));
  r.op("router.gather", {.in = {x, indices}, .out = {out}, .save = {x, indices}, .flops = 1.0 * r.d.T * r.d.k});
  return out;
}

// zeros_like(logits).int().scatter(1, idx, 1).bool() (moe_utils.py:958): the chain's working tensors
// peak at max(rb + 4, 8) bytes an element, the 1-byte result included.
Bytes map_chain_ws(const Dims& d) { return Bytes{(std::max(d.rb + kInt, 2 * kInt) - 1) * d.T * d.E}; }

int routing_map_of(Router& r, int indices) {
  const int map = r.tensor("router.routing_map", r.d.te(1), false);
  r.op("router.routing_map", {.in = {indices}, .out = {map}, .flops = 1.0 * r.d.T * r.d.E, .ws = map_chain_ws(r.d)});
  return map;
}

// The [T, k] probabilities to [T, E] (moe_utils.py:942-958): scaled by moe_router_topk_scaling_factor,
// cast to the logits' dtype, scattered into zeros_like(logits) (saves the index); then the routing map.
Routed expand_probs(Router& r, int probs_k, int indices, std::vector<int>& locals) {
  const Dims& d = r.d;
  const std::int64_t T = d.T, E = d.E, k = d.k;
  if (r.m.moe_router_topk_scaling_factor.value_or(0.0) != 0.0) {
    const int scaled = r.tensor("router.probs_scaled", d.tk(kFp32));
    r.op("router.topk_scaling", {.in = {probs_k}, .out = {scaled}, .flops = 1.0 * T * k});
    probs_k = scaled;
  }
  if (d.rb != kFp32) {
    const int cast = r.tensor("router.probs_cast", d.tk(d.rb));
    r.op("router.probs_cast", {.in = {probs_k}, .out = {cast}, .flops = 1.0 * T * k});
    probs_k = cast;
  }
  Routed out;
  out.probs = r.tensor("router.probs", d.te(d.rb));
  r.op("router.scatter_probs", {.in = {probs_k, indices}, .out = {out.probs}, .save = {indices}, .flops = 1.0 * T * E, .ws = d.te(d.rb)});
  out.map = routing_map_of(r, indices);
  r.keep_to_last_op(locals);
  return out;
}

// topk_routing_with_score_function, unfused (moe_utils.py:766-958). `given` is the quantile-balancing
// router's [T, k] index (precomputed_indices; no groups, no expert bias there), -1 otherwise.
Routed topk_routing(Router& r, int logits, int given) {
  const Dims& d = r.d;
  const auto& m = r.m;
  const Groups g = given < 0 ? router_groups(m) : Groups{};
  std::vector<int> locals;
  int probs_k = -1, indices = given;
  if (m.moe_router_score_function == "softmax") {
    if (m.moe_router_pre_softmax) {
      const int scores = softmax_fp32(r, "router.softmax", logits, d.T * d.E, d.rb);
      if (given >= 0) {
        probs_k = gather(r, scores, given, kFp32);
      } else {
        const Selected s = select_topk(r, scores, kFp32, g);
        probs_k = s.values;
        indices = s.indices;
      }
    } else {
      int values = -1;
      if (given >= 0) {
        values = gather(r, logits, given, d.rb);
      } else {
        const Selected s = select_topk(r, logits, d.rb, g);
        values = s.values;
        indices = s.indices;
      }
      locals.push_back(values);  // `scores` stays referenced to the return
      probs_k = softmax_fp32(r, "router.softmax", values, d.T * d.k, d.rb);
    }
  } else {
    const int scores = sigmoid_scores(r, "router.", logits);
    int values = -1;
    if (given >= 0) {
      values = gather(r, scores, given, kFp32);
    } else if (m.moe_router_enable_expert_bias) {
      // scores + expert_bias chooses the experts (moe_utils.py:932-935); its top-k values are never used,
      // so no gradient flows through them, but they and their graph stay referenced to the return.
      const int biased = r.tensor("router.scores_for_routing", d.te(kFp32), false);
      r.op("router.add_expert_bias", {.out = {biased}, .keep = {scores}, .flops = 1.0 * d.T * d.E});
      const Selected s = select_topk(r, biased, kFp32, g);
      indices = s.indices;
      locals.insert(locals.end(), {biased, s.values});
      if (s.mask >= 0) locals.push_back(s.mask);
      values = gather(r, scores, indices, kFp32);
    } else {
      const Selected s = select_topk(r, scores, kFp32, g);
      values = s.values;
      indices = s.indices;
    }
    probs_k = d.k > 1 ? normalize(r, "router.normalize", values, d.k) : values;
  }
  return expand_probs(r, probs_k, indices, locals);
}

// fused_topk_with_score_function (moe_utils.py:828-847; TE FusedTopkScoreFunction): probs [T, E] in the
// logits' dtype, a bool routing map and an fp32 [T, E] intermediate, the last two saved; the backward
// writes the logits' gradient into one empty_like. Groups, scaling and expert bias run inside the kernel.
Routed fused_topk(Router& r, int logits) {
  const Dims& d = r.d;
  Routed out;
  out.probs = r.tensor("router.probs", d.te(d.rb));
  out.map = r.tensor("router.routing_map", d.te(1), false);
  const int inter = r.tensor("router.fused_topk_intermediate", d.te(kFp32), false);
  r.op("router.fused_topk", {.in = {logits}, .out = {out.probs, out.map, inter}, .save = {out.map, inter}, .flops = 8.0 * d.T * d.E});
  return out;
}

// sinkhorn_load_balancing (router.py:280-311), training: under no_grad, sinkhorn on an fp32 copy
// (moe_utils.py:185-207: exp, then products with the row and column scales; the result stays a local)
// picks the experts; the activation (sigmoid in the logits' dtype for top-1, else fp32 softmax cast
// back) saves its result, and logits * map saves the map.
Routed sinkhorn(Router& r, int logits) {
  const Dims& d = r.d;
  const int norm = r.tensor("router.sinkhorn_norm", d.te(kFp32), false);
  const int indices = r.tensor("router.topk_indices", d.tk(kIndex), false);
  const Bytes copy = d.rb != kFp32 ? d.te(kFp32) : Bytes{};
  r.op("router.sinkhorn", {.out = {norm, indices}, .keep = {logits}, .flops = 20.0 * d.T * d.E, .ws = copy + Bytes{2 * d.te(kFp32).value}});
  int act = -1;
  if (d.k == 1) {
    act = r.tensor("router.sinkhorn_sigmoid", d.te(d.rb));
    r.op("router.sinkhorn_sigmoid", {.in = {logits}, .out = {act}, .save = {act}, .flops = 4.0 * d.T * d.E});
  } else {
    act = softmax_fp32(r, "router.sinkhorn_softmax", logits, d.T * d.E, d.rb);
    if (d.rb != kFp32) {
      const int cast = r.tensor("router.sinkhorn_softmax_cast", d.te(d.rb));
      r.op("router.sinkhorn_softmax_cast", {.in = {act}, .out = {cast}, .flops = 1.0 * d.T * d.E});
      act = cast;
    }
  }
  Routed out;
  out.map = routing_map_of(r, indices);
  out.probs = r.tensor("router.probs", d.te(d.rb));
  r.op("router.sinkhorn_probs", {.in = {act, out.map}, .out = {out.probs}, .save = {out.map}, .keep = {norm}, .flops = 1.0 * d.T * d.E});
  return out;
}

// quantile_balancing (router.py:313-386), training: under no_grad an fp32 copy of the logits is
// all-gathered over TP x CP, qb_dual_update (moe_utils.py:210-245) takes top-(k+1) of scores - beta and
// the column quantile from a top-(M k / E + 1) over tokens of scores - alpha (its last row, a view, is
// beta_local); the rank's [T, k] rows are then routed by the shared score function while the copy, the
// gathered logits, the top-(k+1) and beta_local's storage stay quantile_balancing's locals. Without a
// gather the index passed on is a view of the [T, k + 1] indices, whose storage the saves keep.
Routed quantile_balancing(Router& r, int logits) {
  const Dims& d = r.d;
  const ShapeContext& c = r.b.ctx();
  const std::int64_t gs = c.tp * c.cp, M = d.T * gs, col_target = M * d.k / d.E;
  const Bytes copy = d.rb != kFp32 ? d.te(kFp32) : Bytes{};
  const Bytes gathered = gs > 1 ? Bytes{M * d.E * kFp32} : Bytes{};
  const Bytes top = Bytes{M * (d.k + 1) * kFp32} + (gs > 1 ? Bytes{M * (d.k + 1) * kIndex} : Bytes{});
  const Bytes quantile{(col_target + 1) * d.E * kFp32};
  const int qb_locals = r.tensor("router.qb_locals", copy + gathered + top + quantile, false);
  const int indices = r.tensor("router.qb_indices", Bytes{d.T * (gs > 1 ? d.k : d.k + 1) * kIndex}, false);
  r.op("router.qb_select", {.out = {qb_locals, indices}, .keep = {logits}, .flops = 6.0 * M * d.E, .ws = Bytes{M * d.E * kFp32 + (col_target + 1) * d.E * kIndex}, .comm = static_cast<double>((gs - 1) * d.T * d.E * kFp32)});
  const Routed out = topk_routing(r, logits, indices);
  r.keep_to_last_op({qb_locals});
  return out;
}

// apply_router_token_dropping (moe_utils.py:1019-1085) with moe_expert_capacity_factor: the capacity
// mask (all ones when the capacity exceeds the tokens, else the top-capacity tokens per expert by
// probability, scattered), its AND with the routing map unless padding to capacity, and probs * map,
// which saves the map. The top-capacity values and indices stay locals to the return.
Routed drop_tokens(Router& r, Routed in) {
  const Dims& d = r.d;
  const auto capacity = static_cast<std::int64_t>(
      std::ceil(static_cast<double>(d.T * d.k) / static_cast<double>(d.E) * *r.m.moe_expert_capacity_factor));
  std::vector<int> locals;
  const int capacity_mask = r.tensor("router.capacity_mask", d.te(1), false);
  if (capacity > d.T) {
    r.op("router.capacity_mask", {.out = {capacity_mask}, .flops = 1.0 * d.T * d.E, .ws = d.te(d.rb)});
  } else {
    const int top = r.tensor("router.capacity_topk", Bytes{capacity * d.E * (d.rb + kIndex)}, false);
    r.op("router.capacity_mask", {.out = {top, capacity_mask}, .keep = {in.probs}, .flops = 3.0 * d.T * d.E, .ws = Bytes{2 * d.te(d.rb).value - d.te(1).value}});
    locals.push_back(top);
  }
  int map = capacity_mask;
  if (!r.m.moe_pad_expert_input_to_capacity) {
    map = r.tensor("router.routing_map", d.te(1), false);
    r.op("router.drop_map", {.in = {in.map, capacity_mask}, .out = {map}, .flops = 1.0 * d.T * d.E});
  }
  Routed out;
  out.map = map;
  out.probs = r.tensor("router.probs", d.te(d.rb));
  r.op("router.drop_probs", {.in = {in.probs, map}, .out = {out.probs}, .save = {map}, .flops = 1.0 * d.T * d.E});
  r.keep_to_last_op(locals);
  return out;
}

// The scores the load-balancing losses see (compute_routing_scores_for_aux_loss, moe_utils.py:960-1016)
// and its routing map (a top-k over them, scattered as the dispatch map is). Unfused: fp32 softmax over
// the logits (saved), or sigmoid / sqrtsoftplus normalised over the experts (moe_utils.py:997-1006).
// Fused (TE FusedComputeScoresForMoEAuxLoss): fp32 scores, a bool map and an fp32 intermediate, saved.
Selected aux_scores(Router& r, int logits) {
  const Dims& d = r.d;
  Selected s;
  s.mask = r.tensor("router.aux_routing_map", d.te(1), false);
  if (r.m.moe_router_fusion) {
    s.values = r.tensor("router.aux_scores", d.te(kFp32));
    const int inter = r.tensor("router.aux_scores_intermediate", d.te(kFp32), false);
    r.op("router.aux_scores_fused", {.in = {logits}, .out = {s.values, s.mask, inter}, .save = {inter}, .flops = 8.0 * d.T * d.E});
    return s;
  }
  if (r.m.moe_router_score_function == "softmax") {
    s.values = softmax_fp32(r, "router.aux_softmax", logits, d.T * d.E, d.rb);
  } else {
    s.values = normalize(r, "router.aux_normalize", sigmoid_scores(r, "router.aux_", logits), d.E);
  }
  // The top-k's values are discarded and its indices die with compute_routing_scores_for_aux_loss.
  r.op("router.aux_routing_map", {.out = {s.mask}, .keep = {s.values}, .flops = 3.0 * d.T * d.E, .ws = d.tk(kFp32 + kIndex) + map_chain_ws(d)});
  return s;
}

// _apply_aux_loss / _apply_seq_aux_loss / _apply_global_aux_loss (router.py:410-551) for each type with a
// coefficient > 0. Unfused, switch_load_balancing_loss_func (moe_utils.py:63-150) sums the scores over
// tokens (a sum keeps shapes only, and its gradient is an expanded view) and multiplies by the tokens
// per expert, which that multiply saves: int64 [E] from the map's sum, [batch * E] for the per-sequence
// loss, the fp32 running average [E] for the global one. Fused (TE FusedAuxLoss) saves the same tokens
// per expert and a [2] fp32 constant, and its backward allocates an fp32 [T, E] gradient of the scores.
void aux_losses(Router& r, int logits) {
  const Dims& d = r.d;
  static const char* const kTypes[] = {"aux_loss", "seq_aux_loss", "global_aux_loss"};
  bool enabled = false;
  for (const char* t : kTypes) enabled = enabled || model::moe_aux_loss_coeff_for(r.m, t) > 0;
  if (!enabled) return;  // TopKRouter.is_aux_loss_enabled (router.py:403-408)
  const Selected s = aux_scores(r, logits);
  for (const char* t : kTypes) {
    if (!(model::moe_aux_loss_coeff_for(r.m, t) > 0)) continue;
    const std::string type = t;
    std::int64_t bytes = type == "seq_aux_loss" ? d.batch * d.E * kIndex : type == "global_aux_loss" ? d.E * kFp32
                                                                                                     : d.E * kIndex;
    if (r.m.moe_router_fusion) bytes += 2 * kFp32;
    const int saved = r.tensor("router." + type + "_tokens_per_expert", Bytes{bytes}, false);
    if (r.m.moe_router_fusion) {
      r.op("router." + type, {.in = {s.values}, .out = {saved}, .save = {saved}, .keep = {s.mask}, .flops = 2.0 * d.T * d.E});
    } else {
      r.op("router." + type, {.out = {saved}, .save = {saved}, .keep = {s.values, s.mask}, .flops = 2.0 * d.T * d.E});
    }
  }
}

// The dispatcher keeps the routing map it is given (self.routing_map, token_dispatcher.py:275, :640)
// while the layer's backward needs it; when no autograd node saves the final map, it is held here.
void hold_routing_map(GraphBuilder& b, int map) {
  LayerGraph& g = b.graph();
  for (const auto& op : g.ops)
    if (std::find(op.saves.begin(), op.saves.end(), map) != op.saves.end()) return;
  g.ops.at(static_cast<std::size_t>(g.tensors.at(static_cast<std::size_t>(map)).producer)).saves.push_back(map);
}

}  // namespace

RouterOutput router(GraphBuilder& b, const model::ModelSpec& m, int ln, std::uint32_t moe_region) {
  const ShapeContext& c = b.ctx();
  Dims d;
  d.T = c.local_tokens;
  d.E = m.num_moe_experts.value_or(1);
  d.k = m.moe_router_topk;
  d.h = c.hidden;
  d.batch = c.batch;
  d.act = c.act_bytes;
  d.rb = m.moe_router_dtype_set ? dtype_bytes(m.moe_router_dtype) : c.act_bytes;
  Router r{b, m, d, moe_region};
  // TopKRouter.forward (router.py:843-871), then routing (:744-835).
  const int input = m.moe_input_jitter_eps ? jitter(r, ln) : ln;
  const int logits = benchmark_logits(r, gating(r, input));
  if (m.moe_z_loss_coeff) z_loss(r, logits);
  Routed routed;
  if (lb_type_is(m, "sinkhorn")) routed = sinkhorn(r, logits);
  else if (lb_type_is(m, "quantile_balancing")) routed = quantile_balancing(r, logits);
  else if (m.moe_router_fusion) routed = fused_topk(r, logits);
  else routed = topk_routing(r, logits, -1);
  if (m.moe_expert_capacity_factor) routed = drop_tokens(r, routed);
  aux_losses(r, logits);
  hold_routing_map(b, routed.map);
  return {routed.probs, routed.map};
}

}  // namespace peakcast::sim::detail
