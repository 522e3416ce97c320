#pragma once
// Inline-SVG charts for the HTML reports. Each function returns one <svg> element as text.
#include <string>
#include <vector>

#include "peakcast/sim/prediction.hpp"
#include "peakcast/sim/ranking.hpp"
#include "peakcast/sim/sweep.hpp"

namespace peakcast::cli::html {

std::string escape(const std::string& s);

// Live allocated bytes over the rank's schedule (events in order), phases shaded, capacity and
// optional budget lines.
std::string timeline_svg(const sim::RankPrediction& r, Bytes capacity, Bytes budget);

// One horizontal stacked bar per rank: parameters, gradients, optimizer states, activations,
// transient, other, at that rank's peak.
std::string breakdown_svg(const sim::Prediction& p);

// Candidates: replay time (x) vs max peak (y), budget line, viable green, not viable red.
std::string candidates_svg(const sim::Ranking& r);

// Heatmap over the first two axes; `headroom` picks headroom GB, otherwise fits.
std::string sweep_heatmap_svg(const sim::SweepResult& r, bool headroom);

// The CSS shared by every page.
const char* page_css();

}  // namespace peakcast::cli::html
