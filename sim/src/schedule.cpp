#include "peakcast/sim/schedule.hpp"

#include <algorithm>

namespace peakcast::sim {

std::int64_t warmup_steps(const ScheduleParams& p, std::int64_t r) {
  if (p.pp <= 1) return 0;
  if (p.vpp <= 1) return std::min(p.pp - r - 1, p.microbatches);  // schedules.py:2251-2254
  const std::int64_t total = p.microbatches * p.vpp;
  const std::int64_t g = p.group_size > 0 ? p.group_size : p.pp;
  std::int64_t w = (p.pp - r - 1) * 2 + (p.vpp - 1) * g;  // get_pp_rank_microbatches, schedules.py:911-968
  if (p.combined_1f1b) w += 1;                            // schedules.py:948-952
  return std::min(w, total);
}

namespace {

// Interleaved order (schedules.py get_schedule_table): micro-batches go through the chunks in groups
// of `g`; the last group holds what is left. Forward k runs table[k]; backward k runs the same
// micro-batch on the mirrored chunk.
std::vector<std::pair<int, int>> schedule_table(std::int64_t m, std::int64_t g, std::int64_t vpp) {
  std::vector<std::pair<int, int>> table;  // (microbatch, chunk)
  for (std::int64_t first = 0; first < m; first += g) {
    const std::int64_t size = std::min(g, m - first);
    for (std::int64_t chunk = 0; chunk < vpp; ++chunk)
      for (std::int64_t mb = first; mb < first + size; ++mb) table.emplace_back(static_cast<int>(mb), static_cast<int>(chunk));
  }
  return table;
}

}  // namespace

std::vector<ScheduleStep> pipeline_schedule(const ScheduleParams& p, std::int64_t r) {
  std::vector<ScheduleStep> steps;
  const std::int64_t m = p.microbatches;
  if (p.pp <= 1 && p.vpp <= 1) {
    if (p.combined_1f1b) {  // combined_1f1b_schedule_for_no_pipelining (combined_1f1b.py:35-136)
      for (std::int64_t i = 0; i < m; ++i) {
        steps.push_back({true, 0, static_cast<int>(i)});
        if (i > 0) steps.push_back({false, 0, static_cast<int>(i - 1), true});
      }
      if (m > 0) steps.push_back({false, 0, static_cast<int>(m - 1)});
      return steps;
    }
    for (std::int64_t i = 0; i < m; ++i) {
      steps.push_back({true, 0, static_cast<int>(i)});
      steps.push_back({false, 0, static_cast<int>(i)});
    }
    return steps;
  }
  if (p.vpp <= 1) {
    const std::int64_t w = warmup_steps(p, r);
    for (std::int64_t i = 0; i < w; ++i) steps.push_back({true, 0, static_cast<int>(i)});
    for (std::int64_t i = 0; i < m - w; ++i) {
      steps.push_back({true, 0, static_cast<int>(w + i)});
      steps.push_back({false, 0, static_cast<int>(i)});
    }
    for (std::int64_t i = m - w; i < m; ++i) steps.push_back({false, 0, static_cast<int>(i)});
    return steps;
  }
  const std::int64_t g = p.group_size > 0 ? p.group_size : p.pp;
  const std::int64_t total = m * p.vpp;
  const std::int64_t w = warmup_steps(p, r);
  const auto table = schedule_table(m, g, p.vpp);
  const auto fwd = [&](std::int64_t k) { return ScheduleStep{true, table[k].second, table[k].first}; };
  const auto bwd = [&](std::int64_t k) {
    return ScheduleStep{false, static_cast<int>(p.vpp - 1 - table[k].second), table[k].first};
  };
  for (std::int64_t k = 0; k < w; ++k) steps.push_back(fwd(k));
  for (std::int64_t k = 0; k < total - w; ++k) {
    steps.push_back(fwd(w + k));
    steps.push_back(bwd(k));
    steps.back().combined = p.combined_1f1b;  // forward_backward_helper_wrapper (schedules.py:1872-1888)
  }
  for (std::int64_t k = total - w; k < total; ++k) steps.push_back(bwd(k));
  return steps;
}

}  // namespace peakcast::sim
