// peakcast recipes [--predict] [--json]: the Bridge recipe catalogue (bridge:<function> names), with
// --predict each one predicted on its GPU and world size.
#include <cstdio>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "peakcast/model/recipes.hpp"
#include "peakcast/sim/catalogue.hpp"

namespace peakcast::cli {

namespace {

// One recipe's catalogue fields (RecipeInfo), the same in `recipes --json` and `recipes --predict --json`.
nlohmann::json recipe_json(const model::RecipeInfo& r) {
  return {{"name", r.name}, {"source", r.source}, {"gpu", r.gpu}, {"num_gpus", r.num_gpus}, {"task", r.task}, {"model", r.model}};
}

struct RecipesArgs {
  bool predict = false, json = false;
};

// The one verdict's words (verdict.hpp), as predict, sweep and rank use them.
std::string verdict(const sim::CatalogueRow& r) { return r.predicted ? sim::short_label(r.verdict) : "-"; }
}  // namespace

Runner add_recipes_command(CLI::App& app) {
  auto args = std::make_shared<RecipesArgs>();
  CLI::App* sub = app.add_subcommand("recipes", "The pinned Megatron-Bridge recipes peakcast reads as bridge:<function>");
  sub->add_flag("--predict", args->predict, "Predict each recipe on its GPU and world size (layout, peak, verdict, or why not)");
  sub->add_flag("--json", args->json, "Print the catalogue as JSON");
  return [args] {
    if (!args->predict) {
      const auto list = model::recipe_catalogue();
      if (args->json) {
        nlohmann::json j = nlohmann::json::array();
        for (const auto& r : list)
          j.push_back(recipe_json(r));
        std::cout << j.dump(2) << "\n";
        return kExitOk;
      }
      for (const auto& r : list)
        std::printf("bridge:%-64s %-8s %-6s %5lld GPUs  %s\n", r.name.c_str(), r.task.c_str(), r.gpu.c_str(),
                    static_cast<long long>(r.num_gpus), r.model.c_str());
      return kExitOk;
    }
    const auto rows = sim::predict_catalogue();
    if (args->json) {
      nlohmann::json j = nlohmann::json::array();
      for (const auto& r : rows) {
        nlohmann::json x = recipe_json(r.recipe);  // the list's fields, as docs/interface.md says
        x["predicted"] = r.predicted;
        if (r.predicted) {
          x["layout"] = r.layout;
          x["precision"] = r.precision;
          x["recompute"] = r.recompute;
          x["max_peak_allocated_bytes"] = r.max_peak.value;
          x["capacity_bytes"] = r.capacity.value;
          x["fits"] = r.fits;
          x["fits_with_allocator_reserve"] = r.fits_with_allocator_reserve;
          x["verdict"] = sim::to_string(r.verdict);
          x["margin_bytes"] = r.margin;
        } else {
          x["error_rule"] = r.error_rule;
          x["error"] = r.error;
        }
        j.push_back(x);
      }
      std::cout << j.dump(2) << "\n";
      return kExitOk;
    }
    int predicted = 0;
    for (const auto& r : rows) {
      predicted += r.predicted;
      if (r.predicted)
        std::printf("%-62s %-6s %5lld  %-44s %-30s %8.2f GB  %s\n", r.recipe.name.c_str(), r.recipe.gpu.c_str(),
                    static_cast<long long>(r.recipe.num_gpus), r.layout.c_str(), r.recompute.c_str(), r.max_peak.gb(), verdict(r).c_str());
      else
        std::printf("%-62s %-6s %5lld  not simulated: [%s] %s\n", r.recipe.name.c_str(), r.recipe.gpu.c_str(),
                    static_cast<long long>(r.recipe.num_gpus), r.error_rule.c_str(), r.error.substr(0, 160).c_str());
    }
    std::printf("\n%d of %zu recipes predicted\n", predicted, rows.size());
    return kExitOk;
  };
}

}  // namespace peakcast::cli
