#pragma once
// The catalogue of Megatron-Bridge 600d069b's recipes (configs/recipes/<function>.json): what each
// recipe function assigns, traced from the pinned code. `peakcast predict bridge:<function>` runs one.
#include <cstdint>
#include <string>
#include <vector>

namespace peakcast::model {

struct RecipeInfo {
  std::string name;    // the recipe function
  std::string source;  // bridge:path:line of its def
  std::string gpu;     // the recipe folder (h100, gb200, ...)
  std::int64_t num_gpus = 0;
  std::string task;   // pretrain, sft, peft (from the name)
  std::string model;  // the Hugging Face id, or the provider class the recipe builds
};

std::vector<RecipeInfo> recipe_catalogue();

}  // namespace peakcast::model
