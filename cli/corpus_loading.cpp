#include "corpus_loading.hpp"

#include <iostream>

namespace peakcast::cli {

bool read_corpus(const std::vector<std::string>& files, std::vector<calibration::Record>& records) {
  for (const auto& f : files) {
    auto r = calibration::read_record_file(f);
    for (const auto& e : r.errors) std::cerr << "error: " << e << "\n";
    if (!r.errors.empty()) return false;
    records.insert(records.end(), r.records.begin(), r.records.end());
  }
  return true;
}

}  // namespace peakcast::cli
