#include "report_html_svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>

namespace peakcast::cli::html {

namespace {

std::string f(double v, const char* fmt = "%.1f") {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

const char* phase_color(sim::Phase p) {
  switch (p) {
    case sim::Phase::forward: return "#dbeafe";
    case sim::Phase::backward: return "#fde7d0";
    case sim::Phase::grad_sync: return "#e9d5ff";
    case sim::Phase::optimizer: return "#d1fae5";
  }
  return "#eee";
}

// A "nice" axis maximum and tick step for values up to `v`.
std::pair<double, double> nice_axis(double v) {
  if (v <= 0) return {1, 0.25};
  const double mag = std::pow(10.0, std::floor(std::log10(v)));
  for (const double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= v) return {m * mag, m * mag / (m == 2.5 ? 5 : (m == 2.0 ? 4 : 5))};
  return {v, v / 4};
}

struct Frame {
  double x0 = 70, y0 = 20, w = 1000, h = 260;  // plot area
  double xmax = 1, ymin = 0, ymax = 1;
  double x(double v) const { return x0 + w * v / xmax; }
  double y(double v) const { return y0 + h - h * (v - ymin) / (ymax - ymin); }
};

// Enough decimals to tell ticks `step` apart (36.0, 36.2, ... on a zoomed axis).
const char* tick_format(double step) {
  if (step >= 1) return "%.0f";
  if (step >= 0.1) return "%.1f";
  if (step >= 0.01) return "%.2f";
  return "%.3g";
}

void y_axis(std::ostringstream& os, const Frame& fr, double step, const std::string& label) {
  for (double v = fr.ymin; v <= fr.ymax + 1e-9; v += step) {
    os << "<line x1='" << fr.x0 << "' x2='" << fr.x0 + fr.w << "' y1='" << f(fr.y(v)) << "' y2='" << f(fr.y(v))
       << "' class='grid'/><text x='" << fr.x0 - 6 << "' y='" << f(fr.y(v) + 4) << "' class='tick' text-anchor='end'>"
       << f(v, tick_format(step)) << "</text>";
  }
  os << "<text x='14' y='" << f(fr.y0 + fr.h / 2) << "' class='axis' transform='rotate(-90 14 " << f(fr.y0 + fr.h / 2)
     << ")' text-anchor='middle'>" << escape(label) << "</text>";
}

void hline(std::ostringstream& os, const Frame& fr, double v, const char* cls, const std::string& label) {
  os << "<line x1='" << fr.x0 << "' x2='" << fr.x0 + fr.w << "' y1='" << f(fr.y(v)) << "' y2='" << f(fr.y(v))
     << "' class='" << cls << "'/><text x='" << fr.x0 + fr.w - 4 << "' y='" << f(fr.y(v) - 4) << "' class='" << cls
     << "-label' text-anchor='end'>" << escape(label) << "</text>";
}

}  // namespace

std::string escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string timeline_svg(const sim::RankPrediction& r, Bytes capacity, Bytes budget) {
  std::ostringstream os;
  Frame fr;
  const auto& ev = r.timeline;
  const std::size_t n = ev.size();
  double top = std::max(capacity.gb(), budget.gb());
  for (const auto& e : ev) top = std::max(top, e.live.gb());
  const auto [ymax, step] = nice_axis(top * 1.05);
  fr.ymax = ymax;
  fr.xmax = static_cast<double>(std::max<std::size_t>(n, 1));
  os << "<svg xmlns='http://www.w3.org/2000/svg' width='1100' height='350' role='img'>";
  // Phase shading: one rect per run of events in the same phase.
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j < n && ev[j].phase == ev[i].phase && ev[j].iteration == ev[i].iteration) ++j;
    const double xa = fr.x(static_cast<double>(i)), xb = fr.x(static_cast<double>(j));
    os << "<rect x='" << f(xa) << "' y='" << fr.y0 << "' width='" << f(std::max(xb - xa, 1.0)) << "' height='" << fr.h
       << "' fill='" << phase_color(ev[i].phase) << "'><title>iteration " << ev[i].iteration << ", "
       << sim::to_string(ev[i].phase) << "</title></rect>";
    i = j;
  }
  // Iteration boundary.
  for (std::size_t i = 1; i < n; ++i)
    if (ev[i].iteration != ev[i - 1].iteration) {
      os << "<line x1='" << f(fr.x(static_cast<double>(i))) << "' x2='" << f(fr.x(static_cast<double>(i))) << "' y1='"
         << fr.y0 << "' y2='" << fr.y0 + fr.h << "' class='iter'/><text x='" << f(fr.x(static_cast<double>(i)) + 4)
         << "' y='" << fr.y0 + 12 << "' class='tick'>iteration " << ev[i].iteration << "</text>";
    }
  y_axis(os, fr, step, "allocated GB");
  // Downsample to at most ~2 points per pixel column, keeping each column's min and max.
  const std::size_t columns = static_cast<std::size_t>(fr.w);
  std::ostringstream pts;
  if (n > 0) {
    const std::size_t per = std::max<std::size_t>(1, n / columns);
    for (std::size_t i = 0; i < n; i += per) {
      Bytes lo = ev[i].live, hi = ev[i].live;
      std::size_t ilo = i, ihi = i;
      for (std::size_t k = i; k < std::min(n, i + per); ++k) {
        if (ev[k].live < lo) {
          lo = ev[k].live;
          ilo = k;
        }
        if (ev[k].live > hi) {
          hi = ev[k].live;
          ihi = k;
        }
      }
      const std::size_t a = std::min(ilo, ihi), b = std::max(ilo, ihi);
      pts << f(fr.x(static_cast<double>(a))) << "," << f(fr.y(ev[a].live.gb())) << " ";
      if (b != a) pts << f(fr.x(static_cast<double>(b))) << "," << f(fr.y(ev[b].live.gb())) << " ";
    }
  }
  os << "<polyline points='" << pts.str() << "' class='live'/>";
  hline(os, fr, capacity.gb(), "cap", "capacity " + f(capacity.gb(), "%.1f") + " GB");
  if (budget.value > 0 && budget != capacity) hline(os, fr, budget.gb(), "budget", "budget " + f(budget.gb(), "%.1f") + " GB");
  // Peak marker.
  for (std::size_t i = 0; i < n; ++i)
    if (ev[i].live == r.peak_allocated) {
      os << "<circle cx='" << f(fr.x(static_cast<double>(i))) << "' cy='" << f(fr.y(ev[i].live.gb()))
         << "' r='4' class='peak'><title>peak " << f(r.peak_allocated.gb(), "%.2f") << " GB at " << escape(ev[i].op)
         << "</title></circle>";
      break;
    }
  os << "<text x='" << fr.x0 + fr.w / 2 << "' y='" << fr.y0 + fr.h + 22 << "' class='axis' text-anchor='middle'>"
     << "memory events in schedule order (" << n << " events, two iterations)</text>";
  // Legend.
  double lx = fr.x0;
  for (const auto ph : {sim::Phase::forward, sim::Phase::backward, sim::Phase::grad_sync, sim::Phase::optimizer}) {
    os << "<rect x='" << lx << "' y='" << fr.y0 + fr.h + 30 << "' width='12' height='12' fill='" << phase_color(ph)
       << "' stroke='#999'/><text x='" << lx + 16 << "' y='" << fr.y0 + fr.h + 40 << "' class='tick'>"
       << sim::to_string(ph) << "</text>";
    lx += 110;
  }
  os << "</svg>";
  return os.str();
}

