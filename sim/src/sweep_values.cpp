// Parsing `--vary KEY=V1,V2,...`: bracket- and quote-aware splitting so JSON lists survive.
#include <algorithm>
#include <limits>

#include "peakcast/sim/sweep.hpp"

namespace peakcast::sim {

namespace {

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t");
  return std::string(s.substr(b, e - b + 1));
}

// Splits at `sep` where not nested in brackets/braces and not inside a JSON string.
std::vector<std::string> split_top_level(std::string_view text, char sep) {
  std::vector<std::string> out;
  int depth = 0;
  bool in_string = false;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (in_string) {
      if (ch == '\\') ++i;
      else if (ch == '"') in_string = false;
      continue;
    }
    if (ch == '"') in_string = true;
    else if (ch == '[' || ch == '{') ++depth;
    else if (ch == ']' || ch == '}') depth = std::max(0, depth - 1);
    else if (ch == sep && depth == 0) {
      out.push_back(trim(text.substr(start, i - start)));
      start = i + 1;
    }
  }
  out.push_back(trim(text.substr(start)));
  return out;
}

}  // namespace

std::vector<std::string> split_sweep_values(std::string_view text) {
  const auto by_semicolon = split_top_level(text, ';');
  auto values = by_semicolon.size() > 1 ? by_semicolon : split_top_level(text, ',');
  std::erase_if(values, [](const std::string& v) { return v.empty(); });
  return values;
}

std::optional<SweepAxis> parse_vary(std::string_view arg, std::string* error) {
  const auto eq = arg.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    if (error) *error = "--vary expects KEY=V1,V2,... (e.g. model.seq_length=4096,8192), got '" + std::string(arg) + "'";
    return std::nullopt;
  }
  SweepAxis axis{trim(arg.substr(0, eq)), split_sweep_values(arg.substr(eq + 1))};
  if (axis.values.empty()) {
    if (error) *error = "--vary " + axis.key + ": no values given";
    return std::nullopt;
  }
  return axis;
}

std::size_t sweep_size(const std::vector<SweepAxis>& axes) {
  if (axes.empty()) return 0;
  std::size_t n = 1;
  for (const auto& a : axes) {
    if (a.values.empty()) return 0;
    if (n > std::numeric_limits<std::size_t>::max() / a.values.size()) return std::numeric_limits<std::size_t>::max();
    n *= a.values.size();
  }
  return n;
}

std::size_t SweepResult::invalid_count() const {
  return static_cast<std::size_t>(std::count_if(points.begin(), points.end(), [](const SweepPoint& p) { return !p.valid; }));
}

}  // namespace peakcast::sim
