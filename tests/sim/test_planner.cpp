// `peakcast plan`: every pruning rule against brute force on small models. The brute force here
// enumerates the same space (planning::enumerate_layouts x structural_policies), validates each
// configuration and simulates every one Megatron accepts; the rules must never discard a
// configuration that fits (the static-memory bound and the step-time bound are lower bounds of what
// the simulation gives, on every configuration), and plan() must return the brute force's top K.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/validate.hpp"
#include "peakcast/sim/planner.hpp"
#include "peakcast/sim/ranking.hpp"

using namespace peakcast;

namespace {

model::RunSpec parse(const std::string& text, const std::vector<std::string>& sets = {}) {
  auto r = model::parse_run_spec(text, sets);
  for (const auto& d : r.diagnostics) INFO(model::format(d));
  REQUIRE(r.spec);
  return *r.spec;
}

// About 157 M parameters: 18 bytes a parameter without the distributed optimizer is 2.8 GB on one
// GPU, so the small capacity below cuts the narrow layouts by static memory alone.
const char* kDense = R"({"model":{"num_layers":8,"hidden_size":1024,"num_attention_heads":16,"num_query_groups":4,
  "ffn_hidden_size":2816,"vocab_size":32768,"seq_length":1024,"max_position_embeddings":1024,"normalization":"RMSNorm",
  "gated_linear_unit":true,"activation_func":"silu","add_bias_linear":false,"position_embedding_type":"rope",
  "share_embeddings_and_output_weights":false,"bf16":true},
  "train":{"micro_batch_size":1,"global_batch_size":16},"ddp":{"grad_reduce_in_fp32":true},
  "cluster":{"num_gpus":8,"gpu":"h100-sxm-80gb"}})";

const char* kMoe = R"({"model":{"num_layers":4,"hidden_size":512,"num_attention_heads":8,"ffn_hidden_size":1024,
  "vocab_size":8192,"seq_length":512,"max_position_embeddings":512,"normalization":"RMSNorm","gated_linear_unit":true,
  "activation_func":"silu","add_bias_linear":false,"position_embedding_type":"rope","share_embeddings_and_output_weights":false,
  "bf16":true,"num_moe_experts":8,"moe_ffn_hidden_size":512,"moe_router_topk":2,"moe_grouped_gemm":true,
  "moe_token_dispatcher_type":"alltoall"},
  "train":{"micro_batch_size":1,"global_batch_size":8},"ddp":{"grad_reduce_in_fp32":true},
  "cluster":{"num_gpus":4,"gpu":"h100-sxm-80gb"}})";

struct Config {
  std::size_t layout = 0, policy = 0;
  sim::PlanLayout l;
  sim::RecomputeChoice c;
  double step = 0;
  Bytes headroom;
  bool accepted = false;
};

// Every configuration Megatron accepts, simulated; the bounds checked on each.
std::vector<Config> brute_force(const model::RunSpec& base, const sim::PlanOptions& o, std::size_t* static_cut_that_fit = nullptr) {
  std::vector<Config> out;
  const auto layouts = sim::planning::enumerate_layouts(base, o);
  for (std::size_t li = 0; li < layouts.size(); ++li) {
    const model::RunSpec s = sim::planning::layout_spec(base, layouts[li]);
    if (model::has_errors(model::validate(sim::with_choice(s, sim::RecomputeChoice{})))) continue;
    sim::Predictor p(s);
    Bytes bound{};
    const auto& statics = p.static_memory();
    for (const auto& rs : statics) bound = max(bound, sim::planning::static_peak_lower_bound(rs.memory));
    const Bytes capacity = s.cluster.gpu.memory_bytes;
    const double time_bound = p.step_time(sim::RecomputeChoice{}).any_policy_lower_bound_s;
    const auto policies = sim::planning::layout_policies(s, layouts[li]);
    for (std::size_t k = 0; k < policies.size(); ++k) {
      if (model::has_errors(model::validate(sim::with_choice(s, policies[k])))) continue;
      const sim::Prediction pred = p.run(policies[k]);
      // Rule 1 (static memory): a lower bound of every rank's simulated peak.
      REQUIRE(pred.ranks.size() == statics.size());
      for (std::size_t r = 0; r < statics.size(); ++r)
        REQUIRE(sim::planning::static_peak_lower_bound(statics[r].memory) <= pred.ranks[r].peak_allocated);
      // Rule 2 (step time): the policy-free bound is below every policy's step time, and the step time
      // without the memory walk is the simulated one.
      const auto est = p.step_time(policies[k]);
      REQUIRE(est.step_s == Approx(pred.step_time_s).epsilon(1e-12));
      REQUIRE(time_bound <= pred.step_time_s * (1 + 1e-12));
      Config c{li, k, layouts[li], policies[k], pred.step_time_s, sim::plan_headroom(pred), sim::plan_verdict(pred).accepted()};
      if (c.accepted && bound > capacity && static_cut_that_fit) ++*static_cut_that_fit;
      out.push_back(c);
    }
  }
  return out;
}

