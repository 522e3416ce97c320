// Candidate enumeration and ranking order for `peakcast rank`.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/sim/moe_routing.hpp"
#include "peakcast/sim/ranking.hpp"
#include "peakcast/sim/reserved_estimate.hpp"

using namespace peakcast;
using model::RecomputeTag;

namespace {

model::RunSpec parse(const std::string& text, const std::vector<std::string>& sets = {}) {
  auto r = model::parse_run_spec(text, sets);
  for (const auto& d : r.diagnostics) INFO(model::format(d));
  REQUIRE(r.spec);
  return *r.spec;
}

model::RunSpec load(const std::string& rel, const std::vector<std::string>& sets = {}) {
  std::ifstream in(std::string(PEAKCAST_SOURCE_DIR) + "/" + rel);
  std::ostringstream buf;
  buf << in.rdbuf();
  return parse(buf.str(), sets);
}

// Llama 3 8B (dense, GQA) on 8 GPUs, PP2 so CPU offloading (PP == 1 only) is out.
const char* kLlama = R"({"model":{"preset":"llama3-8b","tensor_model_parallel_size":2,"pipeline_model_parallel_size":2,
  "sequence_parallel":true,"seq_length":4096,"bf16":true},"train":{"micro_batch_size":1,"global_batch_size":16},
  "optimizer":{"use_distributed_optimizer":true},"ddp":{"use_distributed_optimizer":true},
  "cluster":{"num_gpus":8,"gpu":"h100-sxm-80gb"}})";

bool has(const std::vector<RecomputeTag>& v, RecomputeTag t) { return std::find(v.begin(), v.end(), t) != v.end(); }

}  // namespace

TEST_CASE("dense GQA model: subsets of {core_attn, mlp, layernorm} plus full uniform/block N") {
  const model::RunSpec spec = parse(kLlama);
  const auto tags = sim::applicable_tags(spec);
  CHECK(tags.size() == 3);
  CHECK(has(tags, RecomputeTag::core_attn));
  CHECK(has(tags, RecomputeTag::mlp));
  CHECK(has(tags, RecomputeTag::layernorm));

  const std::int64_t per_chunk = spec.model.num_layers / spec.model.pipeline_model_parallel_size;
  CHECK(sim::max_layers_per_chunk(spec) == per_chunk);
  const auto set = sim::enumerate_candidates(spec);
  std::size_t selective = 0, uniform = 0, block = 0, offload = 0;
  for (const auto& c : set.accepted) {
    if (c.cpu_offloading) ++offload;
    else if (c.granularity == model::RecomputeGranularity::selective) ++selective;
    else if (c.method == model::RecomputeMethod::uniform) ++uniform;
    else if (c.method == model::RecomputeMethod::block) ++block;
  }
  CHECK(set.rejected.empty());
  CHECK(selective == 8);  // 2^3 subsets, [] included
  CHECK(block == static_cast<std::size_t>(per_chunk));
  CHECK(uniform == sim::uniform_layer_counts(per_chunk).size());
  CHECK(offload == 0);  // PP > 1
  CHECK(set.accepted.size() == 8 + sim::uniform_layer_counts(per_chunk).size() + static_cast<std::size_t>(per_chunk));
}

TEST_CASE("uniform N values: divisors and powers of two") {
  CHECK(sim::uniform_layer_counts(16) == std::vector<std::int64_t>{1, 2, 4, 8, 16});
  CHECK(sim::uniform_layer_counts(27) == std::vector<std::int64_t>{1, 2, 3, 4, 8, 9, 16, 27});
  CHECK(sim::block_layer_counts(3) == std::vector<std::int64_t>{1, 2, 3});
}

