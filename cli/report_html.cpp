#include "report_html.hpp"

#include "output_file.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "peakcast/sim/verdict.hpp"
#include "report_html_svg.hpp"

namespace peakcast::cli {

namespace {

std::string gb(Bytes b, const char* fmt = "%.2f") {
  char buf[32];
  std::snprintf(buf, sizeof buf, fmt, b.gb());
  return buf;
}

std::string num(double v, const char* fmt) {
  char buf[48];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string page(const std::string& title, const std::string& subtitle, const std::string& body) {
  return "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>" + html::escape(title) +
         "</title><style>" + html::page_css() + "</style></head><body><h1>" + html::escape(title) +
         "</h1><p class='sub'>" + html::escape(subtitle) + "</p>" + body + "</body></html>\n";
}

bool write(const std::string& path, const std::string& text) { return write_output("--html", path, text); }

// Row classes and words of the one verdict (verdict.hpp).
const char* row_class(sim::FitKind k, sim::FitCause c = sim::FitCause::none) {
  if (k == sim::FitKind::does_not_fit) return c == sim::FitCause::reservation ? "frag" : "bad";
  return k == sim::FitKind::fits ? "ok" : "risk";
}

std::string run_subtitle(const model::RunSpec& spec) {
  const auto& m = spec.model;
  std::ostringstream os;
  os << m.preset.value_or("custom model") << " on " << spec.cluster.num_gpus << " x " << spec.cluster.gpu.name
     << ", TP" << m.tensor_model_parallel_size << " PP" << m.pipeline_model_parallel_size;
  if (m.virtual_pipeline_model_parallel_size) os << " VPP" << *m.virtual_pipeline_model_parallel_size;
  os << " CP" << m.context_parallel_size << " EP" << m.expert_model_parallel_size << (m.sequence_parallel ? " SP" : "")
     << ", seq " << m.seq_length << ", micro-batch " << spec.train.micro_batch_size;
  return os.str();
}

// Timelines and breakdown of one prediction (shared by predict and rank pages).
std::string prediction_sections(const sim::Prediction& p, Bytes budget) {
  std::ostringstream os;
  os << "<table><tr><th>pp_rank</th><th>ep_rank</th><th>peak GB</th><th>steady GB</th><th class='l'>phase</th><th class='l'>peak op</th>"
        "<th>reserved GB</th><th>replay s</th><th>step s</th><th class='l'>verdict</th></tr>";
  for (const auto& r : p.ranks) {
    const sim::Verdict v = sim::rank_verdict(r, p.capacity);
    os << "<tr class='" << row_class(v.kind, v.cause) << "'><td>" << r.rank.pp_rank << "</td><td>" << r.rank.ep_rank << "</td><td>" << gb(r.peak_allocated)
       << "</td><td>" << gb(r.steady_peak_allocated) << "</td><td class='l'>" << sim::to_string(r.peak_phase)
       << (r.peak_in_first_iteration ? " (first iteration)" : "") << "</td><td class='l'>" << html::escape(r.peak_op)
       << "</td><td title='" << (v.reservation_replayed ? "replayed caching allocator" : "p90 of measured reserved / allocated")
       << "'>" << gb(v.reservation) << "</td><td>" << num(r.replay_time_s, "%.4f") << "</td><td>" << num(r.step_time_s, "%.3f")
       << "</td><td class='l'>" << html::escape(sim::short_label(v.kind)) << ": " << html::escape(v.reason) << "</td></tr>";
  }
  os << "</table>";
  os << "<h2>Breakdown at each rank's peak (GB)</h2>" << html::breakdown_svg(p);
  os << "<h2>Memory timeline per rank</h2>";
  for (const auto& r : p.ranks) {
    os << "<h3 style='font-size:14px'>pp_rank " << r.rank.pp_rank << ", ep_rank " << r.rank.ep_rank << ": peak " << gb(r.peak_allocated) << " GB in "
       << sim::to_string(r.peak_phase) << " at " << html::escape(r.peak_op) << "</h3>";
    if (r.timeline.empty()) os << "<p class='sub'>no timeline recorded</p>";
    else os << html::timeline_svg(r, p.capacity, budget);
  }
  return os.str();
}

}  // namespace

bool write_predict_html(const std::string& path, const model::RunSpec& spec, const sim::Prediction& p) {
  std::ostringstream body;
  const sim::Verdict v = sim::run_verdict(p);
  body << "<p>Max peak <b>" << gb(p.max_peak_allocated) << " GB</b> of " << gb(p.capacity) << " GB, reserved <b>"
       << gb(v.reservation) << " GB</b> (" << (v.reservation_replayed ? "replayed caching allocator" : "p90 estimate from measured runs")
       << "): <b>"
       << (v.kind == sim::FitKind::fits ? "fits on every rank"
                                        : (v.kind == sim::FitKind::does_not_fit
                                               ? (v.cause == sim::FitCause::reservation ? "DOES NOT FIT (the allocator's reservation)"
                                                                                        : "DOES NOT FIT")
                                               : "AT RISK: fits by allocated bytes, not with the reservation"))
       << "</b> (" << html::escape(v.reason) << "). Step " << num(p.step_time_s, "%.3f")
       << " s, of which replay " << num(p.replay_time_s, "%.4f") << " s. Calibration profile: "
       << html::escape(p.calibration_profile) << ".</p>";
  for (const auto& r : p.ranks)
    if (r.allocator && r.allocator->routing_band) {
      const auto& band = *r.allocator->routing_band;
      body << "<p>pp_rank " << r.rank.pp_rank << " under " << band.samples << " sampled routings (expert load 1 &plusmn; "
           << num(band.sigma, "%.3f") << "): reserved " << gb(band.min) << " to " << gb(band.max) << " GB, median "
           << gb(band.median) << " GB (the verdict takes balanced routing's " << gb(r.allocator->peak_reserved) << " GB).</p>";
    }
  body << prediction_sections(p, Bytes{});
  return write(path, page("peakcast predict", run_subtitle(spec), body.str()));
}

bool write_rank_html(const std::string& path, const model::RunSpec& spec, const sim::Ranking& r,
                     const std::optional<sim::Prediction>& shown) {
  std::ostringstream body;
  std::size_t viable = 0;
  for (const auto& c : r.candidates) viable += c.viable ? 1 : 0;
  body << "<p>Budget <b>" << gb(r.budget) << " GB</b> per GPU. " << r.candidates.size() << " candidates, " << viable
       << " viable, " << r.rejected.size() << " rejected by Megatron's rules. Narrowest viable: <b>"
       << (r.narrowest_viable ? html::escape(r.candidates[*r.narrowest_viable].label) : std::string("none"))
       << "</b>.</p>";
  body << "<p>Order: " << (r.order == sim::RankOrder::narrowest ? "viable selective boundaries first, then whole-layer recompute and CPU offloading (the "
                                                                  "seed's escalation rule), each by replay time, then peak"
                                                                : "viable by replay time, then peak");
  if (r.cheapest_viable && r.cheapest_viable != r.narrowest_viable)
    body << ". Least replay time: <b>" << html::escape(r.candidates[*r.cheapest_viable].label) << "</b> ("
         << num(r.candidates[*r.cheapest_viable].replay_time_s, "%.4f") << " s)";
  body << ".";
  if (r.moe_routing_imbalance != 1.0)
    body << " MoE: every rank checked at the busiest expert-parallel rank's load, " << num(r.moe_routing_imbalance, "%.3f")
         << " x balanced.";
  body << "</p>";
  body << "<h2>Candidates: replay time vs peak</h2>" << html::candidates_svg(r);
  // The timelines of the narrowest viable policy (or the cheapest non-viable one when none fits).
  if (!r.candidates.empty() && shown) {
    const auto& label = r.candidates[r.narrowest_viable.value_or(0)].label;
    body << "<h2>Policy " << html::escape(label) << (r.narrowest_viable ? " (narrowest viable)" : " (lowest peak; nothing fits)")
         << "</h2>" << prediction_sections(*shown, r.budget);
  }
  body << "<h2>All candidates</h2><table><tr><th>#</th><th class='l'>policy</th><th class='l'>viable</th><th>peak GB</th>"
          "<th>replay s</th><th>step s</th><th class='l'>why not viable / notes</th></tr>";
  int i = 0;
  for (const auto& c : r.candidates) {
    std::string notes = c.reason;
    for (const auto t : c.ineffective_tags) notes += (notes.empty() ? "" : "; ") + std::string(model::to_string(t)) + " has no effect on the peak";
    body << "<tr class='" << row_class(c.verdict, c.cause) << "'><td>" << ++i << "</td><td class='l'>" << html::escape(c.label)
         << "</td><td class='l'>" << (c.viable ? "yes" : std::string("no: ") + sim::short_label(c.verdict)) << "</td><td>" << gb(c.max_peak) << "</td><td>"
         << num(c.replay_time_s, "%.4f") << "</td><td>" << num(c.step_time_s, "%.3f") << "</td><td class='l'>"
         << html::escape(notes) << "</td></tr>";
  }
  body << "</table>";
  if (!r.rejected.empty()) {
    body << "<h2>Rejected by Megatron</h2><table><tr><th class='l'>policy</th><th class='l'>rule</th></tr>";
    for (const auto& x : r.rejected)
      body << "<tr><td class='l'>" << html::escape(sim::describe(x.choice)) << "</td><td class='l'>" << html::escape(x.reason)
           << "</td></tr>";
    body << "</table>";
  }
  return write(path, page("peakcast rank", run_subtitle(spec), body.str()));
}

bool write_sweep_html(const std::string& path, const sim::SweepResult& r) {
  std::ostringstream body;
  std::size_t fits = 0, risk = 0;
  for (const auto& p : r.points) {
    fits += p.valid && p.verdict == sim::FitKind::fits ? 1 : 0;
    risk += p.valid && p.verdict == sim::FitKind::fits_without_reservation_margin ? 1 : 0;
  }
  body << "<p>" << r.points.size() << " points, " << r.invalid_count() << " invalid (skipped), " << fits << " fit, " << risk
       << " at risk (allocated fits, the caching allocator's reservation does not).</p>";
  if (r.axes.size() > 2)
    body << "<p class='sub'>Cells aggregate over the other varied keys: how many points fit, and the best headroom.</p>";
  body << "<h2>Fits</h2>" << html::sweep_heatmap_svg(r, false);
  body << "<h2>Headroom GB (limit minus max peak)</h2>" << html::sweep_heatmap_svg(r, true);
  body << "<h2>All points</h2><table><tr>";
  // The key's last segment heads the column (the full key is its tooltip): "model.seq_length" -> "seq_length".
  for (const auto& a : r.axes)
    body << "<th class='l' title='" << html::escape(a.key) << "'>" << html::escape(a.key.substr(a.key.rfind('.') + 1))
         << "</th>";
  body << "<th class='l'>fits</th><th>max peak GB</th><th>headroom GB</th><th>peak pp_rank</th><th class='l'>phase</th>"
          "<th>step s</th><th>replay s</th><th class='l'>error</th></tr>";
  constexpr std::size_t kMaxRows = 5000;  // the CSV has them all; a page this long is unreadable anyway
  for (std::size_t i = 0; i < r.points.size() && i < kMaxRows; ++i) {
    const auto& p = r.points[i];
    body << "<tr class='" << (p.valid ? row_class(p.verdict, p.cause) : "bad") << "'>";
    for (const auto& v : p.values) body << "<td class='l'>" << html::escape(v) << "</td>";
    if (p.valid)
      body << "<td class='l'>" << sim::short_label(p.verdict) << "</td><td>" << gb(p.max_peak) << "</td><td>"
           << gb(p.headroom()) << "</td><td>" << p.peak_pp_rank << "</td><td class='l'>" << sim::to_string(p.peak_phase)
           << "</td><td>" << num(p.step_time_s, "%.3f") << "</td><td>" << num(p.replay_time_s, "%.4f") << "</td><td></td>";
    else
      body << "<td class='l'>invalid</td><td></td><td></td><td></td><td></td><td></td><td></td><td class='l err'>"
           << html::escape(p.error) << "</td>";
    body << "</tr>";
  }
  body << "</table>";
  if (r.points.size() > kMaxRows) body << "<p class='sub'>first " << kMaxRows << " points shown; see --csv for all</p>";
  return write(path, page("peakcast sweep", "what-if over " + std::to_string(r.axes.size()) + " spec keys", body.str()));
}

}  // namespace peakcast::cli
