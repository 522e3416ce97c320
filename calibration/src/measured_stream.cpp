// replay_measured_stream: each alloc of the measured stream becomes a request on its stream, each
// free_completed releases the block of the same id (calibration/harness/alloc_trace.py compact()).
// Segment events are torch's own consequences of the requests and are not replayed.
#include "peakcast/calibration/measured_stream.hpp"

#include <nlohmann/json.hpp>

#include <unordered_map>

namespace peakcast::calibration {

namespace {
// A request larger than any device (1 PiB) is a corrupt trace, not an allocation; it also keeps the
// model's byte sums far from int64's limit.
constexpr std::int64_t kMaxRequestBytes = std::int64_t{1} << 50;
}  // namespace

std::optional<MeasuredStreamReplay> replay_measured_stream(const std::string& trace_json, const std::optional<std::string>& alloc_conf,
                                                           std::string& error) {
  const auto doc = nlohmann::json::parse(trace_json, nullptr, false);
  if (!doc.is_object() || !doc.contains("events") || !doc["events"].is_array() || !doc.contains("end") || !doc["end"].is_object()) {
    error = "not an alloc_trace.py document (events, end)";
    return std::nullopt;
  }
  MeasuredStreamReplay r;
  // doc is const: operator[] on a missing key is nlohmann's assertion (undefined without NDEBUG's check).
  r.case_name = doc.contains("case") && doc["case"].is_string() ? doc["case"].get<std::string>() : "";
  const auto& recorded = doc["end"].contains("alloc_conf") ? doc["end"]["alloc_conf"] : nlohmann::json();
  r.recorded_alloc_conf = recorded.is_string() ? recorded.get<std::string>() : "";
  r.alloc_conf = alloc_conf.value_or(r.recorded_alloc_conf);
  const model::AllocConfParse conf = model::parse_alloc_conf(r.alloc_conf);
  if (!conf.error.empty()) {
    error = "PYTORCH_CUDA_ALLOC_CONF \"" + r.alloc_conf + "\": " + conf.error;
    return std::nullopt;
  }
  r.unmodelled = conf.unmodelled;
  model::CachingAllocatorModel allocator(conf.settings);
  std::unordered_map<std::int64_t, model::CachingAllocatorModel::Handle> live;
  std::unordered_map<std::int64_t, int> streams;  // torch's stream handles, numbered in order of appearance
  Bytes pending_segment{0};                       // a recorded segment waiting for the request it serves
  for (std::size_t k = 0; k < doc["events"].size(); ++k) {
    const auto& e = doc["events"][k];
    if (!e.is_array() || e.size() < 4 || !e[0].is_string() || !e[1].is_number_integer() || !e[2].is_number_integer() ||
        !e[3].is_number_integer()) {
      error = "events[" + std::to_string(k) + "] is not [code, size, id, stream] (a trace written before session 16?)";
      return std::nullopt;
    }
    if (e[1].get<std::int64_t>() < 0 || e[1].get<std::int64_t>() > kMaxRequestBytes) {
      error = "events[" + std::to_string(k) + "]: size " + e[1].dump() + " is not between 0 and 1 PiB";
      return std::nullopt;
    }
    const std::string code = e[0].get<std::string>();
    const std::int64_t id = e[2].get<std::int64_t>();
    if (code == "a") {
      if (live.count(id)) {
        error = "events[" + std::to_string(k) + "]: block id " + std::to_string(id) + " allocated twice while live";
        return std::nullopt;
      }
      const auto stream = streams.try_emplace(e[3].get<std::int64_t>(), static_cast<int>(streams.size())).first->second;
      const Bytes request{e[1].get<std::int64_t>()};
      const Bytes before = allocator.reserved();
      live[id] = allocator.allocate(request, stream);
      if (allocator.reserved().value > before.value) r.model_segments.push_back({r.allocations, request, allocator.reserved() - before});
      if (pending_segment.value > 0) r.recorded_segments.push_back({r.allocations, request, pending_segment});
      pending_segment = Bytes{0};
      ++r.allocations;
    } else if (code == "s") {
      pending_segment = Bytes{e[1].get<std::int64_t>()};
    } else if (code == "f") {
      const auto it = live.find(id);
      if (it == live.end()) {
        ++r.unmatched_frees;
        continue;
      }
      allocator.release(it->second);
      live.erase(it);
    }
  }
  r.reserved_peak = allocator.peak_reserved();
  r.allocated_peak = allocator.peak_allocated();
  r.segments_end = allocator.segments();
  const auto& end = doc["end"];
  const auto integer = [&](const char* key) { return end.contains(key) && end[key].is_number_integer() ? end[key].get<std::int64_t>() : 0; };
  r.measured_reserved_peak = Bytes{integer("reserved_peak")};
  r.measured_segments_end = integer("segments");
  return r;
}

}  // namespace peakcast::calibration
