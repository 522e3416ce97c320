#include "report_text.hpp"

#include "peakcast/sim/verdict.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace peakcast::cli {

namespace {
// Gigabytes with three decimals (the text report's precision).
std::string gb3(Bytes b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", b.gb());
  return buf;
}
std::string mb(Bytes b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fMB", static_cast<double>(b.value) / 1e6);
  return buf;
}
}  // namespace

void print_prediction_table(std::ostream& os, const model::RunSpec& spec, const sim::Prediction& p) {
  const auto& m = spec.model;
  os << "peakcast predict: " << m.preset.value_or("custom model") << " on " << spec.cluster.num_gpus << " x "
     << spec.cluster.gpu.name << " (capacity " << gb3(p.capacity) << " GB per GPU";
  if (p.userbuffers.value > 0) os << ", after " << gb3(p.userbuffers) << " GB of Transformer Engine userbuffers for tp_comm_overlap";
  os << ")\n";
  os << "layout TP" << m.tensor_model_parallel_size << " PP" << m.pipeline_model_parallel_size;
  if (m.virtual_pipeline_model_parallel_size) os << " VPP" << *m.virtual_pipeline_model_parallel_size;
  os << " CP" << m.context_parallel_size << " EP" << m.expert_model_parallel_size
     << (m.sequence_parallel ? " SP" : "") << ", seq " << m.seq_length << ", micro-batch "
     << spec.train.micro_batch_size << "\n\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-8s %-10s %-10s %-10s %-10s %-10s %-10s %-10s %-10s %-9s %-7s %s\n", "pp_rank",
                "peak GB", "steady GB", "params", "grads", "optim", "activ", "transient", "other", "phase", "iter",
                "fits");
  os << line;
  for (const auto& r : p.ranks) {
    std::snprintf(line, sizeof line, "%-8lld %-10s %-10s %-10s %-10s %-10s %-10s %-10s %-10s %-9s %-7s %s\n",
                  static_cast<long long>(r.rank.pp_rank), gb3(r.peak_allocated).c_str(),
                  gb3(r.steady_peak_allocated).c_str(), gb3(r.breakdown.parameters).c_str(),
                  gb3(r.breakdown.gradients).c_str(), gb3(r.breakdown.optimizer_states).c_str(),
                  gb3(r.breakdown.activations).c_str(), gb3(r.breakdown.transient).c_str(), gb3(r.breakdown.other).c_str(),
                  sim::to_string(r.peak_phase), r.peak_in_first_iteration ? "first" : "steady", r.fits ? "yes" : "NO");
    os << line;
  }
  os << "\npeak lands at: " << (p.ranks.empty() ? "" : p.ranks.front().peak_op) << "\n";
  const sim::Verdict v = sim::run_verdict(p);
  std::snprintf(line, sizeof line, "max peak %s GB: %s. step %.3f s, of which replay %.3f s (%.3g replay FLOPs)\n",
                gb3(p.max_peak_allocated).c_str(),
                v.kind == sim::FitKind::does_not_fit
                    ? (v.cause == sim::FitCause::reservation ? "DOES NOT FIT (the caching allocator's reservation)" : "DOES NOT FIT")
                    : (v.kind == sim::FitKind::fits ? "fits on every rank"
                                                    : "fits on every rank by allocated bytes, AT RISK: the allocator's reservation is at the GPU's edge"),
                p.step_time_s, p.replay_time_s, p.replay_flops);
  os << line;
  os << "verdict: " << sim::to_string(v.kind) << " (margin " << std::showpos << v.margin << std::noshowpos << " bytes, pp_rank "
     << v.pp_rank << "): " << v.reason << "\n";
  for (const auto& r : p.ranks) {
    if (!r.allocator) continue;
    const auto& a = *r.allocator;
    std::snprintf(line, sizeof line,
                  "allocator replay, pp_rank %lld: reserved peak %s GB (allocated peak %s GB), largest free block at the "
                  "allocated peak %s GB, %lld requests%s\n",
                  static_cast<long long>(r.rank.pp_rank), gb3(a.peak_reserved).c_str(), gb3(a.peak_allocated).c_str(),
                  gb3(a.largest_free_at_peak).c_str(), static_cast<long long>(a.requests),
                  a.first_failure ? (", FIRST FAILING REQUEST " + gb3(a.first_failure->request) + " GB at " + a.first_failure->where).c_str()
                                  : "");
    os << line;
    if (a.routing_band) {
      const auto& band = *a.routing_band;
      std::snprintf(line, sizeof line,
                    "  under %d sampled routings (expert load 1 +- %.3f, the untrained router's spread): reserved %s to %s GB, "
                    "median %s GB%s\n",
                    band.samples, band.sigma, gb3(band.min).c_str(), gb3(band.max).c_str(), gb3(band.median).c_str(),
                    band.max > p.capacity ? " (some routings reserve more than the GPU)" : "");
      os << line;
    }
  }
  // The allocator's reserved memory at the largest peak, as our measured runs reserved over allocated.
  const sim::RankPrediction* largest = nullptr;
  for (const auto& r : p.ranks)
    if (!largest || r.peak_allocated > largest->peak_allocated) largest = &r;
  if (largest && largest->estimated_peak_reserved.value > 0) {
    std::snprintf(line, sizeof line,
                  "reserved by the caching allocator at that peak (estimate from measured runs): %s GB, %s GB at the "
                  "90th percentile\n",
                  gb3(largest->estimated_peak_reserved).c_str(), gb3(largest->estimated_peak_reserved_p90).c_str());
    os << line;
  }
  // Per-layer CUDA graphs: the pool replaying iterations keep beside what they allocate.
  const sim::RankPrediction* pooled = nullptr;
  for (const auto& r : p.ranks)
    if (r.reserved_outside_allocated.value > 0 && (!pooled || r.peak_with_graph_pool > pooled->peak_with_graph_pool)) pooled = &r;
  if (pooled) {
    std::snprintf(line, sizeof line,
                  "CUDA graphs: pp_rank %lld keeps a %s GB graph pool beside what its replaying iterations allocate: "
                  "%s GB together at most (eager iterations included)\n",
                  static_cast<long long>(pooled->rank.pp_rank), gb3(pooled->reserved_outside_allocated).c_str(),
                  gb3(pooled->peak_with_graph_pool).c_str());
    os << line;
  }
  // The busiest rank's step, split as the time model builds it.
  const sim::RankPrediction* busiest = nullptr;
  for (const auto& r : p.ranks)
    if (!busiest || r.step_time_s > busiest->step_time_s) busiest = &r;
  if (busiest) {
    const auto& t = busiest->time;
    std::snprintf(line, sizeof line,
                  "step on pp_rank %lld: forward-backward %.3f s (GPU compute %.3f s at the microbenchmark efficiencies, "
                  "%.0f checkpoint calls), grad sync %.3f s, optimizer %.3f s\n",
                  static_cast<long long>(busiest->rank.pp_rank), t.forward_backward_s, t.compute_s, t.checkpoint_regions,
                  t.grad_sync_s, t.optimizer_s);
    os << line;
  }
  os << "calibration profile: " << p.calibration_profile << "\n";
}

