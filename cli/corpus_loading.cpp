#include "corpus_loading.hpp"

#include <iostream>

#include "input_file.hpp"

namespace peakcast::cli {

bool read_corpus(const std::vector<std::string>& files, std::vector<calibration::Record>& records) {
  for (const auto& f : files) {
    const auto text = read_input("--corpus", f, kMaxDataBytes);
    if (!text) return false;
    auto r = calibration::read_records(*text, f);
    for (const auto& e : r.errors) std::cerr << "error: " << e << "\n";
    if (!r.errors.empty()) return false;
    records.insert(records.end(), r.records.begin(), r.records.end());
  }
  return true;
}

}  // namespace peakcast::cli
