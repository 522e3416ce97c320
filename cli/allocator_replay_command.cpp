// peakcast allocator-replay TRACE [--alloc-conf CONF] [--json]: a recorded allocator event stream
// (calibration/harness/alloc_trace.py's document, from torch.cuda.memory._record_memory_history)
// replayed through peakcast's caching-allocator model, beside what torch recorded for it; with
// --alloc-conf, under another PYTORCH_CUDA_ALLOC_CONF (would expandable segments have held it?).
#include <cstdio>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "input_file.hpp"
#include "peakcast/calibration/measured_stream.hpp"

namespace peakcast::cli {

namespace {
struct ReplayArgs {
  std::string trace;
  std::optional<std::string> alloc_conf;
  bool json = false;
  bool segments = false;
};

double gb(Bytes b) { return static_cast<double>(b.value) / 1e9; }

std::string conf_text(const std::string& conf) { return conf.empty() ? "unset (torch's defaults)" : "\"" + conf + "\""; }

bool gzip_magic(const std::string& text) {
  return text.size() >= 2 && static_cast<unsigned char>(text[0]) == 0x1f && static_cast<unsigned char>(text[1]) == 0x8b;
}

void print_text(const std::string& trace, const calibration::MeasuredStreamReplay& r) {
  const bool as_recorded = r.alloc_conf == r.recorded_alloc_conf;  // torch's figures are of this configuration
  std::printf("peakcast allocator-replay: %s (case %s), %lld allocations, PYTORCH_CUDA_ALLOC_CONF %s%s\n", trace.c_str(),
              r.case_name.empty() ? "-" : r.case_name.c_str(), static_cast<long long>(r.allocations), conf_text(r.alloc_conf).c_str(),
              as_recorded ? " (as recorded)" : "");
  std::printf("reserved peak    %.3f GB (model)", gb(r.reserved_peak));
  if (as_recorded) std::printf("   %.3f GB recorded by torch", gb(r.measured_reserved_peak));
  std::printf("\nallocated peak   %.3f GB (model)\nsegments at end  %lld (model)", gb(r.allocated_peak), static_cast<long long>(r.segments_end));
  if (as_recorded) std::printf("   %lld recorded", static_cast<long long>(r.measured_segments_end));
  std::printf("\n");
  if (!as_recorded)
    std::printf("note: the run was recorded with PYTORCH_CUDA_ALLOC_CONF %s: torch's figures are of that configuration, not shown\n",
                conf_text(r.recorded_alloc_conf).c_str());
  if (r.unmatched_frees > 0)
    std::printf("note: %lld frees of blocks allocated before the recording began were skipped\n", static_cast<long long>(r.unmatched_frees));
  for (const auto& u : r.unmodelled) std::printf("note: option %s is accepted by torch but not modelled\n", u.c_str());
}

double mib(Bytes b) { return static_cast<double>(b.value) / (1 << 20); }

// One line per allocation that made a segment in the model or in the recorded run, in stream order.
void print_segments(const calibration::MeasuredStreamReplay& r) {
  std::printf("\nallocation  request MiB   model segment MiB   recorded segment MiB\n");
  std::size_t i = 0, j = 0;
  const auto& m = r.model_segments;
  const auto& t = r.recorded_segments;
  while (i < m.size() || j < t.size()) {
    const std::int64_t a = std::min(i < m.size() ? m[i].allocation : INT64_MAX, j < t.size() ? t[j].allocation : INT64_MAX);
    const bool in_model = i < m.size() && m[i].allocation == a, in_run = j < t.size() && t[j].allocation == a;
    const Bytes request = in_model ? m[i].request : t[j].request;
    std::printf("%10lld  %11.2f   ", static_cast<long long>(a), mib(request));
    if (in_model) std::printf("%17.2f   ", mib(m[i++].segment));
    else std::printf("%17s   ", "-");
    if (in_run) std::printf("%20.2f\n", mib(t[j++].segment));
    else std::printf("%20s\n", "-");
  }
}

nlohmann::json segments_json(const std::vector<calibration::MeasuredStreamReplay::NewSegment>& v) {
  auto out = nlohmann::json::array();
  for (const auto& s : v) out.push_back({{"allocation", s.allocation}, {"request_bytes", s.request.value}, {"segment_bytes", s.segment.value}});
  return out;
}
}  // namespace

Runner add_allocator_replay_command(CLI::App& app) {
  auto args = std::make_shared<ReplayArgs>();
  CLI::App* sub = app.add_subcommand("allocator-replay", "Replay a recorded allocator event stream through the caching-allocator model");
  sub->add_option("TRACE", args->trace, "calibration/harness/alloc_trace.py's JSON document (decompressed)")->required()->check(kSpecPath);
  sub->add_option("--alloc-conf", args->alloc_conf, "PYTORCH_CUDA_ALLOC_CONF to replay under (default: the recorded run's)");
  sub->add_flag("--json", args->json, "Print the result as JSON");
  sub->add_flag("--segments", args->segments,
                "Also list the allocations that made a segment, the model's beside the recorded run's (the trace's \"s\" events)");
  return [args] {
    const auto text = read_input("allocator-replay", args->trace, kMaxDataBytes);
    if (!text) return kExitInvalidInput;
    if (gzip_magic(*text)) {
      std::cerr << "error: allocator-replay: " << args->trace << " is gzip-compressed; decompress it first (gzip -dc)\n";
      return kExitInvalidInput;
    }
    std::string error;
    const auto r = calibration::replay_measured_stream(*text, args->alloc_conf, error);
    if (!r) {
      std::cerr << "error: allocator-replay: " << args->trace << ": " << error << "\n";
      return kExitInvalidInput;
    }
    if (!args->json) {
      print_text(args->trace, *r);
      if (args->segments) print_segments(*r);
      return kExitOk;
    }
    nlohmann::json j = {{"trace", args->trace},
                        {"case", r->case_name},
                        {"alloc_conf", r->alloc_conf},
                        {"recorded_alloc_conf", r->recorded_alloc_conf},
                        {"allocations", r->allocations},
                        {"unmatched_frees", r->unmatched_frees},
                        {"reserved_peak_bytes", r->reserved_peak.value},
                        {"allocated_peak_bytes", r->allocated_peak.value},
                        {"segments_end", r->segments_end},
                        {"recorded_reserved_peak_bytes", r->measured_reserved_peak.value},
                        {"recorded_segments_end", r->measured_segments_end},
                        {"unmodelled_alloc_conf_options", r->unmodelled}};
    if (args->segments) {
      j["model_segments"] = segments_json(r->model_segments);
      j["recorded_segments"] = segments_json(r->recorded_segments);
    }
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  };
}

}  // namespace peakcast::cli
