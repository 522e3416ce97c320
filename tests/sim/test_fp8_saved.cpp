// What an FP8 layer saves for backward under Transformer Engine: quantised copies of GEMM inputs,
// except linear_proj under non-delayed recipes, which keeps the bf16 attention output instead
// (Megatron's set_save_original_input, attention.py:428-444).
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/validate.hpp"
#include "peakcast/sim/prediction.hpp"

using namespace peakcast;

namespace {
std::vector<sim::ModuleProfile::HeldTensor> layer0_held(const std::string& recipe) {
  const std::string text = R"({
    "defaults": "megatron-core", "model": {"preset": "llama3-8b", "num_layers": 2, "seq_length": 4096, "bf16": true,
              "transformer_impl": "transformer_engine", "fp8": "hybrid", "fp8_recipe": ")" +
                           recipe + R"("},
    "train": {"micro_batch_size": 1, "global_batch_size": 1},
    "cluster": {"num_gpus": 1, "gpu": "h100-sxm-80gb"}})";
  auto r = model::parse_run_spec(text);
  REQUIRE(r.spec);
  REQUIRE_FALSE(model::has_errors(model::validate(*r.spec)));
  sim::PredictOptions o;
  o.record_held_tensors = true;
  const auto p = sim::predict(*r.spec, o);
  for (const auto& m : p.ranks.at(0).modules)
    if (m.name == "L0") return m.held_tensors;
  FAIL("no L0");
  return {};
}
bool has(const std::vector<sim::ModuleProfile::HeldTensor>& held, const std::string& suffix) {
  return std::any_of(held.begin(), held.end(), [&](const auto& t) {
    return t.name.size() >= suffix.size() && t.name.compare(t.name.size() - suffix.size(), suffix.size(), suffix) == 0;
  });
}
}  // namespace

TEST_CASE("FP8 current scaling: linear_proj keeps the bf16 attention output, delayed scaling an FP8 copy", "[sim][graph][fp8]") {
  const auto tensorwise = layer0_held("tensorwise");
  const auto delayed = layer0_held("delayed");
  CHECK_FALSE(has(tensorwise, "linear_proj.input_fp8"));
  CHECK(has(delayed, "linear_proj.input_fp8"));
  // The other GEMMs keep their quantised inputs under both recipes.
  for (const char* name : {"linear_qkv.input_fp8", "mlp.linear_fc1.input_fp8", "mlp.linear_fc2.input_fp8"}) {
    CHECK(has(tensorwise, name));
    CHECK(has(delayed, name));
  }
  // The saved bytes differ by exactly that copy: [s, h/tp] bytes at one byte an element.
  const auto total = [](const auto& held) {
    Bytes b{};
    for (const auto& t : held) b += t.bytes;
    return b;
  };
  CHECK(total(delayed) - total(tensorwise) == Bytes{4096 * 4096});
}

TEST_CASE("first_last_layers_bf16: the edge layers save their GEMM inputs in bf16, the others FP8 copies", "[sim][graph][fp8]") {
  const std::string text = R"({
    "defaults": "megatron-core", "model": {"preset": "llama3-8b", "num_layers": 4, "seq_length": 4096, "bf16": true,
              "transformer_impl": "transformer_engine", "fp8": "hybrid", "fp8_recipe": "tensorwise",
              "first_last_layers_bf16": true},
    "train": {"micro_batch_size": 1, "global_batch_size": 1},
    "cluster": {"num_gpus": 1, "gpu": "h100-sxm-80gb"}})";
  auto r = model::parse_run_spec(text);
  REQUIRE(r.spec);
  REQUIRE_FALSE(model::has_errors(model::validate(*r.spec)));
  sim::PredictOptions o;
  o.record_held_tensors = true;
  const auto p = sim::predict(*r.spec, o);
  std::map<std::string, std::vector<sim::ModuleProfile::HeldTensor>> held;
  for (const auto& m : p.ranks.at(0).modules) held[m.name] = m.held_tensors;
  REQUIRE(held.count("L0"));
  REQUIRE(held.count("L3"));
  for (const char* edge : {"L0", "L3"}) {
    CHECK_FALSE(has(held[edge], "linear_qkv.input_fp8"));
    CHECK_FALSE(has(held[edge], "mlp.linear_fc2.input_fp8"));
  }
  for (const char* inner : {"L1", "L2"}) CHECK(has(held[inner], "mlp.linear_fc1.input_fp8"));
  const auto total = [](const auto& v) {
    Bytes b{};
    for (const auto& t : v) b += t.bytes;
    return b;
  };
  // The fused-norm outputs feeding linear_qkv and fc1 ([s, h]) and the SwiGLU output feeding fc2
  // ([s, F]) are kept at two bytes instead of their one-byte copies (h 4096, F 14336, TP 1).
  const std::int64_t s = 4096, h = 4096, f = 14336;
  CHECK(total(held["L0"]) - total(held["L1"]) == Bytes{2 * s * h + s * f});
  CHECK(total(held["L3"]) == total(held["L0"]));
}
