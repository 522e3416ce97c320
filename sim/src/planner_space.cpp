// The plan's search space: the layouts the axes give for a model and GPU count, the spec of each
// layout, the recompute policies of a layout, and the launch settings of a configuration.
#include <algorithm>
#include <cstdlib>
#include <set>

#include "peakcast/sim/moe_routing.hpp"
#include "peakcast/sim/planner.hpp"
#include "peakcast/sim/ranking.hpp"

namespace peakcast::sim {

const char* to_string(PlanObjective o) { return o == PlanObjective::step_time ? "step_time" : "memory_headroom"; }

std::string describe(const PlanLayout& l) {
  std::string s = "TP" + std::to_string(l.tp) + (l.sequence_parallel ? " SP" : "") + " PP" + std::to_string(l.pp);
  if (l.first_stage_layers) s += "(" + std::to_string(*l.first_stage_layers) + "|..|" + std::to_string(*l.last_stage_layers) + ")";
  if (l.vpp > 1) s += " VPP" + std::to_string(l.vpp);
  s += " CP" + std::to_string(l.cp);
  if (l.ep > 1 || l.etp != l.tp) s += " EP" + std::to_string(l.ep) + " ETP" + std::to_string(l.etp);
  s += " DP" + std::to_string(l.dp) + " MBS" + std::to_string(l.mbs);
  if (l.distributed_optimizer) s += " distopt";
  if (l.overlap_grad_reduce) s += " overlap-grad";
  if (l.distribute_saved_activations) s += " distributed-ckpt";
  return s;
}

namespace planning {

namespace {

std::vector<std::int64_t> divisors(std::int64_t n) {
  std::vector<std::int64_t> out;
  for (std::int64_t k = 1; k <= n; ++k)
    if (n % k == 0) out.push_back(k);
  return out;
}

// A pipeline split: layers on the first, middle and last stages (all equal for the even split).
struct Split {
  std::optional<std::int64_t> first, last;
  std::vector<std::int64_t> stage_layers;  // the distinct per-stage counts (VPP must divide each)
};

// The even split when PP divides the layers; and uneven ones (num_layers_in_first/last_pipeline_stage)
// whose end stages hold up to `window` fewer layers than a middle stage (PP 2: the two ends differ by
// at most `window`). Megatron accepts any uneven split; the window keeps the ones that balance the
// embedding, loss and MTP blocks the ends carry. Hybrid patterns and explicit layouts split themselves.
std::vector<Split> pipeline_splits(const model::RunSpec& base, std::int64_t pp, std::int64_t window) {
  const std::int64_t layers = base.model.num_layers;
  std::vector<Split> out;
  if (layers % pp == 0 || base.model.hybrid_override_pattern) out.push_back({std::nullopt, std::nullopt, {layers / pp}});
  if (pp < 2 || window <= 0 || base.model.hybrid_override_pattern) return out;
  if (pp == 2) {
    for (std::int64_t f = 1; f < layers; ++f) {
      const std::int64_t l = layers - f;
      if (f != l && std::abs(f - l) <= window) out.push_back({f, l, {f, l}});
    }
    return out;
  }
  for (std::int64_t mid = 1; mid * (pp - 2) < layers; ++mid) {
    const std::int64_t ends = layers - mid * (pp - 2);
    for (std::int64_t f = std::max<std::int64_t>(1, mid - window); f <= mid; ++f) {
      const std::int64_t l = ends - f;
      if (l < std::max<std::int64_t>(1, mid - window) || l > mid || (f == mid && l == mid)) continue;
      out.push_back({f, l, {f, mid, l}});
    }
  }
  return out;
}

std::vector<std::int64_t> vpp_options(const Split& s, std::int64_t pp) {
  std::vector<std::int64_t> out{1};
  if (pp < 2) return out;
  const std::int64_t smallest = *std::min_element(s.stage_layers.begin(), s.stage_layers.end());
  for (std::int64_t v = 2; v <= smallest; ++v)
    if (std::all_of(s.stage_layers.begin(), s.stage_layers.end(), [v](std::int64_t n) { return n % v == 0; })) out.push_back(v);
  return out;
}

// (EP, ETP) pairs: EP divides the experts, EP x ETP x PP divides the GPUs, ETP within the TP limit.
// A dense model has neither (ETP follows TP).
std::vector<std::pair<std::int64_t, std::int64_t>> expert_layouts(const model::RunSpec& base, std::int64_t tp, std::int64_t pp,
                                                                  std::int64_t max_tp) {
  const auto& experts = base.model.num_moe_experts;
  if (!experts) return {{1, tp}};
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  const std::int64_t n = base.cluster.num_gpus;
  for (const std::int64_t ep : divisors(*experts)) {
    if ((n / pp) % ep != 0) continue;
    for (const std::int64_t etp : divisors(n / pp / ep))
      if (max_tp <= 0 || etp <= max_tp) out.emplace_back(ep, etp);
  }
  return out;
}

// The switches of one parallel shape: SP (TP > 1), the distributed optimizer, overlap_grad_reduce
// (off and on when DP > 1, unless the spec's is kept) and distribute_saved_activations (TP > 1 without
// SP), each right after its twin without it.
void add_switches(PlanLayout l, const model::RunSpec& base, const PlanOptions& options, std::vector<PlanLayout>& out) {
  const auto both = [](bool when, bool otherwise) { return when ? std::vector<bool>{false, true} : std::vector<bool>{otherwise}; };
  for (const bool sp : both(l.tp > 1, false))
    for (const bool distopt : {false, true})
      for (const bool overlap : both(options.vary_overlap_grad_reduce && l.dp > 1, base.ddp.overlap_grad_reduce))
        for (const bool distribute : both(l.tp > 1 && !sp, false)) {
          l.sequence_parallel = sp;
          l.distributed_optimizer = distopt;
          l.overlap_grad_reduce = overlap;
          l.distribute_saved_activations = distribute;
          out.push_back(l);
        }
}

}  // namespace

std::vector<PlanLayout> enumerate_layouts(const model::RunSpec& base, const PlanOptions& options) {
  std::vector<PlanLayout> out;
  const std::int64_t n = base.cluster.num_gpus;
  const std::int64_t gbs = base.train.global_batch_size.value_or(0);
  if (n <= 0 || gbs <= 0) return out;
  const std::int64_t max_tp = options.max_tensor_parallel;
  for (const std::int64_t tp : divisors(n)) {
    if (max_tp > 0 && tp > max_tp) continue;
    for (const std::int64_t pp : divisors(n / tp)) {
      const auto splits = pipeline_splits(base, pp, options.uneven_pipeline_window);
      for (const std::int64_t cp : divisors(n / tp / pp)) {
        const std::int64_t dp = n / (tp * pp * cp);
        if (gbs % dp != 0) continue;
        for (const auto& [ep, etp] : expert_layouts(base, tp, pp, max_tp))
          for (const auto& split : splits)
            for (const std::int64_t vpp : vpp_options(split, pp))
              for (const std::int64_t mbs : divisors(gbs / dp)) {
                PlanLayout l{.tp = tp, .pp = pp, .vpp = vpp, .cp = cp, .ep = ep, .etp = etp, .dp = dp, .mbs = mbs, .first_stage_layers = split.first, .last_stage_layers = split.last};
                add_switches(l, base, options, out);
              }
      }
    }
  }
  return out;
}

model::RunSpec layout_spec(const model::RunSpec& base, const PlanLayout& l) {
  model::RunSpec s = base;
  auto& m = s.model;
  m.tensor_model_parallel_size = l.tp;
  m.sequence_parallel = l.sequence_parallel;
  m.pipeline_model_parallel_size = l.pp;
  m.virtual_pipeline_model_parallel_size = l.vpp > 1 ? std::optional<std::int64_t>(l.vpp) : std::nullopt;
  m.context_parallel_size = l.cp;
  m.expert_model_parallel_size = l.ep;
  m.expert_tensor_parallel_size = m.num_moe_experts ? std::optional<std::int64_t>(l.etp) : std::nullopt;
  m.pipeline_model_parallel_layout.reset();
  m.account_for_embedding_in_pipeline_split = false;
  m.account_for_loss_in_pipeline_split = false;
  m.num_layers_in_first_pipeline_stage = l.first_stage_layers;
  m.num_layers_in_last_pipeline_stage = l.last_stage_layers;
  m.microbatch_group_size_per_vp_stage.reset();  // Megatron's default, PP
  m.distribute_saved_activations = l.distribute_saved_activations;
  // Settings that need a layout property stay as the input set them where it holds.
  m.tp_comm_overlap = base.model.tp_comm_overlap && l.tp > 1 && l.sequence_parallel;
  m.overlap_moe_expert_parallel_comm = base.model.overlap_moe_expert_parallel_comm && l.ep > 1;
  s.train.micro_batch_size = l.mbs;
  s.optimizer.use_distributed_optimizer = l.distributed_optimizer;
  s.ddp.use_distributed_optimizer = l.distributed_optimizer;
  s.ddp.overlap_grad_reduce = l.overlap_grad_reduce;
  s.ddp.overlap_param_gather = base.ddp.overlap_param_gather && l.distributed_optimizer && l.overlap_grad_reduce;
  s.optimizer.overlap_param_gather_with_optimizer_step =
      base.optimizer.overlap_param_gather_with_optimizer_step && l.distributed_optimizer && l.overlap_grad_reduce;
  return s;
}

std::vector<RecomputeChoice> structural_policies(const model::RunSpec& layout) {
  // The candidates `rank` enumerates (ranking_candidates.cpp), before validate().
  std::vector<RecomputeChoice> out;
  const auto tags = applicable_tags(layout);
  for (std::size_t mask = 0; mask < (std::size_t{1} << tags.size()); ++mask) {
    RecomputeChoice c;
    c.granularity = model::RecomputeGranularity::selective;
    for (std::size_t i = 0; i < tags.size(); ++i)
      if (mask & (std::size_t{1} << i)) c.modules.push_back(tags[i]);
    out.push_back(std::move(c));
  }
  const std::int64_t per_chunk = max_layers_per_chunk(layout);
  for (const auto method : {model::RecomputeMethod::uniform, model::RecomputeMethod::block})
    for (const std::int64_t n : method == model::RecomputeMethod::uniform ? uniform_layer_counts(per_chunk) : block_layer_counts(per_chunk)) {
      RecomputeChoice c;
      c.granularity = model::RecomputeGranularity::full;
      c.method = method;
      c.num_layers = n;
      out.push_back(c);
    }
  if (layout.model.pipeline_model_parallel_size == 1) {
    std::set<std::int64_t> ns;
    const std::int64_t most = layout.model.num_layers - 1;
    for (std::int64_t k = 1; k <= most; k *= 2) ns.insert(k);
    if (most >= 1) ns.insert(most);
    for (const std::int64_t k : ns) {
      RecomputeChoice c;
      c.cpu_offloading = true;
      c.cpu_offloading_num_layers = k;
      out.push_back(c);
    }
  }
  return out;
}

std::vector<RecomputeChoice> layout_policies(const model::RunSpec& layout, const PlanLayout& l) {
  std::vector<RecomputeChoice> all = structural_policies(layout);
  if (!l.distribute_saved_activations) return all;
  std::vector<RecomputeChoice> full;
  for (auto& c : all)
    if (c.granularity == model::RecomputeGranularity::full) full.push_back(std::move(c));
  return full;
}

Bytes static_peak_lower_bound(const model::StaticMemory& sm) {
  // At iteration 1's optimizer step the walk holds the model state, the Adam state just created and
  // the step's transient (memory_walk.cpp: base + optimizer_states, then the step's touch), and every
  // other term it adds (allocator slack, framework buffers, activations still alive) is >= 0.
  return sm.parameters + sm.gradients + sm.main_params + sm.fp8_weight_cache + sm.optimizer_states + sm.step_transient_first;
}

}  // namespace planning

}  // namespace peakcast::sim
