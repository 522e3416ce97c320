#pragma once
// Numbers in the simulation's own messages (warnings, ranking reasons): decimal GB and percent.
#include <cstdio>
#include <string>

#include "peakcast/model/units.hpp"

namespace peakcast::sim::detail {

inline std::string gb_text(Bytes b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", b.gb());
  return buf;
}

inline std::string percent_text(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %%", 100.0 * fraction);
  return buf;
}

}  // namespace peakcast::sim::detail
