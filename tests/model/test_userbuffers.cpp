// Transformer Engine's tp_comm_overlap userbuffers: sizes derived from initialize_ub's per-GEMM
// defaults (module/base.py) and the communication shape [seq * micro_batch / CP, hidden]; the
// prediction hands the allocator what they leave of the device.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/userbuffers.hpp"
#include "peakcast/model/validate.hpp"
#include "peakcast/sim/prediction.hpp"

using namespace peakcast;
using namespace peakcast::model;

namespace {

// TP4 + SP, seq 1024, micro-batch 2, hidden 512: the buffer shape has S = 2048 x 512 elements.
const char* kSpec = R"({
  "model": {"num_layers": 4, "hidden_size": 512, "num_attention_heads": 8, "vocab_size": 1024, "seq_length": 1024,
            "bf16": true, "tensor_model_parallel_size": 4, "sequence_parallel": true, "tp_comm_overlap": true},
  "train": {"micro_batch_size": 2, "global_batch_size": 8},
  "cluster": {"num_gpus": 4, "gpu": "h100-sxm-80gb"}
})";
constexpr std::int64_t kS = 1024 * 2 * 512;
constexpr std::int64_t kTp = 4;

ParseResult parse(const std::vector<std::string>& sets = {}) { return parse_run_spec(kSpec, sets); }

Bytes total(const std::vector<std::string>& sets) {
  const auto r = parse(sets);
  REQUIRE(r.spec);
  return total_bytes(te_userbuffers(*r.spec));
}

bool has_rule(const Diagnostics& ds, const std::string& rule, const std::string& path) {
  for (const auto& d : ds)
    if (d.rule == rule && d.path == path) return true;
  return false;
}

}  // namespace

TEST_CASE("userbuffers: twelve full-shape buffers per quantization mode", "[model][userbuffers]") {
  // High precision: every buffer bf16.
  CHECK(total({}) == Bytes{12 * 2 * kS});
  const auto r = parse();
  REQUIRE(r.spec);
  CHECK(te_userbuffers(*r.spec).size() == 12);
  // FP8: the eight all-gather GEMMs' buffers hold uint8, the four reduce-scatter ones bf16.
  CHECK(total({"model.fp8=hybrid", "model.fp8_recipe=tensorwise"}) == Bytes{8 * kS + 4 * 2 * kS});
  // BF16 edge layers add a high-precision set (initialize.py:226-231).
  CHECK(total({"model.fp8=hybrid", "model.fp8_recipe=tensorwise", "model.first_last_layers_bf16=true"}) ==
        Bytes{8 * kS + 4 * 2 * kS + 12 * 2 * kS});
  // ... unless both counts are zero.
  CHECK(total({"model.fp8=hybrid", "model.fp8_recipe=tensorwise", "model.first_last_layers_bf16=true",
               "model.num_layers_at_start_in_bf16=0", "model.num_layers_at_end_in_bf16=0"}) == Bytes{8 * kS + 4 * 2 * kS});
  CHECK(total({"model.tp_comm_overlap=false"}) == Bytes{0});
}

TEST_CASE("userbuffers: per-GEMM methods from an inline tp_comm_overlap_cfg", "[model][userbuffers]") {
  // Bridge's userbuffers_fp8_h100_h8192_tp4 config: the forward reduce-scatters by ring exchange,
  // which keeps 2 TP - 1 chunks of 1 / TP of the shape (CommOverlapP2PBase::initialize).
  const std::vector<std::string> ring_rs = {
      "model.fp8=hybrid", "model.fp8_recipe=tensorwise",
      R"(model.tp_comm_overlap_cfg={"proj_fprop": {"method": "ring_exchange", "num_sm": 1}, "fc2_fprop": {"method": "ring_exchange"}})"};
  const std::int64_t ring_chunk = 2 * kS / kTp;
  CHECK(total(ring_rs) == Bytes{8 * kS + 2 * 2 * kS + 2 * ring_chunk * (2 * kTp - 1)});

  // A non-bulk dgrad becomes a reduce-scatter (bf16, ring: 2 TP - 1 chunks) and leaves the FP8
  // all-gathers (seven left); its wgrad leaves the reduce-scatters (three left) as a plain bf16 buffer.
  const std::vector<std::string> rs_dgrad = {"model.fp8=hybrid", "model.fp8_recipe=tensorwise",
                                             R"(model.tp_comm_overlap_cfg={"qkv_dgrad": {"method": "ring_exchange"}})"};
  CHECK(total(rs_dgrad) == Bytes{7 * kS + 3 * 2 * kS + 2 * kS + ring_chunk * (2 * kTp - 1)});
}

