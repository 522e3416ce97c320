#pragma once
// Runs the built peakcast binary (PEAKCAST_BINARY) with arguments, as a shell would, and captures
// its exit status and its stdout and stderr together.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <string>

namespace peakcast_test {

struct Run {
  int status = -1;  // -1 when it did not exit normally
  std::string out;  // stdout and stderr together
};

inline Run run(const std::string& args) {
  const std::string cmd = std::string(PEAKCAST_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  Run r;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), pipe)) r.out += buf.data();
  const int raw = pclose(pipe);
  if (raw != -1 && WIFEXITED(raw)) r.status = WEXITSTATUS(raw);
  return r;
}

}  // namespace peakcast_test
