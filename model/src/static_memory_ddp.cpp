// DDP param/grad buffers of one model chunk, with the distributed optimizer's padding.
#include <algorithm>
#include <numeric>

#include "static_memory_internal.hpp"

namespace peakcast::model::detail {

namespace {

// Each parameter starts on a 64-element boundary (optimizer/param_layout.py:24-26).
constexpr std::int64_t kParamStartAlignment = 64;
// Bucket ends are padded to lcm(shards, 128), or lcm(shards, 128, 2^16) for high NCCL bus
// bandwidth (param_layout.py:29-33).
constexpr std::int64_t kBucketEndAlignment = 128;
constexpr std::int64_t kHighBusBwAlignment = std::int64_t{1} << 16;

std::int64_t round_up(std::int64_t x, std::int64_t m) { return (x + m - 1) / m * m; }

std::int64_t bucket_divisor(std::int64_t shards, bool high_busbw) {
  std::int64_t div = std::lcm(shards, kBucketEndAlignment);
  return high_busbw ? std::lcm(div, kHighBusBwAlignment) : div;
}

// DistributedOptimizer._compute_per_buffer_param_layout (distrib_optimizer.py:506-589):
// parameters in reverse (backprop) order, 64-aligned starts, a bucket closes once it reaches
// bucket_size, the shared embedding gets a bucket of its own, every bucket end is padded.
void distopt_layout(DdpBuffer& buf, const std::vector<const ParamTensor*>& params, const DdpSettings& s) {
  const std::int64_t div = bucket_divisor(buf.shard_count, s.pad_for_high_nccl_busbw);
  std::int64_t param_start = 0, bucket_start = 0, param_end = 0;
  bool bucket_has_params = false;
  buf.params.reserve(params.size());
  auto finalize = [&](std::int64_t end) {
    const std::int64_t padded_end = round_up(end, div);
    buf.buckets.emplace_back(bucket_start, padded_end);
    bucket_start = padded_end;
    bucket_has_params = false;
  };
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    const ParamTensor& p = **it;
    param_start = round_up(param_start, kParamStartAlignment);
    if (p.shared_embedding && bucket_has_params) {
      finalize(param_start);
      param_start = bucket_start;
    }
    param_end = param_start + p.numel;
    buf.params.emplace_back(param_start, param_end);
    bucket_has_params = true;
    if ((s.bucket_size && param_end - bucket_start >= *s.bucket_size) || p.shared_embedding) {
      finalize(param_end);
      param_start = bucket_start;
    } else {
      param_start = param_end;
    }
  }
  if (bucket_has_params) finalize(param_end);
  buf.numel = buf.buckets.empty() ? 0 : buf.buckets.back().second;
}

// Without the distributed optimizer parameters are packed back to back, one bucket per
// bucket_size, no padding (param_and_grad_buffer.py:1127-1128 asserts numel == unpadded).
void plain_layout(DdpBuffer& buf, const std::vector<const ParamTensor*>& params) {
  std::int64_t offset = 0;
  buf.params.reserve(params.size());
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    buf.params.emplace_back(offset, offset + (*it)->numel);
    offset += (*it)->numel;
  }
  buf.buckets.emplace_back(0, offset);
  buf.numel = offset;
}

}  // namespace

std::vector<DdpBuffer> ddp_buffers(const std::vector<const ParamTensor*>& params, const DdpSettings& s) {
  // Grouping key (param dtype, grad dtype, expert), param_and_grad_buffer.py:888-950. FP8 params
  // are stored as uint8; their grads use the high-precision ("fake") dtype.
  std::vector<DdpBuffer> buffers;
  std::vector<std::vector<const ParamTensor*>> members;
  for (const ParamTensor* pp : params) {
    const ParamTensor& p = *pp;
    // DDP buffers hold only parameters that require grad (distributed_data_parallel.py:110-124).
    if (p.frozen) continue;
    const DType pdt = (s.fp8_params && p.gemm_weight) ? DType::uint8 : s.param_dtype;
    std::size_t k = 0;
    while (k < buffers.size() && !(buffers[k].param_dtype == pdt && buffers[k].expert == p.expert)) ++k;
    if (k == buffers.size()) {
      DdpBuffer b;
      b.param_dtype = pdt;
      b.grad_dtype = s.grad_dtype;
      b.expert = p.expert;
      b.shard_count = p.expert ? s.expert_shards : s.dense_shards;
      buffers.push_back(b);
      members.emplace_back();
    }
    members[k].push_back(pp);
    buffers[k].numel_unpadded += p.numel;
    if (p.gemm_weight) buffers[k].gemm_numel += p.numel;
  }
  for (std::size_t k = 0; k < buffers.size(); ++k) {
    if (s.distributed_optimizer) distopt_layout(buffers[k], members[k], s);
    else plain_layout(buffers[k], members[k]);
  }
  return buffers;
}

std::int64_t owned_elements(const DdpBuffer& buffer, std::int64_t shard_index) {
  // Parameter ranges are laid out in increasing, non-overlapping order: binary-search the first
  // one that reaches into the shard, so many buckets x many experts stay cheap.
  std::int64_t owned = 0;
  for (const auto& [b_start, b_end] : buffer.buckets) {
    const std::int64_t shard = (b_end - b_start) / buffer.shard_count;
    const std::int64_t lo = b_start + shard_index * shard;
    const std::int64_t hi = lo + shard;
    auto it = std::partition_point(buffer.params.begin(), buffer.params.end(),
                                   [lo](const auto& p) { return p.second <= lo; });
    for (; it != buffer.params.end() && it->first < hi; ++it) {
      owned += std::min(it->second, hi) - std::max(it->first, lo);
    }
  }
  return owned;
}