bool better_time(const Config& a, const Config& b) {
  if (a.step != b.step) return a.step < b.step;
  if (a.headroom != b.headroom) return a.headroom > b.headroom;
  return std::tie(a.layout, a.policy) < std::tie(b.layout, b.policy);
}
bool better_headroom(const Config& a, const Config& b) {
  if (a.headroom.gb() != b.headroom.gb()) return a.headroom.gb() > b.headroom.gb();
  if (a.step != b.step) return a.step < b.step;
  return std::tie(a.layout, a.policy) < std::tie(b.layout, b.policy);
}

// The capacity at which about `fraction` of the accepted configurations fit.
Bytes capacity_for(const model::RunSpec& base, const sim::PlanOptions& o, double fraction) {
  std::vector<Bytes> need;
  for (const auto& c : brute_force(base, o)) need.push_back(base.cluster.gpu.memory_bytes - c.headroom);
  std::sort(need.begin(), need.end());
  return need.at(static_cast<std::size_t>(fraction * static_cast<double>(need.size())));
}

void check_against_brute_force(model::RunSpec base, sim::PlanOptions o) {
  o.threads = 2;
  std::size_t static_cut_that_fit = 0;
  auto all = brute_force(base, o, &static_cut_that_fit);
  CHECK(static_cut_that_fit == 0);  // rule 1 never discards a configuration that fits
  std::vector<Config> fit;
  for (const auto& c : all)
    if (c.accepted) fit.push_back(c);
  REQUIRE(fit.size() >= o.top);
  REQUIRE(fit.size() < all.size());  // the capacity leaves some out
  const bool time = o.objective == sim::PlanObjective::step_time;
  std::sort(fit.begin(), fit.end(), time ? better_time : better_headroom);
  const sim::PlanResult r = sim::plan(base, o);
  REQUIRE(r.entries.size() >= o.top);
  CHECK(r.stats.fitting <= fit.size());
  CHECK(r.stats.configurations == r.stats.rejected_by_megatron + r.stats.pruned_static_memory + r.stats.pruned_by_bound + r.stats.simulated);
  for (std::size_t i = 0; i < o.top; ++i) {
    INFO("position " << i << ": plan " << sim::describe(r.entries[i].layout) << " " << r.entries[i].policy << ", brute force "
                     << sim::describe(fit[i].l) << " " << sim::describe(fit[i].c));
    CHECK(sim::describe(r.entries[i].layout) == sim::describe(fit[i].l));
    CHECK(r.entries[i].policy == sim::describe(fit[i].c));
    CHECK(r.entries[i].time.step_s == Approx(fit[i].step).epsilon(1e-12));
    CHECK(r.entries[i].headroom == fit[i].headroom);
  }
  // Every brute-force configuration within the near-tie range of the K-th is listed (up to the cap).
  const double kth = time ? fit[o.top - 1].step : -fit[o.top - 1].headroom.gb();
  std::size_t near = 0;
  for (const auto& c : fit) {
    const double v = time ? c.step : -c.headroom.gb();
    if (v <= kth + o.near_tie * std::abs(kth)) ++near;
  }
  CHECK(r.entries.size() == std::min(near, o.top + 20));
  // The exhaustive plan (no bound pruning) agrees.
  sim::PlanOptions ex = o;
  ex.exhaustive = true;
  const sim::PlanResult e = sim::plan(base, ex);
  CHECK(e.stats.fitting == fit.size());
  REQUIRE(e.entries.size() == r.entries.size());
  for (std::size_t i = 0; i < e.entries.size(); ++i) CHECK(e.entries[i].launch.peakcast_sets == r.entries[i].launch.peakcast_sets);
}

// The plan's top K on two threads; at least one entry.
sim::PlanResult plan_top(const model::RunSpec& base, std::size_t top) {
  sim::PlanOptions o;
  o.top = top;
  o.threads = 2;
  sim::PlanResult r = sim::plan(base, o);
  REQUIRE(!r.entries.empty());
  return r;
}

}  // namespace

