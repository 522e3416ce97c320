// The allocator replay under sampled routings (sim/src/routing_band.hpp): which tensors have routed rows, how a
// draw scales them, and what replaying a stream per draw reserves. Expectations from the shapes of the
// SequentialMLP layer of test_sequential_mlp.cpp (8 local experts of 3072 rows, hidden 2048 bf16) and from the
// caching allocator's segment rule (a request of 10 MiB or more gets a segment of its size rounded up to 2 MiB).
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "module_script.hpp"
#include "peakcast/model/caching_allocator.hpp"
#include "peakcast/model/spec_parser.hpp"
#include "peakcast/sim/moe_routing.hpp"
#include "peakcast/sim/prediction.hpp"
#include "routing_band.hpp"
#include "sequential_mlp_spec.hpp"
#include "spec_layer.hpp"

using namespace peakcast;

namespace {

const char* const kSpec = test::kSequentialMlpSpec;

constexpr std::int64_t kMiB = 1 << 20;

}  // namespace

TEST_CASE("Routed rows: each local expert's tensors are its own group, the received rows all of them", "[sim][moe][allocator]") {
  const auto g = test::spec_layer(kSpec, {}, {1, model::MixerKind::attention, model::FfnKind::moe, false});
  const auto* received = test::named(g.tensors, "dispatch.received");
  const auto* fc1 = test::named(g.tensors, "experts.local_experts.3.linear_fc1.out");
  const auto* cat = test::named(g.tensors, "experts.cat");
  const auto* permuted = test::named(g.tensors, "dispatch.permuted_tokens");  // the rank's own tokens x top-k: not routed
  REQUIRE(received);
  REQUIRE(fc1);
  REQUIRE(cat);
  REQUIRE(permuted);
  CHECK(received->row_group == 8);  // 64 experts over EP 8: 8 local experts, group 8 = all of them
  CHECK(received->row_groups == 8);
  CHECK(fc1->row_group == 3);
  CHECK(fc1->row_groups == 8);
  CHECK(fc1->bytes.value == 3072 * 2 * 1408 * 2);  // balanced: 24576 rows / 8 experts, gated fc1 bf16
  CHECK(cat->row_group == 8);
  CHECK(permuted->row_group == -1);
  // The module script carries the tags to the allocator replay, the gradients' too.
  const sim::detail::ModuleScript sc = sim::detail::module_script(g, {});
  int routed_forward = 0, routed_backward = 0;
  for (const auto& st : sc.forward) routed_forward += st.kind == sim::detail::ModuleScript::Kind::alloc && st.row_group >= 0;
  for (const auto& st : sc.backward) routed_backward += st.kind == sim::detail::ModuleScript::Kind::alloc && st.row_group >= 0;
  CHECK(routed_forward > 0);
  CHECK(routed_backward > 0);
}

TEST_CASE("Routed rows: padded to capacity, the rows are fixed and nothing is routed", "[sim][moe][allocator]") {
  const auto g = test::spec_layer(kSpec, {"model.moe_expert_capacity_factor=1.0", "model.moe_pad_expert_input_to_capacity=true", "model.moe_token_dispatcher_type=alltoall"},
                                  {1, model::MixerKind::attention, model::FfnKind::moe, false});
  for (const auto& t : g.tensors) CHECK(t.row_group == -1);
}

TEST_CASE("Expert loads: one draw per (sample, instance, expert), mean 1 and spread sigma, never negative", "[sim][moe][allocator]") {
  using sim::detail::expert_load;
  CHECK(expert_load(3, 77, 2, 0.25) == expert_load(3, 77, 2, 0.25));
  CHECK(expert_load(3, 77, 2, 0.0) == 1.0);
  CHECK(expert_load(3, 77, 2, 0.25) != expert_load(4, 77, 2, 0.25));
  constexpr int kDraws = 20000;
  const double sigma = 0.2;  // small enough that the clamp at 0 is 5 sigma away
  double sum = 0, sq = 0;
  for (int i = 0; i < kDraws; ++i) {
    const double l = expert_load(1, sim::detail::routing_instance(1, 0, i, 5, 0), i % 8, sigma);
    sum += l;
    sq += (l - 1) * (l - 1);
  }
  const double mean = sum / kDraws, sd = std::sqrt(sq / kDraws);
  CHECK(std::abs(mean - 1.0) < 4 * sigma / std::sqrt(kDraws));
  CHECK(sd == Approx(sigma).epsilon(0.05));
  for (int i = 0; i < 2000; ++i) CHECK(expert_load(2, static_cast<std::uint64_t>(i), 0, 3.0) >= 0.0);
}

