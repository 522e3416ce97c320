// Multi-token prediction: each depth's wrapper (shifted-token embedding, enorm / hnorm, concatenation,
// eh_proj; multi_token_prediction.py:1086-1158), the order of its layers and heads, and
// mtp_use_repeated_layer (one layer's weights for every depth).
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "held_tensors.hpp"
#include "peakcast/model/static_memory.hpp"

using namespace peakcast;

namespace {
constexpr std::int64_t kSeq = 4096, kHidden = 4096;

model::RunSpec parse(int depths, bool repeated) {
  const std::string text = R"({"model": {"preset": "llama3-8b", "num_layers": 2, "seq_length": 4096, "bf16": true,
      "transformer_impl": "local", "attention_backend": "unfused", "mtp_num_layers": )" +
                           std::to_string(depths) + R"(, "mtp_use_repeated_layer": )" + (repeated ? "true" : "false") +
                           R"(}, "train": {"micro_batch_size": 1, "global_batch_size": 1},
      "cluster": {"num_gpus": 1, "gpu": "h100-sxm-80gb"}})";
  return test::valid_spec(text);
}

std::int64_t params(int depths, bool repeated) {
  const auto s = parse(depths, repeated);
  return model::total_parameters(s, model::derive(s));
}
}  // namespace

TEST_CASE("repeated MTP: one depth's weights whatever the depth count", "[model][params][mtp]") {
  CHECK(params(3, true) == params(1, false));
  CHECK(params(2, true) == params(1, true));
  CHECK(params(3, false) - params(1, false) == 2 * (params(1, false) - params(0, false)));
}

TEST_CASE("an MTP depth's wrapper keeps the embedding, the concatenation and hnorm's input", "[sim][graph][mtp]") {
  sim::PredictOptions o;
  o.record_held_tensors = true;
  const auto p = sim::predict(parse(2, false), o);
  std::vector<std::string> names;
  Bytes wrapper{};
  for (const auto& m : p.ranks.at(0).modules) {
    names.push_back(m.name);
    if (m.name == "mtp0.wrapper")
      for (const auto& t : m.held_tensors) wrapper += t.bytes;
  }
  // hnorm's input and the embedding [s, h], the concatenation [s, 2h] in bf16, two fp32 rstd rows.
  CHECK(wrapper.value == 2 * kSeq * kHidden * 2 + kSeq * 2 * kHidden * 2 + 2 * kSeq * 4);
  // Forward order: decoder, every depth's wrapper and layer, then the depths' heads and the main head
  // (backward takes every head before the MTP layers).
  const std::vector<std::string> tail(names.end() - 7, names.end());
  CHECK(tail == std::vector<std::string>{"mtp0.wrapper", "mtp0", "mtp1.wrapper", "mtp1", "output", "output", "output"});
}

TEST_CASE("a hybrid MTP depth runs every layer of its pattern", "[sim][graph][mtp]") {
  // Nemotron 3.5 Lightning's MTP: two depths of "*E" (an attention and a MoE layer) after the main
  // pattern (HybridModel parses "<main>/<mtp>/<mtp>", mcore:megatron/core/models/hybrid/hybrid_model.py:66-70).
  const auto spec = test::valid_spec(R"({"model": {"preset": "nemotron-3-nano-30b-a3b", "num_layers": 3,
      "hybrid_override_pattern": "M*E/*E/*E", "mtp_num_layers": 2, "seq_length": 4096, "bf16": true},
      "train": {"micro_batch_size": 1, "global_batch_size": 1}, "cluster": {"num_gpus": 1, "gpu": "h100-sxm-80gb"}})");
  sim::PredictOptions o;
  o.record_held_tensors = true;
  const auto p = sim::predict(spec, o);
  std::vector<std::string> names;
  std::map<std::string, Bytes> held;
  for (const auto& m : p.ranks.at(0).modules) {
    names.push_back(m.name);
    for (const auto& t : m.held_tensors) held[m.name] += t.bytes;
  }
  const std::vector<std::string> tail(names.end() - 9, names.end());
  CHECK(tail == std::vector<std::string>{"mtp0.wrapper", "mtp0.0", "mtp0.1", "mtp1.wrapper", "mtp1.0", "mtp1.1", "output", "output", "output"});
  // Each depth's layers are the decoder's attention (L1) and MoE (L2) layers, saving what those save.
  CHECK(held.at("mtp0.0").value > 0);
  CHECK(held.at("mtp0.0").value == held.at("L1").value);
  CHECK(held.at("mtp1.1").value == held.at("L2").value);
}
