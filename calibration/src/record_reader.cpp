// Strict JSON-lines reader for measurement records. Accepts the harness's full records
// (calibration/harness/run_case.py: per-phase peaks per iteration) and the summary keys written by
// the ingested tables; derives the summary from the per-phase figures when it is not given.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "peakcast/calibration/record.hpp"

namespace peakcast::calibration {

namespace {

using nlohmann::json;

struct LineError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::optional<std::int64_t> opt_int(const json& o, const char* key, const std::string& where) {
  if (!o.contains(key) || o.at(key).is_null()) return std::nullopt;
  const auto& v = o.at(key);
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    throw LineError(where + "." + key + " is larger than 2^63 - 1, got " + v.dump());
  if (v.is_number_integer()) return v.get<std::int64_t>();
  // A float that holds a whole number inside int64's range (casting one outside it is undefined).
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d >= -9.2e18 && d <= 9.2e18 && d == std::trunc(d)) return static_cast<std::int64_t>(d);
  }
  throw LineError(where + "." + key + " must be an integer (bytes or count), got " + v.dump());
}

std::optional<double> opt_number(const json& o, const char* key, const std::string& where) {
  if (!o.contains(key) || o.at(key).is_null()) return std::nullopt;
  if (!o.at(key).is_number()) throw LineError(where + "." + key + " must be a number, got " + o.at(key).dump());
  return o.at(key).get<double>();
}

std::optional<std::string> opt_string(const json& o, const char* key, const std::string& where) {
  if (!o.contains(key) || o.at(key).is_null()) return std::nullopt;
  if (!o.at(key).is_string()) throw LineError(where + "." + key + " must be a string, got " + o.at(key).dump());
  return o.at(key).get<std::string>();
}

// (routed, received) rows of each MoE layer forward of one iteration (measured.iterations[].moe_routing);
// empty when the iteration has no routing record.
std::vector<std::pair<std::int64_t, std::int64_t>> routing_rows(const json& it) {
  std::vector<std::pair<std::int64_t, std::int64_t>> rows;
  if (!it.contains("moe_routing")) return rows;
  const json& layers = it.at("moe_routing");
  if (!layers.is_array()) throw LineError("measured.iterations[].moe_routing must be an array");
  for (const auto& l : layers) {
    if (!l.is_object()) throw LineError("measured.iterations[].moe_routing[] must be objects");
    const auto a = opt_int(l, "routed_rows", "measured.iterations[].moe_routing[]");
    const auto b = opt_int(l, "received_rows", "measured.iterations[].moe_routing[]");
    if (!a || !b) throw LineError("measured.iterations[].moe_routing[] needs routed_rows and received_rows");
    if (*a < 0 || *b < 0) throw LineError("measured.iterations[].moe_routing[] row counts must not be negative");
    rows.emplace_back(*a, *b);
  }
  return rows;
}

// received / routed rows summed over the layers, or nothing without routed rows.
std::optional<double> routing_imbalance(const std::vector<std::pair<std::int64_t, std::int64_t>>& rows) {
  std::int64_t routed = 0, received = 0;
  for (const auto& [a, b] : rows) {
    routed += a;
    received += b;
  }
  if (routed == 0) return std::nullopt;
  return static_cast<double>(received) / static_cast<double>(routed);
}