TEST_CASE("Routed bytes: an expert's by its load, the rank's by its experts' mean load, the rest unchanged", "[sim][moe][allocator]") {
  using sim::detail::RoutedRequest;
  const std::uint64_t inst = sim::detail::routing_instance(2, 0, 1, 3, 0);
  const double sigma = 0.254;
  const RoutedRequest expert{17301504, 5, 3, 8, inst};
  CHECK(sim::detail::routed_bytes(expert, 4, sigma) == std::llround(17301504 * sim::detail::expert_load(4, inst, 3, sigma)));
  const RoutedRequest all{100663296, 6, 8, 8, inst};
  double mean = 0;
  for (int e = 0; e < 8; ++e) mean += sim::detail::expert_load(4, inst, e, sigma) / 8;
  CHECK(sim::detail::routed_bytes(all, 4, sigma) == std::llround(100663296 * mean));
  const RoutedRequest plain{16777216, 7, -1, 0, inst};
  CHECK(sim::detail::routed_bytes(plain, 4, sigma) == 16777216);
  const RoutedRequest free_of{0, 5};
  CHECK(sim::detail::routed_bytes(free_of, 4, sigma) == 0);
}

TEST_CASE("Routing band: each draw's stream through the allocator model", "[sim][moe][allocator]") {
  using sim::detail::RoutedRequest;
  const std::uint64_t inst = 99;
  // One 100 MiB expert block: a segment of its drawn size, rounded up to 2 MiB (>= 10 MiB requests).
  const std::vector<RoutedRequest> one{{100 * kMiB, 0, 0, 1, inst}, {0, 0}};
  const auto peaks = sim::detail::routing_band_peaks(one, {}, 0.3, 4);
  REQUIRE(peaks.size() == 4);
  for (int s = 1; s <= 4; ++s) {
    const auto bytes = std::llround(100.0 * kMiB * sim::detail::expert_load(static_cast<std::uint64_t>(s), inst, 0, 0.3));
    const std::int64_t rounded = (bytes + 512 - 1) / 512 * 512;  // round_size: multiples of 512 bytes
    CHECK(peaks[static_cast<std::size_t>(s - 1)].value == (rounded + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB));
  }
  // No spread: every draw reserves what the balanced stream does. Two 30 MiB blocks, the first freed before a
  // 40 MiB one: the 30 MiB segment cannot hold it, so 30 + 30 + 40 MiB.
  const std::vector<RoutedRequest> three{{30 * kMiB, 0, 0, 2, inst}, {30 * kMiB, 1, 1, 2, inst}, {0, 0}, {40 * kMiB, 2, 2, 2, inst}};
  for (const Bytes b : sim::detail::routing_band_peaks(three, {}, 0.0, 3)) CHECK(b.value == 100 * kMiB);
}

TEST_CASE("predict: a MoE rank's routing band beside its balanced replay, which it leaves unchanged", "[sim][moe][allocator]") {
  auto parsed = model::parse_run_spec(kSpec);
  REQUIRE(parsed.spec);
  sim::PredictOptions balanced, banded;
  banded.routing_band_samples = 8;
  const sim::Prediction a = sim::predict(*parsed.spec, balanced), b = sim::predict(*parsed.spec, banded);
  REQUIRE(a.ranks.size() == b.ranks.size());
  for (std::size_t r = 0; r < a.ranks.size(); ++r) {
    REQUIRE(a.ranks[r].allocator);
    REQUIRE(b.ranks[r].allocator);
    CHECK_FALSE(a.ranks[r].allocator->routing_band);
    CHECK(a.ranks[r].allocator->peak_reserved == b.ranks[r].allocator->peak_reserved);
    REQUIRE(b.ranks[r].allocator->routing_band);
    const auto& band = *b.ranks[r].allocator->routing_band;
    CHECK(band.samples == 8);
    CHECK(band.sigma == *sim::untrained_expert_load_sigma("softmax"));
    CHECK(band.min <= band.median);
    CHECK(band.median <= band.max);
  }
  // A dense model has nothing routed.
  auto dense = model::parse_run_spec(kSpec, {"model.num_moe_experts=null", "model.moe_layer_freq=1", "model.expert_model_parallel_size=1"});
  REQUIRE(dense.spec);
  const sim::Prediction d = sim::predict(*dense.spec, banded);
  for (const auto& r : d.ranks) CHECK_FALSE(r.allocator->routing_band);
}