std::vector<std::int64_t> owned_elements_by_shard(const DdpBuffer& buffer) {
  // Shard i of a bucket is [start + i * shard, start + (i + 1) * shard), as in owned_elements. A
  // parameter's part inside a bucket adds its overlap to the first and last shard it touches and a
  // whole shard to each one in between; the in-between runs go into a difference array, so a
  // buffer costs O(parameters + buckets + shards) rather than buckets x shards.
  const std::int64_t shards = std::max<std::int64_t>(buffer.shard_count, 1);
  const auto n = static_cast<std::size_t>(shards);
  std::vector<std::int64_t> owned(n, 0), whole(n + 1, 0);
  for (const auto& [b_start, b_end] : buffer.buckets) {
    const std::int64_t shard = (b_end - b_start) / shards;
    if (shard <= 0) continue;
    const std::int64_t covered_end = b_start + shard * shards;  // a remainder past the last shard is nobody's
    auto it = std::partition_point(buffer.params.begin(), buffer.params.end(),
                                   [b_start](const auto& p) { return p.second <= b_start; });
    for (; it != buffer.params.end() && it->first < covered_end; ++it) {
      const std::int64_t lo = std::max(it->first, b_start), hi = std::min(it->second, covered_end);
      if (hi <= lo) continue;
      const auto first = static_cast<std::size_t>((lo - b_start) / shard);
      const auto last = static_cast<std::size_t>((hi - 1 - b_start) / shard);
      if (first == last) {
        owned[first] += hi - lo;
        continue;
      }
      owned[first] += b_start + static_cast<std::int64_t>(first + 1) * shard - lo;
      owned[last] += hi - (b_start + static_cast<std::int64_t>(last) * shard);
      whole[first + 1] += shard;
      whole[last] -= shard;
    }
  }
  std::int64_t running = 0;
  for (std::size_t i = 0; i < n; ++i) {
    running += whole[i];
    owned[i] += running;
  }
  return owned;
}

std::int64_t ShardOwnership::at(std::int64_t shard) const {
  const auto it = std::upper_bound(starts.begin(), starts.end(), shard);
  return it == starts.begin() ? 0 : owned[static_cast<std::size_t>(it - starts.begin() - 1)];
}

ShardOwnership shard_ownership(const DdpBuffer& buffer) {
  // A shard owns its slice of each bucket less the elements of that slice no parameter covers (the
  // holes: 64-element alignment gaps and the padding at the bucket's end). Each hole takes its
  // overlap from the first and last shard it touches and a whole slice from each one in between;
  // those runs go into a sparse difference list keyed by shard index, as owned_elements_by_shard
  // does densely.
  const std::int64_t shards = std::max<std::int64_t>(buffer.shard_count, 1);
  std::int64_t full = 0;
  std::vector<std::pair<std::int64_t, std::int64_t>> delta;  // (shard index, change of the deficit)
  for (const auto& [b_start, b_end] : buffer.buckets) {
    const std::int64_t shard = (b_end - b_start) / shards;
    if (shard <= 0) continue;
    full += shard;
    const std::int64_t covered_end = b_start + shard * shards;  // a remainder past the last shard is nobody's
    const auto hole = [&](std::int64_t lo, std::int64_t hi) {
      if (hi <= lo) return;
      const std::int64_t first = (lo - b_start) / shard, last = (hi - 1 - b_start) / shard;
      if (first == last) {
        delta.emplace_back(first, hi - lo);
        delta.emplace_back(first + 1, lo - hi);
        return;
      }
      const std::int64_t head = b_start + (first + 1) * shard - lo, tail = hi - (b_start + last * shard);
      delta.emplace_back(first, head);
      delta.emplace_back(first + 1, shard - head);
      delta.emplace_back(last, tail - shard);
      delta.emplace_back(last + 1, -tail);
    };
    std::int64_t cursor = b_start;
    auto it = std::partition_point(buffer.params.begin(), buffer.params.end(),
                                   [b_start](const auto& p) { return p.second <= b_start; });
    for (; it != buffer.params.end() && it->first < covered_end; ++it) {
      const std::int64_t lo = std::max(it->first, b_start), hi = std::min(it->second, covered_end);
      hole(cursor, lo);
      cursor = std::max(cursor, hi);
    }
    hole(cursor, covered_end);
  }
  std::sort(delta.begin(), delta.end());
  ShardOwnership out;
  out.starts.push_back(0);
  out.owned.push_back(full);
  std::int64_t deficit = 0;
  for (std::size_t k = 0; k < delta.size();) {
    const std::int64_t at = delta[k].first;
    for (; k < delta.size() && delta[k].first == at; ++k) deficit += delta[k].second;
    if (at >= shards) break;
    if (at == 0) out.owned.front() = full - deficit;
    else if (full - deficit != out.owned.back()) {
      out.starts.push_back(at);
      out.owned.push_back(full - deficit);
    }
  }
  return out;
}

}  // namespace peakcast::model::detail
