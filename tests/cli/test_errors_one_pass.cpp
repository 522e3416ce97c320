// A spec with several kinds of mistakes gets all of them reported in one run, each with its path.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <fstream>
#include <string>

namespace {
// Runs peakcast with `args`; stderr goes where `stderr_to` says (e.g. "2>&1", "2>/dev/null").
std::string run_capture(const std::string& args, int* exit_status, const std::string& stderr_to = "2>/dev/null") {
  const std::string cmd = std::string(PEAKCAST_BINARY) + " " + args + " " + stderr_to;
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string output;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), pipe)) output += buf.data();
  *exit_status = WEXITSTATUS(pclose(pipe));
  return output;
}

double number_after(const std::string& text, const std::string& marker) {
  const auto at = text.find(marker);
  REQUIRE(at != std::string::npos);
  return std::stod(text.substr(at + marker.size()));
}
}  // namespace

TEST_CASE("an unknown key does not hide a range error elsewhere in the spec", "[cli][binary]") {
  const std::string path = "peakcast_one_pass_spec.json";
  std::ofstream(path) << R"({"model": {"preset": "llama3-8b", "hiden_size": 3, "seq_length": 4096},
                            "train": {"micro_batch_size": -1}})";
  int status = 0;
  const std::string output = run_capture("predict " + path, &status, "2>&1");
  CHECK(status == 2);
  CHECK(output.find("model.hiden_size") != std::string::npos);
  CHECK(output.find("did you mean model.hidden_size") != std::string::npos);
  CHECK(output.find("train.micro_batch_size") != std::string::npos);
  std::remove(path.c_str());
}

TEST_CASE("predict names the busiest EP rank's peak beside the balanced one, and the flag agrees", "[cli][binary]") {
  int status = 0;
  const std::string balanced = run_capture("predict", &status);
  CHECK(status == 0);
  const double max_balanced = number_after(balanced, "max peak ");
  const double busiest = number_after(balanced, "x its balanced rows): max peak ");
  CHECK(busiest > max_balanced);  // the default spec's peak is in the forward, where routed rows are held
  const std::string flagged = run_capture("predict --moe-busiest-rank", &status);
  CHECK(status == 0);
  CHECK(number_after(flagged, "max peak ") == Approx(busiest).epsilon(1e-6));
  CHECK(flagged.find("x its balanced rows): max peak") == std::string::npos);  // already the busiest
}
