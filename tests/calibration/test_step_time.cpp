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

// Runs that differ only in their recompute policy share a key (the spec without recompute keys,
// and the measured rank).
std::string run_key(const Record& r) {
  auto j = nlohmann::json::parse(r.spec_json);
  for (const char* k : {"recompute_granularity", "recompute_modules", "recompute_method", "recompute_num_layers"})
    j["model"].erase(k);
  return j.dump() + "/" + std::to_string(r.pp_rank.value_or(-1));
}

}  // namespace

TEST_CASE("policy forward-backward overheads on the measured H200 runs come out in the measured order", "[calibration][time]") {
  const auto evals = evaluate_records(timing_records());
  std::map<std::string, std::vector<const Evaluation*>> runs;
  for (const auto& e : evals) {
    if (!e.record->measured.fwd_bwd_time_s || e.predicted_time.microbatches <= 0) continue;
    if (e.predicted_time.compute_s <= 0) continue;
    runs[run_key(*e.record)].push_back(&e);
  }
  int resolved = 0, agree = 0;
  for (const auto& [key, es] : runs) {
    for (std::size_t i = 0; i < es.size(); ++i) {
      for (std::size_t j = i + 1; j < es.size(); ++j) {
        const auto& a = es[i]->record->measured;
        const auto& b = es[j]->record->measured;
        // A pair is resolved when the medians differ by more than either run's own spread
        // (slowest minus fastest steady iteration).
        const double spread = std::max(*a.fwd_bwd_time_max_s - *a.fwd_bwd_time_min_s, *b.fwd_bwd_time_max_s - *b.fwd_bwd_time_min_s);
        const double measured = *b.fwd_bwd_time_s - *a.fwd_bwd_time_s;
        if (std::abs(measured) <= spread) continue;
        ++resolved;
        const double predicted = es[j]->predicted_time.forward_backward_s - es[i]->predicted_time.forward_backward_s;
        INFO(es[i]->record->name << " vs " << es[j]->record->name << ": measured " << measured * 1e3 << " ms, predicted "
                                 << predicted * 1e3 << " ms");
        CHECK((measured > 0) == (predicted > 0));
        if ((measured > 0) == (predicted > 0)) ++agree;
      }
    }
  }
  // The corpus resolves the dense and MLA policies; the MoE runs are host-bound and too noisy.
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
  // The shipped profile holds this fit.
  const auto shipped = sim::load_fitted_constants();
  CHECK(shipped.host_forward_s_per_call == Approx(f.host_forward_s_per_call).epsilon(1e-6));
  CHECK(shipped.host_backward_s_per_call == Approx(f.host_backward_s_per_call).epsilon(1e-6));
  CHECK(shipped.comm_efficiency == Approx(f.comm_efficiency).epsilon(1e-6));
  CHECK(shipped.optimizer_memory_efficiency == Approx(f.optimizer_memory_efficiency).epsilon(1e-6));
}
