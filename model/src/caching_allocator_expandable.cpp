// CachingAllocatorModel with expandable_segments: one address range per (stream, pool), mapped in
// pages at the lowest address where the request fits (find_expandable_block, map_block,
// try_allocate_expandable_block), unmapped page by page when cached memory is released
// (unmap_block); Note [Expandable Segments] of CUDACachingAllocator.cpp.
#include <algorithm>
#include <limits>

#include "peakcast/model/caching_allocator.hpp"

namespace peakcast::model {

namespace {
// The address space of one segment: 1 1/8 of the device memory (find_expandable_block), or, with no
// capacity given, far more than any request.
std::int64_t address_space(std::int64_t capacity) {
  return capacity > 0 ? capacity + capacity / 8 : std::int64_t{1} << 50;
}
}  // namespace

// A free block's size plus the unmapped range right after it: what it could grow to.
std::int64_t CachingAllocatorModel::expandable_size(int i) const {
  const Block& b = at(i);
  return b.size + (b.next >= 0 && !at(b.next).mapped ? at(b.next).size : 0);
}

// The lowest-address run of free and unmapped blocks of the stream's segment that holds `size`
// bytes, starting at the free block before an unmapped one where there is one; a new segment
// (wholly unmapped) when none does.
int CachingAllocatorModel::find_expandable_block(int stream, bool small, std::int64_t size) {
  auto& unmapped = pool(small).unmapped;
  const auto room = [&](int b) {
    std::int64_t bytes = 0;
    while (bytes < size && allocatable(b)) {
      bytes += at(b).size;
      b = at(b).next;
    }
    return bytes >= size;
  };
  for (auto it = unmapped.lower_bound({stream, std::numeric_limits<std::int64_t>::min(), -1});
       it != unmapped.end() && std::get<0>(*it) == stream; ++it) {
    int c = std::get<2>(*it);
    if (allocatable(at(c).prev)) c = at(c).prev;
    if (room(c)) return c;
  }
  Expandable e;
  e.page = small ? kSmallBuffer : kLargeBuffer;  // "2MiB pages for our small pool and 20MiB pages for our large pool"
  e.base = next_address_;
  const std::int64_t span = address_space(settings_.capacity);
  next_address_ += span;
  expandables_.push_back(e);
  Block b;
  b.ptr = e.base;
  b.size = span;
  b.stream = stream;
  b.small = small;
  b.mapped = false;
  b.expandable = static_cast<int>(expandables_.size()) - 1;
  const int i = new_block(b);
  insert_free(i);
  return i;
}

// Maps the pages covering the first `size` bytes of unmapped block i (the rest stays unmapped
// after it) and merges it with free neighbours; false when the device has no room for the pages.
bool CachingAllocatorModel::map_block(int i, std::int64_t size) {
  const Expandable& e = expandables_[static_cast<std::size_t>(at(i).expandable)];
  const std::int64_t first = (at(i).ptr - e.base) / e.page;
  const std::int64_t last = (at(i).ptr + size - e.base + e.page - 1) / e.page;
  const std::int64_t mapped = (last - first) * e.page;
  if (!fits_device(mapped)) return false;
  erase_free(i);
  at(i).mapped = true;
  if (mapped < at(i).size) {
    Block rest = at(i);
    rest.ptr += mapped;
    rest.size -= mapped;
    rest.mapped = false;
    rest.prev = i;
    const int r = new_block(rest);
    if (at(r).next >= 0) at(at(r).next).prev = r;
    at(i).next = r;
    at(i).size = mapped;
    insert_free(r);
  }
  try_merge(i, at(i).prev);
  try_merge(i, at(i).next);
  insert_free(i);
  grow_reserved(mapped);
  return true;
}

int CachingAllocatorModel::try_allocate_expandable_block(int stream, bool small, std::int64_t size) {
  int c = find_expandable_block(stream, small, size);
  if (!at(c).mapped && !map_block(c, std::min(at(c).size, size))) return -1;
  while (at(c).size < size) {
    // c is free and mapped, an unmapped block after it: map what is missing; it merges with c.
    const int n = at(c).next;
    if (!map_block(n, std::min(size - at(c).size, at(n).size))) return -1;
    c = n;
  }
  erase_free(c);
  return c;
}

// Unmaps the whole pages inside free block i; partial pages at its ends stay mapped and free.
void CachingAllocatorModel::unmap_block(int i) {
  const Expandable& e = expandables_[static_cast<std::size_t>(at(i).expandable)];
  const std::int64_t first = (at(i).ptr - e.base + e.page - 1) / e.page;
  const std::int64_t last = (at(i).ptr + at(i).size - e.base) / e.page;
  if (first >= last) return;
  erase_free(i);
  const std::int64_t begin = e.base + first * e.page, bytes = (last - first) * e.page;
  const std::int64_t before = begin - at(i).ptr, after = at(i).size - before - bytes;
  const auto piece = [&](std::int64_t ptr, std::int64_t len, bool in_front) {
    Block p = at(i);
    p.ptr = ptr;
    p.size = len;
    const int k = new_block(p);
    if (in_front) {
      at(k).next = i;
      if (at(k).prev >= 0) at(at(k).prev).next = k;
      at(i).prev = k;
    } else {
      at(k).prev = i;
      if (at(k).next >= 0) at(at(k).next).prev = k;
      at(i).next = k;
    }
    insert_free(k);
  };
  if (before > 0) piece(at(i).ptr, before, true);
  if (after > 0) piece(begin + bytes, after, false);
  at(i).ptr = begin;
  at(i).size = bytes;
  at(i).mapped = false;
  try_merge(i, at(i).prev);
  try_merge(i, at(i).next);
  insert_free(i);
  reserved_ -= bytes;
}

}  // namespace peakcast::model
