#pragma once
// A model of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp, DeviceCachingAllocator)
// for sequences of allocations and frees whose order is known: the bytes it hands out (what
// max_memory_allocated() counts), the bytes it reserves from the device (max_memory_reserved()), and
// the first request it cannot serve within a given capacity.
//
// Rules followed (function names of CUDACachingAllocator.cpp; docs/caching-allocator.md cites the lines):
// - round_size: a request is rounded up to 512 B (kMinBlockSize), or, with roundup_power2_divisions,
//   to the next of N equal divisions of its power-of-two interval.
// - get_pool: requests up to 1 MiB (kSmallSize) come from the small pool, larger ones from the large
//   pool; each pool keeps the free blocks of every stream, and a stream only reuses its own.
// - get_free_block: the smallest free block of the stream that fits (best fit, lowest address first
//   among equal sizes); a block of max_split_size or more serves only requests of max_split_size or
//   more, and those only if it exceeds them by less than max_non_split_rounding (20 MiB).
// - get_allocation_size: a new segment is 2 MiB (kSmallBuffer) for small requests, 20 MiB (kLargeBuffer)
//   for requests under 10 MiB (kMinLargeAlloc), else the request rounded up to 2 MiB (kRoundLarge).
// - should_split: the rest of a block is split off when it is at least 512 B in the small pool (and
//   with expandable segments), else when the request is under max_split_size and the rest exceeds 1 MiB.
// - free_block / try_merge_blocks: a freed block merges with free neighbours of its segment.
// - malloc's retries: when the device cannot give a new segment, free cached oversize blocks
//   (release_available_cached_blocks, only with max_split_size), then every cached block that is a
//   whole segment (release_cached_blocks), and try again; then the request fails (OutOfMemoryError).
// - expandable_segments: one segment per (stream, pool) grows in pages of 2 MiB (small) or 20 MiB
//   (large) mapped at the lowest free address that fits (find_expandable_block, map_block); freeing
//   cached memory unmaps whole free pages (unmap_block).
// - free's deferral for blocks other streams used (insert_events / process_events): release_deferred,
//   complete_deferred; release_cached_blocks synchronizes first (synchronize_and_free_events).
// - cudaMalloc's addresses, which decide the ties of best fit: the driver is not modelled, an observed rule is
//   (segment_address): segments of kTopDownSegmentBytes or more get addresses downwards from a high base, smaller
//   ones upwards from a low one. Fitted on the segment order of 16 measured streams (docs/caching-allocator.md).
// Not modelled: CUDA-graph private pools, garbage_collection_threshold with a memory fraction, IPC.
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "peakcast/model/units.hpp"

namespace peakcast::model {

// PYTORCH_CUDA_ALLOC_CONF options the model follows, with c10/core/AllocatorConfig.h's defaults.
struct AllocatorSettings {
  static constexpr std::int64_t kUnlimited = std::numeric_limits<std::int64_t>::max();
  bool expandable_segments = false;                // expandable_segments:True
  std::int64_t max_split_size = kUnlimited;        // max_split_size_mb (bytes here)
  std::int64_t max_non_split_rounding = 20 << 20;  // max_non_split_rounding_mb (default kLargeBuffer)
  // roundup_power2_divisions: the divisions of each power-of-two interval from 1 MiB on (index 0:
  // sizes under 2 MiB, index i: [2^(20+i), 2^(21+i)), the last of 16 entries also everything above);
  // empty: plain 512 B rounding (the default).
  std::vector<std::int64_t> roundup_power2_divisions;
  // Bytes the allocator may hold in segments (the device memory less the CUDA context and what others
  // allocate): a segment that would go beyond fails. 0: unlimited.
  std::int64_t capacity = 0;

  bool operator==(const AllocatorSettings&) const = default;
};

// PYTORCH_CUDA_ALLOC_CONF, "key:value" pairs separated by commas (c10 AcceleratorAllocatorConfig /
// CUDAAllocatorConfig parseArgs): the options the model follows go into `settings`; accepted options
// it does not follow are named in `unmodelled`; a malformed value or unknown key (torch refuses the
// configuration at its first allocation) is `error`.
struct AllocConfParse {
  AllocatorSettings settings;
  bool expandable_given = false;  // the string sets expandable_segments
  std::vector<std::string> unmodelled;
  std::string error;
};
AllocConfParse parse_alloc_conf(const std::string& conf);

class CachingAllocatorModel {
 public:
  using Handle = int;
  static constexpr Handle kFailed = -1;  // allocate(): out of memory after freeing cached segments

  CachingAllocatorModel() = default;
  explicit CachingAllocatorModel(AllocatorSettings settings) : settings_(std::move(settings)) {}

  // Hands out a block for `bytes` requested on `stream`; the handle frees it.
  Handle allocate(Bytes bytes, int stream = 0);
  void release(Handle handle);
  // free() of a block another stream used (record_stream): the allocated bytes drop now, but the block
  // returns to the cache only once that stream's events have completed (insert_events, then
  // process_events' free_block), which complete_deferred() stands for: the host synchronized.
  void release_deferred(Handle handle);
  void complete_deferred();
  // Memory the allocator already holds, free: one large-pool segment of `bytes` (e.g. what a
  // forward-backward freed). Requests are carved from it before new segments are made.
  void add_free_segment(Bytes bytes);
  // torch.cuda.empty_cache(): returns every cached whole segment (and free expandable pages).
  void empty_cache();