void print_module_table(std::ostream& os, const sim::Prediction& p) {
  char line[512];
  for (const auto& r : p.ranks) {
    os << "\npp_rank " << r.rank.pp_rank << ": per micro-batch; memory in GB, time in ms\n";
    std::snprintf(line, sizeof line, "%-6s %-40s %-10s %-10s %-10s %-13s %-8s %-8s %s\n", "chunk", "module", "saved", "fwd+",
                  "bwd+", "replay GFLOP", "fwd ms", "bwd ms", "replay ms");
    os << line;
    for (const auto& m : r.modules) {
      std::snprintf(line, sizeof line, "%-6d %-40s %-10s %-10s %-10s %-13.1f %-8.3f %-8.3f %.3f\n", m.chunk, m.name.c_str(),
                    gb3(m.held).c_str(), gb3(m.forward_excess).c_str(), gb3(m.backward_excess).c_str(),
                    m.replay_flops / 1e9, 1e3 * m.forward_s, 1e3 * m.backward_s, 1e3 * m.replay_s);
      os << line;
    }
    // What a module holds, once per distinct saved set (layers of one kind repeat it).
    std::vector<std::string> shown;
    for (const auto& m : r.modules) {
      if (m.held_tensors.empty()) continue;
      std::string key;
      for (const auto& t : m.held_tensors) key += t.name + "=" + std::to_string(t.bytes.value) + ";";
      if (std::find(shown.begin(), shown.end(), key) != shown.end()) continue;
      shown.push_back(key);
      os << "  " << m.name << " holds until its backward:";
      for (const auto& t : m.held_tensors) {
        if (t.bytes.value == 0) continue;  // e.g. the fused RoPE's cos/sin
        // Tensor names carry the name of the graph they were built in ("L0."); layers share graphs.
        const auto dot = t.name.find('.');
        os << " " << (dot == std::string::npos ? t.name : t.name.substr(dot + 1)) << " " << mb(t.bytes);
      }
      os << "\n";
    }
  }
}

}  // namespace peakcast::cli
