#pragma once
// `--html FILE` of predict, rank and sweep: one self-contained page (inline CSS and SVG, no scripts,
// no external fonts or assets) a user can open offline or attach to a ticket.
#include <optional>
#include <string>

#include "peakcast/model/run_spec.hpp"
#include "peakcast/sim/prediction.hpp"
#include "peakcast/sim/ranking.hpp"
#include "peakcast/sim/sweep.hpp"

namespace peakcast::cli {

// `p` should carry timelines (PredictOptions::record_timeline). Returns false when FILE cannot be written.
bool write_predict_html(const std::string& path, const model::RunSpec& spec, const sim::Prediction& p);

// Candidates as replay time vs peak, plus the shown policy's timelines and breakdown
// (`shown`: sim::shown_candidate_prediction).
bool write_rank_html(const std::string& path, const model::RunSpec& spec, const sim::Ranking& r,
                     const std::optional<sim::Prediction>& shown);

// Fits and headroom heatmaps over the first two varied keys, plus the full table.
bool write_sweep_html(const std::string& path, const sim::SweepResult& r);

}  // namespace peakcast::cli
