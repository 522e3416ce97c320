#include "peakcast/calibration/time_validation.hpp"

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

namespace peakcast::calibration {

namespace {

// The run a record belongs to, for grouping: its spec with the recompute keys removed.
std::string run_key(const Record& r) {
  auto j = nlohmann::json::parse(r.spec_json, nullptr, false);
  if (j.is_object() && j.contains("model") && j["model"].is_object())
    for (const char* k : {"recompute_granularity", "recompute_modules", "recompute_method", "recompute_num_layers"})
      j["model"].erase(k);
  return j.dump() + "/pp" + std::to_string(r.pp_rank.value_or(-1));
}

}  // namespace

std::vector<PolicyPair> policy_pairs(const std::vector<Evaluation>& evals) {
  std::map<std::string, std::vector<const Evaluation*>> runs;
  std::vector<std::string> order;
  for (const auto& e : evals) {
    const auto& m = e.record->measured;
    if (!m.fwd_bwd_time_s || !m.fwd_bwd_time_min_s || !m.fwd_bwd_time_max_s) continue;
    if (e.predicted_time.microbatches <= 0) continue;  // no prediction (spec refused)
    const std::string key = run_key(*e.record);
    if (!runs.count(key)) order.push_back(key);
    auto& v = runs[key];
    // Real multi-GPU runs write one record per rank; keep the first of identical specs.
    if (std::any_of(v.begin(), v.end(), [&](const Evaluation* x) { return x->record->spec_json == e.record->spec_json; })) continue;
    v.push_back(&e);
  }
  std::vector<PolicyPair> out;
  for (const auto& key : order) {
    const auto& es = runs[key];
    for (std::size_t i = 0; i < es.size(); ++i) {
      for (std::size_t j = i + 1; j < es.size(); ++j) {
        const auto& a = es[i]->record->measured;
        const auto& b = es[j]->record->measured;
        PolicyPair p;
        p.a = es[i];
        p.b = es[j];
        p.measured_delta_s = *b.fwd_bwd_time_s - *a.fwd_bwd_time_s;
        p.predicted_delta_s = es[j]->predicted_time.forward_backward_s - es[i]->predicted_time.forward_backward_s;
        p.spread_s = std::max(*a.fwd_bwd_time_max_s - *a.fwd_bwd_time_min_s, *b.fwd_bwd_time_max_s - *b.fwd_bwd_time_min_s);
        out.push_back(p);
      }
    }
  }
  return out;
}

std::vector<StepRow> step_rows(const std::vector<Evaluation>& evals) {
  std::vector<StepRow> rows;
  for (const auto& e : evals) {
    const auto& m = e.record->measured;
    if (!m.step_time_s || m.fwd_bwd_time_s || m.oom || e.predicted_step_time_s <= 0) continue;
    rows.push_back({&e, *m.step_time_s, e.predicted_step_time_s, nullptr, 0, 0});
  }
  std::vector<std::string> keys;
  for (const auto& r : rows) keys.push_back(run_key(*r.e->record));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    StepRow& r = rows[i];
    const auto c = control_row(
        rows.size(), i, [&](std::size_t a, std::size_t b) { return keys[a] == keys[b]; },
        [&](std::size_t j) { return rows[j].e->without_recompute; });
    if (!c || *c == i) continue;
    const StepRow* control = &rows[*c];
    r.control = control->e;
    r.measured_overhead = r.measured_s / control->measured_s - 1.0;
    r.predicted_overhead = r.predicted_s / control->predicted_s - 1.0;
  }
  return rows;
}

}  // namespace peakcast::calibration
