// The framework's fixed workspaces (sim/framework_fixed.hpp), each derived from the source's own
// arithmetic: PyTorch's parseChosenWorkspaceSize (CublasHandlePool.cpp) and Transformer Engine's
// get_cublas_workspace (cpp_extensions/gemm.py:31-61 at v2.16).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "peakcast/model/megatron_args.hpp"
#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/validate.hpp"
#include "peakcast/sim/framework_fixed.hpp"
#include "peakcast/sim/prediction.hpp"

using namespace peakcast;

namespace {

const char* kDense = R"({
  "model": {"num_layers": 2, "hidden_size": 512, "num_attention_heads": 8, "seq_length": 1024,
            "max_position_embeddings": 1024, "vocab_size": 50304, "bf16": true},
  "train": {"micro_batch_size": 2, "global_batch_size": 2},
  "cluster": {"num_gpus": 1, "gpu": "h100-sxm-80gb"}})";

model::RunSpec parse(const std::vector<std::string>& sets = {}) {
  auto r = model::parse_run_spec(kDense, sets);
  for (const auto& d : r.diagnostics) INFO(model::format(d));
  REQUIRE(r.spec.has_value());
  return *r.spec;
}

constexpr std::int64_t kMiB = 1024 * 1024;

bool has_rule(const model::Diagnostics& ds, const std::string& rule, const std::string& path) {
  for (const auto& d : ds)
    if (d.severity == model::Severity::error && d.rule == rule && d.path == path) return true;
  return false;
}

}  // namespace

TEST_CASE("PyTorch's cuBLAS workspace: CUBLAS_WORKSPACE_CONFIG's pairs, else the GPU's default", "[sim][fixed]") {
  // ":SIZE:COUNT" pairs in KiB, summed.
  CHECK(sim::torch_cublas_workspace_bytes(parse({R"(cluster.cublas_workspace_config=":4096:8")"}).cluster) == Bytes{4096 * 1024 * 8});
  CHECK(sim::torch_cublas_workspace_bytes(parse({R"(cluster.cublas_workspace_config=":4096:2:16:8")"}).cluster) ==
        Bytes{4096 * 1024 * 2 + 16 * 1024 * 8});
  // Default: 32 MiB on compute capability 9 (H100) and 10 (B200), 4096 KiB x 2 + 16 KiB x 8 on 8 (A100).
  CHECK(sim::torch_cublas_workspace_bytes(parse().cluster) == Bytes{32 * kMiB});
  CHECK(sim::torch_cublas_workspace_bytes(parse({R"(cluster.gpu="b200")"}).cluster) == Bytes{32 * kMiB});
  CHECK(sim::torch_cublas_workspace_bytes(parse({R"(cluster.gpu="a100-80gb")"}).cluster) == Bytes{8 * kMiB + 128 * 1024});
}

TEST_CASE("Transformer Engine's GEMM workspaces: one general, 3x for userbuffers, 4 for grouped MoE GEMMs", "[sim][fixed]") {
  const Bytes hopper{32 * kMiB + 1024};  // 32 MiB for NVFP4 GEMMs + 1 KiB for alignment and scales
  const auto te = sim::transformer_engine_workspaces(parse());
  REQUIRE(te.size() == 1);
  CHECK(te[0].bytes == hopper);
  CHECK(sim::total_bytes(te) == hopper);
  CHECK(sim::total_bytes(sim::transformer_engine_workspaces(parse({R"(cluster.gpu="a100-80gb")"}))) == Bytes{4 * kMiB});
  CHECK(sim::transformer_engine_workspaces(parse({R"(model.transformer_impl="local")"})).empty());
  const auto moe = sim::transformer_engine_workspaces(
      parse({"model.num_moe_experts=4", "model.moe_grouped_gemm=true", "model.moe_router_topk=2", "model.add_bias_linear=false"}));
  CHECK(sim::total_bytes(moe) == hopper + hopper * 4);
}

TEST_CASE("the workspaces are allocated bytes: the peak moves by what they add", "[sim][fixed]") {
  // A100 without a config: PyTorch's workspace 8 MiB + 128 KiB, TE's 4 MiB; with :4096:8 PyTorch's is
  // 32 MiB. The TE stack keeps two of PyTorch's (the output layer's forward and the autograd thread's
  // backward, measured: layers.py:575, :625), so the steady peak moves by twice the difference.
  const auto base = sim::predict(parse({R"(cluster.gpu="a100-80gb")"}));
  const auto configured = sim::predict(parse({R"(cluster.gpu="a100-80gb")", R"(cluster.cublas_workspace_config=":4096:8")"}));
  CHECK(configured.max_peak_allocated - base.max_peak_allocated == Bytes{(32 * kMiB - (8 * kMiB + 128 * 1024)) * 2});
}

TEST_CASE("CUBLAS_WORKSPACE_CONFIG and the compute capability are checked, and read from a launch line", "[model][fixed]") {
  const auto bad = model::parse_run_spec(kDense, {R"(cluster.cublas_workspace_config="4096:8")"});
  CHECK(has_rule(bad.diagnostics, "cublas_workspace_config_invalid", "cluster.cublas_workspace_config"));
  const auto zero = model::parse_run_spec(kDense, {R"(cluster.gpu={"name": "h100-sxm-80gb", "memory_bytes": 80000000000, "compute_capability_major": 0})"});
  const auto zero_rules = zero.spec ? model::validate(*zero.spec) : zero.diagnostics;
  for (const auto& d : zero_rules) INFO(model::format(d));
  CHECK(has_rule(zero_rules, "value_out_of_range", "cluster.gpu.compute_capability_major"));
  model::MegatronLineOptions o;
  o.num_gpus = 1;
  o.gpu = "h100-sxm-80gb";
  const auto line = model::parse_megatron_line(
      "CUBLAS_WORKSPACE_CONFIG=:4096:8 torchrun pretrain_gpt.py --num-layers 2 --hidden-size 512 --num-attention-heads 8 "
      "--seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 2 --bf16 --vocab-size 50304",
      {}, o);
  for (const auto& d : line.diagnostics) INFO(model::format(d));
  REQUIRE(line.spec);
  CHECK(line.spec->cluster.cublas_workspace_config == ":4096:8");
}
