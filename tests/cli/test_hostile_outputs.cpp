// Output that cannot be written is an error, never a success with a lost or truncated file; odd
// arguments are refused with a message (issue #27, items 4 and 8).
#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <sys/wait.h>
#include "run_peakcast.hpp"

namespace fs = std::filesystem;

namespace {
using peakcast_test::Run;
using peakcast_test::run;

bool mentions(const Run& r, const std::string& what) { return r.out.find(what) != std::string::npos; }

// A fresh, empty directory for one test case; removed at the end.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) : path(fs::temp_directory_path() / ("peakcast_" + name)) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::size_t entries() const { return static_cast<std::size_t>(std::distance(fs::directory_iterator(path), {})); }
};
}  // namespace

TEST_CASE("a full device is a failed write for every output flag", "[cli][binary]") {
  if (!fs::exists("/dev/full")) return;
  for (const std::string args : {"predict --timeline /dev/full", "predict --html /dev/full",
                                 "sweep --vary train.micro_batch_size=1 --csv /dev/full",
                                 "sweep --vary train.micro_batch_size=1 --html /dev/full", "import --seed-tables --out /dev/full"}) {
    INFO(args);
    const Run r = run(args);
    CHECK(r.status == 2);
    CHECK(mentions(r, "cannot write /dev/full"));
    CHECK(mentions(r, "No space left on device"));
    CHECK_FALSE(mentions(r, "wrote "));
  }
}

TEST_CASE("a missing directory is a failed write and leaves no file", "[cli][binary]") {
  TempDir dir("missing_dir_outputs");
  const std::string missing = (dir.path / "no" / "such").string();
  const std::string corpus = std::string(PEAKCAST_SOURCE_DIR) + "/calibration/data/h200_defer.jsonl";
  for (const std::string flag : {std::string("predict --timeline"), std::string("predict --html"),
                                 "calibrate --corpus " + corpus + " --out"}) {
    INFO(flag);
    const Run r = run(flag + " " + missing + "/out.json");
    CHECK(r.status == 2);
    CHECK(mentions(r, "cannot write " + missing + "/out.json"));
  }
  CHECK(dir.entries() == 0);
}

TEST_CASE("a directory given as the output file is refused; a successful write leaves only the file", "[cli][binary]") {
  TempDir dir("outputs_ok");
  const Run bad = run("predict --timeline " + dir.path.string());
  CHECK(bad.status == 2);
  CHECK(mentions(bad, "is a directory"));
  const fs::path timeline = dir.path / "t.json";
  const Run ok = run("predict --timeline " + timeline.string());
  CHECK(ok.status == 0);
  CHECK(fs::file_size(timeline) > 0);
  CHECK(dir.entries() == 1);  // no temporary file left beside it
}

TEST_CASE("an empty SPEC argument is refused, not read as the default", "[cli][binary]") {
  for (const std::string cmd : {"predict \"\"", "rank \"\"", "sweep \"\" --vary train.micro_batch_size=1"}) {
    INFO(cmd);
    const Run r = run(cmd);
    CHECK(r.status == 2);
    CHECK(mentions(r, "empty SPEC path"));
  }
}

TEST_CASE("a misspelt --vary key and an oversized grid exit 2 before any point runs", "[cli][binary]") {
  const Run typo = run("sweep --vary model.seq_lenght=1024,2048");
  CHECK(typo.status == 2);
  CHECK(mentions(typo, "model.seq_lenght"));
  CHECK(mentions(typo, "did you mean model.seq_length"));
  CHECK_FALSE(mentions(typo, "points,"));  // no table printed
  std::string grid;
  for (int i = 0; i < 16; ++i) grid += " --vary train.micro_batch_size=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16";
  const Run huge = run("sweep" + grid);
  CHECK(huge.status == 2);
  CHECK(mentions(huge, "more than 2^64"));
}

TEST_CASE("control characters from the input do not reach the terminal", "[cli][binary]") {
  // A key with ESC ... BEL (an xterm title sequence) in an override: the unknown-key error quotes it.
  const Run r = run("predict --set 'model.x\x1b]0;owned\x07=1'");
  CHECK(r.status == 2);
  CHECK(r.out.find('\x1b') == std::string::npos);
  CHECK(r.out.find('\x07') == std::string::npos);
  CHECK(mentions(r, "model.x\\x1B]0;owned\\x07"));
}
