// Step time against the measured H200 timing corpus (calibration/data/h200_timing.jsonl): policy
// overheads in the measured order, and the fitted step terms within physical bounds.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "peakcast/calibration/evaluate.hpp"
#include "peakcast/calibration/record.hpp"
#include "peakcast/calibration/step_fit.hpp"
#include "peakcast/calibration/time_validation.hpp"
#include "peakcast/sim/fitted_constants.hpp"

using namespace peakcast;
using namespace peakcast::calibration;

namespace {

const std::vector<Record>& timing_records() {
  static const std::vector<Record> records = [] {
    auto r = read_record_file(std::string(PEAKCAST_SOURCE_DIR) + "/calibration/data/h200_timing.jsonl");
    REQUIRE(r.errors.empty());
    return r.records;
  }();
  return records;
}

}  // namespace

TEST_CASE("policy forward-backward overheads on the measured H200 runs come out in the measured order", "[calibration][time]") {
  const auto evals = evaluate_records(timing_records());
  int resolved = 0, agree = 0;
  for (const auto& p : policy_pairs(evals)) {
    if (!p.resolved()) continue;
    ++resolved;
    INFO(p.a->record->name << " vs " << p.b->record->name << ": measured " << p.measured_delta_s * 1e3 << " ms, predicted "
                           << p.predicted_delta_s * 1e3 << " ms");
    CHECK(p.order_agrees());
    agree += p.order_agrees();
  }
  // The corpus resolves the dense and MLA policies; the MoE runs are host-bound and noisy.
  CHECK(resolved >= 10);
  CHECK(agree == resolved);
}

TEST_CASE("step terms fitted on the timing corpus stay within physical bounds", "[calibration][time]") {
  const auto evals = evaluate_records(timing_records());
  // h200-141gb preset: HBM 4800 GB/s, NVLink 900 GB/s both directions.
  const double hbm = 4800e9, link = 450e9;
  const StepFit f = fit_step_terms(evals, hbm, link);
  CHECK(f.host_records >= 10);
  CHECK(f.host_forward_s_per_call > 0);
  CHECK(f.host_backward_s_per_call > 0);
  CHECK(f.host_s_per_microbatch > 0);
  // A Python-level op call costs microseconds to a millisecond, not more.
  CHECK(f.host_forward_s_per_call < 1e-3);
  CHECK(f.host_backward_s_per_call < 1e-3);
  CHECK(f.comm_records >= 2);
  CHECK(f.comm_efficiency > 0);
  CHECK(f.comm_efficiency <= 1.0);
  // The optimizer cannot stream faster than the copy ceiling the microbenchmark measured.
  CHECK(f.optimizer_records >= 10);
  CHECK(f.optimizer_memory_efficiency > 0);
  CHECK(f.optimizer_memory_efficiency * hbm <= 4288.7e9);
  // The shipped profile holds this fit (the local stack's terms; the TE stack's host terms are
  // fitted on its own step times, test_stack_host_fit.cpp).
  const auto shipped = sim::load_fitted_constants("default", "local");
  CHECK(shipped.host_forward_s_per_call == Approx(f.host_forward_s_per_call).epsilon(1e-6));
  CHECK(shipped.host_backward_s_per_call == Approx(f.host_backward_s_per_call).epsilon(1e-6));
  CHECK(shipped.comm_efficiency == Approx(f.comm_efficiency).epsilon(1e-6));
  CHECK(shipped.host_s_per_checkpoint == Approx(f.host_s_per_checkpoint).epsilon(1e-6));
  CHECK(shipped.gpu_time_scale == Approx(f.gpu_time_scale).epsilon(1e-6));
  // A checkpoint call costs more than one op call and less than 10 ms; Megatron's kernels are not
  // faster than the microbenchmark's, and not several times slower.
  CHECK(f.host_s_per_checkpoint > f.host_forward_s_per_call);
  CHECK(f.host_s_per_checkpoint < 10e-3);
  CHECK(f.gpu_records >= 10);
  CHECK(f.gpu_time_scale >= 1.0);
  CHECK(f.gpu_time_scale < 1.5);
  CHECK(shipped.optimizer_memory_efficiency == Approx(f.optimizer_memory_efficiency).epsilon(1e-6));
}
