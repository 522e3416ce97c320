#pragma once
// A model of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp, default settings,
// one stream), for sequences of allocations and frees whose order is known: how many bytes it hands
// out, which is what max_memory_allocated() counts, against how many the tensors asked for.
//
// Its rules: a request is rounded up to 512 B. Requests up to 1 MiB come from the small pool, whose
// segments are 2 MiB; larger ones from the large pool, whose segments are 20 MiB for requests under
// 10 MiB and the request rounded up to 2 MiB otherwise. The smallest free block that fits is used
// (best fit). It is split only when the rest is more than 1 MiB (large pool) or at least 512 B (small
// pool); otherwise the whole block is handed out and counted. Freed blocks merge with free neighbours
// in their segment. Segments are never returned (no empty_cache).
#include <cstdint>
#include <set>
#include <tuple>
#include <vector>

#include "peakcast/model/units.hpp"

namespace peakcast::model {

class CachingAllocatorModel {
 public:
  using Handle = int;

  // Hands out a block for `bytes` requested; the handle frees it.
  Handle allocate(Bytes bytes);
  void release(Handle handle);
  // Memory the allocator already holds, free: one large-pool segment of `bytes` (e.g. what a
  // forward-backward freed). Requests are carved from it before new segments are made.
  void add_free_segment(Bytes bytes);

  Bytes allocated() const { return Bytes{allocated_}; }
  Bytes requested() const { return Bytes{requested_}; }
  Bytes reserved() const { return Bytes{reserved_}; }
  // Bytes handed out for one live block beyond its request (rounding and an unsplit remainder).
  Bytes slack(Handle handle) const;

  static constexpr std::int64_t kMinBlock = 512;
  static constexpr std::int64_t kSmallSize = 1 << 20;        // largest small-pool request
  static constexpr std::int64_t kSmallBuffer = 2 << 20;      // small-pool segment
  static constexpr std::int64_t kLargeBuffer = 20 << 20;     // segment for requests under 10 MiB
  static constexpr std::int64_t kMinLargeAlloc = 10 << 20;
  static constexpr std::int64_t kRoundLarge = 2 << 20;       // larger segments round up to this

 private:
  struct Block {
    std::int64_t size = 0, requested = 0;
    bool small = false, free = true;
    int prev = -1, next = -1;  // neighbours in the same segment
  };
  using FreeKey = std::tuple<std::int64_t, int>;  // (size, block index): best fit = lower_bound
  std::set<FreeKey>& pool(bool small) { return small ? free_small_ : free_large_; }
  int new_segment(std::int64_t bytes, bool small);

  std::vector<Block> blocks_;
  std::set<FreeKey> free_small_, free_large_;
  std::int64_t allocated_ = 0, requested_ = 0, reserved_ = 0;
};

}  // namespace peakcast::model