TEST_CASE("block N above 32 layers a chunk: sampled, then bisected to the smallest N that fits") {
  // 48 layers on one stage: above kBlockCountsInFull, so block N is sampled.
  const model::RunSpec spec = parse(R"({"model":{"num_layers":48,"hidden_size":256,"num_attention_heads":4,
    "ffn_hidden_size":1024,"vocab_size":8192,"seq_length":1024,"max_position_embeddings":1024,"normalization":"RMSNorm",
    "gated_linear_unit":true,"activation_func":"silu","add_bias_linear":false,"position_embedding_type":"rope",
    "bf16":true},"train":{"micro_batch_size":4,"global_batch_size":8},"cluster":{"num_gpus":1,"gpu":"h100-sxm-80gb"}})");
  const std::int64_t L = 48;
  REQUIRE(sim::max_layers_per_chunk(spec) == L);
  const auto samples = sim::block_layer_samples(L);
  // The powers of two below 48 (1, 2, 4, 8, 16, 32) and the divisors of 48 (1, 2, 3, 4, 6, 8, 12, 16, 24, 48).
  CHECK(samples == std::vector<std::int64_t>{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48});
  CHECK(sim::enumerate_candidates(spec).block_layers_per_chunk_sampled == L);
  CHECK(sim::block_layer_samples(32) == sim::block_layer_counts(32));

  // Every N simulated: the peak falls as N grows, and the smallest N that fits a budget between the
  // ends is what rank finds.
  sim::Predictor predictor(spec);
  std::vector<sim::Prediction> every;
  for (std::int64_t n = 1; n <= L; ++n) {
    sim::RecomputeChoice c;
    c.granularity = model::RecomputeGranularity::full;
    c.method = model::RecomputeMethod::block;
    c.num_layers = n;
    every.push_back(predictor.run(c));
    if (n > 1) CHECK(every[n - 1].max_peak_allocated <= every[n - 2].max_peak_allocated);
  }
  REQUIRE(every.front().max_peak_allocated > every.back().max_peak_allocated);
  // Budgets just at N's peak for several N between the sampled points (not multiples of 3).
  for (const std::int64_t target : {5, 10, 20, 37, 47}) {
    const Bytes budget = every[target - 1].max_peak_allocated + Bytes{1};
    std::int64_t smallest = 0;
    for (std::int64_t n = 1; n <= L && !smallest; ++n)
      if (sim::run_verdict(every[n - 1], sim::VerdictLimits{budget, 0}).kind == sim::FitKind::fits) smallest = n;
    REQUIRE(smallest > 0);
    const sim::Ranking r = sim::rank_candidates(spec, budget);
    std::int64_t found = 0;
    for (const auto& c : r.candidates)
      if (c.viable && c.choice.granularity == model::RecomputeGranularity::full &&
          c.choice.method == model::RecomputeMethod::block && (!found || *c.choice.num_layers < found))
        found = *c.choice.num_layers;
    INFO("budget at block N=" << target << "'s peak");
    CHECK(found == smallest);
    // Bisection adds at most ceil(log2(gap)) candidates to the sampled ones: 4 in the widest gap, 32..48.
    const auto block_count = std::count_if(r.candidates.begin(), r.candidates.end(), [](const auto& c) {
      return c.choice.granularity == model::RecomputeGranularity::full && c.choice.method == model::RecomputeMethod::block;
    });
    CHECK(block_count <= static_cast<std::ptrdiff_t>(samples.size()) + 4);
  }
}

TEST_CASE("CPU offloading candidates only with PP == 1") {
  const model::RunSpec spec = parse(kLlama, {"model.pipeline_model_parallel_size=1"});
  const auto set = sim::enumerate_candidates(spec);
  const auto n = std::count_if(set.accepted.begin(), set.accepted.end(), [](const auto& c) { return c.cpu_offloading; });
  CHECK(n > 0);
  for (const auto& c : set.accepted)
    if (c.cpu_offloading) {
      CHECK(c.cpu_offloading_num_layers >= 1);
      CHECK(c.cpu_offloading_num_layers < spec.model.num_layers);
    }
}

TEST_CASE("Megatron-rejected candidates are absent: moe_act without grouped GEMM") {
  const model::RunSpec spec = load("configs/runs/moonlight-16b-8xh100.json", {"model.moe_grouped_gemm=false"});
  CHECK_FALSE(has(sim::applicable_tags(spec), RecomputeTag::moe_act));
  for (const auto& c : sim::enumerate_candidates(spec).accepted) CHECK_FALSE(has(c.modules, RecomputeTag::moe_act));
}

TEST_CASE("Megatron-rejected candidates are absent: layernorm under the fp8 delayed recipe") {
  const model::RunSpec spec = parse(kLlama, {"model.fp8=\"hybrid\"", "model.fp8_recipe=\"delayed\""});
  const auto set = sim::enumerate_candidates(spec);
  for (const auto& c : set.accepted) CHECK_FALSE(has(c.modules, RecomputeTag::layernorm));
  const auto rejected_ln = std::count_if(set.rejected.begin(), set.rejected.end(),
                                         [](const auto& r) { return has(r.choice.modules, RecomputeTag::layernorm); });
  CHECK(rejected_ln == 4);  // every subset with layernorm
}

