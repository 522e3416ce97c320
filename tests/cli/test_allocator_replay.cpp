// peakcast allocator-replay: a recorded stream through the caching-allocator model, as recorded or
// under another PYTORCH_CUDA_ALLOC_CONF; bad input exits 2 naming the file and the event.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "run_peakcast.hpp"

namespace {

std::string write_trace(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / ("peakcast-replay-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

// Two live 30 MiB blocks, both freed, then one of 50 MiB.
constexpr const char* kStream = R"({"case": "three", "events": [["a", 31457280, 0, 7], ["a", 31457280, 1, 7],
  ["f", 31457280, 0, 7], ["f", 31457280, 1, 7], ["a", 52428800, 2, 7]],
  "end": {"reserved_peak": 115343360, "segments": 3, "alloc_conf": null}})";

constexpr std::int64_t MiB = 1 << 20;

}  // namespace

TEST_CASE("allocator-replay: as recorded and under expandable segments", "[cli][allocator]") {
  const std::string path = write_trace("three.json", kStream);
  // Default allocator: a request of 10 MiB or more gets its own segment, rounded to 2 MiB
  // (get_allocation_size), and the two freed 30 MiB segments are not adjacent, so the 50 MiB request
  // takes a third: 110 MiB reserved at the end.
  const auto plain = peakcast_test::run("allocator-replay " + path + " --json");
  REQUIRE(plain.status == 0);
  const auto j = nlohmann::json::parse(plain.out);
  CHECK(j["reserved_peak_bytes"] == 110 * MiB);
  CHECK(j["segments_end"] == 3);
  CHECK(j["allocated_peak_bytes"] == 60 * MiB);
  CHECK(j["recorded_reserved_peak_bytes"] == 110 * MiB);
  // Expandable segments: one segment per stream grows in 20 MiB pages; the two 30 MiB blocks sit
  // side by side in 60 MiB of pages, merge when freed, and the 50 MiB request fits in them.
  const auto expandable = peakcast_test::run("allocator-replay " + path + " --alloc-conf expandable_segments:True --json");
  REQUIRE(expandable.status == 0);
  CHECK(nlohmann::json::parse(expandable.out)["reserved_peak_bytes"] == 60 * MiB);
  const auto text = peakcast_test::run("allocator-replay " + path + " --alloc-conf expandable_segments:True");
  CHECK(text.out.find("recorded with PYTORCH_CUDA_ALLOC_CONF unset") != std::string::npos);  // torch's figures are of the recorded run
}

TEST_CASE("allocator-replay: bad input exits 2 naming what is wrong", "[cli][allocator]") {
  const auto negative = peakcast_test::run("allocator-replay " + write_trace("neg.json", R"({"events": [["a", 0, 0, 0], ["a", -5, 1, 0]], "end": {}})"));
  CHECK(negative.status == 2);
  CHECK(negative.out.find("events[1]: size -5") != std::string::npos);
  const auto twice = peakcast_test::run("allocator-replay " + write_trace("twice.json", R"({"events": [["a", 8, 0, 0], ["a", 8, 0, 0]], "end": {}})"));
  CHECK(twice.status == 2);
  CHECK(twice.out.find("events[1]: block id 0 allocated twice") != std::string::npos);
  const auto old_form = peakcast_test::run("allocator-replay " + write_trace("old.json", R"({"events": [["a", 8, 0]], "end": {}})"));
  CHECK(old_form.status == 2);
  CHECK(old_form.out.find("events[0] is not [code, size, id, stream]") != std::string::npos);
  CHECK(peakcast_test::run("allocator-replay " + write_trace("notjson.json", "[1, 2")).status == 2);
  const auto conf = peakcast_test::run("allocator-replay " + write_trace("ok.json", kStream) + " --alloc-conf bogus:1");
  CHECK(conf.status == 2);
  CHECK(conf.out.find("bogus") != std::string::npos);
  std::string gz = "\x1f\x8b";
  gz += "rest";
  const auto gzip = peakcast_test::run("allocator-replay " + write_trace("trace.json.gz", gz));
  CHECK(gzip.status == 2);
  CHECK(gzip.out.find("gzip -dc") != std::string::npos);
  CHECK(peakcast_test::run("allocator-replay /nonexistent/trace.json").status == 2);
}