  Bytes allocated() const { return Bytes{allocated_}; }
  Bytes requested() const { return Bytes{requested_}; }
  Bytes reserved() const { return Bytes{reserved_}; }
  Bytes peak_allocated() const { return Bytes{peak_allocated_}; }
  Bytes peak_reserved() const { return Bytes{peak_reserved_}; }
  // The largest cached free block (mapped memory), what cacheInfo() reports.
  Bytes largest_free_block() const { return Bytes{free_sizes_.empty() ? 0 : *free_sizes_.rbegin()}; }
  std::int64_t segments() const { return segments_; }      // cudaMalloc'd segments held (not expandable)
  std::int64_t alloc_retries() const { return retries_; }  // num_alloc_retries
  std::int64_t ooms() const { return ooms_; }              // num_ooms
  // Bytes handed out for one live block beyond its request (rounding and an unsplit remainder).
  Bytes slack(Handle handle) const;
  const AllocatorSettings& settings() const { return settings_; }
  // A new device limit from here on (0: unlimited), e.g. to go on after an out-of-memory error.
  void set_capacity(std::int64_t capacity) { settings_.capacity = capacity; }

  // The rules as functions, for tests.
  static std::int64_t round_size(std::int64_t bytes, const AllocatorSettings& s = {});
  static std::int64_t allocation_size(std::int64_t rounded);

  static constexpr std::int64_t kMinBlock = 512;
  static constexpr std::int64_t kSmallSize = 1 << 20;     // largest small-pool request
  static constexpr std::int64_t kSmallBuffer = 2 << 20;   // small-pool segment (and expandable page)
  static constexpr std::int64_t kLargeBuffer = 20 << 20;  // segment for requests under 10 MiB (and expandable page)
  static constexpr std::int64_t kMinLargeAlloc = 10 << 20;
  static constexpr std::int64_t kRoundLarge = 2 << 20;  // larger segments round up to this
  // Segments from this size on take addresses downwards (segment_address). Fitted: on the 16 measured streams of
  // calibration/data/diagnostics/alloc_traces_s16 and alloc_traces_s24 without CUDA graphs, replayed by
  // `peakcast allocator-replay --segments`, every threshold from 113 to 448 MiB reproduced the order in which torch
  // made its segments on all 16 and their reserved peaks exactly (increasing addresses: the order on 13, the
  // reservations on 14; decreasing for all: 13 and 16); 256 MiB, chosen then, held on 10 of the 11 streams of
  // alloc_traces_s28 it had not seen and failed on etp_tp2sp_etp2_ep2_moe_mbs2_r0 (one 2560 MiB segment more, +10.9 %),
  // which needs 208 MiB or less (its 214 and 232 MiB segments downwards). Refit on all 27: 113 to 208 MiB; 128 MiB.
  static constexpr std::int64_t kTopDownSegmentBytes = std::int64_t{128} << 20;

 private:
  struct Block {
    std::int64_t ptr = 0, size = 0, requested = 0;
    int stream = 0;
    bool small = false, allocated = false, mapped = true, dead = false;
    int expandable = -1;       // the expandable segment it lies in, -1 for a cudaMalloc'd segment
    int prev = -1, next = -1;  // neighbours in the same segment
  };
  using FreeKey = std::tuple<int, std::int64_t, std::int64_t, int>;  // (stream, size, ptr, block): best fit
  using UnmappedKey = std::tuple<int, std::int64_t, int>;            // (stream, ptr, block): lowest address
  struct Pool {
    std::set<FreeKey> blocks;
    std::set<UnmappedKey> unmapped;
  };
  struct Expandable {
    std::int64_t base = 0, page = 0;
  };

  Block& at(int i) { return blocks_[static_cast<std::size_t>(i)]; }
  const Block& at(int i) const { return blocks_[static_cast<std::size_t>(i)]; }
  Pool& pool(bool small) { return small ? small_ : large_; }
  int new_block(const Block& b);
  void delete_block(int i);
  void insert_free(int i);
  void erase_free(int i);
  bool allocatable(int i) const { return i >= 0 && !at(i).allocated; }
  bool fits_device(std::int64_t bytes) const {
    return settings_.capacity <= 0 || reserved_ + bytes <= settings_.capacity;
  }
  void grow_reserved(std::int64_t bytes);

  int get_free_block(int stream, std::int64_t size, bool small);
  int alloc_block(int stream, std::int64_t size, bool small);
  bool release_available_cached_blocks(int stream, std::int64_t size, bool small);
  void release_cached_blocks();
  void release_blocks(bool small);
  void release_block(int i);
  void split(int i, std::int64_t size);
  bool should_split(const Block& b, std::int64_t size) const;
  std::int64_t try_merge(int dst, int src);
  // Expandable segments (caching_allocator_expandable.cpp).
  int find_expandable_block(int stream, bool small, std::int64_t size);
  bool map_block(int i, std::int64_t size);
  int try_allocate_expandable_block(int stream, bool small, std::int64_t size);
  void unmap_block(int i);
  std::int64_t expandable_size(int i) const;

  AllocatorSettings settings_;
  std::vector<Block> blocks_;
  std::vector<int> dead_;      // reusable block slots
  std::vector<int> deferred_;  // freed blocks waiting for another stream's events (release_deferred)
  std::vector<Expandable> expandables_;
  Pool small_, large_;
  std::multiset<std::int64_t> free_sizes_;                  // sizes of the mapped free blocks
  std::int64_t next_address_ = std::int64_t{1} << 40;       // the next small segment's (and expandable spans')
  std::int64_t next_high_address_ = std::int64_t{1} << 46;  // the last large segment's
  std::int64_t segment_address(std::int64_t bytes);
  std::int64_t allocated_ = 0, requested_ = 0, reserved_ = 0, peak_allocated_ = 0, peak_reserved_ = 0;
  std::int64_t segments_ = 0, retries_ = 0, ooms_ = 0;
};

}  // namespace peakcast::model
