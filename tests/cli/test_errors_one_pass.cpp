// A spec with several kinds of mistakes gets all of them reported in one run, each with its path.
#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>
#include <sys/wait.h>

TEST_CASE("an unknown key does not hide a range error elsewhere in the spec", "[cli][binary]") {
  const std::string path = "peakcast_one_pass_spec.json";
  std::ofstream(path) << R"({"model": {"preset": "llama3-8b", "hiden_size": 3, "seq_length": 4096},
                            "train": {"micro_batch_size": -1}})";
  const std::string cmd = std::string(PEAKCAST_BINARY) + " predict " + path + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string output;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), pipe)) output += buf.data();
  const int status = pclose(pipe);
  CHECK(WEXITSTATUS(status) == 2);
  CHECK(output.find("model.hiden_size") != std::string::npos);
  CHECK(output.find("did you mean model.hidden_size") != std::string::npos);
  CHECK(output.find("train.micro_batch_size") != std::string::npos);
  std::remove(path.c_str());
}
