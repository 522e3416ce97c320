// Gated attention (attention_output_gate): linear_qkv also projects a query-sized gate, and the core
// output is scaled by its sigmoid before linear_proj. Expected bytes come from the shapes; which
// tensors the gate keeps was measured on the H200 (calibration/data/h200_output_gate.jsonl).
#include <catch2/catch.hpp>

#include <string>

#include "held_tensors.hpp"
#include "peakcast/model/static_memory.hpp"

using namespace peakcast;

namespace {
constexpr std::int64_t kSeq = 4096, kHidden = 4096, kHeads = 32, kGroups = 8, kHeadDim = 128;

std::string spec_text(bool gate, int tp, const std::string& extra = "") {
  return R"({"model": {"preset": "llama3-8b", "num_layers": 2, "seq_length": 4096, "bf16": true,
      "transformer_impl": "local", "attention_backend": "unfused", "tensor_model_parallel_size": )" +
         std::to_string(tp) + R"(, "sequence_parallel": )" + (tp > 1 ? "true" : "false") +
         R"(, "make_vocab_size_divisible_by": 16, "attention_output_gate": )" + (gate ? "true" : "false") + extra +
         R"(}, "train": {"micro_batch_size": 1, "global_batch_size": 1},
      "cluster": {"num_gpus": )" +
         std::to_string(tp) + R"(, "gpu": "h100-sxm-80gb", "calibration_harness": true}})";  // measured on the harness's patched local stack (SP with torch norms)
}

model::RunSpec parse(const std::string& text) { return test::valid_spec(text); }

// What layer L0 holds for its backward, per micro-batch.
Bytes layer0_saved(bool gate, int tp) {
  auto held = test::held_by_module(parse(spec_text(gate, tp)));
  REQUIRE(held.count("L0"));
  return test::total_bytes(held["L0"]);
}
}  // namespace

TEST_CASE("output gate: the gated output and a reshaped copy of the gate, with several query groups per rank",
          "[sim][graph][output_gate]") {
  // TP1: 8 query groups on the rank, so the gate's reshape to [s, b, heads, hd] copies.
  const std::int64_t block = kSeq * kHeads * kHeadDim * 2;  // [s, heads x hd] in bf16
  CHECK(layer0_saved(true, 1) - layer0_saved(false, 1) == Bytes{2 * block});
}

TEST_CASE("output gate: one query group per rank keeps the gate a view of the fused QKV output",
          "[sim][graph][output_gate]") {
  // TP8: one group, 4 heads per rank. The gate stays a view, and saving it keeps linear_qkv's whole
  // output alive ([s, (2 x 4 + 2) x hd]), which the unfused core otherwise lets go (it saves the
  // expanded K and V); plus the gated output [s, 4 x hd].
  const int tp = 8;
  const std::int64_t hq = kHeads / tp, hkv = kGroups / tp;
  const std::int64_t qkv_out = kSeq * (2 * hq + 2 * hkv) * kHeadDim * 2;
  const std::int64_t gated = kSeq * hq * kHeadDim * 2;
  CHECK(layer0_saved(true, tp) - layer0_saved(false, tp) == Bytes{qkv_out + gated});
}

TEST_CASE("output gate: linear_qkv grows by one query-sized block", "[model][params][output_gate]") {
  for (int tp : {1, 8}) {
    const auto on = parse(spec_text(true, tp));
    const auto off = parse(spec_text(false, tp));
    const std::int64_t extra = model::total_parameters(on, model::derive(on)) -
                               model::total_parameters(off, model::derive(off));
    CHECK(extra == 2 * kHidden * kHeads * kHeadDim);  // two layers, full model (all TP shards)
  }
}

TEST_CASE("output gate: Megatron's rules", "[validate][output_gate]") {
  const auto errors_of = [](const std::string& text) {
    auto r = model::parse_run_spec(text);
    std::vector<model::Diagnostic> d = r.diagnostics;
    if (r.spec) {
      const auto v = model::validate(*r.spec);
      d.insert(d.end(), v.begin(), v.end());
    }
    return d;
  };
  const auto has_rule = [](const std::vector<model::Diagnostic>& d, const std::string& path, const std::string& rule) {
    for (const auto& x : d)
      if (x.severity == model::Severity::error && x.path == path && x.rule == rule) return true;
    return false;
  };
  CHECK(has_rule(errors_of(spec_text(true, 1, R"(, "fused_single_qkv_rope": true)")), "model.fused_single_qkv_rope",
                 "output_gate_vs_fused_single_qkv_rope"));
  CHECK_FALSE(has_rule(errors_of(spec_text(false, 1, R"(, "fused_single_qkv_rope": true)")),
                       "model.fused_single_qkv_rope", "output_gate_vs_fused_single_qkv_rope"));
  const std::string mla = R"({"model": {"preset": "moonlight-16b", "attention_output_gate": true},
      "cluster": {"num_gpus": 8, "gpu": "h100-sxm-80gb"}})";
  CHECK(has_rule(errors_of(mla), "model.attention_output_gate", "output_gate_vs_mla"));
}