// The harness records peaks per phase; the largest one tells the phase of the whole-run peak.
void derive_from_phases(const json& m, Measurement& out) {
  std::int64_t best = -1, first = -1;
  std::string best_phase;
  const auto consider = [&](const json& o, const char* key, const char* phase, bool first_iteration) {
    const auto v = opt_int(o, key, "measured");
    if (!v) return;
    if (*v > best) {
      best = *v;
      best_phase = phase;
    }
    if (first_iteration) first = std::max(first, *v);
  };
  consider(m, "model_build_peak_bytes", "setup", true);
  consider(m, "ddp_build_peak_bytes", "setup", true);
  consider(m, "optimizer_build_peak_bytes", "setup", true);
  double time_sum = 0;
  int timed = 0;
  std::int64_t routed_best_peak = -1;
  bool diverged = false;  // a later iteration's loss was not finite (recorded as null)
  std::optional<double> first_routing;
  std::vector<std::pair<int, double>> fb_times, opt_times;
  if (m.contains("iterations")) {
    if (!m.at("iterations").is_array()) throw LineError("measured.iterations must be an array");
    for (const auto& it : m.at("iterations")) {
      if (!it.is_object()) throw LineError("measured.iterations[] must be objects");
      const int n = static_cast<int>(opt_int(it, "iteration", "measured.iterations[]").value_or(0));
      consider(it, "fwd_bwd_peak_bytes", "forward_backward", n == 1);
      if (it.contains("last_microbatch_loss_sum") && it.at("last_microbatch_loss_sum").is_null()) {
        if (n == 1) out.diverged_in_first_iteration = true;
        else diverged = true;
      }
      const auto rows = routing_rows(it);
      const auto imbalance = routing_imbalance(rows);
      if (n == 1 && it.contains("moe_routing") && it.at("moe_routing").is_array()) {
        for (const auto& l : it.at("moe_routing")) {
          if (!l.contains("expert_counts")) continue;
          const json& counts = l.at("expert_counts");
          if (!counts.is_array()) throw LineError("measured.iterations[].moe_routing[].expert_counts must be an array");
          std::int64_t active = 0;
          for (const auto& c : counts) {
            if (!c.is_number_integer() || c.get<std::int64_t>() < 0)
              throw LineError("measured.iterations[].moe_routing[].expert_counts[] must be non-negative integers");
            if (c.get<std::int64_t>() > 0) ++active;
          }
          out.first_iteration_min_active_experts =
              std::min(out.first_iteration_min_active_experts.value_or(active), active);
        }
      }
      if (n == 1) {
        first_routing = imbalance;
        if (first_routing)
          for (const auto& [routed, received] : rows)
            if (routed > 0) out.first_iteration_layer_loads.push_back(static_cast<double>(received) / static_cast<double>(routed));
      }
      if (const auto r = imbalance; r) {
        const std::int64_t peak = opt_int(it, "fwd_bwd_peak_bytes", "measured.iterations[]").value_or(0);
        if (peak > routed_best_peak) {
          routed_best_peak = peak;
          out.moe_routing_imbalance = r;
        }
      }
      consider(it, "grad_sync_peak_bytes", "grad_sync", n == 1);
      consider(it, "optimizer_peak_bytes", "optimizer", n == 1);
      const auto a = opt_number(it, "fwd_bwd_time_s", "measured.iterations[]");
      const auto b = opt_number(it, "grad_sync_time_s", "measured.iterations[]");
      const auto c = opt_number(it, "optimizer_time_s", "measured.iterations[]");
      if (n >= 2 && a && b && c) {
        time_sum += *a + *b + *c;
        ++timed;
      }
      if (n >= 2 && a) fb_times.emplace_back(n, *a);
      if (n >= 2 && c) opt_times.emplace_back(n, *c);
    }
  }
  if (!out.first_iteration_peak_bytes && first >= 0) out.first_iteration_peak_bytes = first;
  // A run whose loss went non-finite after iteration 1 routes every token to the first experts
  // (top-k of NaN scores): only its first iteration is a training step, so only that is compared.
  if (diverged && out.first_iteration_peak_bytes) {
    out.diverged_after_first_iteration = true;
    out.peak_allocated_bytes.reset();
    out.peak_phase.reset();
    out.moe_routing_imbalance = first_routing;
    return;
  }
  if (!out.peak_phase && best >= 0 && !out.oom && out.peak_allocated_bytes == best) out.peak_phase = best_phase;
  if (!out.step_time_s && timed > 0) out.step_time_s = time_sum / timed;
  const auto median = [](const std::vector<double>& sorted) {
    const std::size_t n = sorted.size();
    return n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  };
  const auto steady = [](const std::vector<std::pair<int, double>>& v) {
    std::vector<double> later;
    for (const auto& [n, t] : v)
      if (n >= 3) later.push_back(t);
    if (later.size() < 2) {
      later.clear();
      for (const auto& p : v) later.push_back(p.second);
    }
    std::sort(later.begin(), later.end());
    return later;
  };
  if (const auto fb = steady(fb_times); !fb.empty()) {
    out.fwd_bwd_time_s = median(fb);
    out.fwd_bwd_time_min_s = fb.front();
    out.fwd_bwd_time_max_s = fb.back();
  }
  if (const auto op = steady(opt_times); !op.empty())
    out.optimizer_time_s = median(op);
}

Measurement parse_measured(const json& m) {
  if (!m.is_object()) throw LineError("\"measured\" must be an object");
  Measurement out;
  out.peak_allocated_bytes = opt_int(m, "max_allocated_bytes", "measured");
  out.first_iteration_peak_bytes = opt_int(m, "first_iteration_max_allocated_bytes", "measured");
  out.peak_reserved_bytes = opt_int(m, "max_reserved_bytes", "measured");
  out.step_time_s = opt_number(m, "step_time_s", "measured");
  out.peak_phase = opt_string(m, "peak_phase", "measured");
  out.oom_phase = opt_string(m, "oom_phase", "measured");
  if (const auto it = opt_int(m, "oom_iteration", "measured")) out.oom_iteration = static_cast<int>(*it);
  if (m.contains("oom") && !m.at("oom").is_null()) {
    if (!m.at("oom").is_boolean()) throw LineError("measured.oom must be true or false, got " + m.at("oom").dump());
    out.oom = m.at("oom").get<bool>();
  }
  derive_from_phases(m, out);
  // A run whose memory was reported only after iteration 1 carries that peak alone.
  if (!out.oom && !out.peak_allocated_bytes && !out.first_iteration_peak_bytes)
    throw LineError("measured: a run that did not run out of memory needs max_allocated_bytes or first_iteration_max_allocated_bytes");
  if (out.peak_allocated_bytes && *out.peak_allocated_bytes <= 0)
    throw LineError("measured.max_allocated_bytes must be positive");
  if (out.first_iteration_peak_bytes && *out.first_iteration_peak_bytes <= 0)
    throw LineError("measured.first_iteration_max_allocated_bytes must be positive");
  return out;
}

