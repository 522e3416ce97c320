#pragma once
// Every recipe of the Bridge catalogue predicted on its own GPU and world size (`peakcast recipes
// --predict`): the layout, the largest rank's peak and the verdict, or the first reason it cannot be
// simulated.
#include <string>
#include <vector>

#include "peakcast/model/recipes.hpp"
#include "peakcast/model/run_spec.hpp"
#include "peakcast/sim/prediction.hpp"
#include "peakcast/sim/verdict.hpp"

namespace peakcast::sim {

struct CatalogueRow {
  model::RecipeInfo recipe;
  bool predicted = false;
  std::string error_rule, error;  // the first error when not predicted
  std::string layout;             // "TP2 PP1 VPP- CP1 EP8 ETP1 SP, MBS 1 GBS 2048, seq 4096"
  std::string precision;          // "bf16", "bf16 + fp8 hybrid (tensorwise)", ...
  std::string recompute;          // "selective [core_attn]", "full uniform 1", "none"
  Bytes max_peak;
  Bytes capacity;
  bool fits = false, fits_with_allocator_reserve = false;
  FitKind verdict = FitKind::does_not_fit;  // run_verdict (verdict.hpp)
  std::int64_t margin = 0;
};

std::vector<CatalogueRow> predict_catalogue();

}  // namespace peakcast::sim
