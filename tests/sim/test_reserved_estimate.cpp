// The reserved-memory estimate: a rank's allocated peak times the profile's measured reserved /
// allocated ratios, and the fragmentation warning when only the allocated bytes fit.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/sim/fitted_constants.hpp"
#include "peakcast/sim/prediction.hpp"

using namespace peakcast;

namespace {
model::RunSpec dense_on(std::int64_t memory_bytes) {
  auto r = model::parse_run_spec(R"({
    "model": {"preset": "llama3-8b", "num_layers": 4, "seq_length": 4096, "bf16": true},
    "train": {"micro_batch_size": 1, "global_batch_size": 1},
    "cluster": {"num_gpus": 1, "gpu": {"name": "h100-sxm-80gb", "memory_bytes": )" +
                                 std::to_string(memory_bytes) + "}}}");
  for (const auto& d : r.diagnostics) INFO(model::format(d));
  REQUIRE(r.spec.has_value());
  return *r.spec;
}

bool warns_fragmentation(const sim::Prediction& p) {
  for (const auto& w : p.warnings)
    if (w.rule == "fragmentation_risk") return true;
  return false;
}
}  // namespace

TEST_CASE("reserved estimate = allocated peak x the measured ratios", "[sim][reserved]") {
  const auto fc = sim::load_fitted_constants("default", "transformer_engine");
  REQUIRE(fc.reserved_ratio_median > 1.0);
  REQUIRE(fc.reserved_ratio_p90 >= fc.reserved_ratio_median);
  const auto p = sim::predict(dense_on(80'000'000'000));
  REQUIRE(p.ranks.size() == 1);
  const auto& r = p.ranks[0];
  const auto expected = [&](double ratio) {
    return std::llround(static_cast<double>(r.peak_allocated.value) * ratio) + r.reserved_outside_allocated.value;
  };
  CHECK(r.estimated_peak_reserved.value == expected(fc.reserved_ratio_median));
  CHECK(r.estimated_peak_reserved_p90.value == expected(fc.reserved_ratio_p90));
}

namespace {
// The ratio estimate's path (--no-allocator-replay): the allocator replay is on by default.
sim::PredictOptions ratio_only() {
  sim::PredictOptions o;
  o.replay_allocator = false;
  return o;
}
}  // namespace

TEST_CASE("fragmentation warning only when the allocated peak fits and the p90 reserve does not", "[sim][reserved]") {
  const auto roomy = sim::predict(dense_on(200'000'000'000), ratio_only());
  REQUIRE(roomy.ranks.size() == 1);
  const auto& r = roomy.ranks[0];
  CHECK_FALSE(warns_fragmentation(roomy));
  // A capacity between the allocated peak and the p90 reserve estimate.
  const std::int64_t between = (r.peak_allocated.value + r.estimated_peak_reserved_p90.value) / 2;
  const auto tight = sim::predict(dense_on(between), ratio_only());
  CHECK(tight.fits);
  CHECK(warns_fragmentation(tight));
  // Below the allocated peak: does not fit, which is the answer, not a fragmentation warning.
  const auto small = sim::predict(dense_on(r.peak_allocated.value - 1'000'000), ratio_only());
  CHECK_FALSE(small.fits);
  CHECK_FALSE(warns_fragmentation(small));
}

TEST_CASE("with expandable_segments the estimate takes the ratios measured with it", "[sim][reserved]") {
  const auto fc = sim::load_fitted_constants("default", "transformer_engine");
  REQUIRE(fc.reserved_ratio_median_expandable > 1.0);
  REQUIRE(fc.reserved_ratio_median_expandable < fc.reserved_ratio_median);
  model::RunSpec spec = dense_on(80'000'000'000);
  spec.cluster.expandable_segments = true;
  const auto p = sim::predict(spec, ratio_only());
  REQUIRE(p.ranks.size() == 1);
  const auto& r = p.ranks[0];
  CHECK(r.estimated_peak_reserved.value ==
        std::llround(static_cast<double>(r.peak_allocated.value) * fc.reserved_ratio_median_expandable));
  // A capacity between the allocated peak and the p90 estimate: the warning no longer suggests the
  // setting the run already has.
  spec.cluster.gpu.memory_bytes = Bytes{(r.peak_allocated.value + r.estimated_peak_reserved_p90.value) / 2};
  const auto tight = sim::predict(spec, ratio_only());
  REQUIRE(warns_fragmentation(tight));
  for (const auto& w : tight.warnings)
    if (w.rule == "fragmentation_risk") CHECK(w.message.find("avoids most of it") == std::string::npos);
}
