// CachingAllocatorModel: best fit over free blocks, split and merge rules of CUDACachingAllocator.cpp
// (round_size, get_allocation_size, should_split, free_block's merge_blocks).
#include "peakcast/model/caching_allocator.hpp"

#include <stdexcept>

namespace peakcast::model {

namespace {
std::int64_t round_size(std::int64_t bytes) {
  constexpr std::int64_t m = CachingAllocatorModel::kMinBlock;
  return bytes < m ? m : m * ((bytes + m - 1) / m);
}

std::int64_t segment_size(std::int64_t rounded) {
  if (rounded <= CachingAllocatorModel::kSmallSize) return CachingAllocatorModel::kSmallBuffer;
  if (rounded < CachingAllocatorModel::kMinLargeAlloc) return CachingAllocatorModel::kLargeBuffer;
  constexpr std::int64_t r = CachingAllocatorModel::kRoundLarge;
  return r * ((rounded + r - 1) / r);
}
}  // namespace

int CachingAllocatorModel::new_segment(std::int64_t bytes, bool small) {
  Block b;
  b.size = bytes;
  b.small = small;
  blocks_.push_back(b);
  reserved_ += bytes;
  const int i = static_cast<int>(blocks_.size()) - 1;
  pool(small).insert({bytes, i});
  return i;
}

void CachingAllocatorModel::add_free_segment(Bytes bytes) {
  if (bytes.value > 0) new_segment(round_size(bytes.value), false);
}

CachingAllocatorModel::Handle CachingAllocatorModel::allocate(Bytes bytes) {
  const std::int64_t size = round_size(bytes.value);
  const bool small = size <= kSmallSize;
  auto& free = pool(small);
  auto it = free.lower_bound({size, -1});
  int i = 0;
  if (it == free.end()) {
    i = new_segment(segment_size(size), small);
    free.erase({blocks_[static_cast<std::size_t>(i)].size, i});
  } else {
    i = std::get<1>(*it);
    free.erase(it);
  }
  const std::int64_t remaining = blocks_[static_cast<std::size_t>(i)].size - size;
  if (small ? remaining >= kMinBlock : remaining > kSmallSize) {
    Block rest;
    rest.size = remaining;
    rest.small = small;
    rest.prev = i;
    rest.next = blocks_[static_cast<std::size_t>(i)].next;
    blocks_.push_back(rest);
    const int r = static_cast<int>(blocks_.size()) - 1;
    if (rest.next >= 0) blocks_[static_cast<std::size_t>(rest.next)].prev = r;
    blocks_[static_cast<std::size_t>(i)].next = r;
    blocks_[static_cast<std::size_t>(i)].size = size;
    free.insert({remaining, r});
  }
  Block& b = blocks_[static_cast<std::size_t>(i)];
  b.free = false;
  b.requested = bytes.value;
  allocated_ += b.size;
  requested_ += b.requested;
  return i;
}

void CachingAllocatorModel::release(Handle handle) {
  if (handle < 0 || static_cast<std::size_t>(handle) >= blocks_.size() || blocks_[static_cast<std::size_t>(handle)].free)
    throw std::logic_error("CachingAllocatorModel::release: not a live block");
  Block& b = blocks_[static_cast<std::size_t>(handle)];
  allocated_ -= b.size;
  requested_ -= b.requested;
  b.free = true;
  b.requested = 0;
  auto& free = pool(b.small);
  // Merge with free neighbours (a merged-away block stays in the vector, unlinked).
  int head = handle;
  for (const int n : {b.prev, b.next}) {
    if (n < 0 || !blocks_[static_cast<std::size_t>(n)].free) continue;
    Block& nb = blocks_[static_cast<std::size_t>(n)];
    free.erase({nb.size, n});
    const int first = n == b.prev ? n : head;
    const int second = n == b.prev ? head : n;
    Block& f = blocks_[static_cast<std::size_t>(first)];
    Block& s = blocks_[static_cast<std::size_t>(second)];
    f.size += s.size;
    f.next = s.next;
    if (s.next >= 0) blocks_[static_cast<std::size_t>(s.next)].prev = first;
    s.size = 0;
    s.prev = s.next = -1;
    head = first;
  }
  free.insert({blocks_[static_cast<std::size_t>(head)].size, head});
}

Bytes CachingAllocatorModel::slack(Handle handle) const {
  const Block& b = blocks_.at(static_cast<std::size_t>(handle));
  return b.free ? Bytes{0} : Bytes{b.size - b.requested};
}

}  // namespace peakcast::model
