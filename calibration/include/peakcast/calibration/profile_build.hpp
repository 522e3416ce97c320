#pragma once
// What `peakcast calibrate` fits, in the order the fits depend on each other: the memory profile
// (configs/calibration/default.json: per-stack fixed terms, MoE routing spread, reservation ratios)
// and the time profile (configs/calibration/time.json: op-class efficiencies, fused attention, data
// movement, host and step terms, the TE stack's host terms fitted with everything fitted before it).
// Inputs are already read; the caller reads files and reports.
#include <optional>
#include <string>
#include <vector>

#include "peakcast/calibration/attention_fit.hpp"
#include "peakcast/calibration/evaluate.hpp"
#include "peakcast/calibration/fit.hpp"
#include "peakcast/calibration/movement_fit.hpp"
#include "peakcast/calibration/stack_host_fit.hpp"
#include "peakcast/calibration/step_fit.hpp"
#include "peakcast/model/run_spec.hpp"

namespace peakcast::calibration {

struct MemoryProfileBuild {
  struct Stack {
    StackFit fit;
    std::vector<const Evaluation*> records;  // the fitted records, in the fit's point order
  };
  std::vector<Stack> stacks;
  std::vector<const Evaluation*> not_usable;  // records that could not be compared (with why_unusable)
  RoutingFit routing;
  ReservedFit reserved, reserved_expandable;
  std::string json;  // the profile
};

// `corpus_files` are recorded in the profile as its source.
MemoryProfileBuild build_memory_profile(const std::vector<Record>& records, const std::vector<Evaluation>& evals,
                                        const std::vector<std::string>& corpus_files);

// One input of the time fit: its path (recorded as the source) and its contents.
template <class T>
struct Input {
  std::string path;
  T content;
};

struct TimeInputs {
  std::optional<Input<std::string>> microbench, attention, movement;  // JSON texts
  std::optional<Input<std::vector<Record>>> timing, stack_timing;     // timed records
  std::vector<std::string> stack_timing_groups;
  std::string gpu_preset;
};

struct TimeProfileBuild {
  std::string json;                     // the profile text (the shipped one extended when no microbench)
  std::vector<std::string> violations;  // fitted rates above their measured ceilings
  std::optional<AttentionFit> attention;
  std::optional<MovementFit> movement;
  std::optional<StepFit> step;
  std::optional<StackHostFit> stack_host;
};

TimeProfileBuild build_time_profile(const TimeInputs& in, const model::GpuSpec& gpu);

}  // namespace peakcast::calibration
