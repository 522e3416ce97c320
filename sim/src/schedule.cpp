#include "peakcast/sim/schedule.hpp"

#include <algorithm>

namespace peakcast::sim {

std::int64_t warmup_steps(const ScheduleParams& p, std::int64_t r) {
  if (p.pp <= 1) return 0;
  if (p.vpp <= 1) return std::min(p.pp - r - 1, p.microbatches);  // schedules.py:2251-2254
  const std::int64_t total = p.microbatches * p.vpp;
  const std::int64_t g = p.group_size > 0 ? p.group_size : p.pp;
  std::int64_t w = (p.pp - r - 1) * 2 + (p.vpp - 1) * g;  // get_pp_rank_microbatches, schedules.py:911-968
  if (p.extra_warmup) w += 1;
  return std::min(w, total);
}

namespace {

// Interleaved order: micro-batches go through chunks in groups of `g` (schedules.py
// get_model_chunk_id / get_microbatch_id_in_model_chunk).
ScheduleStep virtual_step(std::int64_t k, std::int64_t g, std::int64_t vpp, bool forward) {
  const std::int64_t in_group = k % (g * vpp);
  std::int64_t chunk = in_group / g;
  if (!forward) chunk = vpp - 1 - chunk;
  const std::int64_t mb = (k / (g * vpp)) * g + (k % g);
  return {forward, static_cast<int>(chunk), static_cast<int>(mb)};
}

}  // namespace

std::vector<ScheduleStep> pipeline_schedule(const ScheduleParams& p, std::int64_t r) {
  std::vector<ScheduleStep> steps;
  const std::int64_t m = p.microbatches;
  if (p.pp <= 1 && p.vpp <= 1) {
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
  for (std::int64_t k = 0; k < w; ++k) steps.push_back(virtual_step(k, g, p.vpp, true));
  for (std::int64_t k = 0; k < total - w; ++k) {
    steps.push_back(virtual_step(w + k, g, p.vpp, true));
    steps.push_back(virtual_step(k, g, p.vpp, false));
  }
  for (std::int64_t k = total - w; k < total; ++k) steps.push_back(virtual_step(k, g, p.vpp, false));
  return steps;
}

}  // namespace peakcast::sim
