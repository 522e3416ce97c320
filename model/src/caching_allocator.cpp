// CachingAllocatorModel: size rounding, pools, best fit, splitting, merging and the out-of-memory
// retries of CUDACachingAllocator.cpp (round_size, get_pool, get_free_block, get_allocation_size,
// should_split, alloc_found_block, free_block, try_merge_blocks, alloc_block,
// release_available_cached_blocks, release_cached_blocks). Expandable segments:
// caching_allocator_expandable.cpp.
#include <algorithm>
#include <bit>
#include <limits>
#include <stdexcept>

#include "peakcast/model/caching_allocator.hpp"

namespace peakcast::model {

namespace {
// roundup_power2_divisions(size) (CUDAAllocatorConfig / AllocatorConfig): the entry of the size's
// power-of-two interval, the intervals starting at 1 MiB (kRoundUpPowerOfTwoStart), 16 of them.
std::int64_t divisions_for(std::int64_t size, const AllocatorSettings& s) {
  if (s.roundup_power2_divisions.empty()) return 0;
  constexpr int kIntervalStart = 20;  // log2(1 MiB)
  const int log_size = 63 - std::countl_zero(static_cast<std::uint64_t>(size));
  std::size_t index = log_size > kIntervalStart ? static_cast<std::size_t>(log_size - kIntervalStart) : 0;
  index = std::min(index, s.roundup_power2_divisions.size() - 1);
  return s.roundup_power2_divisions[index];
}

// roundup_power2_next_division: the next of `divisions` equal steps between the size's power-of-two floor and ceiling.
std::int64_t next_division(std::int64_t size, std::int64_t divisions) {
  const auto u = static_cast<std::uint64_t>(size);
  if (std::has_single_bit(u)) return size;
  const std::uint64_t floor = std::bit_floor(u);
  const std::uint64_t step = floor >> (63 - std::countl_zero(static_cast<std::uint64_t>(divisions)));
  if (step == 0) return static_cast<std::int64_t>(floor << 1);
  const std::uint64_t down = u & ~(step - 1);
  return static_cast<std::int64_t>(down == u ? u : down + step);
}
}  // namespace

std::int64_t CachingAllocatorModel::round_size(std::int64_t bytes, const AllocatorSettings& s) {
  if (bytes < kMinBlock) return kMinBlock;
  const std::int64_t divisions = divisions_for(bytes, s);
  if (divisions > 1 && bytes > kMinBlock * divisions) return next_division(bytes, divisions);
  return kMinBlock * ((bytes + kMinBlock - 1) / kMinBlock);
}

std::int64_t CachingAllocatorModel::allocation_size(std::int64_t rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return kRoundLarge * ((rounded + kRoundLarge - 1) / kRoundLarge);
}

// ---- block bookkeeping ----

int CachingAllocatorModel::new_block(const Block& b) {
  if (!dead_.empty()) {
    const int i = dead_.back();
    dead_.pop_back();
    at(i) = b;
    return i;
  }
  blocks_.push_back(b);
  return static_cast<int>(blocks_.size()) - 1;
}

void CachingAllocatorModel::delete_block(int i) {
  at(i) = Block{};
  at(i).dead = true;
  dead_.push_back(i);
}

void CachingAllocatorModel::insert_free(int i) {
  const Block& b = at(i);
  if (b.mapped) {
    pool(b.small).blocks.insert({b.stream, b.size, b.ptr, i});
    free_sizes_.insert(b.size);
  } else {
    pool(b.small).unmapped.insert({b.stream, b.ptr, i});
  }
}

void CachingAllocatorModel::erase_free(int i) {
  const Block& b = at(i);
  if (b.mapped) {
    if (pool(b.small).blocks.erase({b.stream, b.size, b.ptr, i}) == 0) throw std::logic_error("allocator model: block not in its pool");
    free_sizes_.erase(free_sizes_.find(b.size));
  } else {
    pool(b.small).unmapped.erase({b.stream, b.ptr, i});
  }
}

void CachingAllocatorModel::grow_reserved(std::int64_t bytes) {
  reserved_ += bytes;
  peak_reserved_ = std::max(peak_reserved_, reserved_);
}

// ---- malloc ----

bool CachingAllocatorModel::should_split(const Block& b, std::int64_t size) const {
  const std::int64_t remaining = b.size - size;
  if (b.small || settings_.expandable_segments) return remaining >= kMinBlock;
  return size < settings_.max_split_size && remaining > kSmallSize;
}

// The smallest free block of the stream's pool that fits, by the oversize rules.
int CachingAllocatorModel::get_free_block(int stream, std::int64_t size, bool small) {
  auto& blocks = pool(small).blocks;
  auto it = blocks.lower_bound({stream, size, std::numeric_limits<std::int64_t>::min(), -1});
  if (it == blocks.end() || std::get<0>(*it) != stream) return -1;
  if (settings_.expandable_segments && at(std::get<3>(*it)).expandable >= 0) {
    // A block at the end of the mapped part counts as big as it can grow: prefer the next one in
    // size order while it can grow less.
    auto next = std::next(it);
    while (at(std::get<3>(*it)).expandable >= 0 && next != blocks.end() && std::get<0>(*next) == stream &&
           expandable_size(std::get<3>(*next)) < expandable_size(std::get<3>(*it)))
      it = next++;
  }
  const std::int64_t found = std::get<1>(*it);
  if (size < settings_.max_split_size && found >= settings_.max_split_size) return -1;  // no oversize block for a smaller request
  if (size >= settings_.max_split_size && found >= size + settings_.max_non_split_rounding) return -1;
  const int i = std::get<3>(*it);
  erase_free(i);
  return i;
}

// The address of a new cudaMalloc'd segment (kTopDownSegmentBytes): large ones downwards from a high base, the
// others upwards from a low one. Only the order of addresses matters: it breaks best fit's ties.
std::int64_t CachingAllocatorModel::segment_address(std::int64_t bytes) {
  if (bytes >= kTopDownSegmentBytes) {
    next_high_address_ -= bytes;
    return next_high_address_;
  }
  const std::int64_t address = next_address_;
  next_address_ += bytes;
  return address;
}

// A new segment (cudaMalloc of the allocation size), or, with expandable segments, new pages.
int CachingAllocatorModel::alloc_block(int stream, std::int64_t size, bool small) {
  if (settings_.expandable_segments) return try_allocate_expandable_block(stream, small, size);
  const std::int64_t bytes = allocation_size(size);
  if (!fits_device(bytes)) return -1;
  Block b;
  b.ptr = segment_address(bytes);
  b.size = bytes;
  b.stream = stream;
  b.small = small;
  grow_reserved(bytes);
  ++segments_;
  return new_block(b);
}

// alloc_found_block: the request takes the front of block i; the rest stays free in the pool.
void CachingAllocatorModel::split(int i, std::int64_t size) {
  Block rest = at(i);
  rest.ptr += size;
  rest.size -= size;
  rest.prev = i;
  const int r = new_block(rest);
  if (at(r).next >= 0) at(at(r).next).prev = r;
  at(i).next = r;
  at(i).size = size;
  insert_free(r);
}

CachingAllocatorModel::Handle CachingAllocatorModel::allocate(Bytes bytes, int stream) {
  const std::int64_t size = round_size(bytes.value, settings_);
  const bool small = size <= kSmallSize;
  int i = get_free_block(stream, size, small);
  if (i < 0) i = alloc_block(stream, size, small);
  if (i < 0 && release_available_cached_blocks(stream, size, small)) i = alloc_block(stream, size, small);
  if (i < 0) {
    release_cached_blocks();
    ++retries_;
    i = alloc_block(stream, size, small);
  }
  if (i < 0) {
    ++ooms_;
    return kFailed;
  }
  if (should_split(at(i), size)) split(i, size);
  Block& b = at(i);
  b.allocated = true;
  b.requested = bytes.value;
  allocated_ += b.size;
  requested_ += b.requested;
  peak_allocated_ = std::max(peak_allocated_, allocated_);
  return i;
}

// ---- free ----

// Block src (a neighbour) joins dst when free and equally mapped; returns the bytes it brought.
std::int64_t CachingAllocatorModel::try_merge(int dst, int src) {
  if (src < 0 || at(src).allocated || at(src).mapped != at(dst).mapped) return 0;
  erase_free(src);
  Block& d = at(dst);
  const Block& s = at(src);
  if (d.prev == src) {
    d.ptr = s.ptr;
    d.prev = s.prev;
    if (d.prev >= 0) at(d.prev).next = dst;
  } else {
    d.next = s.next;
    if (d.next >= 0) at(d.next).prev = dst;
  }
  const std::int64_t subsumed = s.size;
  d.size += subsumed;
  delete_block(src);
  return subsumed;
}

void CachingAllocatorModel::release(Handle handle) {
  if (handle < 0 || static_cast<std::size_t>(handle) >= blocks_.size() || !at(handle).allocated)
    throw std::logic_error("CachingAllocatorModel::release: not a live block");
  Block& b = at(handle);
  allocated_ -= b.size;
  requested_ -= b.requested;
  b.allocated = false;
  b.requested = 0;
  const int prev = b.prev, next = b.next;
  try_merge(handle, prev);
  try_merge(handle, next);
  insert_free(handle);
}

void CachingAllocatorModel::release_deferred(Handle handle) {
  if (handle < 0 || static_cast<std::size_t>(handle) >= blocks_.size() || !at(handle).allocated)
    throw std::logic_error("CachingAllocatorModel::release_deferred: not a live block");
  Block& b = at(handle);
  allocated_ -= b.size;  // free() updates the stats before insert_events
  requested_ -= b.requested;
  b.requested = 0;
  deferred_.push_back(handle);  // still allocated to the pools: no request gets it, no neighbour merges it
}

void CachingAllocatorModel::complete_deferred() {
  for (const int i : deferred_) {
    Block& b = at(i);
    b.allocated = false;
    const int prev = b.prev, next = b.next;
    try_merge(i, prev);
    try_merge(i, next);
    insert_free(i);
  }
  deferred_.clear();
}

void CachingAllocatorModel::add_free_segment(Bytes bytes) {
  if (bytes.value <= 0) return;
  const std::int64_t size = round_size(bytes.value, settings_);
  Block b;
  b.ptr = segment_address(size);
  b.size = size;
  grow_reserved(size);
  ++segments_;
  insert_free(new_block(b));
}

Bytes CachingAllocatorModel::slack(Handle handle) const {
  const Block& b = at(handle);
  return b.allocated ? Bytes{b.size - b.requested} : Bytes{0};
}

// ---- returning memory to the device ----

void CachingAllocatorModel::release_block(int i) {
  erase_free(i);
  reserved_ -= at(i).size;
  --segments_;
  delete_block(i);
}

// Oversize blocks (max_split_size or more) of the stream: the smallest one that covers the request,
// else the largest ones until they do. Only whole segments are returned (an oversize block is never
// split, so it is one).
bool CachingAllocatorModel::release_available_cached_blocks(int stream, std::int64_t size, bool small) {
  if (settings_.max_split_size == AllocatorSettings::kUnlimited || settings_.expandable_segments) return false;
  auto& blocks = pool(small).blocks;
  const std::int64_t key = std::max(size, settings_.max_split_size);
  auto it = blocks.lower_bound({stream, key, std::numeric_limits<std::int64_t>::min(), -1});
  if (it != blocks.end() && std::get<0>(*it) == stream) {
    release_block(std::get<3>(*it));
    return true;
  }
  std::int64_t released = 0;
  std::vector<int> victims;
  while (it != blocks.begin() && released < key) {
    --it;
    const Block& b = at(std::get<3>(*it));
    if (b.stream != stream || b.size < settings_.max_split_size) break;
    if (b.prev >= 0 || b.next >= 0) continue;
    released += b.size;
    victims.push_back(std::get<3>(*it));
  }
  for (const int v : victims) release_block(v);
  return released >= key;
}

void CachingAllocatorModel::release_blocks(bool small) {
  std::vector<int> whole, expandable;
  for (const auto& key : pool(small).blocks) {
    const int i = std::get<3>(key);
    if (at(i).expandable >= 0) expandable.push_back(i);
    else if (at(i).prev < 0 && at(i).next < 0) whole.push_back(i);
  }
  for (const int i : whole) release_block(i);
  for (const int i : expandable) unmap_block(i);
}

void CachingAllocatorModel::release_cached_blocks() {
  complete_deferred();  // synchronize_and_free_events
  release_blocks(false);
  release_blocks(true);
}

void CachingAllocatorModel::empty_cache() { release_cached_blocks(); }

}  // namespace peakcast::model