TEST_CASE("plan: step time objective equals brute force on a dense model (every rule checked)", "[sim][plan]") {
  model::RunSpec base = parse(kDense);
  sim::PlanOptions o;
  o.top = 4;
  o.uneven_pipeline_window = 2;
  base.cluster.gpu.memory_bytes = capacity_for(base, o, 0.4);
  check_against_brute_force(base, o);
}

TEST_CASE("plan: memory headroom objective equals brute force on a dense model", "[sim][plan]") {
  model::RunSpec base = parse(kDense);
  sim::PlanOptions o;
  o.top = 3;
  o.objective = sim::PlanObjective::memory_headroom;
  o.uneven_pipeline_window = 1;
  base.cluster.gpu.memory_bytes = capacity_for(base, o, 0.3);
  check_against_brute_force(base, o);
}

TEST_CASE("plan: step time objective equals brute force on a MoE model (EP, ETP)", "[sim][plan]") {
  model::RunSpec base = parse(kMoe);
  sim::PlanOptions o;
  o.top = 3;
  o.moe_busiest_rank = false;  // layout_spec alone, as the brute force builds it
  o.uneven_pipeline_window = 0;
  base.cluster.gpu.memory_bytes = capacity_for(base, o, 0.5);
  check_against_brute_force(base, o);
}

