// Unsimulated-key warnings (model/src/unsimulated_keys.cpp): the applies_when grammar, and every
// condition of configs/schema/memory_effect.json reads under it.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "spec_reader.hpp"
#include "unsimulated_keys.hpp"

using nlohmann::json;
using namespace peakcast::model::detail;

namespace {

const json kDoc = json::parse(R"({
  "model": {"num_layers": 8, "hidden_size": 256, "num_attention_heads": 8, "bf16": true,
            "hybrid_override_pattern": "M*M-", "pipeline_dtype": "torch.bfloat16",
            "moe_router_load_balancing_type": ["aux_loss", "seq_aux_loss"]},
  "optimizer": {"optimizer": "adam"}
})");

bool holds(const std::string& expr) {
  const FillContext ctx;  // megatron-core defaults
  return applies_when(expr, kDoc, ctx);
}

}  // namespace

TEST_CASE("applies_when reads keys with their defaults, strings, lists and dtypes", "[unsimulated]") {
  CHECK(holds("model.bf16"));
  CHECK_FALSE(holds("model.fp16"));  // left out: the Megatron Core default, false
  CHECK(holds("model.num_moe_experts == null"));
  CHECK(holds("model.num_layers > 4 && model.num_layers <= 8"));
  CHECK(holds("'M' in model.hybrid_override_pattern"));  // substring of a string
  CHECK_FALSE(holds("'E' in model.hybrid_override_pattern"));
  CHECK(holds("model.pipeline_dtype == 'bf16'"));                            // torch.bfloat16 is bf16
  CHECK(holds("model.moe_router_load_balancing_type in ['seq_aux_loss']"));  // any member of a list
  CHECK(holds("optimizer.optimizer not in ['muon', 'soap']"));
  CHECK(holds("!model.fp16 && (model.fp16 || model.bf16)"));
  CHECK(holds("model.fp16 && model.bf16 || model.bf16"));  // && binds tighter than ||
  CHECK_FALSE(holds("model.num_moe_experts > 0"));         // null compares false
}

TEST_CASE("applies_when refuses a malformed expression", "[unsimulated]") {
  CHECK_THROWS_AS(holds("model.bf16 &&"), std::invalid_argument);
  CHECK_THROWS_AS(holds("bf16"), std::invalid_argument);
  CHECK_THROWS_AS(holds("(model.bf16"), std::invalid_argument);
  CHECK_THROWS_AS(holds("'open"), std::invalid_argument);
}

TEST_CASE("every applies_when of memory_effect.json parses", "[unsimulated]") {
  const auto conditions = unsimulated_conditions();
  CHECK(conditions.size() > 100);
  for (const auto& [key, expr] : conditions) {
    INFO(key << ": " << expr);
    CHECK_NOTHROW(holds(expr));
  }
}
