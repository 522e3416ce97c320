#pragma once
// The allocator replay under sampled routings. A MoE rank's tensors between the dispatcher's all-to-alls
// have as many rows as the router sent it (SequentialMLP's per-expert tensors: as many as it sent each local
// expert), so what the caching allocator reserves depends on the routing, not only on its balanced mean
// (measured: layout_fake_ep8_moonlight4_moe_r0's stream under 30 redrawn routings reserved 19.3 to 22.2 GB in
// three modes, docs/caching-allocator.md). The recorder keeps the request stream with each request's routed
// rows; this replays it again per draw. Private to peakcast_sim.
#include <cstdint>
#include <vector>

#include "peakcast/model/caching_allocator.hpp"
#include "peakcast/model/units.hpp"

namespace peakcast::sim::detail {

// One request of a rank's replayed stream, as the recorder made it under balanced routing.
struct RoutedRequest {
  std::int64_t bytes = 0;                       // > 0: an allocation of that many bytes; 0: the free of `id`
  std::int32_t id = -1;                         // the recorder's tensor id
  std::int16_t row_group = -1, row_groups = 0;  // TensorNode::row_group / row_groups (-1: rows not routed)
  std::uint64_t instance = 0;                   // the layer instance the request belongs to (one draw of loads each)
};

// Local expert `expert`'s load (its rows / balanced rows) in layer instance `instance` under draw `sample`:
// 1 + sigma z with z standard normal (a counter-based hash of the three, so a layer's forward, its
// recompute and its backward see one routing), and at least 0 (an expert the router sent nothing).
double expert_load(std::uint64_t sample, std::uint64_t instance, int expert, double sigma);

// The bytes `r` asks for under draw `sample`: its balanced bytes times its expert's load, or for the rows all
// `row_groups` local experts receive, times their mean load. Unrouted requests and frees are unchanged.
std::int64_t routed_bytes(const RoutedRequest& r, std::uint64_t sample, double sigma);

// The reserved peak of draws 1..samples: the stream through a fresh allocator model with `settings` each, a
// request that fails within the capacity retried without it as the replay does (alloc_recorder.cpp).
std::vector<Bytes> routing_band_peaks(const std::vector<RoutedRequest>& stream, const model::AllocatorSettings& settings,
                                      double sigma, int samples);

// The layer instance key of (iteration, chunk, micro-batch, module, part).
std::uint64_t routing_instance(int iteration, int chunk, int microbatch, std::size_t module, std::size_t part);

}  // namespace peakcast::sim::detail
