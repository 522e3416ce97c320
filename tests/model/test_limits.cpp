// peakcast's limits on the work and sizes a spec implies (validate_magnitudes.cpp, issue #27): each
// fires just past its bound, not at it, and an oversized layout or repeat count is an error, not a hang.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "layer_plan_internal.hpp"
#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/validate.hpp"

using namespace peakcast;
using namespace peakcast::model;
using peakcast::model::detail::expand_pipeline_layout;

namespace {

// 8 GPUs, TP 1, PP 1: data-parallel size 8, so global batch = 8 x micro-batches per step.
const char* kBase = R"({
  "model": {"num_layers": 8, "hidden_size": 256, "num_attention_heads": 8, "vocab_size": 1000, "seq_length": 128,
            "bf16": true, "hidden_dropout": 0.0, "attention_dropout": 0.0},
  "train": {"micro_batch_size": 1, "global_batch_size": 8},
  "optimizer": {"bf16": true},
  "cluster": {"num_gpus": 8, "gpu": {"name": "test-gpu", "memory_bytes": 80000000000}}
})";

Diagnostics diagnostics(const std::vector<std::string>& sets) {
  const ParseResult r = parse_run_spec(kBase, sets);
  Diagnostics out = r.diagnostics;
  if (r.spec) {
    const Diagnostics v = validate(*r.spec);
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

bool fires(const std::vector<std::string>& sets, const std::string& rule, const std::string& path) {
  for (const auto& d : diagnostics(sets))
    if (d.rule == rule && d.path == path && d.severity == Severity::error) return true;
  return false;
}

}  // namespace

TEST_CASE("limits on layers, stages, MLP chunks and micro-batches fire just past their bound") {
  CHECK(fires({"model.num_layers=4097"}, "limit_exceeded", "model.num_layers"));
  CHECK_FALSE(fires({"model.num_layers=4096"}, "limit_exceeded", "model.num_layers"));
  CHECK(fires({"model.mlp_chunks_for_training=1025", "model.seq_length=2050"}, "limit_exceeded", "model.mlp_chunks_for_training"));
  CHECK_FALSE(fires({"model.mlp_chunks_for_training=1024", "model.seq_length=2048"}, "limit_exceeded", "model.mlp_chunks_for_training"));
  // 65,536 micro-batches per step on 8 data-parallel ranks of micro-batch 1: a global batch of 524,288.
  CHECK_FALSE(fires({"train.global_batch_size=524288"}, "limit_exceeded", "train.global_batch_size"));
  CHECK(fires({"train.global_batch_size=524296"}, "limit_exceeded", "train.global_batch_size"));
}

TEST_CASE("sizes past 2^60 bytes are refused with the key that makes them") {
  // 1 x 1024 heads x (2^26)^2 x 4 bytes = 2^64 bytes of attention scores.
  CHECK(fires({"model.seq_length=67108864", "model.max_position_embeddings=67108864", "model.num_attention_heads=1024",
               "model.hidden_size=65536"},
              "size_out_of_range", "model.seq_length"));
  // 1 x 64 heads x (2^22)^2 x 4 bytes = 2^52: a million-token context is large, not impossible.
  CHECK_FALSE(fires({"model.seq_length=4194304", "model.max_position_embeddings=4194304", "model.num_attention_heads=64",
                     "model.hidden_size=4096"},
                    "size_out_of_range", "model.seq_length"));
}

TEST_CASE("a GPU's rates must give finite step times; its memory must hold the userbuffers") {
  CHECK(fires({"cluster.gpu.hbm_bandwidth_gbps=0"}, "value_out_of_range", "cluster.gpu.hbm_bandwidth_gbps"));
  CHECK(fires({"cluster.gpu.nvlink_bandwidth_gbps=0.001"}, "value_out_of_range", "cluster.gpu.nvlink_bandwidth_gbps"));
  CHECK(fires({"cluster.gpu.bf16_dense_tflops=1e300"}, "value_out_of_range", "cluster.gpu.bf16_dense_tflops"));
  CHECK_FALSE(fires({"cluster.gpu.fp8_dense_tflops=0"}, "value_out_of_range", "cluster.gpu.fp8_dense_tflops"));
  // The reduction grid divides by the threads a block takes and multiplies by the multiprocessors.
  CHECK(fires({"cluster.gpu.multiprocessor_count=0"}, "value_out_of_range", "cluster.gpu.multiprocessor_count"));
  CHECK(fires({"cluster.gpu.max_threads_per_multiprocessor=16"}, "value_out_of_range", "cluster.gpu.max_threads_per_multiprocessor"));
  CHECK_FALSE(fires({"cluster.gpu.multiprocessor_count=148"}, "value_out_of_range", "cluster.gpu.multiprocessor_count"));
}

TEST_CASE("a pipeline layout that expands past 65,536 symbols is an error, in one repeat or in total") {
  CHECK(expand_pipeline_layout("t*8|t*8").size() == 2);
  CHECK_THROWS_AS(expand_pipeline_layout("t*65537"), std::length_error);
  CHECK_THROWS_AS(expand_pipeline_layout("(tt)*40000"), std::length_error);
  CHECK_THROWS_AS(expand_pipeline_layout("t*99999999999999999999999999999999999999"), std::length_error);  // no wrap to a small count
  std::string many;
  for (int i = 0; i < 3; ++i) many += "(t)*30000|";
  CHECK_THROWS_AS(expand_pipeline_layout(many), std::length_error);  // each repeat fits, their total does not
}

// Found by the field scan under UBSan (signed overflow, no wrong answer in Release): the widest-matrix
// check multiplied the hidden size by 4 in int64, and an uneven pipeline split subtracted a stage size of
// -2^63 from the layer count. Both are errors with their key, computed without overflow.
TEST_CASE("int64's ends in the hidden size and the uneven stage sizes are errors, without overflow") {
  constexpr const char* kMax = "9223372036854775807";
  constexpr const char* kMin = "-9223372036854775808";
  CHECK(fires({std::string("model.hidden_size=") + kMax}, "size_out_of_range", "model.seq_length"));
  CHECK(has_errors(diagnostics({std::string("model.hidden_size=") + kMin})));
  for (const char* key : {"model.num_layers_in_first_pipeline_stage", "model.num_layers_in_last_pipeline_stage"}) {
    INFO(key);
    const std::vector<std::string> pp{"model.pipeline_model_parallel_size=2", "train.global_batch_size=8",
                                      "cluster.num_gpus=2", "model.pipeline_dtype=\"bf16\""};
    auto low = pp, high = pp;
    low.push_back(std::string(key) + "=" + kMin);
    high.push_back(std::string(key) + "=" + kMax);
    CHECK(fires(low, "uneven_pp_stage_positive", key));
    CHECK(fires(high, "uneven_pp_stage_exceeds_num_layers", key));
    // One layer more than the model has: the same rule (a middle stage would get -1 layers).
    auto nine = pp;
    nine.push_back(std::string(key) + "=9");
    CHECK(fires(nine, "uneven_pp_stage_exceeds_num_layers", key));
  }
}
