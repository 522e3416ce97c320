#pragma once
#include <string>
#include <vector>

#include "peakcast/calibration/record.hpp"

namespace peakcast::cli {

// Reads every corpus file (JSON lines); prints each record error to stderr. False if any file had errors.
bool read_corpus(const std::vector<std::string>& files, std::vector<calibration::Record>& records);

}  // namespace peakcast::cli