TEST_CASE("shared_experts is not a candidate with shared-expert overlap") {
  const model::RunSpec spec = load("configs/runs/moonlight-16b-8xh100.json");
  REQUIRE(spec.model.moe_shared_expert_overlap);
  CHECK_FALSE(has(sim::applicable_tags(spec), RecomputeTag::shared_experts));
  const model::RunSpec no_overlap = load("configs/runs/moonlight-16b-8xh100.json", {"model.moe_shared_expert_overlap=false"});
  CHECK(has(sim::applicable_tags(no_overlap), RecomputeTag::shared_experts));
  CHECK(has(sim::applicable_tags(no_overlap), RecomputeTag::mla_up_proj));
}

TEST_CASE("ranking order (replay-time): viable first by replay time, then the rest by peak") {
  const model::RunSpec spec = parse(kLlama);
  // A budget between the smallest and largest peak so both groups exist.
  const sim::Ranking all = sim::rank_candidates(spec, Bytes{1'000'000'000'000});
  Bytes lo{INT64_MAX}, hi{};
  for (const auto& c : all.candidates) {
    lo = std::min(lo, c.max_peak);
    hi = std::max(hi, c.max_peak);
  }
  REQUIRE(lo < hi);
  const Bytes budget{(lo.value + hi.value) / 2};
  const sim::Ranking r = sim::rank_candidates(spec, budget, 0, sim::RankOrder::replay_time);
  bool seen_non_viable = false;
  for (std::size_t i = 0; i < r.candidates.size(); ++i) {
    const auto& c = r.candidates[i];
    CHECK(c.viable == (c.max_peak <= budget));
    if (!c.viable) {
      seen_non_viable = true;
      CHECK_FALSE(c.reason.empty());
      CHECK(c.over_budget > Bytes{});
      CHECK(c.breaking_pp_rank >= 0);
    } else {
      CHECK_FALSE(seen_non_viable);  // no viable after a non-viable
    }
    if (i == 0) continue;
    const auto& p = r.candidates[i - 1];
    if (p.viable && c.viable) CHECK(p.replay_time_s <= c.replay_time_s);
    if (!p.viable && !c.viable) CHECK(p.max_peak <= c.max_peak);
  }
  REQUIRE(r.narrowest_viable);
  CHECK(*r.narrowest_viable == 0);
  CHECK(r.candidates.front().viable);
  REQUIRE(r.cheapest_viable);
  CHECK(*r.cheapest_viable == 0);
}

TEST_CASE("ranking order (narrowest): selective boundaries before whole-layer recompute, each by replay time") {
  const model::RunSpec spec = parse(kLlama);
  // A budget every candidate meets: both tiers are viable and the order alone is under test.
  const sim::Ranking r = sim::rank_candidates(spec, Bytes{1'000'000'000'000});
  CHECK(r.order == sim::RankOrder::narrowest);
  int selective = 0, whole_layer = 0;
  double least_replay = 1e300;
  for (std::size_t i = 0; i < r.candidates.size(); ++i) {
    const auto& c = r.candidates[i];
    REQUIRE(c.viable);
    least_replay = std::min(least_replay, c.replay_time_s);
    const int tier = sim::boundary_tier(c.choice);
    CHECK(tier == (c.choice.granularity == model::RecomputeGranularity::selective ? 0 : 1));
    (tier == 0 ? selective : whole_layer) += 1;
    if (i == 0) continue;
    const auto& p = r.candidates[i - 1];
    CHECK(sim::boundary_tier(p.choice) <= tier);
    if (sim::boundary_tier(p.choice) == tier) CHECK(p.replay_time_s <= c.replay_time_s);
  }
  CHECK(selective > 0);
  CHECK(whole_layer > 0);
  // `[]` replays nothing: the narrowest boundary and the cheapest one.
  REQUIRE(r.narrowest_viable);
  CHECK(r.candidates[*r.narrowest_viable].choice.modules.empty());
  CHECK(r.candidates[*r.narrowest_viable].replay_time_s == 0);
  REQUIRE(r.cheapest_viable);
  CHECK(r.candidates[*r.cheapest_viable].replay_time_s == least_replay);
}

