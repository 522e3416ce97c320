#include "peakcast/model/embedded_configs.hpp"

#include <cstring>

namespace {
#include "embedded_configs_data.inc"
}  // namespace

namespace peakcast::model {

std::optional<std::string_view> embedded_config(std::string_view relative_path) {
  for (const Entry* e = kEntries; e->path != nullptr; ++e) {
    if (relative_path == e->path) return std::string_view(e->data, e->size);
  }
  return std::nullopt;
}

std::vector<std::string> embedded_config_paths(std::string_view prefix) {
  std::vector<std::string> out;
  for (const Entry* e = kEntries; e->path != nullptr; ++e) {
    std::string_view p(e->path);
    if (p.substr(0, prefix.size()) == prefix) out.emplace_back(p);
  }
  return out;
}

}  // namespace peakcast::model
