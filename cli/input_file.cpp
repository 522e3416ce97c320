#include "input_file.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>

#include "peakcast/model/diagnostics.hpp"

namespace peakcast::cli {

std::optional<std::string> read_input(const std::string& what, const std::string& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::cerr << "error: " << what << ": cannot read " << model::printable(path) << ": " << std::strerror(errno) << "\n";
    return std::nullopt;
  }
  // Read in blocks, at most the cap and one byte more: a larger input is refused without reading it whole.
  std::string text;
  char block[1 << 16];
  while (in && text.size() <= max_bytes) {
    in.read(block, sizeof block);
    text.append(block, static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) {
    std::cerr << "error: " << what << ": cannot read " << model::printable(path) << ": read error\n";
    return std::nullopt;
  }
  if (text.size() > max_bytes) {
    std::cerr << "error: " << what << ": " << model::printable(path) << " is larger than " << (max_bytes >> 20)
              << " MiB, the limit for this input\n";
    return std::nullopt;
  }
  return text;
}

}  // namespace peakcast::cli
