#pragma once
// The busiest expert-parallel rank of an untrained router. Dropless routing sends each MoE layer's
// rows where the router points. Measured on H200 runs of the pinned Megatron Core, an untrained
// router's experts get loads that spread by s around their share, about independently; one layer's
// load on a rank (received / balanced rows, the sum over its g = experts / EP local experts) spreads
// by sigma = s / sqrt(g), about independently from layer to layer. A rank's activations follow its
// mean load over its L MoE layers (spread sigma / sqrt(L)), and the busiest of EP ranks sits at the
// expected maximum of EP such means: 1 + sigma * z(EP) / sqrt(L).
#include <cstdint>
#include <optional>
#include <string>

#include "peakcast/model/run_spec.hpp"

namespace peakcast::sim {

// Expected maximum of n independent standard normal variables (0 for n = 1).
double expected_max_of_normals(std::int64_t n);

// The busiest EP rank's load for this spec from the measured per-expert spread: a layer's load on a
// rank spreads by expert_load_sigma / sqrt(local experts); 1 without MoE layers or expert
// parallelism. L is the fewest MoE layers any pipeline rank holds. At most EP.
double busiest_rank_routing_load(const model::RunSpec& spec, double expert_load_sigma);

// The shipped profile's measured per-expert spread for routers of this score function, if any.
std::optional<double> untrained_expert_load_sigma(const std::string& score_function);

// busiest_rank_routing_load at the shipped spread for the spec's router; nothing without MoE expert
// parallelism or without a measured spread for that router; 1 (balanced) under
// moe_router_force_load_balancing, whose random logits leave no router preference.
std::optional<double> untrained_busiest_rank_load(const model::RunSpec& spec);

}  // namespace peakcast::sim