// Returns false for a valid line that carries no measurement.
bool parse_line(const json& j, Record& r, std::string& why_skipped) {
  if (!j.is_object()) throw LineError("a record must be a JSON object");
  if (!j.contains("record_version")) throw LineError("missing \"record_version\"");
  if (j.at("record_version") != 1) throw LineError("record_version " + j.at("record_version").dump() + " is not supported (expected 1)");
  const auto name = opt_string(j, "case", "record");
  if (!name) throw LineError("missing \"case\" (the record's name)");
  r.name = *name;
  r.group = opt_string(j, "group", "record").value_or("");
  if (!j.contains("spec") || !j.at("spec").is_object()) throw LineError("\"spec\" must be a run-spec object");
  r.spec_json = j.at("spec").dump();
  if (j.contains("rank") && !j.at("rank").is_null()) {
    if (!j.at("rank").is_object()) throw LineError("\"rank\" must be an object or null");
    r.pp_rank = opt_int(j.at("rank"), "pp_rank", "rank");
  }
  if (j.contains("provenance") && j.at("provenance").is_object())
    for (const auto& [k, v] : j.at("provenance").items())
      r.provenance.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
  if (j.contains("validation_error") && !j.at("validation_error").is_null()) {
    why_skipped = "expected validation error, no measurement";
    return false;
  }
  if (!j.contains("measured")) throw LineError("missing \"measured\"");
  if (j.at("measured").is_null()) {
    why_skipped = "measured is null (the run did not start)";
    return false;
  }
  r.measured = parse_measured(j.at("measured"));
  if (r.measured.diverged_in_first_iteration) {
    why_skipped = "the loss was not finite in iteration 1 (NaN routing sends every token to the first experts)";
    return false;
  }
  return true;
}

}  // namespace

ReadResult read_records(const std::string& text, const std::string& source) {
  ReadResult out;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = source + ":" + std::to_string(n) + ": ";
    const json j = json::parse(line, nullptr, false);
    if (j.is_discarded()) {
      out.errors.push_back(where + "not valid JSON (one record per line)");
      continue;
    }
    Record r;
    r.source = source;
    r.line = n;
    std::string why;
    try {
      if (parse_line(j, r, why)) out.records.push_back(std::move(r));
      else out.skipped.push_back(where + r.name + ": " + why);
    } catch (const LineError& e) {
      out.errors.push_back(where + (r.name.empty() ? "" : r.name + ": ") + e.what());
    } catch (const json::exception& e) {
      out.errors.push_back(where + e.what());
    }
  }
  return out;
}

ReadResult read_record_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) {
    ReadResult r;
    r.errors.push_back(path + ": cannot open");
    return r;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  return read_records(ss.str(), path);
}

std::string to_json_line(const Record& r) {
  json j;
  j["record_version"] = 1;
  j["case"] = r.name;
  if (!r.group.empty()) j["group"] = r.group;
  j["spec"] = json::parse(r.spec_json);
  j["rank"] = r.pp_rank ? json{{"pp_rank", *r.pp_rank}} : json(nullptr);
  json m = json::object();
  const auto& x = r.measured;
  if (x.peak_allocated_bytes) m["max_allocated_bytes"] = *x.peak_allocated_bytes;
  if (x.first_iteration_peak_bytes) m["first_iteration_max_allocated_bytes"] = *x.first_iteration_peak_bytes;
  if (x.step_time_s) m["step_time_s"] = *x.step_time_s;
  if (x.peak_phase) m["peak_phase"] = *x.peak_phase;
  m["oom"] = x.oom;
  if (x.oom_phase) m["oom_phase"] = *x.oom_phase;
  if (x.oom_iteration) m["oom_iteration"] = *x.oom_iteration;
  j["measured"] = m;
  json p = json::object();
  for (const auto& [k, v] : r.provenance) p[k] = v;
  j["provenance"] = p;
  return j.dump();
}

}  // namespace peakcast::calibration
