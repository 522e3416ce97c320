// One verdict everywhere: predict, a sweep point and rank's candidate for the spec's own policy
// give the same verdict for the same spec, with the ratio estimate and with the allocator replay,
// on devices that fit, that fit only by allocated bytes, and that do not fit.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/sim/prediction.hpp"
#include "peakcast/sim/ranking.hpp"
#include "peakcast/sim/sweep.hpp"
#include "peakcast/sim/verdict.hpp"

using namespace peakcast;

namespace {

model::RunSpec spec_from(const std::string& text, const std::vector<std::string>& sets = {}) {
  auto r = model::parse_run_spec(text, sets);
  for (const auto& d : r.diagnostics) INFO(model::format(d));
  REQUIRE(r.spec.has_value());
  return *r.spec;
}

const char* kDense = R"({"model": {"preset": "llama3-8b", "num_layers": 4, "tensor_model_parallel_size": 2, "sequence_parallel": true,
                  "seq_length": 4096, "bf16": true, "recompute_granularity": "selective", "recompute_modules": ["core_attn"]},
        "train": {"micro_batch_size": 1, "global_batch_size": 8},
        "optimizer": {"use_distributed_optimizer": true}, "ddp": {"use_distributed_optimizer": true},
        "cluster": {"num_gpus": 8, "gpu": "h100-sxm-80gb"}})";
const char* kPipelined = R"({"model": {"preset": "llama3-8b", "num_layers": 8, "pipeline_model_parallel_size": 2,
                  "seq_length": 8192, "bf16": true},
        "train": {"micro_batch_size": 1, "global_batch_size": 16},
        "cluster": {"num_gpus": 8, "gpu": "h100-sxm-80gb"}})";

// A MoE layout (Moonlight's MLA and routed experts, EP 2) and the dense one with expandable segments.
const char* kMoe = R"({"model": {"preset": "moonlight-16b", "num_layers": 4, "moe_layer_freq": [0, 1, 1, 1], "expert_model_parallel_size": 2,
                  "seq_length": 4096, "bf16": true, "recompute_granularity": "selective", "recompute_modules": ["moe_act"]},
        "train": {"micro_batch_size": 1, "global_batch_size": 8},
        "optimizer": {"use_distributed_optimizer": true}, "ddp": {"use_distributed_optimizer": true},
        "cluster": {"num_gpus": 8, "gpu": "h100-sxm-80gb"}})";
const char* kExpandable = R"({"model": {"preset": "llama3-8b", "num_layers": 4, "seq_length": 8192, "bf16": true},
        "train": {"micro_batch_size": 1, "global_batch_size": 8},
        "cluster": {"num_gpus": 8, "gpu": "h100-sxm-80gb", "expandable_segments": true}})";

// The dense layout under Megatron-FSDP, and the MoE one with fine-grained offloading: paths where the verdict
// takes the reservation ratio even when the replay is asked for (simulator.cpp).
const char* kFsdp = R"({"model": {"preset": "llama3-8b", "num_layers": 4, "tensor_model_parallel_size": 2, "sequence_parallel": true,
                  "seq_length": 4096, "bf16": true, "recompute_granularity": "selective", "recompute_modules": ["core_attn"]},
        "train": {"micro_batch_size": 1, "global_batch_size": 8},
        "optimizer": {"use_distributed_optimizer": true},
        "ddp": {"use_distributed_optimizer": true, "use_megatron_fsdp": true, "data_parallel_sharding_strategy": "optim_grads_params"},
        "cluster": {"num_gpus": 8, "gpu": "h100-sxm-80gb"}})";
const char* kOffload = R"({"model": {"preset": "moonlight-16b", "num_layers": 4, "moe_layer_freq": [0, 1, 1, 1], "expert_model_parallel_size": 2,
                  "seq_length": 4096, "bf16": true, "recompute_granularity": "selective", "recompute_modules": ["moe_act"],
                  "fine_grained_activation_offloading": true, "offload_modules": ["attn_norm", "core_attn", "expert_fc1"]},
        "train": {"micro_batch_size": 1, "global_batch_size": 8},
        "optimizer": {"use_distributed_optimizer": true}, "ddp": {"use_distributed_optimizer": true},
        "cluster": {"num_gpus": 8, "gpu": "h100-sxm-80gb"}})";

