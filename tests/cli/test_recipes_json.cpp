// `recipes --json` and `recipes --predict --json` carry the catalogue fields docs/interface.md lists for every recipe.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "run_peakcast.hpp"

TEST_CASE("recipes --json and --predict --json carry each recipe's catalogue fields", "[cli][recipes]") {
  for (const char* args : {"recipes --json", "recipes --predict --json"}) {
    INFO(args);
    const auto r = peakcast_test::run(args);
    REQUIRE(r.status == 0);
    const auto j = nlohmann::json::parse(r.out);
    REQUIRE(j.is_array());
    REQUIRE_FALSE(j.empty());
    for (const auto& x : j) {
      for (const char* key : {"name", "source", "gpu", "num_gpus", "task", "model"}) CHECK(x.contains(key));
      CHECK((x["task"] == "pretrain" || x["task"] == "sft" || x["task"] == "peft"));
    }
  }
}
