#include "combined_step.hpp"

#include <algorithm>

namespace peakcast::sim::detail {

namespace {

// [first, last) of a chunk's layers: after its leading embedding, before its trailing loss heads.
std::pair<std::size_t, std::size_t> layer_range(const ChunkModel& cm) {
  std::size_t first = 0, last = cm.segments.size();
  while (first < last && cm.segments[first].is_embedding) ++first;
  while (last > first && cm.segments[last - 1].is_output) --last;
  return {first, last};
}

}  // namespace

std::vector<CombinedOp> combined_order(const ChunkModel& f, const ChunkModel& b, bool f_whole, bool b_whole) {
  std::vector<CombinedOp> ops;
  const auto [f_first, f_last] = f_whole ? std::pair<std::size_t, std::size_t>{0, 0} : layer_range(f);
  const auto [b_first, b_last] = b_whole ? std::pair<std::size_t, std::size_t>{0, 0} : layer_range(b);
  for (std::size_t i = 0; i < f_first; ++i) ops.push_back({CombinedOp::forward, i});  // pre_process.forward
  if (!b_whole)
    for (std::size_t i = b.segments.size(); i-- > b_last;) ops.push_back({CombinedOp::backward, i});  // post_process.backward
  const std::size_t f_layers = f_last - f_first, b_layers = b_last - b_first;
  const std::size_t pairs = std::min(f_layers, b_layers);
  for (std::size_t j = 0; j < pairs; ++j) {
    ops.push_back({CombinedOp::forward, f_first + j});
    ops.push_back({CombinedOp::backward, b_last - 1 - j});
  }
  for (std::size_t j = pairs; j < b_layers; ++j) ops.push_back({CombinedOp::backward, b_last - 1 - j});
  for (std::size_t j = pairs; j < f_layers; ++j) ops.push_back({CombinedOp::forward, f_first + j});
  if (b_first == 0) ops.push_back({CombinedOp::backward_done, 0});  // its input gradient sent (:604-607)
  if (!f_whole)
    for (std::size_t i = f_last; i < f.segments.size(); ++i) ops.push_back({CombinedOp::forward, i});  // post_process.forward
  if (b_first > 0) {                                                                                   // pre_process.backward, after the forward's loss (:619-621)
    for (std::size_t i = b_first; i-- > 0;) ops.push_back({CombinedOp::backward, i});
    ops.push_back({CombinedOp::backward_done, 0});
  }
  return ops;
}

}  // namespace peakcast::sim::detail
