// The unfused attention's softmax as the module decides it (issue #21): Megatron's fused kernels
// (masked_softmax_fusion, fused_softmax.py:238-270) and TE's (softmax.py:188-221) save only the
// probabilities in the input dtype; PyTorch's fp32 path also saves the fp32 probabilities and the
// causal mask. Expectations from shapes: E = b x heads x s^2 score elements per layer.
#include <catch2/catch.hpp>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/sim/prediction.hpp"

using namespace peakcast;

namespace {
constexpr std::int64_t kLayers = 2, kHeads = 8;

Bytes held(std::int64_t seq, const std::vector<std::string>& sets) {
  const std::string text = R"({"model": {"num_layers": 2, "hidden_size": 512, "num_attention_heads": 8, "vocab_size": 1024,
      "seq_length": )" + std::to_string(seq) +
                           R"(, "max_position_embeddings": 16384, "attention_backend": "unfused",
      "attention_softmax_in_fp32": true, "attention_dropout": 0.0, "bf16": true},
    "train": {"micro_batch_size": 1, "global_batch_size": 1},
    "cluster": {"num_gpus": 1, "gpu": "h200-141gb"}})";
  const auto parsed = model::parse_run_spec(text, sets);
  for (const auto& d : parsed.diagnostics) INFO(model::format(d));
  REQUIRE(parsed.spec);
  const sim::Prediction p = sim::predict(*parsed.spec);
  Bytes total;
  for (const auto& m : p.ranks.at(0).modules) total += m.held;
  return total;
}

// What PyTorch's fp32 softmax saves beyond the fused kernel, per layer (no attention dropout, so the
// context bmm saves the probabilities themselves in both): the fp32 probabilities and the bool [s, s]
// causal mask.
std::int64_t torch_extra(std::int64_t seq) { return kHeads * seq * seq * 4 + seq * seq; }
}  // namespace

TEST_CASE("local spec: masked_softmax_fusion saves the fp32 probabilities and the mask, within the kernel's limits") {
  const std::vector<std::string> local = {"model.transformer_impl=local"};
  auto with = [&](std::vector<std::string> v, const char* fusion) {
    v.push_back(std::string("model.masked_softmax_fusion=") + fusion);
    return v;
  };
  CHECK((held(2048, with(local, "false")) - held(2048, with(local, "true"))).value == kLayers * torch_extra(2048));
  CHECK((held(4096, with(local, "false")) - held(4096, with(local, "true"))).value == kLayers * torch_extra(4096));
  // Beyond 4,096 keys Megatron's kernel is not available: the same PyTorch path either way.
  CHECK(held(8192, with(local, "false")) == held(8192, with(local, "true")));
}

TEST_CASE("TE's unfused backend fuses below 16,384 keys regardless of masked_softmax_fusion") {
  // The names of what the attention saves, with TE's unfused backend (its fused-softmax switch is the
  // NVTE_MASKED_SOFTMAX_FUSION environment variable, on by default, not masked_softmax_fusion).
  const auto saved_names = [](std::int64_t seq) {
    const std::string text = R"({"model": {"num_layers": 1, "hidden_size": 512, "num_attention_heads": 8, "vocab_size": 1024,
        "seq_length": )" + std::to_string(seq) +
                             R"(, "max_position_embeddings": 32768, "attention_backend": "unfused",
        "transformer_impl": "transformer_engine", "masked_softmax_fusion": false, "bf16": true},
      "train": {"micro_batch_size": 1, "global_batch_size": 1},
      "cluster": {"num_gpus": 1, "gpu": "h200-141gb"}})";
    const auto parsed = model::parse_run_spec(text);
    REQUIRE(parsed.spec);
    sim::PredictOptions o;
    o.record_held_tensors = true;
    const sim::Prediction p = sim::predict(*parsed.spec, o);
    std::string names;
    for (const auto& m : p.ranks.at(0).modules)
      for (const auto& t : m.held_tensors) names += t.name + " ";
    return names;
  };
  const std::string fused = saved_names(8192), torch = saved_names(16384);
  CHECK(fused.find("softmax.out") != std::string::npos);
  CHECK(fused.find("softmax.fp32") == std::string::npos);
  CHECK(fused.find("causal_mask") == std::string::npos);
  CHECK(torch.find("softmax.fp32") != std::string::npos);
  CHECK(torch.find("causal_mask") != std::string::npos);
}
