// Megatron-FSDP v1's model state per rank (docs/research/megatron-fsdp-memory-facts.md): the parameter
// groups ("buckets") of each FSDP unit and of the parameters outside every unit, their padding, the
// buffers each sharding strategy shards, and the temporary full buckets of the all-gather and the
// reduce-scatter.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "static_memory_internal.hpp"

namespace peakcast::model::detail {

namespace {

// suggested_communication_unit_size when unset: raised to at least 1e9 elements (megatron_fsdp.py:418-441,
// a floor although the comment says "Cap"); the reduce-scatter queue holds that many elements, the
// all-gather prefetches half of it (:443-444).
constexpr std::int64_t kCommunicationUnitFloor = 1'000'000'000;
constexpr std::int64_t kUnitsPrefetched = 2;  // 2 x the mean unit size when optim_grads_params (:425-432)

struct FsdpBucket {
  std::int32_t unit = -1;  // -1: outside every FSDP unit (embedding, norms, output layer)
  bool expert = false;     // a ".experts." parameter: sharded over expert DP (param_and_grad_buffer.py:1782)
  std::int64_t numel = 0;  // parameter elements
  std::int64_t size = 0;   // bucket_index.size: the full (unsharded) bucket
  std::int64_t shards = 1;
  std::int64_t gemm_numel = 0;
};

std::int64_t pad_to(std::int64_t x, std::int64_t m) { return (x + m - 1) / m * m; }

// shape[1:].numel(): a GEMM weight's input width; the hidden size for the [rows, hidden] tables that are
// not TE GEMMs (word / position embeddings, output layer, router: param_count_layers.cpp); 1 for vectors.
std::int64_t row_numel(const ParamTensor& p, std::int64_t hidden) {
  if (p.in_local > 0) return p.in_local;
  for (const char* table : {"word_embeddings.weight", "position_embeddings.weight", "output_layer.weight", "router.weight"}) {
    const std::string_view t(table);
    if (p.name.size() >= t.size() && p.name.compare(p.name.size() - t.size(), t.size(), t) == 0) return hidden;
  }
  return 1;
}

// The group's chunk_size_factor (param_and_grad_buffer.py:1855-1885), each parameter of at least that
// many elements padded up to a multiple of it, the smaller "fragments" after them, and the end padded
// to shards x factor unless no_shard (build_data_parallel_buffer_index, :257-383). The remnant pairing
// and gap filling of :315-360 can only shrink the bucket; they are not followed.
std::int64_t padded_size(const std::vector<const ParamTensor*>& params, std::int64_t shards, bool pad_end, std::int64_t hidden) {
  std::vector<const ParamTensor*> by_row(params);
  std::stable_sort(by_row.begin(), by_row.end(), [hidden](const ParamTensor* a, const ParamTensor* b) { return row_numel(*a, hidden) > row_numel(*b, hidden); });
  std::int64_t factor = row_numel(*by_row.front(), hidden);
  for (const ParamTensor* p : by_row) {
    const std::int64_t row = row_numel(*p, hidden);
    if (row == factor || (factor % row == 0 && p->numel % factor == 0) || p->numel < factor) continue;
    factor = std::lcm(factor, row);
  }
  std::int64_t index = 0, fragments = 0;
  for (const ParamTensor* p : params) {
    if (p->numel < factor) fragments += p->numel;
    else index += pad_to(p->numel, factor);
  }
  index += fragments;
  return pad_end ? pad_to(index, shards * factor) : index;
}

// _get_parameter_groups (param_and_grad_buffer.py:1726-1958): groups by (unit, expert) in
// registration order; outside the units a group is cut once it reaches the bucket size, and a shared
// embedding gets a bucket of its own unless no_shard.
std::vector<FsdpBucket> chunk_buckets(const ChunkParams& cp, const DdpSettings& s, const std::string& strategy, std::int64_t hidden) {
  const bool pad_end = strategy != "no_shard";
  std::vector<std::vector<const ParamTensor*>> groups;
  std::vector<FsdpBucket> keys;
  for (std::size_t i = 0; i < cp.tensors.size(); ++i) {
    const ParamTensor* p = cp.tensors[i];
    std::size_t k = 0;
    while (k < keys.size() && !(keys[k].unit == cp.layer_of[i] && keys[k].expert == p->expert)) ++k;
    if (k == keys.size()) {
      keys.push_back({cp.layer_of[i], p->expert, 0, 0, p->expert ? s.expert_shards : s.dense_shards, 0});
      groups.emplace_back();
    }
    groups[k].push_back(p);
  }
  std::vector<FsdpBucket> out;
  for (std::size_t k = 0; k < groups.size(); ++k) {
    std::vector<const ParamTensor*> bucket;
    std::int64_t numel = 0;
    const auto close = [&] {
      if (bucket.empty()) return;
      FsdpBucket b = keys[k];
      for (const ParamTensor* p : bucket) {
        b.numel += p->numel;
        if (p->gemm_weight) b.gemm_numel += p->numel;
      }
      b.size = padded_size(bucket, b.shards, pad_end, hidden);
      out.push_back(b);
      bucket.clear();
      numel = 0;
    };
    for (const ParamTensor* p : groups[k]) {
      if (p->shared_embedding && pad_end) {
        close();
        bucket.push_back(p);
        close();
        continue;
      }
      bucket.push_back(p);
      numel += p->numel;
      if (keys[k].unit < 0 && s.bucket_size && numel >= *s.bucket_size) close();
    }
    close();
  }
  return out;
}

// The full unit buckets all-gathered at once when unit bucket `first` .. `last` runs: those plus the
// following buckets (preceding ones in the backward) until the prefetched buckets reach `prefetch`
// elements (AllGatherPipeline.all_gather_params, param_and_grad_buffer.py:4476-4506). Buckets outside
// the units count towards the prefetch but are held anyway (preserved, :4331-4375).
std::int64_t gathered_unit_elements(const std::vector<FsdpBucket>& b, std::size_t first, std::size_t last, bool forward,
                                    std::int64_t prefetch) {
  std::int64_t held = 0;
  for (std::size_t i = first; i <= last; ++i) held += b[i].size;
  std::int64_t prefetched = 0;
  const auto add = [&](std::size_t i) {
    if (prefetched >= prefetch) return false;
    prefetched += b[i].size;
    if (b[i].unit >= 0) held += b[i].size;
    return true;
  };
  if (forward) {
    for (std::size_t i = last + 1; i < b.size() && add(i); ++i) {
    }
  } else {
    for (std::size_t i = first; i-- > 0 && add(i);) {
    }
  }
  return held;
}

struct Transients {
  std::int64_t window = 0;      // unit weight elements gathered at once, the largest over units and passes
  std::int64_t first_unit = 0;  // the first unit's buckets: what the backward ends with
};

Transients gather_transients(const std::vector<FsdpBucket>& b, std::int64_t prefetch) {
  Transients t;
  bool first_seen = false;
  for (std::size_t i = 0; i < b.size();) {
    std::size_t j = i;
    while (j + 1 < b.size() && b[j + 1].unit == b[i].unit) ++j;
    if (b[i].unit >= 0 && b[i].shards > 1) {
      t.window = std::max({t.window, gathered_unit_elements(b, i, j, true, prefetch), gathered_unit_elements(b, i, j, false, prefetch)});
      if (!first_seen) {
        for (std::size_t k = i; k <= j; ++k) t.first_unit += b[k].size;
        first_seen = true;
      }
    }
    i = j + 1;
  }
  return t;
}

// suggested_communication_unit_size as MegatronFSDP resolves it (megatron_fsdp.py:418-441).
std::int64_t communication_unit(const RunSpec& spec, const std::vector<FsdpBucket>& b, const DdpSettings& s) {
  if (spec.ddp.suggested_communication_unit_size) return *spec.ddp.suggested_communication_unit_size;
  std::int64_t unit = kCommunicationUnitFloor;
  if (spec.ddp.data_parallel_sharding_strategy == "optim_grads_params") {
    std::int64_t elements = 0;
    std::int32_t units = 0;
    for (const auto& x : b) {
      if (x.unit < 0) continue;
      elements += x.numel;
      units = std::max(units, x.unit + 1);
    }
    if (units > 0) unit = elements / units * kUnitsPrefetched;
  } else if (s.bucket_size) {
    unit = *s.bucket_size;
  }
  return std::max(kCommunicationUnitFloor, unit);
}

}  // namespace

std::vector<RankStatic> fsdp_static_memory_per_rank(const RunSpec& spec, const Derived& d, const LayerPlan& plan) {
  const DdpSpec& ddp = spec.ddp;
  const std::string& strategy = ddp.data_parallel_sharding_strategy;
  const bool shard_weights = strategy == "optim_grads_params";
  const bool shard_grads = shard_weights || strategy == "optim_grads";
  const bool shard_main = strategy != "no_shard";
  const DType main_dtype = ddp.megatron_fsdp_main_params_dtype.value_or(d.param_dtype);
  const DType grad_dtype = ddp.megatron_fsdp_main_grads_dtype.value_or(d.param_dtype);  // _resolve_group_grad_dtype, :2306-2315
  const std::int64_t pb = dtype_bytes(d.param_dtype), gb = dtype_bytes(grad_dtype), mb = dtype_bytes(main_dtype);
  // The temporary full grad bucket of sharded grads is fetched in the communication dtype (:3099-3103).
  const std::int64_t comm_gb = dtype_bytes(ddp.megatron_fsdp_grad_comm_dtype.value_or(grad_dtype));
  // The optimizer steps fp32 (main dtype) DTensor shards: Adam's moments per owned element, no
  // master copy of its own (optimizer/__init__.py:1091-1160, distrib_optimizer.py:704-706).
  const OptimizerBytes ob = optimizer_bytes(spec, d, main_dtype, main_dtype);
  // update_main_grads casts each grad shard to the main dtype unless decoupled (:3369-3373); Bridge
  // decouples it under the precision-aware optimizer (Bridge config.py:1085-1090).
  const bool decoupled = ddp.megatron_fsdp_use_decoupled_grad || (spec.bridge_training && spec.optimizer.use_precision_aware_optimizer);
  const bool grad_cast = grad_dtype != main_dtype && !decoupled;
  std::vector<RankStatic> out;
  for (const auto& stage : plan.stages) {
    RankStatic r;
    r.rank.pp_rank = stage.pp_rank;
    StaticMemory& mem = r.memory;
    std::int64_t gemm = 0, owned = 0, window = 0, backward_end = 0;
    for (const auto& chunk : stage.chunks) {
      r.vpp_chunks.push_back(chunk.vpp_index);
      const DdpSettings s = chunk_ddp_settings(stage, chunk, spec, d);
      const std::vector<FsdpBucket> buckets = chunk_buckets(chunk_params(chunk, spec, d), s, strategy, spec.model.hidden_size);
      const std::int64_t unit = communication_unit(spec, buckets, s);
      std::int64_t grad_temp = 0, largest = 0;
      for (const FsdpBucket& b : buckets) {
        const std::int64_t shard = b.size / b.shards;
        (b.expert ? mem.params.expert : mem.params.dense) += b.numel;
        gemm += b.gemm_numel;
        // no_shard: the module's own tensors; else the model weight buffer, sharded under
        // optim_grads_params (PGB:2641-2660); outside the units the gathered bucket stays (preserved).
        std::int64_t weights = strategy == "no_shard" ? b.numel : shard_weights ? shard
                                                                                : b.size;
        if (shard_weights && b.unit < 0 && b.shards > 1) weights += b.size;
        mem.parameters += Bytes{weights * pb};
        mem.main_params += Bytes{(shard_main ? shard : b.size) * mb};
        mem.gradients += Bytes{(shard_grads ? shard : b.size) * gb};
        owned += shard_main ? b.numel / b.shards : b.numel;
        if (shard_grads && b.shards > 1) {
          grad_temp += b.size;
          largest = std::max(largest, b.size);
        }
      }
      // Full grad buckets wait in the reduce-scatter queue until it exceeds `unit` elements or the
      // backward ends (param_and_grad_buffer.py:3916-3946, megatron_fsdp.py:853-880).
      if (grad_temp > unit) grad_temp = unit + largest;
      const Transients t = shard_weights ? gather_transients(buckets, unit / 2) : Transients{};
      window = std::max(window, t.window * pb);
      backward_end = std::max(backward_end, t.first_unit * pb + grad_temp * comm_gb);
    }
    mem.optimizer_states = Bytes{owned * ob.states};
    const std::int64_t step = owned * (ob.step_foreach_temporary + (grad_cast ? mb : 0));
    mem.step_transient_first = Bytes{step};
    mem.step_transient_steady = Bytes{step};
    mem.fp8_weight_cache = fp8_weight_cache(spec, gemm);
    mem.buffers = Bytes{moe_layers_on_stage(stage) * router_buffer_numel_per_moe_layer(spec.model) * dtype_bytes(DType::fp32)};
    mem.fsdp_gather_window = Bytes{window};
    mem.fsdp_backward_end = Bytes{backward_end};
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace peakcast::model::detail