std::string breakdown_svg(const sim::Prediction& p) {
  static const char* names[] = {"parameters", "gradients", "optimizer states", "activations", "transient", "other"};
  static const char* colors[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#edc948", "#b07aa1"};
  std::ostringstream os;
  const double row = 26, x0 = 90, w = 900;
  double top = p.capacity.gb();
  for (const auto& r : p.ranks) top = std::max(top, r.breakdown.total().gb());
  const auto [xmax, step] = nice_axis(top);
  const double height = 40 + row * static_cast<double>(p.ranks.size()) + 40;
  os << "<svg xmlns='http://www.w3.org/2000/svg' width='1100' height='" << height << "' role='img'>";
  for (double v = 0; v <= xmax + 1e-9; v += step) {
    const double x = x0 + w * v / xmax;
    os << "<line x1='" << f(x) << "' x2='" << f(x) << "' y1='10' y2='" << f(height - 40) << "' class='grid'/><text x='"
       << f(x) << "' y='" << f(height - 26) << "' class='tick' text-anchor='middle'>" << f(v, "%.0f") << "</text>";
  }
  double y = 14;
  for (const auto& r : p.ranks) {
    const Bytes parts[] = {r.breakdown.parameters, r.breakdown.gradients, r.breakdown.optimizer_states,
                           r.breakdown.activations, r.breakdown.transient, r.breakdown.other};
    os << "<text x='" << x0 - 8 << "' y='" << f(y + 15) << "' class='tick' text-anchor='end'>pp " << r.rank.pp_rank
       << " ep " << r.rank.ep_rank << "</text>";
    double x = x0;
    for (int k = 0; k < 6; ++k) {
      const double bw = w * parts[k].gb() / xmax;
      os << "<rect x='" << f(x) << "' y='" << f(y) << "' width='" << f(std::max(bw, 0.0), "%.2f") << "' height='"
         << row - 6 << "' fill='" << colors[k] << "'><title>" << names[k] << ": " << f(parts[k].gb(), "%.2f")
         << " GB</title></rect>";
      x += bw;
    }
    os << "<text x='" << f(x + 6) << "' y='" << f(y + 15) << "' class='tick'>" << f(r.peak_allocated.gb(), "%.1f")
       << " GB, " << sim::to_string(r.peak_phase) << "</text>";
    y += row;
  }
  const double cx = x0 + w * p.capacity.gb() / xmax;
  os << "<line x1='" << f(cx) << "' x2='" << f(cx) << "' y1='6' y2='" << f(height - 40) << "' class='cap'/>";
  double lx = x0;
  for (int k = 0; k < 6; ++k) {
    os << "<rect x='" << f(lx) << "' y='" << f(height - 16) << "' width='12' height='12' fill='" << colors[k]
       << "'/><text x='" << f(lx + 16) << "' y='" << f(height - 6) << "' class='tick'>" << names[k] << "</text>";
    lx += 130;
  }
  os << "<text x='" << f(lx + 10) << "' y='" << f(height - 6) << "' class='cap-label'>| capacity</text>";
  os << "</svg>";
  return os.str();
}

// Each verdict and cause its own class (verdict.hpp): a reservation over the GPU is not an
// allocated peak over the budget.
const char* verdict_class(sim::FitKind k, sim::FitCause c) {
  switch (k) {
    case sim::FitKind::fits: return "ok";
    case sim::FitKind::fits_without_reservation_margin: return "risk";
    case sim::FitKind::does_not_fit: return c == sim::FitCause::reservation ? "frag" : "bad";
  }
  return "bad";
}

std::string candidates_svg(const sim::Ranking& r) {
  std::ostringstream os;
  Frame fr;
  fr.h = 380;
  double xtop = 0, ytop = r.budget.gb(), ybot = r.budget.gb();
  for (const auto& c : r.candidates) {
    xtop = std::max(xtop, c.replay_time_s);
    ytop = std::max(ytop, c.max_peak.gb());
    ybot = std::min(ybot, c.max_peak.gb());
  }
  const auto [xmax, xstep] = nice_axis(xtop > 0 ? xtop * 1.05 : 1e-3);
  // Peaks often sit within a few percent of the budget: zoom the peak axis on them and the budget.
  const double span = std::max(ytop - ybot, 0.01 * ytop);
  const double ystep = nice_axis(span * 1.2).second;
  fr.xmax = xmax;
  fr.ymin = std::max(0.0, std::floor((ybot - 0.1 * span) / ystep) * ystep);
  fr.ymax = std::ceil((ytop + 0.1 * span) / ystep) * ystep;
  if (fr.ymax <= fr.ymin) fr.ymax = fr.ymin + ystep;
  os << "<svg xmlns='http://www.w3.org/2000/svg' width='1100' height='490' role='img'>";
  y_axis(os, fr, ystep, "max peak GB");
  for (double v = 0; v <= xmax + 1e-12; v += xstep)
    os << "<text x='" << f(fr.x(v)) << "' y='" << f(fr.y0 + fr.h + 16) << "' class='tick' text-anchor='middle'>"
       << f(v, "%.3g") << "</text>";
  os << "<text x='" << f(fr.x0 + fr.w / 2) << "' y='" << f(fr.y0 + fr.h + 36)
     << "' class='axis' text-anchor='middle'>replay time per iteration, s (busiest rank)</text>";
  hline(os, fr, r.budget.gb(), "budget", "budget " + f(r.budget.gb(), "%.1f") + " GB");
  for (std::size_t i = r.candidates.size(); i-- > 0;) {
    const auto& c = r.candidates[i];
    const bool best = r.narrowest_viable && *r.narrowest_viable == i;
    const bool cheapest = !best && r.cheapest_viable && *r.cheapest_viable == i;
    os << "<circle cx='" << f(fr.x(c.replay_time_s)) << "' cy='" << f(fr.y(c.max_peak.gb())) << "' r='" << (best ? 7 : 4)
       << "' class='" << verdict_class(c.verdict, c.cause) << (best ? " best" : "") << "'><title>" << escape(c.label) << ": "
       << f(c.max_peak.gb(), "%.2f") << " GB, replay " << f(c.replay_time_s, "%.4f") << " s"
       << (c.viable ? "" : " — " + escape(c.reason)) << "</title></circle>";
    if (best)
      os << "<text x='" << f(fr.x(c.replay_time_s) + 10) << "' y='" << f(fr.y(c.max_peak.gb()) + 16)
         << "' class='best-label'>narrowest viable: " << escape(c.label) << "</text>";
    if (cheapest)
      os << "<text x='" << f(fr.x(c.replay_time_s) + 10) << "' y='" << f(fr.y(c.max_peak.gb()) - 10)
         << "' class='best-label'>least replay: " << escape(c.label) << "</text>";
  }
  // Each reason as it is (verdict.hpp), whichever side of the budget line the dot lies.
  const std::tuple<sim::FitKind, sim::FitCause, const char*> legend[] = {
      {sim::FitKind::fits, sim::FitCause::none, "viable"},
      {sim::FitKind::fits_without_reservation_margin, sim::FitCause::reservation, "at risk: the reservation is at the GPU's edge"},
      {sim::FitKind::does_not_fit, sim::FitCause::allocated,
       r.headroom_sigma > 0 ? "allocated peak with the headroom over the budget" : "allocated peak over the budget"},
      {sim::FitKind::does_not_fit, sim::FitCause::reservation, "the allocator's reservation over the GPU"}};
  double lx = fr.x0 + 10;
  for (const auto& [kind, cause, text] : legend) {
    os << "<circle cx='" << f(lx) << "' cy='" << fr.y0 + fr.h + 52 << "' r='5' class='" << verdict_class(kind, cause)
       << "'/><text x='" << f(lx + 10) << "' y='" << fr.y0 + fr.h + 56 << "' class='tick'>" << text << "</text>";
    lx += 40 + 6.2 * static_cast<double>(std::string(text).size());
  }
  os << "</svg>";
  return os.str();
}

std::string sweep_heatmap_svg(const sim::SweepResult& r, bool headroom) {
  std::ostringstream os;
  if (r.axes.empty()) return {};
  const auto& xs = r.axes[0].values;
  static const std::vector<std::string> one{""};
  const auto& ys = r.axes.size() > 1 ? r.axes[1].values : one;
  // Cells aggregate over the remaining axes: how many valid points fit, and the best headroom.
  struct Cell {
    int valid = 0, fit = 0, risk = 0;
    double best = -1e300;
  };
  std::map<std::pair<std::size_t, std::size_t>, Cell> cells;
  const std::size_t inner = r.points.size() / std::max<std::size_t>(1, xs.size() * ys.size());
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    const std::size_t xi = i / (inner * ys.size()), yi = (i / inner) % ys.size();
    Cell& c = cells[{xi, yi}];
    const auto& p = r.points[i];
    if (!p.valid) continue;
    ++c.valid;
    c.fit += p.verdict == sim::FitKind::fits ? 1 : 0;
    c.risk += p.verdict == sim::FitKind::fits_without_reservation_margin ? 1 : 0;
    c.best = std::max(c.best, p.headroom().gb());
  }
  double span = 1;
  for (const auto& [k, c] : cells)
    if (c.valid) span = std::max(span, std::fabs(c.best));
  const double cw = std::min(140.0, 900.0 / static_cast<double>(xs.size())), ch = std::min(44.0, 500.0 / static_cast<double>(ys.size()));
  const double x0 = 230, y0 = 40;
  const double width = x0 + cw * static_cast<double>(xs.size()) + 20, height = y0 + ch * static_cast<double>(ys.size()) + 30;
  os << "<svg xmlns='http://www.w3.org/2000/svg' width='" << f(std::max(width, 600.0)) << "' height='" << f(height) << "' role='img'>";
  os << "<text x='" << f(x0) << "' y='16' class='axis'>" << escape(r.axes[0].key) << " →</text>";
  if (r.axes.size() > 1) os << "<text x='8' y='32' class='axis'>" << escape(r.axes[1].key) << " ↓</text>";
  for (std::size_t xi = 0; xi < xs.size(); ++xi)
    os << "<text x='" << f(x0 + cw * (static_cast<double>(xi) + 0.5)) << "' y='" << f(y0 - 6)
       << "' class='tick' text-anchor='middle'>" << escape(xs[xi]) << "</text>";
  for (std::size_t yi = 0; yi < ys.size(); ++yi) {
    os << "<text x='" << f(x0 - 6) << "' y='" << f(y0 + ch * (static_cast<double>(yi) + 0.5) + 4)
       << "' class='tick' text-anchor='end'>" << escape(ys[yi]) << "</text>";
    for (std::size_t xi = 0; xi < xs.size(); ++xi) {
      const Cell& c = cells[{xi, yi}];
      std::string fill = "#d4d4d4", text = "invalid";
      if (c.valid) {
        if (headroom) {
          const double t = std::min(1.0, std::fabs(c.best) / span);
          // Any shortfall is clearly red; depth grows with the size of the shortfall.
          const int shade = static_cast<int>(c.best >= 0 ? 235 - 150 * t : 190 - 110 * t);
          fill = c.best >= 0 ? "rgb(" + std::to_string(shade) + ",230," + std::to_string(shade) + ")"
                             : "rgb(245," + std::to_string(shade) + "," + std::to_string(shade) + ")";
          text = f(c.best, "%+.1f");
        } else {
          // The verdict (verdict.hpp): fits, at risk (the reservation over the GPU), does not fit.
          fill = c.fit == c.valid ? "#86d39a" : (c.fit + c.risk == 0 ? "#f19a9a" : "#f5d58a");
          text = inner > 1 ? std::to_string(c.fit) + "/" + std::to_string(c.valid) + " fit" +
                                 (c.risk ? ", " + std::to_string(c.risk) + " at risk" : std::string())
                           : (c.fit ? "fits" : (c.risk ? "at risk" : "OOM"));
        }
      }
      const double cx = x0 + cw * static_cast<double>(xi), cy = y0 + ch * static_cast<double>(yi);
      os << "<rect x='" << f(cx) << "' y='" << f(cy) << "' width='" << f(cw - 2) << "' height='" << f(ch - 2)
         << "' fill='" << fill << "'><title>" << escape(xs[xi]) << " / " << escape(ys[yi]) << ": " << escape(text)
         << "</title></rect><text x='" << f(cx + cw / 2) << "' y='" << f(cy + ch / 2 + 4)
         << "' class='cell' text-anchor='middle'>" << escape(text) << "</text>";
    }
  }
  os << "</svg>";
  return os.str();
}