TEST_CASE("userbuffers: Megatron's and TE's rules, with paths", "[model][userbuffers][validate]") {
  const auto errors_of = [](const std::vector<std::string>& sets) {
    const auto r = parse(sets);
    Diagnostics all = r.diagnostics;
    if (r.spec) {
      const auto v = validate(*r.spec);
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  };
  CHECK(has_rule(errors_of({"model.sequence_parallel=false"}), "tp_comm_overlap_needs_sequence_parallel", "model.tp_comm_overlap"));
  CHECK_FALSE(has_errors(errors_of({})));
  CHECK(has_rule(errors_of({R"(model.tp_comm_overlap_cfg={"qkv_fprop": {"method": "pipeline"}})"}),
                 "userbuffer_pipeline_all_gather", "model.tp_comm_overlap_cfg.qkv_fprop.method"));
  CHECK(has_rule(errors_of({R"(model.tp_comm_overlap_cfg={"fc1_dgrad": {"method": "ring_exchange"}, "fc1_wgrad": {"method": "bulk"}})"}),
                 "userbuffer_wgrad_with_overlapped_dgrad", "model.tp_comm_overlap_cfg.fc1_wgrad"));
  CHECK(has_rule(errors_of({R"(model.tp_comm_overlap_cfg={"fc3_fprop": {}})"}), "unknown_userbuffer_gemm",
                 "model.tp_comm_overlap_cfg.fc3_fprop"));
  CHECK(has_rule(errors_of({R"(model.tp_comm_overlap_cfg={"fc1_fprop": {"num_sms": 2}})"}), "unknown_key",
                 "model.tp_comm_overlap_cfg.fc1_fprop.num_sms"));
  CHECK(has_rule(errors_of({R"(model.tp_comm_overlap_cfg={"fc1_fprop": {"method": "ring"}})"}), "unsupported_value",
                 "model.tp_comm_overlap_cfg.fc1_fprop.method"));
  const auto path_form = errors_of({R"(model.tp_comm_overlap_cfg="ub.yaml")"});
  CHECK_FALSE(has_errors(path_form));
  CHECK(has_rule(path_form, "userbuffer_cfg_file_not_read", "model.tp_comm_overlap_cfg"));
}

TEST_CASE("userbuffers: the allocator's capacity is what they leave of the device", "[sim][userbuffers]") {
  const auto with = parse();
  const auto without = parse({"model.tp_comm_overlap=false"});
  REQUIRE(with.spec);
  REQUIRE(without.spec);
  const auto p = sim::predict(*with.spec);
  const auto q = sim::predict(*without.spec);
  CHECK(p.userbuffers == Bytes{12 * 2 * kS});
  CHECK(q.userbuffers == Bytes{0});
  CHECK(p.capacity == q.capacity - Bytes{12 * 2 * kS});
  // The userbuffers themselves are outside the allocator; what the allocated peak gains is TE's
  // workspace for the UB GEMMs, 3 x (32 MiB + 1 KiB) on compute capability 9 (TE gemm.py:31, :47-52 at v2.16).
  CHECK(p.max_peak_allocated - q.max_peak_allocated == Bytes{3 * (32LL * 1024 * 1024 + 1024)});
}
