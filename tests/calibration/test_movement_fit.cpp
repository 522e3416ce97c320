// The data-movement rate fitted on the H200 measurement (calibration/data/movement_h200.json).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "../source_file.hpp"
#include "peakcast/calibration/movement_fit.hpp"
#include "peakcast/sim/fitted_constants.hpp"

using namespace peakcast;
using namespace peakcast::calibration;

TEST_CASE("movement fit: below the copy ceiling, above the element-wise ops, and shipped", "[calibration][time]") {
  const double hbm = nlohmann::json::parse(test::read_source_file("configs/gpus/h200-141gb.json")).at("hbm_bandwidth_gbps").get<double>() * 1e9;
  const double copy_ceiling = 4288.7e9;  // the microbenchmark's measured 4 GiB device-to-device copy
  const MovementFit f = fit_movement(test::read_source_file("calibration/data/movement_h200.json"), hbm, copy_ceiling);
  CHECK(f.violations.empty());
  CHECK(f.cases >= 5);
  CHECK(f.rate <= copy_ceiling);
  // Moving rows needs no arithmetic: faster than the softmax / norm / SwiGLU class (1.7 TB/s).
  const auto shipped = sim::load_fitted_constants("default", "local");
  CHECK(f.efficiency > shipped.memory_efficiency);
  CHECK(f.worst_relative_error < 0.3);
  CHECK(shipped.movement_efficiency == Approx(f.efficiency).epsilon(1e-6));
}
