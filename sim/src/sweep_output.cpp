// Sweep results as CSV (one row per point) and JSON.
#include <cstdio>
#include <regex>
#include <sstream>
#include <string_view>

#include <nlohmann/json.hpp>

#include "peakcast/sim/sweep.hpp"

namespace peakcast::sim {

namespace {

bool plain_number(const std::string& s) {
  static const std::regex number(R"([-+]?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?)");
  return std::regex_match(s, number);
}

// One CSV cell (RFC 4180 quoting). A cell a spreadsheet would run as a formula, one starting with
// '=', '+', '-', '@', TAB or CR, gets a leading apostrophe (OWASP, CSV Injection), unless it is a
// plain number such as "-1"; a CR anywhere, like a comma, quote or newline, makes the cell quoted.
std::string csv_field(const std::string& s) {
  std::string cell = s;
  if (!cell.empty() && std::string_view("=+-@\t\r").find(cell.front()) != std::string_view::npos && !plain_number(cell))
    cell.insert(cell.begin(), '\'');
  if (cell.find_first_of(",\"\n\r") == std::string::npos && cell.size() == s.size()) return cell;
  std::string q = "\"";
  for (const char c : cell) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string num(double v, const char* fmt) {
  char buf[48];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

}  // namespace

std::string sweep_csv(const SweepResult& r) {
  std::ostringstream os;
  for (const auto& a : r.axes) os << csv_field(a.key) << ",";
  os << "valid,fits,max_peak_bytes,max_peak_gb,limit_bytes,headroom_gb,peak_pp_rank,peak_phase,peak_op,step_time_s,"
        "replay_time_s,reserved_p90_gb,fragmentation_risk,graph_pool_gb,error,verdict,verdict_cause,margin_bytes\n";
  for (const auto& p : r.points) {
    for (const auto& v : p.values) os << csv_field(v) << ",";
    if (!p.valid) {
      os << "false,,,,,,,,,,,,,," << csv_field(p.error) << ",,,\n";
      continue;
    }
    os << "true," << (p.fits ? "true" : "false") << "," << p.max_peak.value << "," << num(p.max_peak.gb(), "%.3f") << ","
       << p.limit.value << "," << num(p.headroom().gb(), "%.3f") << "," << p.peak_pp_rank << ","
       << to_string(p.peak_phase) << "," << csv_field(p.peak_op) << "," << num(p.step_time_s, "%.6g") << ","
       << num(p.replay_time_s, "%.6g") << "," << num(p.reserved_p90.gb(), "%.3f") << ","
       << (p.fragmentation_risk ? "true" : "false") << "," << num(p.graph_pool.gb(), "%.3f") << ",," << to_string(p.verdict) << ","
       << to_string(p.cause) << "," << p.margin << "\n";
  }
  return os.str();
}

std::string to_json(const SweepResult& r) {
  nlohmann::json j;
  j["schema_version"] = 1;
  nlohmann::json axes = nlohmann::json::array();
  for (const auto& a : r.axes) axes.push_back({{"key", a.key}, {"values", a.values}});
  j["axes"] = std::move(axes);
  nlohmann::json points = nlohmann::json::array();
  for (const auto& p : r.points) {
    nlohmann::json x;
    nlohmann::json vals = nlohmann::json::object();
    for (std::size_t a = 0; a < r.axes.size(); ++a) vals[r.axes[a].key] = p.values[a];
    x["values"] = std::move(vals);
    x["valid"] = p.valid;
    if (!p.valid) {
      x["error"] = p.error;
    } else {
      x["fits"] = p.fits;
      x["verdict"] = to_string(p.verdict);
      x["verdict_cause"] = to_string(p.cause);
      x["margin_bytes"] = p.margin;
      x["max_peak_allocated_bytes"] = p.max_peak.value;
      x["limit_bytes"] = p.limit.value;
      x["headroom_bytes"] = p.headroom().value;
      x["peak_pp_rank"] = p.peak_pp_rank;
      x["peak_phase"] = to_string(p.peak_phase);
      x["peak_op"] = p.peak_op;
      x["step_time_s"] = p.step_time_s;
      x["replay_time_s"] = p.replay_time_s;
      x["reserved_p90_bytes"] = p.reserved_p90.value;
      x["fragmentation_risk"] = p.fragmentation_risk;
      x["graph_pool_bytes"] = p.graph_pool.value;
    }
    points.push_back(std::move(x));
  }
  j["points"] = std::move(points);
  j["invalid_count"] = r.invalid_count();
  return j.dump(2);
}

}  // namespace peakcast::sim
