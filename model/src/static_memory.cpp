// static_memory_per_rank: model state of each distinct rank shape. Pipeline stages differ in
// layers; within a stage, distributed-optimizer shards differ in how much padding they own.
#include <algorithm>
#include <functional>
#include <set>

#include "peakcast/model/static_memory.hpp"
#include "static_memory_internal.hpp"

namespace peakcast::model {

namespace {
constexpr std::int64_t kDefaultBucketFloor = 40'000'000;  // training.py:1553-1568 resolve_ddp_bucket_size
constexpr std::int64_t kDefaultBucketPerDpRank = 1'000'000;
}  // namespace

namespace detail {

DdpSettings ddp_settings(const RunSpec& spec, const Derived& d) {
  DdpSettings s;
  s.distributed_optimizer = d.distributed_optimizer;
  const std::int64_t instances = std::max<std::int64_t>(1, spec.ddp.num_distributed_optimizer_instances);
  // Dense buffers shard over the intra-instance DP x CP group, expert buffers over the
  // intra-instance expert-DP group (distributed_data_parallel.py:219-225).
  s.dense_shards = std::max<std::int64_t>(1, d.dp * d.cp / instances);
  s.expert_shards = std::max<std::int64_t>(1, d.edp / instances);
  s.pad_for_high_nccl_busbw = spec.ddp.pad_buckets_for_high_nccl_busbw;
  s.fp8_params = spec.model.fp8_param && spec.model.fp8.has_value();
  s.param_dtype = d.param_dtype;
  s.grad_dtype = d.grad_dtype;
  if (spec.ddp.overlap_grad_reduce) {
    s.bucket_size = spec.ddp.bucket_size.value_or(std::max(kDefaultBucketFloor, kDefaultBucketPerDpRank * d.dp * d.cp));
  }
  return s;
}

DdpSettings chunk_ddp_settings(const PipelineStage& stage, const ModelChunk& chunk, const RunSpec& spec, const Derived& d) {
  DdpSettings s = ddp_settings(spec, d);
  // No bucketing off the first pipeline rank, for chunks after the first, or when the param
  // all-gather overlaps the optimizer step (training.py:1878-1889).
  if (stage.pp_rank > 0 || chunk.vpp_index > 0 || spec.optimizer.overlap_param_gather_with_optimizer_step) {
    s.bucket_size.reset();
  }
  return s;
}

}  // namespace detail

namespace {

using detail::DdpBuffer;
constexpr std::int64_t kFp32Bytes = 4;
// FP8 compute with bf16 params: TE quantises each GEMM weight once per step into a cached FP8
// workspace, rowwise plus a columnwise (transposed) copy for backward (Hopper). Assumption
// [X/U], TE-internal; see the digest's bytes-per-parameter table.
constexpr std::int64_t kFp8WorkspaceCopies = 2;
// FP8 params (fp8_param_gather) keep a transpose cache next to the uint8 data [X/U].
constexpr std::int64_t kFp8ParamTransposeCopies = 1;
// MXFP8 adds one E8M0 scale byte per 32 elements to each copy.
constexpr std::int64_t kMxfp8BlockSize = 32;

struct StageBuffers {
  std::vector<std::vector<DdpBuffer>> chunks;  // per model chunk, in chunk order
  // PEFT's frozen parameters: tensors of their own outside every DDP buffer (no grad, no optimizer state).
  std::int64_t frozen_dense = 0, frozen_expert = 0, frozen_gemm = 0;
};

// Elements a rank owns in buffer `b` (chunk c, buffer k) as DistOpt shard `shard`.
using OwnedElements = std::function<std::int64_t(std::size_t c, std::size_t k, const DdpBuffer& b, std::int64_t shard)>;

StageBuffers stage_buffers(const PipelineStage& stage, const RunSpec& spec, const Derived& d) {
  StageBuffers out;
  for (const auto& chunk : stage.chunks) {
    const detail::DdpSettings s = detail::chunk_ddp_settings(stage, chunk, spec, d);
    const detail::ChunkParams params = detail::chunk_params(chunk, spec, d);
    out.chunks.push_back(detail::ddp_buffers(params.tensors, s));
    for (const detail::ParamTensor* t : params.tensors) {
      if (!t->frozen) continue;
      (t->expert ? out.frozen_expert : out.frozen_dense) += t->numel;
      if (t->gemm_weight) out.frozen_gemm += t->numel;
    }
  }
  return out;
}

// Peak extra bytes while DDP re-homes parameters into param_data: each buffer allocates
// param_data + grad_data while the old parameter storage still exists, then frees the old
// storage param by param (param_and_grad_buffer.py:1262-1300). Only with DistOpt.
Bytes ddp_init_transient(const StageBuffers& sb, bool distopt) {
  if (!distopt) return Bytes{0};
  std::int64_t running = 0, peak = 0;
  for (const auto& chunk : sb.chunks) {
    for (const auto& b : chunk) {
      running += b.numel * (dtype_bytes(b.param_dtype) + dtype_bytes(b.grad_dtype));
      peak = std::max(peak, running);
      running -= b.numel_unpadded * dtype_bytes(b.param_dtype);
    }
  }
  return Bytes{peak - running};
}

}  // namespace

namespace detail {

Bytes fp8_weight_cache(const RunSpec& spec, std::int64_t gemm_numel) {
  const ModelSpec& m = spec.model;
  if (!m.fp8) return Bytes{0};
  const std::int64_t copies = m.fp8_param ? kFp8ParamTransposeCopies : kFp8WorkspaceCopies;
  std::int64_t bytes = copies * gemm_numel;
  if (m.fp8_recipe == Fp8Recipe::mxfp8) bytes += copies * gemm_numel / kMxfp8BlockSize;
  return Bytes{bytes};
}

std::int64_t moe_layers_on_stage(const PipelineStage& stage) {
  std::int64_t n = 0;
  for (const auto& c : stage.chunks)
    for (const auto& l : c.layers) n += l.ffn == FfnKind::moe ? 1 : 0;
  return n;
}

}  // namespace detail

namespace {

using detail::fp8_weight_cache;
using detail::moe_layers_on_stage;

// Everything that does not depend on which DistOpt shard the rank owns.
StaticMemory shard_independent(const PipelineStage& stage, const StageBuffers& sb, const RunSpec& spec, const Derived& d) {
  StaticMemory mem;
  std::int64_t gemm = 0;
  for (const auto& chunk : sb.chunks) {
    for (const auto& b : chunk) {
      (b.expert ? mem.params.expert : mem.params.dense) += b.numel_unpadded;
      // With DistOpt the params are views into param_data (padding included); without it they
      // stay separate tensors of their own size.
      const std::int64_t param_elems = d.distributed_optimizer ? b.numel : b.numel_unpadded;
      mem.parameters += Bytes{param_elems * dtype_bytes(b.param_dtype)};
      mem.gradients += Bytes{b.numel * dtype_bytes(b.grad_dtype)};
      gemm += b.gemm_numel;
    }
  }
  mem.params.dense += sb.frozen_dense;
  mem.params.expert += sb.frozen_expert;
  mem.parameters += Bytes{(sb.frozen_dense + sb.frozen_expert) * dtype_bytes(d.param_dtype)};
  gemm += sb.frozen_gemm;
  mem.fp8_weight_cache = fp8_weight_cache(spec, gemm);
  mem.ddp_init_transient = ddp_init_transient(sb, d.distributed_optimizer);
  mem.buffers = Bytes{moe_layers_on_stage(stage) * detail::router_buffer_numel_per_moe_layer(spec.model) * kFp32Bytes};
  if (!d.distributed_optimizer) mem.slack = detail::allocator_slack(stage, sb.chunks, spec, d);
  return mem;
}

// Optimizer state of the rank that owns shard (dense_shard, expert_shard) of every bucket.
void add_optimizer_state(StaticMemory& mem, const StageBuffers& sb, const RunSpec& spec, const Derived& d,
                         std::int64_t dense_shard, std::int64_t expert_shard, const OwnedElements& owned_of) {
  std::int64_t dense_temp = 0, expert_temp = 0;
  for (std::size_t c = 0; c < sb.chunks.size(); ++c) {
    for (std::size_t k = 0; k < sb.chunks[c].size(); ++k) {
      const DdpBuffer& b = sb.chunks[c][k];
      const std::int64_t owned = d.distributed_optimizer ? owned_of(c, k, b, b.expert ? expert_shard : dense_shard)
                                                         : b.numel_unpadded;
      const detail::OptimizerBytes ob = detail::optimizer_bytes(spec, d, b.param_dtype, b.grad_dtype);
      mem.main_params += Bytes{owned * ob.main_param};
      mem.optimizer_states += Bytes{owned * ob.states};
      mem.step_transient_first += Bytes{owned * ob.step_transient};
      mem.step_transient_steady += Bytes{owned * ob.step_transient};
      (b.expert ? expert_temp : dense_temp) += owned * ob.step_foreach_temporary;
    }
  }
  // One optimizer over everything holds the temporary of all of it; a chain, its largest member's.
  const std::int64_t temp = detail::expert_params_have_own_optimizer(spec) ? std::max(dense_temp, expert_temp)
                                                                           : dense_temp + expert_temp;
  mem.step_transient_first += Bytes{temp};
  mem.step_transient_steady += Bytes{temp};
}

Bytes persistent_total(const StaticMemory& m) {
  return m.parameters + m.gradients + m.main_params + m.optimizer_states + m.fp8_weight_cache + m.buffers +
         max(m.step_transient_first, m.step_transient_steady);
}

bool same_memory(const StaticMemory& a, const StaticMemory& b) {
  return a.main_params == b.main_params && a.optimizer_states == b.optimizer_states &&
         a.step_transient_first == b.step_transient_first && a.step_transient_steady == b.step_transient_steady;
}

// Default rank order tp-cp-ep-dp-pp: within a stage, the rank with tp_rank 0 and DP x CP index i is
// global g = tp * i; its expert-DP index is g / (etp * ep) (parallel_state.py). Its dense DistOpt
// shard is i modulo the dense shard count, its expert shard that expert-DP index modulo the expert
// shard count (distributed optimizer instances repeat the shards).
struct ShardMap {
  std::int64_t tp = 1, cp = 1, ep = 1, etp = 1, dense_shards = 1, expert_shards = 1;
  std::int64_t expert_index(std::int64_t i) const { return tp * i / std::max<std::int64_t>(1, etp * ep); }
};

ShardMap shard_map(const Derived& d, const detail::DdpSettings& settings) {
  return {d.tp, d.cp, d.ep, d.etp, settings.dense_shards, settings.expert_shards};
}

RankStatic rank_at(std::int64_t i, const PipelineStage& stage, const StageBuffers& sb, const StaticMemory& base,
                   const RunSpec& spec, const Derived& d, const ShardMap& map, const OwnedElements& owned_of) {
  RankStatic r;
  r.rank.pp_rank = stage.pp_rank;
  r.rank.cp_rank = i % map.cp;
  r.rank.dp_rank = i / map.cp;
  r.rank.ep_rank = (map.tp * i / std::max<std::int64_t>(1, map.etp)) % std::max<std::int64_t>(1, map.ep);
  for (const auto& c : stage.chunks) r.vpp_chunks.push_back(c.vpp_index);
  r.memory = base;
  add_optimizer_state(r.memory, sb, spec, d, i % map.dense_shards, map.expert_index(i) % map.expert_shards, owned_of);
  return r;
}

// What a stage reports: the first shard, the first one with the most state, and the last (which
// holds the bucket-end padding), each once. `ranks` are candidates in ascending index order that
// include index 0, the last index, and the first index of every run of equal memory.
void pick_reported(const std::vector<RankStatic>& ranks, std::vector<RankStatic>& out) {
  const auto largest = std::max_element(ranks.begin(), ranks.end(), [](const RankStatic& a, const RankStatic& b) {
    return persistent_total(a.memory) < persistent_total(b.memory);
  });
  std::vector<const RankStatic*> picks{&ranks.front(), &*largest, &ranks.back()};
  std::vector<RankStatic> stage_out;
  for (const RankStatic* p : picks) {
    const bool seen = std::any_of(stage_out.begin(), stage_out.end(),
                                  [&](const RankStatic& q) { return same_memory(q.memory, p->memory); });
    if (!seen) stage_out.push_back(*p);
  }
  for (auto& r : stage_out) out.push_back(std::move(r));
}

// The DP x CP indices at which some rank's memory can differ from the previous index's: where its
// dense shard enters a new piece of any dense buffer's ownership, or its expert-DP index reaches a
// new piece of any expert buffer's (every piece start, repeated for each wrap of the shard count).
std::vector<std::int64_t> candidate_indices(const std::vector<std::vector<detail::ShardOwnership>>& own,
                                            const StageBuffers& sb, const ShardMap& map, std::int64_t dp_cp) {
  std::set<std::int64_t> dense_starts{0}, expert_starts{0};
  for (std::size_t c = 0; c < sb.chunks.size(); ++c)
    for (std::size_t k = 0; k < sb.chunks[c].size(); ++k)
      (sb.chunks[c][k].expert ? expert_starts : dense_starts).insert(own[c][k].starts.begin(), own[c][k].starts.end());
  std::set<std::int64_t> idx{0, dp_cp - 1};
  for (const std::int64_t s : dense_starts)
    for (std::int64_t i = s; i < dp_cp; i += map.dense_shards) idx.insert(i);
  const std::int64_t per_index = std::max<std::int64_t>(1, map.etp * map.ep);
  const std::int64_t last_expert_index = map.expert_index(dp_cp - 1);
  for (const std::int64_t s : expert_starts)
    for (std::int64_t t = s; t <= last_expert_index; t += map.expert_shards) {
      const std::int64_t i = (t * per_index + map.tp - 1) / map.tp;  // the first i with expert_index(i) >= t
      if (i < dp_cp) idx.insert(i);
    }
  return {idx.begin(), idx.end()};
}

}  // namespace

std::vector<RankStatic> static_memory_per_rank(const RunSpec& spec, const Derived& d, const LayerPlan& plan) {
  if (spec.ddp.use_megatron_fsdp) return detail::fsdp_static_memory_per_rank(spec, d, plan);
  const detail::DdpSettings settings = detail::ddp_settings(spec, d);
  const ShardMap map = shard_map(d, settings);
  const std::int64_t dp_cp = std::max<std::int64_t>(1, d.dp * d.cp);
  std::vector<RankStatic> out;
  for (const auto& stage : plan.stages) {
    const StageBuffers sb = stage_buffers(stage, spec, d);
    const StaticMemory base = shard_independent(stage, sb, spec, d);
    std::vector<std::vector<detail::ShardOwnership>> own;
    if (d.distributed_optimizer)
      for (const auto& chunk : sb.chunks) {
        auto& o = own.emplace_back();
        for (const auto& b : chunk) o.push_back(detail::shard_ownership(b));
      }
    const OwnedElements owned_of = [&own](std::size_t c, std::size_t k, const DdpBuffer&, std::int64_t shard) {
      return own[c][k].at(shard);
    };
    if (!d.distributed_optimizer) {
      out.push_back(rank_at(0, stage, sb, base, spec, d, map, owned_of));
      continue;
    }
    // Memory is constant between consecutive candidate indices, so the candidates alone give the
    // first, the first largest and the last shard's state that walking every index gives.
    std::vector<RankStatic> ranks;
    for (const std::int64_t i : candidate_indices(own, sb, map, dp_cp)) ranks.push_back(rank_at(i, stage, sb, base, spec, d, map, owned_of));
    pick_reported(ranks, out);
  }
  return out;
}

namespace detail {

std::vector<RankStatic> static_memory_per_rank_all_shards(const RunSpec& spec, const Derived& d, const LayerPlan& plan) {
  const DdpSettings settings = ddp_settings(spec, d);
  const ShardMap map = shard_map(d, settings);
  const std::int64_t dp_cp = std::max<std::int64_t>(1, d.dp * d.cp);
  std::vector<RankStatic> out;
  for (const auto& stage : plan.stages) {
    const StageBuffers sb = stage_buffers(stage, spec, d);
    const StaticMemory base = shard_independent(stage, sb, spec, d);
    std::vector<std::vector<std::vector<std::int64_t>>> by_shard;
    for (const auto& chunk : sb.chunks) {
      auto& o = by_shard.emplace_back();
      for (const auto& b : chunk) o.push_back(d.distributed_optimizer ? owned_elements_by_shard(b) : std::vector<std::int64_t>{});
    }
    const OwnedElements owned_of = [&by_shard](std::size_t c, std::size_t k, const DdpBuffer&, std::int64_t shard) {
      return by_shard[c][k][static_cast<std::size_t>(shard)];
    };
    if (!d.distributed_optimizer) {
      out.push_back(rank_at(0, stage, sb, base, spec, d, map, owned_of));
      continue;
    }
    std::vector<RankStatic> all;
    for (std::int64_t i = 0; i < dp_cp; ++i) all.push_back(rank_at(i, stage, sb, base, spec, d, map, owned_of));
    pick_reported(all, out);
  }
  return out;
}

}  // namespace detail

}  // namespace peakcast::model
