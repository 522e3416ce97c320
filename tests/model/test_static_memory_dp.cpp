// static_memory_per_rank is O(1) in the data-parallel size: it evaluates only the DP x CP indices where
// a distributed-optimizer shard's ownership can change. Its result must equal the reference that
// builds every shard index (static_memory_per_rank_all_shards), entry for entry, on layouts whose
// shards differ (alignment gaps, bucket-end padding, many buckets, experts, optimizer instances).
#include <catch2/catch.hpp>

#include <numeric>

#include "peakcast/model/layer_plan.hpp"
#include "peakcast/model/static_memory.hpp"
#include "static_memory_internal.hpp"
#include "test_params_models.hpp"

using namespace peakcast;
using namespace peakcast::model;

namespace {

// h=96 breaks the 64-element alignment (the norms leave 32-element gaps); untied, 3 layers.
RunSpec gapped(std::int64_t gpus) {
  RunSpec s;
  test_models::llama_common(s.model);
  test_models::small_sizes(s.model, 3, 96, 160, 2, 48, 1000);
  s.ddp.grad_reduce_in_fp32 = true;
  s.optimizer.use_distributed_optimizer = true;
  s.ddp.use_distributed_optimizer = true;
  s.cluster.num_gpus = gpus;
  return s;
}

// 8 experts of F=96 in 2 MoE layers, hidden 96 (gaps in the dense buffer, experts aligned or not).
RunSpec moe(std::int64_t gpus, std::int64_t tp, std::int64_t ep, std::int64_t etp) {
  RunSpec s = gapped(gpus);
  auto& m = s.model;
  m.num_layers = 2;
  m.num_moe_experts = 8;
  m.moe_ffn_hidden_size = 96;
  m.moe_router_topk = 2;
  m.moe_grouped_gemm = true;
  m.tensor_model_parallel_size = tp;
  m.expert_model_parallel_size = ep;
  m.expert_tensor_parallel_size = etp;
  return s;
}

void check_same(const RunSpec& s) {
  const Derived d = derive(s);
  const LayerPlan plan = build_layer_plan(s, d);
  const auto fast = static_memory_per_rank(s, d, plan);
  const auto ref = detail::static_memory_per_rank_all_shards(s, d, plan);
  INFO("gpus " << s.cluster.num_gpus << " tp " << d.tp << " pp " << d.pp << " cp " << d.cp << " ep " << d.ep << " etp " << d.etp
               << " dp " << d.dp);
  REQUIRE(fast.size() == ref.size());
  for (std::size_t i = 0; i < fast.size(); ++i) {
    const auto& a = fast[i];
    const auto& b = ref[i];
    CHECK(a.rank.pp_rank == b.rank.pp_rank);
    CHECK(a.rank.dp_rank == b.rank.dp_rank);
    CHECK(a.rank.cp_rank == b.rank.cp_rank);
    CHECK(a.rank.ep_rank == b.rank.ep_rank);
    CHECK(a.rank.tp_rank == b.rank.tp_rank);
    CHECK(a.vpp_chunks == b.vpp_chunks);
    CHECK(a.memory.params.dense == b.memory.params.dense);
    CHECK(a.memory.params.expert == b.memory.params.expert);
    CHECK(a.memory.parameters == b.memory.parameters);
    CHECK(a.memory.gradients == b.memory.gradients);
    CHECK(a.memory.main_params == b.memory.main_params);
    CHECK(a.memory.optimizer_states == b.memory.optimizer_states);
    CHECK(a.memory.step_transient_first == b.memory.step_transient_first);
    CHECK(a.memory.step_transient_steady == b.memory.step_transient_steady);
    CHECK(a.memory.fp8_weight_cache == b.memory.fp8_weight_cache);
    CHECK(a.memory.ddp_init_transient == b.memory.ddp_init_transient);
    CHECK(a.memory.buffers == b.memory.buffers);
  }
}

}  // namespace

TEST_CASE("shard_ownership equals owned_elements_by_shard at every shard index", "[model][static][dp]") {
  for (const std::int64_t shards : {1, 2, 3, 5, 7, 64, 127, 128, 1000, 4099}) {
    for (const std::int64_t bucket : {0, 3000, 20000}) {
      RunSpec s = gapped(shards);
      if (bucket > 0) {
        s.ddp.overlap_grad_reduce = true;
        s.ddp.bucket_size = bucket;
      }
      const Derived d = derive(s);
      const LayerPlan plan = build_layer_plan(s, d);
      detail::DdpSettings settings;
      settings.distributed_optimizer = true;
      settings.dense_shards = shards;
      settings.bucket_size = bucket > 0 ? std::optional<std::int64_t>(bucket) : std::nullopt;
      settings.grad_dtype = DType::fp32;
      const auto params = detail::chunk_params(plan.stages[0].chunks[0], s, d);
      for (const auto& b : detail::ddp_buffers(params.tensors, settings)) {
        const auto dense = detail::owned_elements_by_shard(b);
        const auto sparse = detail::shard_ownership(b);
        INFO("shards " << shards << " bucket " << bucket << " pieces " << sparse.starts.size());
        for (std::int64_t i = 0; i < shards; ++i) REQUIRE(sparse.at(i) == dense[static_cast<std::size_t>(i)]);
        // Pieces are bounded by the holes, not by the shard count.
        CHECK(sparse.starts.size() <= 4 * (b.params.size() + 2 * b.buckets.size()) + 1);
      }
    }
  }
}

TEST_CASE("static_memory_per_rank equals the every-shard reference (dense, gaps, buckets, CP, PP)", "[model][static][dp]") {
  for (const std::int64_t gpus : {1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 40, 64, 96, 128, 257, 1024}) {
    RunSpec s = gapped(gpus);
    check_same(s);
    s.ddp.overlap_grad_reduce = true;
    s.ddp.bucket_size = 5000;  // many buckets, each padded to lcm(DP, 128)
    check_same(s);
    s.ddp.pad_buckets_for_high_nccl_busbw = true;
    check_same(s);
    if (gpus % 2 == 0) {
      RunSpec c = gapped(gpus);
      c.model.context_parallel_size = 2;
      c.model.seq_length = 64;
      check_same(c);
      c.ddp.num_distributed_optimizer_instances = 2;
      check_same(c);
      RunSpec p = gapped(gpus);
      p.model.num_layers = 4;
      p.model.pipeline_model_parallel_size = 2;
      p.model.virtual_pipeline_model_parallel_size = 2;
      check_same(p);
    }
  }
}

TEST_CASE("static_memory_per_rank equals the every-shard reference (experts: EP, ETP, TP)", "[model][static][dp]") {
  for (const std::int64_t gpus : {8, 16, 24, 48, 64, 128, 512}) {
    for (const auto& [tp, ep, etp] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{1, 8, 1}, {2, 4, 1}, {2, 2, 2}, {1, 2, 4}, {2, 8, 1}, {1, 1, 1}}) {
      if (gpus % tp != 0 || gpus % (ep * etp) != 0) continue;
      RunSpec s = moe(gpus, tp, ep, etp);
      check_same(s);
      s.optimizer.implementation = OptimizerImpl::torch_adamw;  // the chained optimizers' temporaries
      check_same(s);
      s.ddp.overlap_grad_reduce = true;
      s.ddp.bucket_size = 7000;
      check_same(s);
    }
  }
}

TEST_CASE("static_memory_per_rank: without the distributed optimizer one entry per stage", "[model][static][dp]") {
  RunSpec s = gapped(64);
  s.optimizer.use_distributed_optimizer = false;
  s.ddp.use_distributed_optimizer = false;
  check_same(s);
}
