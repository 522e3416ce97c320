#pragma once
// The time half of `peakcast calibrate`: each input file fits its terms into the time profile
// (configs/calibration/time.json), in the order later fits depend on (the TE host terms are
// fitted with every term this run fitted before them).
#include <optional>
#include <string>
#include <vector>

#include "peakcast/model/run_spec.hpp"

namespace peakcast::cli {

struct TimeInputs {
  std::string microbench, attention, movement, timing, stack_timing;
  std::vector<std::string> stack_timing_groups;
  std::string gpu_preset;
};

struct TimeProfileResult {
  std::string json;        // the profile text to write
  bool violated = false;   // a fitted rate above its measured ceiling (exit 1)
  bool input_error = false;  // a file that cannot be read (exit 2)
};

bool has_time_inputs(const TimeInputs& in);

// Fits what the inputs hold; progress and fitted values go to stderr.
TimeProfileResult build_time_profile(const TimeInputs& in, const model::GpuSpec& gpu);

}  // namespace peakcast::cli
