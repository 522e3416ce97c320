#pragma once
// A measured allocator event stream (calibration/harness/alloc_trace.py: torch's
// _record_memory_history of one harness run, compacted to [code, size, id, stream]) replayed through
// peakcast's caching-allocator model (model/caching_allocator.hpp), beside what torch itself reported
// at the end of that run. Same requests, same order: what is left between the two is the allocator
// model's, not the simulated stream's.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "peakcast/model/caching_allocator.hpp"

namespace peakcast::calibration {

struct MeasuredStreamReplay {
  std::string case_name;
  std::string recorded_alloc_conf;      // PYTORCH_CUDA_ALLOC_CONF of the recorded run ("" when unset)
  std::string alloc_conf;               // the one replayed under
  std::vector<std::string> unmodelled;  // options of it torch accepts and the model does not follow
  std::int64_t allocations = 0;
  std::int64_t unmatched_frees = 0;  // frees of blocks allocated before the recording began
  // The model's replay.
  Bytes reserved_peak{0};
  Bytes allocated_peak{0};
  std::int64_t segments_end = 0;
  // What torch reported at the end of the run (memory_stats / memory_snapshot).
  Bytes measured_reserved_peak{0};
  std::int64_t measured_segments_end = 0;
  // Which requests made a segment: the model's (its reservation grew while serving the request), and the
  // recorded run's ("s" events, each before the request it serves). `allocation` counts the stream's
  // allocations from 0; a stream without "s" events (one from predict --allocator-trace) has none recorded.
  struct NewSegment {
    std::int64_t allocation = 0;
    Bytes request{0};
    Bytes segment{0};
  };
  std::vector<NewSegment> model_segments, recorded_segments;
};

// The trace's JSON text (alloc_trace.py's document, decompressed), replayed under `alloc_conf`, or
// the recorded run's own PYTORCH_CUDA_ALLOC_CONF when none is given; nullopt with `error` set when the
// text is not such a document or the configuration is not one torch accepts. Traces written before
// session 16 repeat block ids and cannot be replayed (alloc_trace.py).
std::optional<MeasuredStreamReplay> replay_measured_stream(const std::string& trace_json, const std::optional<std::string>& alloc_conf,
                                                           std::string& error);

}  // namespace peakcast::calibration
