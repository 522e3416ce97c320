#pragma once
// What replaying a rank's simulated allocations and frees through the caching-allocator model
// (model/caching_allocator.hpp) gives: the reservation, the largest free block at the allocated
// peak, and the first request the device could not serve. docs/caching-allocator.md.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "peakcast/model/units.hpp"

namespace peakcast::sim {

struct AllocatorReplay {
  Bytes peak_reserved;         // max_memory_reserved(): segments (or mapped pages), plus any CUDA-graph pool
  Bytes peak_allocated;        // max_memory_allocated() of the replayed stream (block sizes)
  Bytes peak_requested;        // the stream's largest sum of requested bytes (the walk's peak less the slack it adds)
  Bytes largest_free_at_peak;  // largest cached free block when the allocated bytes peaked
  Bytes reserved_at_peak;      // reserved bytes at that moment
  std::int64_t requests = 0;   // allocations replayed
  std::int64_t segments = 0;   // cudaMalloc'd segments at the end (0 with expandable segments)
  // Megatron's local per-layer graphs: their private pool replayed capture by capture (its
  // reservation is then in peak_reserved); 0 when the pool is the simulator's sum instead.
  Bytes graph_pool_replayed;
  // The requests replayed before each pass's first forward (iteration 1 after the model state, then
  // each later pass): where each iteration starts in the stream, to set it against a measured one.
  std::vector<std::int64_t> pass_starts;
  // The first request that failed within the capacity after the allocator freed its cached
  // segments and retried (the OutOfMemoryError); the replay then goes on without the limit.
  struct Failure {
    Bytes request;              // bytes the tensor asked for
    Bytes allocated, reserved;  // at that moment
    std::string where;          // "<op> (<phase>, iteration <n>)"
  };
  std::optional<Failure> first_failure;
  // MoE: the reserved peak of the same stream under sampled routings (sim/src/routing_band.hpp): in each of
  // `samples` draws every local expert's rows in every layer instance are its balanced rows times a load
  // 1 + sigma z (z standard normal, at least 0), sigma the router's untrained_expert_load_sigma (the calibration
  // profile); peak_reserved above is balanced routing's. Absent without routed tensors, under CUDA graphs, with
  // fine-grained offloading or Megatron-FSDP (no replay), or when the profile has no sigma for the router.
  struct RoutingBand {
    Bytes min, median, max;
    int samples = 0;
    double sigma = 0;
  };
  std::optional<RoutingBand> routing_band;
};

}  // namespace peakcast::sim
