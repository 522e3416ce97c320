// static_allocations: the model state's tensors one request at a time, in creation order, from the
// same parameter lists, DDP buffers and optimizer bytes static_memory_per_rank sums.
#include <algorithm>

#include "peakcast/model/static_allocations.hpp"
#include "static_memory_internal.hpp"

namespace peakcast::model {

namespace {

using detail::DdpBuffer;

// Elements of each parameter of `b` (indexed as b.params, i.e. in layout order) inside shard
// `shard_index` of its bucket: what the distributed optimizer gives that rank of it.
std::vector<std::int64_t> owned_by_param(const DdpBuffer& b, std::int64_t shard_index) {
  std::vector<std::int64_t> owned(b.params.size(), 0);
  for (const auto& [b_start, b_end] : b.buckets) {
    const std::int64_t shard = (b_end - b_start) / std::max<std::int64_t>(1, b.shard_count);
    const std::int64_t lo = b_start + shard_index * shard, hi = lo + shard;
    auto it = std::partition_point(b.params.begin(), b.params.end(), [lo](const auto& p) { return p.second <= lo; });
    for (; it != b.params.end() && it->first < hi; ++it)
      owned[static_cast<std::size_t>(it - b.params.begin())] += std::min(it->second, hi) - std::max(it->first, lo);
  }
  return owned;
}

// The buffer a parameter lands in: ddp_buffers' grouping key (param dtype, expert).
std::size_t buffer_of(const std::vector<DdpBuffer>& buffers, DType dtype, bool expert) {
  std::size_t k = 0;
  while (k < buffers.size() && !(buffers[k].param_dtype == dtype && buffers[k].expert == expert)) ++k;
  return k;
}

void add_optimizer_tensor(StaticAllocations& out, std::int64_t owned, DType param_dtype, const detail::OptimizerBytes& ob,
                          bool own_optimizer) {
  if (owned <= 0) return;
  StaticAllocations::OptimizerTensor t;
  if (ob.main_param > 0) {
    t.clone = Bytes{owned * dtype_bytes(param_dtype)};  // shard_model_param.clone().float()
    t.main = Bytes{owned * ob.main_param};
  }
  for (const std::int64_t s : ob.state_tensors) t.states.push_back(Bytes{owned * s});
  t.grad_copy = Bytes{owned * ob.step_transient};
  t.temporary = Bytes{owned * ob.step_foreach_temporary};
  t.clip_temporary = Bytes{owned * ob.step_clip_temporary};
  t.own_optimizer = own_optimizer;
  out.optimizer.push_back(std::move(t));
}

}  // namespace

StaticAllocations static_allocations(const RunSpec& spec, const Derived& d, const PipelineStage& stage, const RankId& rank) {
  StaticAllocations out;
  out.parameters_move_into_buffers = d.distributed_optimizer;
  // The rank's DistOpt shard indices, as static_memory_per_rank numbers them (rank_at there).
  const detail::DdpSettings run = detail::ddp_settings(spec, d);
  const std::int64_t i = rank.dp_rank * d.cp + rank.cp_rank;
  const std::int64_t dense_shard = i % run.dense_shards;
  const std::int64_t expert_shard = (d.tp * i / std::max<std::int64_t>(1, d.etp * d.ep)) % run.expert_shards;
  const bool fp8_params = spec.model.fp8_param && spec.model.fp8.has_value();
  const bool chained = detail::expert_params_have_own_optimizer(spec);
  for (const auto& chunk : stage.chunks) {
    const detail::ChunkParams cp = detail::chunk_params(chunk, spec, d);
    const detail::DdpSettings s = detail::chunk_ddp_settings(stage, chunk, spec, d);
    const std::vector<DdpBuffer> buffers = detail::ddp_buffers(cp.tensors, s);
    const std::size_t first = out.parameters.size();
    std::vector<std::vector<std::size_t>> members(buffers.size());
    for (const detail::ParamTensor* t : cp.tensors) {
      const DType dt = fp8_params && t->gemm_weight ? DType::uint8 : d.param_dtype;
      // A frozen (PEFT) parameter keeps its own storage: no buffer re-homes it.
      if (!t->frozen) members[buffer_of(buffers, dt, t->expert)].push_back(out.parameters.size());
      out.parameters.push_back(Bytes{t->numel * dtype_bytes(dt)});
      out.rebuilt.push_back(t->rebuilt);
    }
    for (std::size_t k = 0; k < buffers.size(); ++k) {
      const DdpBuffer& b = buffers[k];
      StaticAllocations::Buffer buf;
      if (d.distributed_optimizer) buf.param_data = Bytes{b.numel * dtype_bytes(b.param_dtype)};
      buf.grad_data = Bytes{b.numel * dtype_bytes(b.grad_dtype)};
      buf.members = members[k];
      out.buffers.push_back(std::move(buf));
      // b.params runs in reverse registration order (the layout is in backprop order).
      const auto owned = d.distributed_optimizer ? owned_by_param(b, b.expert ? expert_shard : dense_shard) : std::vector<std::int64_t>{};
      const detail::OptimizerBytes ob = detail::optimizer_bytes(spec, d, b.param_dtype, b.grad_dtype);
      const std::size_t n = members[k].size();
      for (std::size_t r = 0; r < n; ++r) {
        const std::int64_t numel = cp.tensors[members[k][r] - first]->numel;
        add_optimizer_tensor(out, d.distributed_optimizer ? owned[n - 1 - r] : numel, b.param_dtype, ob, chained && b.expert);
      }
    }
  }
  return out;
}

}  // namespace peakcast::model