std::string gpu_with(std::int64_t bytes) {
  return "cluster.gpu={\"name\": \"h100-sxm-80gb\", \"memory_bytes\": " + std::to_string(bytes) + "}";
}

sim::RecomputeChoice own_choice(const model::RunSpec& s) {
  sim::RecomputeChoice c;
  c.granularity = s.model.recompute_granularity == model::RecomputeGranularity::none ? model::RecomputeGranularity::selective
                                                                                     : s.model.recompute_granularity;
  c.modules = s.model.recompute_modules.value_or(std::vector<model::RecomputeTag>{});
  c.method = s.model.recompute_method;
  c.num_layers = s.model.recompute_num_layers;
  c.cpu_offloading = s.model.cpu_offloading;
  c.cpu_offloading_num_layers = s.model.cpu_offloading_num_layers;
  return c;
}

}  // namespace

TEST_CASE("predict, sweep and rank agree on the verdict", "[sim][verdict][property]") {
  for (const char* text : {kDense, kPipelined, kMoe, kExpandable, kFsdp, kOffload}) {
    for (const bool replay : {false, true}) {
      sim::PredictOptions opt;
      opt.replay_allocator = replay;
      const auto base = sim::predict(spec_from(text), opt);
      Bytes need{}, reserved{};
      for (const auto& r : base.ranks) {
        need = max(need, r.peak_with_graph_pool);
        const auto v = sim::rank_verdict(r, base.capacity);
        reserved = max(reserved, v.reservation);
      }
      REQUIRE(reserved > need);
      // Devices: roomy, between the allocated need and the reservation, under the need.
      const std::vector<std::vector<std::string>> devices = {
          {}, {gpu_with(need.value + (reserved.value - need.value) / 2)}, {gpu_with(need.value - need.value / 20)}};
      std::vector<sim::FitKind> seen;
      std::vector<sim::FitCause> causes;
      for (const auto& sets : devices) {
        const model::RunSpec spec = spec_from(text, sets);
        const sim::Verdict predicted = sim::run_verdict(sim::predict(spec, opt));
        sim::SweepOptions so;
        so.replay_allocator = replay;
        so.threads = 1;
        const auto sweep = sim::run_sweep(text, sets, {{"train.micro_batch_size", {"1"}}}, so);
        REQUIRE(sweep.points.size() == 1);
        INFO(sweep.points[0].error);
        REQUIRE(sweep.points[0].valid);
        const auto ranking = sim::rank_candidates(spec, Bytes{}, 0, sim::RankOrder::narrowest, opt);
        const std::string own = sim::describe(own_choice(spec));
        const sim::RankedCandidate* mine = nullptr;
        for (const auto& c : ranking.candidates)
          if (c.label == own) mine = &c;
        INFO(text << " replay " << replay << " device " << (sets.empty() ? "default" : sets[0]) << ": " << predicted.reason);
        REQUIRE(mine != nullptr);
        CHECK(sweep.points[0].verdict == predicted.kind);
        CHECK(sweep.points[0].margin == predicted.margin);
        CHECK(mine->verdict == predicted.kind);
        CHECK(mine->margin == predicted.margin);
        CHECK(mine->viable == (predicted.kind == sim::FitKind::fits));
        CHECK(sweep.points[0].cause == predicted.cause);
        CHECK(mine->cause == predicted.cause);
        CHECK(sweep.points[0].fits == (predicted.kind != sim::FitKind::does_not_fit));
        seen.push_back(predicted.kind);
        causes.push_back(predicted.cause);
      }
      // The ratio estimate: the three devices give the three verdicts, in order. The replay: the
      // middle device is under its reservation, so the run does not fit by the reservation unless
      // freeing the cache and retrying lets it (then it is at risk or fits); under the need it does
      // not fit by the allocated bytes.
      if (!replay) {
        CHECK(seen == std::vector<sim::FitKind>{sim::FitKind::fits, sim::FitKind::fits_without_reservation_margin,
                                                sim::FitKind::does_not_fit});
      } else {
        CHECK(seen.front() != sim::FitKind::does_not_fit);
        CHECK(seen.back() == sim::FitKind::does_not_fit);
      }
      CHECK(causes.back() == sim::FitCause::allocated);
    }
  }
}

