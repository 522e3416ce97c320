#pragma once
// Reading a file of the source tree in a test (calibration data, configs).
#include <fstream>
#include <sstream>
#include <string>

namespace peakcast::test {

inline std::string read_source_file(const std::string& relative_path) {
  std::ifstream in(std::string(PEAKCAST_SOURCE_DIR) + "/" + relative_path);
  std::ostringstream b;
  b << in.rdbuf();
  return b.str();
}

}  // namespace peakcast::test
