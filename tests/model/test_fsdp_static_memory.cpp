// Megatron-FSDP v1's model state (static_memory_fsdp.cpp, docs/research/megatron-fsdp-memory-facts.md),
// every expectation derived by hand from the shapes below.
//
// Llama-style decoder, 2 layers, h = 64, F = 128, 2 heads of 32, vocab 1024 (no padding), untied,
// TP 1, DP 4, bf16. Each layer (one FSDP unit under optim_grads_params) registers
//   linear_qkv.layer_norm_weight [64]        64
//   linear_qkv.weight   [192, 64]         12288   (row 64)
//   linear_proj.weight  [64, 64]           4096   (row 64)
//   linear_fc1.layer_norm_weight [64]        64
//   linear_fc1.weight   [256, 64]         16384   (row 64)
//   linear_fc2.weight   [64, 128]          8192   (row 128)
// = 41088 elements. chunk_size_factor 128 (fc2's row; the others divide it, the norms are fragments);
// every GEMM weight is a multiple of 128: 40960 + 128 fragments = 41088, padded to 4 x 128 = 512:
// 41472 (shard 10368). Outside the units: embedding [1024, 64] 65536, final norm 64, output layer
// [1024, 64] 65536 = 131136, factor 64, padded to 4 x 64 = 256: 131328 (shard 32832).
#include <catch2/catch.hpp>

#include <string>

#include "peakcast/model/diagnostics.hpp"
#include "peakcast/model/layer_plan.hpp"
#include "peakcast/model/static_memory.hpp"
#include "peakcast/model/validate.hpp"
#include "test_params_models.hpp"

using namespace peakcast;
using namespace peakcast::model;