TEST_CASE("the verdict's margin is what decided it", "[sim][verdict]") {
  sim::PredictOptions ratio;
  ratio.replay_allocator = false;
  const auto p = sim::predict(spec_from(kDense), ratio);
  const auto& r = p.ranks.front();
  const auto v = sim::rank_verdict(r, p.capacity);
  REQUIRE(v.kind == sim::FitKind::fits);
  CHECK(v.margin == std::min(p.capacity.value - r.peak_with_graph_pool.value, p.capacity.value - r.estimated_peak_reserved_p90.value));
  // A budget under the allocated peak: does not fit by the budget, whatever the device.
  const auto tight = sim::rank_verdict(r, p.capacity, {Bytes{r.peak_with_graph_pool.value - 1000}, 0.0});
  CHECK(tight.kind == sim::FitKind::does_not_fit);
  CHECK(tight.cause == sim::FitCause::allocated);
  CHECK(tight.margin == -1000);
}

TEST_CASE("with the replay the reservation decides: over the device does not fit, inside the edge is at risk", "[sim][verdict]") {
  const auto p = sim::predict(spec_from(kDense));
  sim::RankPrediction r = p.ranks.front();
  REQUIRE(r.allocator.has_value());
  const Bytes reserved = r.allocator->peak_reserved;
  REQUIRE(reserved >= r.peak_with_graph_pool);
  // A device exactly the reservation: inside the edge interval.
  auto v = sim::rank_verdict(r, reserved);
  CHECK(v.kind == sim::FitKind::fits_without_reservation_margin);
  CHECK(v.cause == sim::FitCause::reservation);
  CHECK(v.margin == 0);
  // A device above the reservation by more than the edge: fits, the margin the smaller room.
  const Bytes roomy{reserved.value + 2 * sim::reservation_edge(reserved).value};
  v = sim::rank_verdict(r, roomy);
  CHECK(v.kind == sim::FitKind::fits);
  CHECK(v.margin == roomy.value - reserved.value);
  // A device between the allocated peak and the reservation: the reservation does not fit.
  const Bytes between{(r.peak_with_graph_pool.value + reserved.value) / 2};
  if (between > r.peak_with_graph_pool) {
    v = sim::rank_verdict(r, between);
    CHECK(v.kind == sim::FitKind::does_not_fit);
    CHECK(v.cause == sim::FitCause::reservation);
    CHECK(v.margin == between.value - reserved.value);
  }
  // A request the replay could not serve decides, whatever the peak.
  r.allocator->first_failure = sim::AllocatorReplay::Failure{Bytes{1 << 30}, Bytes{}, Bytes{}, "x (forward, iteration 1)"};
  v = sim::rank_verdict(r, roomy);
  CHECK(v.kind == sim::FitKind::does_not_fit);
  CHECK(v.cause == sim::FitCause::reservation);
}

TEST_CASE("with fine-grained offloading or Megatron-FSDP the verdict takes the reservation ratio, not the replay", "[sim][verdict][offload][fsdp]") {
  // The replay's module scripts do not follow the copies to the host, and its static blocks are DDP's
  // buffers (simulator.cpp): a replay would reserve for what the walk has sent away or sharded.
  const std::vector<std::pair<const char*, std::vector<std::string>>> cases{
      {kMoe, {"model.fine_grained_activation_offloading=true", "model.offload_modules=[\"moe_act\"]"}},
      {kDense, {"ddp.use_megatron_fsdp=true", "ddp.data_parallel_sharding_strategy=\"optim_grads_params\""}}};
  for (const auto& [text, sets] : cases) {
    const auto p = sim::predict(spec_from(text, sets));
    for (const auto& r : p.ranks) {
      CHECK_FALSE(r.allocator.has_value());
      const auto v = sim::rank_verdict(r, p.capacity);
      CHECK(v.margin == std::min(p.capacity.value - r.peak_with_graph_pool.value, p.capacity.value - r.estimated_peak_reserved_p90.value));
    }
  }
}