const char* page_css() {
  return R"css(
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; margin: 24px; color: #1f2937; max-width: 1200px; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #e5e7eb; padding-bottom: 4px; }
.sub { color: #6b7280; font-size: 13px; margin-top: 0; }
table { border-collapse: collapse; font-size: 12px; margin-top: 8px; }
th, td { border: 1px solid #e5e7eb; padding: 3px 8px; text-align: right; } th { background: #f3f4f6; }
td.l, th.l { text-align: left; } td.err { min-width: 36em; }
tr.bad td { color: #991b1b; } tr.ok td { color: #14532d; }
svg text { font-family: inherit; }
.grid { stroke: #e5e7eb; stroke-width: 1; } .tick { font-size: 11px; fill: #4b5563; } .axis { font-size: 12px; fill: #111827; }
.cell { font-size: 11px; fill: #111827; }
.live { fill: none; stroke: #1d4ed8; stroke-width: 1.3; }
.cap { stroke: #dc2626; stroke-width: 1.5; stroke-dasharray: 6 4; } .cap-label { font-size: 11px; fill: #dc2626; }
.budget { stroke: #9333ea; stroke-width: 1.5; stroke-dasharray: 3 3; } .budget-label { font-size: 11px; fill: #9333ea; }
.iter { stroke: #374151; stroke-width: 1; stroke-dasharray: 2 2; }
.peak { fill: #dc2626; } .ok { fill: #16a34a; fill-opacity: 0.75; } .bad { fill: #dc2626; fill-opacity: 0.6; }
.risk { fill: #d97706; fill-opacity: 0.75; } tr.risk td { color: #92400e; }
.frag { fill: #7c3aed; fill-opacity: 0.7; } tr.frag td { color: #5b21b6; }
.best { stroke: #111827; stroke-width: 2; } .best-label { font-size: 12px; font-weight: 600; fill: #14532d; }
)css";
}

}  // namespace peakcast::cli::html