TEST_CASE("nothing viable: no narrowest, every candidate explains itself") {
  const sim::Ranking r = sim::rank_candidates(parse(kLlama), Bytes{1'000'000});
  CHECK_FALSE(r.narrowest_viable);
  for (const auto& c : r.candidates) CHECK(c.reason.find("pp_rank") != std::string::npos);
}

// Seed checks (acceptance criteria of the ranking issue), at the busiest expert-parallel rank of an
// untrained router (what `peakcast rank` checks by default) and at balanced routing.
// The seed measured the control at 36.618 GB and moe_act at 35.941 GB (every recompute row 0.67-0.72 GB
// under the control, their peak moved to the optimizer step). Since issue #21 no constant is fitted on
// these rows; the named fixed terms leave Moonlight's peaks 0.85 GB under the measured ones on every row
// alike (-2.3 %, docs/validation.md), more than the seed's 0.06 GB between moe_act and a 36 GB budget.
// So the seed's decision is checked at the budget that sits where the seed's does between the two
// measured peaks, on the predicted ones: the order and the saving are the model's, not a fitted offset.
TEST_CASE("seed: Moonlight 16B: moe_act is the narrowest viable boundary between the control and it", "[seed]") {
  model::RunSpec spec = load("configs/runs/moonlight-16b-8xh100.json");
  const auto busiest = sim::untrained_busiest_rank_load(spec);
  REQUIRE(busiest);
  const double measured_control = 36.618e9, measured_moe_act = 35.941e9, seed_budget = 36.0e9;
  const double where = (seed_budget - measured_moe_act) / (measured_control - measured_moe_act);  // 0.087
  for (const double load : {1.0, *busiest}) {
    spec.model.moe_routing_imbalance = load;
    INFO("routing load " << load);
    const auto peak_of = [&](std::vector<RecomputeTag> tags) {
      model::RunSpec p = spec;
      p.model.recompute_granularity = model::RecomputeGranularity::selective;
      p.model.recompute_modules = std::move(tags);
      return static_cast<double>(sim::predict(p).max_peak_allocated.value);
    };
    const double control = peak_of({}), moe_act = peak_of({RecomputeTag::moe_act});
    // The saving the seed measured on its largest rank (0.677 GB), predicted there within 0.1 GB.
    if (load != 1.0) CHECK(control - moe_act == Approx(measured_control - measured_moe_act).margin(0.1e9));
    const sim::Ranking r = sim::rank_candidates(spec, Bytes{static_cast<std::int64_t>(moe_act + where * (control - moe_act))});
    REQUIRE(r.narrowest_viable);
    const auto& best = r.candidates[*r.narrowest_viable];
    CHECK(best.choice.granularity == model::RecomputeGranularity::selective);
    // At balanced routing [mlp] alone (the one dense layer's MLP, never measured) ties with moe_act.
    if (load != 1.0) CHECK(best.choice.modules == std::vector<RecomputeTag>{RecomputeTag::moe_act});
    // The control does not fit, moe_act does, and core_attn under fused attention does not move the peak.
    for (const auto& c : r.candidates) {
      if (c.choice.granularity != model::RecomputeGranularity::selective) continue;
      if (c.choice.modules.empty()) CHECK_FALSE(c.viable);
      if (c.choice.modules == std::vector<RecomputeTag>{RecomputeTag::moe_act}) CHECK(c.viable);
      if (c.choice.modules == std::vector<RecomputeTag>{RecomputeTag::core_attn}) {
        CHECK_FALSE(c.viable);
        CHECK(std::find(c.ineffective_tags.begin(), c.ineffective_tags.end(), RecomputeTag::core_attn) != c.ineffective_tags.end());
      }
    }
  }
}