TEST_CASE("plan: the static-memory rule prunes, and only what cannot fit", "[sim][plan]") {
  model::RunSpec base = parse(kDense);
  base.cluster.gpu.memory_bytes = Bytes{2'500'000'000};
  sim::PlanOptions o;
  o.top = 2;
  o.uneven_pipeline_window = 0;
  const sim::PlanResult r = sim::plan(base, o);
  CHECK(r.stats.pruned_static_memory > 0);
  CHECK(r.stats.layouts_pruned_static > 0);
  std::size_t cut_that_fit = 0;
  brute_force(base, o, &cut_that_fit);
  CHECK(cut_that_fit == 0);
}

TEST_CASE("plan: launch settings turn the input spec into the planned configuration", "[sim][plan]") {
  const model::RunSpec base = parse(kDense);
  const sim::PlanResult r = plan_top(base, 5);
  for (const auto& e : r.entries) {
    // A selective list without tags recomputes nothing; the launch lines say so as no recompute
    // (Megatron's --recompute-modules cannot be given empty), which is the same run.
    sim::RecomputeChoice c = e.choice;
    if (c.granularity == model::RecomputeGranularity::selective && c.modules.empty()) c.granularity = model::RecomputeGranularity::none;
    const model::RunSpec planned = sim::with_choice(sim::planning::layout_spec(base, e.layout), c);
    const model::RunSpec round = parse(kDense, e.launch.peakcast_sets);
    CHECK(round == planned);
    const sim::Prediction p = sim::predict(round);
    CHECK(p.step_time_s == Approx(e.time.step_s).epsilon(1e-12));
    CHECK(p.max_peak_allocated == e.max_peak_allocated);
    // One verdict: predict's run verdict of the planned configuration is the entry's, margin and all.
    const sim::Verdict v = sim::run_verdict(p);
    CHECK(v.kind == e.verdict.run.kind);
    CHECK(v.margin == e.verdict.run.margin);
    CHECK(e.headroom.value == v.margin);
    const auto& t = e.time;
    CHECK(t.compute_s + t.exposed_comm_s + t.replay_s + t.bubble_s + t.optimizer_s == Approx(t.step_s));
    CHECK(t.compute_s >= 0);
    bool has_tp = false;
    for (const auto& f : e.launch.megatron_lm) has_tp |= f == "--tensor-model-parallel-size " + std::to_string(e.layout.tp);
    CHECK(has_tp);
  }
}

TEST_CASE("plan: launch settings keep a GPU given as an object with its own memory", "[sim][plan]") {
  // What the process can reserve (docs/how-it-works.md: a process holding memory outside PyTorch gives the
  // GPU as an object); the launch lines must not turn it back into the preset's 80 GB.
  const std::vector<std::string> gpu = {R"(cluster.gpu={"name":"h100-sxm-80gb","memory_bytes":70000000000})"};
  const model::RunSpec base = parse(kDense, gpu);
  REQUIRE(base.cluster.gpu.memory_bytes == Bytes{70'000'000'000});
  const sim::PlanResult r = plan_top(base, 2);
  for (const auto& e : r.entries) {
    const model::RunSpec round = parse(kDense, e.launch.peakcast_sets);
    CHECK(round.cluster.gpu == base.cluster.gpu);
    CHECK(e.capacity == Bytes{70'000'000'000});
  }
  // A preset left as it is stays a name.
  const sim::PlanResult preset = plan_top(parse(kDense), 2);
  CHECK(preset.entries[0].launch.peakcast_sets.back() == "cluster.gpu=h100-sxm-80gb");
}

TEST_CASE("plan: layouts of the space", "[sim][plan]") {
  model::RunSpec base = parse(kDense);
  sim::PlanOptions o;
  o.uneven_pipeline_window = 0;
  o.vary_overlap_grad_reduce = false;
  const auto layouts = sim::planning::enumerate_layouts(base, o);
  // 8 GPUs, 8 layers, GBS 16: every (TP, PP, CP) with TP x PP x CP | 8, MBS | 16 / DP, SP when TP > 1,
  // VPP dividing the layers per stage (PP > 1), distributed optimizer on and off.
  std::size_t expected = 0;
  for (std::int64_t tp : {1, 2, 4, 8})
    for (std::int64_t pp : {1, 2, 4, 8})
      for (std::int64_t cp : {1, 2, 4, 8}) {
        if (tp * pp * cp > 8) continue;
        const std::int64_t dp = 8 / (tp * pp * cp);
        std::size_t vpps = 1;
        for (std::int64_t v = 2; v <= 8 / pp; ++v) vpps += pp > 1 && (8 / pp) % v == 0 ? 1 : 0;
        std::size_t mbs = 0;
        for (std::int64_t m = 1; m <= 16 / dp; ++m) mbs += (16 / dp) % m == 0 ? 1 : 0;
        expected += vpps * mbs * (tp > 1 ? 3 : 1) * 2;  // SP on, off, off with distribute_saved_activations
      }
  CHECK(layouts.size() == expected);
  // Uneven splits: 8 layers on PP4 with a window of 1: middle 2 and ends (1, 2), (2, 1), (1, 1)? 1 + 1 + 2 x 2 = 6 < 8: no;
  // middle 3: ends sum to 2 -> (1, 1) is more than 1 lighter; so only PP2's (3, 5)? no: |3 - 5| = 2 > 1. None.
  o.uneven_pipeline_window = 1;
  CHECK(sim::planning::enumerate_layouts(base, o).size() == expected);
  o.uneven_pipeline_window = 2;
  const auto uneven = sim::planning::enumerate_layouts(base, o);
  std::size_t pp4_uneven = 0, pp2_uneven = 0;
  for (const auto& l : uneven) {
    if (!l.first_stage_layers) continue;
    CHECK(*l.first_stage_layers + *l.last_stage_layers + (l.pp - 2) * ((8 - *l.first_stage_layers - *l.last_stage_layers) / std::max<std::int64_t>(1, l.pp - 2)) == 8);
    if (l.pp == 4 && l.tp == 1 && l.cp == 1 && l.mbs == 1 && !l.distributed_optimizer) ++pp4_uneven;
    if (l.pp == 2 && l.tp == 1 && l.cp == 1 && l.mbs == 1 && !l.distributed_optimizer && l.vpp == 1) ++pp2_uneven;
  }
  CHECK(pp4_uneven == 1);  // middle 3, ends (1, 1)
  CHECK(pp2_uneven == 2);  // (3, 5) and (5, 3)
}

TEST_CASE("Predictor(spec, shapes) shares graphs and predicts what predict() does", "[sim][plan]") {
  const model::RunSpec a = parse(kDense, {"model.tensor_model_parallel_size=2", "model.pipeline_model_parallel_size=2"});
  const model::RunSpec b = parse(kDense, {"model.tensor_model_parallel_size=2", "model.pipeline_model_parallel_size=4",
                                          "model.virtual_pipeline_model_parallel_size=2", "optimizer.use_distributed_optimizer=true",
                                          "ddp.use_distributed_optimizer=true"});
  sim::Predictor anchor(a);
  sim::Predictor shared(b, anchor);
  const sim::Prediction x = shared.run();
  const sim::Prediction y = sim::predict(b);
  CHECK(x.max_peak_allocated == y.max_peak_allocated);
  CHECK(x.step_time_s == y.step_time_s);
  REQUIRE(x.ranks.size() == y.ranks.size());
  for (std::size_t i = 0; i < x.ranks.size(); ++i) {
    CHECK(x.ranks[i].peak_allocated == y.ranks[i].peak_allocated);
    CHECK(x.ranks[i].estimated_peak_reserved_p90 == y.ranks[i].estimated_peak_reserved_p90);
  }
  const model::RunSpec c = parse(kDense, {"model.tensor_model_parallel_size=4"});
  CHECK_THROWS_AS(sim::Predictor(c, anchor), std::invalid_argument);
}