namespace {

constexpr std::int64_t kUnit = 41088, kUnitBucket = 41472, kNonUnit = 131136, kNonUnitBucket = 131328, kDp = 4;

RunSpec fsdp_gpt(const std::string& strategy) {
  RunSpec s;
  test_models::llama_common(s.model);
  test_models::small_sizes(s.model, 2, 64, 128, 2, 32, 1024);
  s.model.seq_length = 512;
  s.model.max_position_embeddings = 512;
  s.cluster.gpu.memory_bytes = Bytes{80'000'000'000};
  s.cluster.num_gpus = kDp;
  s.ddp.use_megatron_fsdp = true;
  s.ddp.use_distributed_optimizer = true;
  s.optimizer.use_distributed_optimizer = true;
  s.ddp.data_parallel_sharding_strategy = strategy;
  return s;
}

StaticMemory only_rank(const RunSpec& s) {
  const Derived d = derive(s);
  const auto ranks = static_memory_per_rank(s, d, build_layer_plan(s, d));
  REQUIRE(ranks.size() == 1);
  return ranks.front().memory;
}

bool has_rule(const RunSpec& s, const std::string& path, const std::string& rule) {
  for (const auto& diag : validate(s))
    if (diag.severity == Severity::error && diag.path == path && diag.rule == rule) return true;
  return false;
}

}  // namespace

TEST_CASE("Megatron-FSDP optim_grads_params: shards, the preserved non-unit bucket, the gather window", "[model][static][fsdp]") {
  const StaticMemory m = only_rank(fsdp_gpt("optim_grads_params"));
  const std::int64_t all = 2 * kUnit + kNonUnit;                         // 213312 parameter elements
  const std::int64_t shards = (2 * kUnitBucket + kNonUnitBucket) / kDp;  // 53568 per rank
  CHECK(m.params.total() == all);
  // bf16 weight shards, plus the gathered embedding / norm / output bucket kept from the first forward.
  CHECK(m.parameters.value == shards * 2 + kNonUnitBucket * 2);
  CHECK(m.main_params.value == shards * 4);          // fp32 main weight shards
  CHECK(m.gradients.value == shards * 2);            // main_grads_dtype auto: bf16 like the parameters
  CHECK(m.optimizer_states.value == all / kDp * 8);  // Adam's two fp32 moments per owned element
  // The step's fp32 copy of each bf16 grad shard (update_main_grads).
  CHECK(m.step_transient_first.value == all / kDp * 4);
  // Default prefetch: half of max(1e9, 2 x mean unit) elements: every following unit comes along.
  CHECK(m.fsdp_gather_window.value == 2 * kUnitBucket * 2);
  // A backward ends with unit 0 gathered and every full bf16 grad bucket awaiting the queue's reset.
  CHECK(m.fsdp_backward_end.value == kUnitBucket * 2 + (2 * kUnitBucket + kNonUnitBucket) * 2);
}

TEST_CASE("Megatron-FSDP: suggested_communication_unit_size 1 prefetches nothing", "[model][static][fsdp]") {
  RunSpec s = fsdp_gpt("optim_grads_params");
  s.ddp.suggested_communication_unit_size = 1;  // prefetch 1 // 2 = 0 elements
  CHECK(only_rank(s).fsdp_gather_window.value == kUnitBucket * 2);
}

TEST_CASE("Megatron-FSDP: what no_shard, optim and optim_grads shard", "[model][static][fsdp]") {
  const std::int64_t all = 2 * kUnit + kNonUnit;
  const std::int64_t full = 2 * kUnitBucket + kNonUnitBucket;  // 214272 with the end padding
  SECTION("no_shard: own tensors, a full unpadded fp32 main buffer, full grads, full Adam") {
    const StaticMemory m = only_rank(fsdp_gpt("no_shard"));
    CHECK(m.parameters.value == all * 2);
    CHECK(m.main_params.value == all * 4);  // no end padding under no_shard; the items are multiples already
    CHECK(m.gradients.value == all * 2);
    CHECK(m.optimizer_states.value == all * 8);
    CHECK(m.fsdp_gather_window.value == 0);
    CHECK(m.fsdp_backward_end.value == 0);
  }
  SECTION("optim: full weight and grad buckets, sharded main weights and Adam") {
    const StaticMemory m = only_rank(fsdp_gpt("optim"));
    CHECK(m.parameters.value == full * 2);
    CHECK(m.main_params.value == full / kDp * 4);
    CHECK(m.gradients.value == full * 2);
    CHECK(m.optimizer_states.value == all / kDp * 8);
    CHECK(m.fsdp_backward_end.value == 0);
  }
  SECTION("optim_grads: grads sharded, their full buckets held to the backward's end") {
    const StaticMemory m = only_rank(fsdp_gpt("optim_grads"));
    CHECK(m.parameters.value == full * 2);
    CHECK(m.gradients.value == full / kDp * 2);
    CHECK(m.fsdp_gather_window.value == 0);
    CHECK(m.fsdp_backward_end.value == full * 2);
  }
  SECTION("fp32 main grads: no cast at the step") {
    RunSpec s = fsdp_gpt("optim_grads_params");
    s.ddp.megatron_fsdp_main_grads_dtype = DType::fp32;
    const StaticMemory m = only_rank(s);
    CHECK(m.gradients.value == full / kDp * 4);
    CHECK(m.step_transient_first.value == 0);
  }
}

TEST_CASE("Megatron-FSDP: what is not simulated is refused by name", "[model][validate][fsdp]") {
  RunSpec s = fsdp_gpt("optim_grads_params");
  CHECK_FALSE(has_rule(s, "ddp.fsdp_double_buffer", "megatron_fsdp_not_simulated"));
  s.ddp.fsdp_double_buffer = true;
  CHECK(has_rule(s, "ddp.fsdp_double_buffer", "megatron_fsdp_not_simulated"));
  RunSpec bad = fsdp_gpt("optim_params");
  CHECK(has_rule(bad, "ddp.data_parallel_sharding_strategy", "fsdp_sharding_strategy"));
  RunSpec fp8 = fsdp_gpt("optim_grads_params");
  fp8.model.fp8_param = true;
  CHECK(has_rule(fp8, "model.fp8_param", "megatron_fsdp_not_simulated"));
  RunSpec hfsdp = fsdp_gpt("optim_grads");
  hfsdp.ddp.num_distributed_optimizer_instances = 2;
  hfsdp.ddp.outer_dp_sharding_strategy = "optim";
  CHECK(has_rule(hfsdp, "ddp.outer_dp_sharding_strategy", "hfsdp_needs_optim_grads_params"));
}