TEST_CASE("seed: Nemotron 3 Nano on 80 GB H100: the rows that ran out of memory are not viable, moe and moe+layernorm are", "[seed]") {
  model::RunSpec spec = load("configs/runs/nemotron-3-nano-16xh100.json");
  const auto busiest = sim::untrained_busiest_rank_load(spec);
  REQUIRE(busiest);
  for (const double load : {1.0, *busiest}) {
    spec.model.moe_routing_imbalance = load;
    INFO("routing load " << load);
    const sim::Ranking r = sim::rank_candidates(spec, spec.cluster.gpu.memory_bytes);
    auto find = [&](std::vector<RecomputeTag> tags) -> const sim::RankedCandidate* {
      for (const auto& c : r.candidates)
        if (c.choice.granularity == model::RecomputeGranularity::selective && c.choice.modules == tags) return &c;
      return nullptr;
    };
    for (const auto& tags : std::vector<std::vector<RecomputeTag>>{
             {}, {RecomputeTag::core_attn}, {RecomputeTag::moe_act}, {RecomputeTag::layernorm, RecomputeTag::moe_act}}) {
      const auto* c = find(tags);
      REQUIRE(c);
      std::cout << "nemotron " << c->label << " peak " << c->max_peak.gb() << " GB viable " << c->viable << " reason '"
                << c->reason << "'\n";
      CHECK_FALSE(c->viable);
      CHECK_FALSE(c->reason.empty());
    }
    // The two rows that completed 12 steps (the seed's table) are viable. Under the expandable segments
    // the recipe's env_vars set, a narrower unmeasured set ([layernorm, moe_act, shared_experts]) can be
    // viable too: the seed did not run it, so no claim is made about it here.
    for (const auto& tags : std::vector<std::vector<RecomputeTag>>{{RecomputeTag::moe}, {RecomputeTag::layernorm, RecomputeTag::moe}}) {
      const auto* c = find(tags);
      REQUIRE(c);
      CHECK(c->viable);
    }
    REQUIRE(r.narrowest_viable);
    std::cout << "nemotron narrowest viable: " << r.candidates[*r.narrowest_viable].label << "\n";
  }
}

TEST_CASE("headroom raises each peak by K sigma before the budget check") {
  const model::RunSpec spec = parse(kLlama);
  const auto sigma = sim::predict(spec).peak_relative_sigma;
  REQUIRE(sigma > 0);
  // A budget 1.5 sigma above the no-recompute peak: it fits with K = 1, not with K = 2.
  const auto plain = sim::rank_candidates(spec, Bytes{1'000'000'000'000});
  const auto none = std::find_if(plain.candidates.begin(), plain.candidates.end(), [](const sim::RankedCandidate& c) {
    return c.choice.granularity == model::RecomputeGranularity::selective && c.choice.modules.empty();
  });
  REQUIRE(none != plain.candidates.end());
  const Bytes budget{static_cast<std::int64_t>(static_cast<double>(none->max_peak.value) * (1.0 + 1.5 * sigma))};
  const auto viable_none = [&](double k) {
    const auto r = sim::rank_candidates(spec, budget, k);
    for (const auto& c : r.candidates)
      if (c.label == none->label) return c.viable;
    FAIL("no-recompute candidate missing");
    return false;
  };
  CHECK(viable_none(0.0));
  CHECK(viable_none(1.0));
  CHECK_FALSE(viable_none(2.0));
}

TEST_CASE("moe_router_force_load_balancing checks every rank at balanced routing", "[moe]") {
  model::RunSpec spec = load("configs/runs/moonlight-16b-8xh100.json");
  const auto untrained = sim::untrained_busiest_rank_load(spec);
  REQUIRE(untrained);
  CHECK(*untrained > 1.0);
  // Random router logits (router.py:859-861): no router preference to make one rank busier.
  spec.model.moe_router_force_load_balancing = true;
  const auto forced = sim::untrained_busiest_rank_load(spec);
  REQUIRE(forced);
  CHECK(*forced == 1.0);
}

TEST_CASE("every candidate carries the p90 reserved estimate of its largest rank", "[rank]") {
  model::RunSpec spec = load("configs/runs/moonlight-16b-8xh100.json");
  const sim::Ranking r = sim::rank_candidates(spec, Bytes{36'000'000'000});
  const auto fc = sim::load_fitted_constants("default", "transformer_engine");
  REQUIRE(sim::reserved_ratios(fc, spec.cluster.expandable_segments).p90 > 1.0);
  for (const auto& c : r.candidates) {
    // Single pipeline stage and no CUDA graphs here: the estimate is the peak times the p90 ratio.
    CHECK(c.reserved_p90.value == std::llround(static_cast<double>(c.max_peak.value) * sim::reserved_ratios(fc, spec.cluster.expandable_segments).p90));
  }
}
