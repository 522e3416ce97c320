// Dropless MoE routing load (model.moe_routing_imbalance) and the unfused GLU's saved tensors,
// against byte counts written out from the layer's shapes.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/validate.hpp"
#include "peakcast/sim/fitted_constants.hpp"
#include "peakcast/sim/layer_graph.hpp"
#include "peakcast/sim/module_graphs.hpp"
#include "peakcast/sim/moe_routing.hpp"
#include "peakcast/sim/prediction.hpp"

using namespace peakcast;

namespace {

// One Moonlight-shaped MoE layer on the local stack (SequentialMLP experts, unfused SwiGLU, the
// router's probabilities applied after the activation), EP8.
const char* kLocalMoe = R"({
  "model": {"preset": "moonlight-16b", "num_layers": 2, "seq_length": 2048, "bf16": true,
            "transformer_impl": "local", "attention_backend": "unfused", "moe_grouped_gemm": false,
            "moe_permute_fusion": false, "bias_activation_fusion": false,
            "expert_model_parallel_size": 8, "moe_token_dispatcher_type": "alltoall"},
  "train": {"micro_batch_size": 1, "global_batch_size": 8},
  "cluster": {"num_gpus": 8, "gpu": "h100-sxm-80gb"}})";

model::RunSpec parse(const std::string& text, const std::vector<std::string>& sets = {}) {
  auto r = model::parse_run_spec(text, sets);
  for (const auto& d : r.diagnostics) INFO(model::format(d));
  REQUIRE(r.spec.has_value());
  return *r.spec;
}

Bytes held_by_layer(const model::RunSpec& spec, model::FfnKind ffn) {
  const auto d = model::derive(spec);
  const auto ctx = sim::make_shape_context(spec, d);
  const auto g = sim::build_layer_graph(spec, d, ctx, {1, model::MixerKind::mla, ffn, false}, false);
  return sim::profile_module(g, sim::CheckpointSet{}).held;
}

bool has_rule(const std::vector<model::Diagnostic>& ds, const std::string& rule, model::Severity s) {
  for (const auto& d : ds)
    if (d.rule == rule && d.severity == s) return true;
  return false;
}

}  // namespace

TEST_CASE("each received row adds what the experts save per row", "[sim][moe]") {
  const double T = 2048, k = 6, h = 2048, F = 1408;  // tokens, top-k, hidden, expert FFN (ETP 1)
  const Bytes balanced = held_by_layer(parse(kLocalMoe), model::FfnKind::moe);
  const Bytes doubled = held_by_layer(parse(kLocalMoe, {"model.moe_routing_imbalance=2"}), model::FfnKind::moe);
  // Per received row, saved until backward: the sorted input (saved by fc1, h bf16), fc1's
  // output (2F), silu's output, x1 + glu_linear_offset, the GLU product and the probability-scaled
  // activation (F each, bf16), and the row's fp32 probability.
  const double per_row = 2 * h + 2 * (2 * F) + 4 * (2 * F) + 4;
  const double extra_rows = std::ceil(T * k * 2.0) - std::ceil(T * k * 1.0);
  CHECK(static_cast<double>((doubled - balanced).value) == Approx(extra_rows * per_row));
}

TEST_CASE("a lightly loaded rank holds less than a balanced one", "[sim][moe]") {
  const Bytes balanced = held_by_layer(parse(kLocalMoe), model::FfnKind::moe);
  const Bytes light = held_by_layer(parse(kLocalMoe, {"model.moe_routing_imbalance=0.5"}), model::FfnKind::moe);
  CHECK(light < balanced);
}

TEST_CASE("unfused GLU keeps x1 + glu_linear_offset besides silu's output", "[sim][moe]") {
  // Dense layer 0 of the same model: SwiGLU with F = ffn_hidden_size over N tokens.
  const double N = 2048, F = 11264;
  const Bytes unfused = held_by_layer(parse(kLocalMoe), model::FfnKind::dense);
  const Bytes fused = held_by_layer(parse(kLocalMoe, {"model.bias_activation_fusion=true"}), model::FfnKind::dense);
  // The fused kernel saves only its input (fc1's output, which the unfused path keeps too); the
  // unfused path adds silu(x0) and x1 + 0.0, both [N, F] in bf16.
  CHECK(static_cast<double>((unfused - fused).value) == Approx(2 * N * F * 2));
  // Transformer Engine linears do not fuse the activation: mlp.py only does with bias_activation_fusion
  // (or TE's activation op), so the same two tensors are saved under TE.
  const Bytes te_unfused = held_by_layer(parse(kLocalMoe, {"model.transformer_impl=\"transformer_engine\"",
                                                           "model.attention_backend=\"auto\""}),
                                         model::FfnKind::dense);
  const Bytes te_fused = held_by_layer(parse(kLocalMoe, {"model.transformer_impl=\"transformer_engine\"",
                                                         "model.attention_backend=\"auto\"",
                                                         "model.bias_activation_fusion=true"}),
                                       model::FfnKind::dense);
  CHECK(static_cast<double>((te_unfused - te_fused).value) == Approx(2 * N * F * 2));
}

TEST_CASE("moe_routing_imbalance is checked against the expert-parallel group", "[model][validate]") {
  const auto zero = model::validate(parse(kLocalMoe, {"model.moe_routing_imbalance=0"}));
  CHECK(has_rule(zero, "routing_imbalance_range", model::Severity::error));
  const auto over = model::validate(parse(kLocalMoe, {"model.moe_routing_imbalance=8.5"}));
  CHECK(has_rule(over, "routing_imbalance_range", model::Severity::error));
  const auto all = model::validate(parse(kLocalMoe, {"model.moe_routing_imbalance=8"}));
  CHECK_FALSE(has_rule(all, "routing_imbalance_range", model::Severity::error));
  const auto dense = model::validate(parse(R"({"model": {"preset": "llama3-8b", "seq_length": 2048, "moe_routing_imbalance": 1.5},
    "train": {"micro_batch_size": 1, "global_batch_size": 1}, "cluster": {"num_gpus": 1}})"));
  CHECK(has_rule(dense, "routing_imbalance_without_experts", model::Severity::warning));
}

TEST_CASE("expected maximum of standard normals", "[sim][moe]") {
  CHECK(sim::expected_max_of_normals(1) == 0.0);
  CHECK(sim::expected_max_of_normals(2) == Approx(1.0 / std::sqrt(3.14159265358979323846)).epsilon(1e-6));
  CHECK(sim::expected_max_of_normals(8) == Approx(1.42360).epsilon(1e-4));  // tabulated order statistic
}

TEST_CASE("the busiest EP rank of an untrained router: 1 + sigma z(EP) / sqrt(MoE layers)", "[sim][moe]") {
  const auto spec = parse(R"({"model": {"preset": "moonlight-16b", "seq_length": 4096, "bf16": true,
    "tensor_model_parallel_size": 2, "sequence_parallel": true, "expert_model_parallel_size": 8,
    "expert_tensor_parallel_size": 1}, "train": {"micro_batch_size": 1, "global_batch_size": 4},
    "cluster": {"num_gpus": 8}})");
  // Moonlight: 64 experts over EP 8 (8 local), 26 MoE layers, all on the one pipeline rank; a layer's
  // load spreads by the per-expert spread / sqrt(8).
  const double layer_sigma = 0.7 / std::sqrt(8.0);
  CHECK(sim::busiest_rank_routing_load(spec, 0.7) == Approx(1.0 + layer_sigma * 1.42360 / std::sqrt(26.0)).epsilon(1e-4));
  CHECK(sim::busiest_rank_routing_load(spec, 0.0) == 1.0);
  auto ep1 = spec;
  ep1.model.expert_model_parallel_size = 1;
  CHECK(sim::busiest_rank_routing_load(ep1, 0.7) == 1.0);
}

TEST_CASE("the shared experts' side stream adds a cuBLAS workspace forward and backward", "[sim][moe]") {
  // PyTorch keeps one cuBLAS workspace per (handle, stream); the backward runs on the autograd
  // engine's thread with its own handle. The overlapped shared experts use a second stream.
  const auto with = parse(kLocalMoe, {"model.moe_shared_expert_overlap=true"});
  const auto without = parse(kLocalMoe, {"model.moe_shared_expert_overlap=false"});
  const auto a = sim::predict(with), b = sim::predict(without);
  // The spec's GPU is compute capability 9 and sets no CUBLAS_WORKSPACE_CONFIG: PyTorch's 4096 KiB x 8.
  CHECK((a.ranks.front().breakdown.other - b.ranks.front().breakdown.other) == peakcast::Bytes{4096LL * 1024 * 8} * 2);
}

TEST_CASE("expert tensor parallelism gathers the received rows over the ETP group", "[sim][moe][etp]") {
  // EP 1, TP 1 (no SP): each rank routes its T x k rows; ETP 2 all-gathers them over both ETP
  // ranks and runs half of every expert's width on all of them (token_dispatcher.py:738).
  const char* kEtp = R"({
    "model": {"preset": "moonlight-16b", "num_layers": 2, "seq_length": 2048, "bf16": true,
              "transformer_impl": "local", "attention_backend": "unfused", "moe_grouped_gemm": false,
              "moe_permute_fusion": false, "bias_activation_fusion": false,
              "moe_token_dispatcher_type": "alltoall"},
    "train": {"micro_batch_size": 1, "global_batch_size": 2},
    "cluster": {"num_gpus": 2, "gpu": "h100-sxm-80gb"}})";
  const double T = 2048, k = 6, h = 2048, F = 1408;
  const Bytes etp1 = held_by_layer(parse(kEtp, {"model.expert_tensor_parallel_size=1"}), model::FfnKind::moe);
  const Bytes etp2 = held_by_layer(parse(kEtp, {"model.expert_tensor_parallel_size=2"}), model::FfnKind::moe);
  // Per received row (as in the first test): the sorted input, h wide; fc1's output, 2 F / etp;
  // four F / etp wide activation tensors; the fp32 probability. ETP 2 doubles the rows and halves F.
  const auto per_rows = [&](double rows, double etp) {
    return rows * (2 * h + 2 * (2 * F / etp) + 4 * (2 * F / etp) + 4);
  };
  // ETP 1 with EP 1 keeps the rows in place (one source rank, no regrouping copy); ETP 2 regroups
  // the gathered rows by expert into a new tensor, which fc1 then saves (the same h-wide row).
  CHECK(static_cast<double>((etp2 - etp1).value) == Approx(per_rows(2 * T * k, 2) - per_rows(T * k, 1)));
}

TEST_CASE("activation_func_fp8_input_store: the fused SwiGLU keeps an FP8 copy of its input", "[sim][fp8store]") {
  // Dense layer 0 of the Moonlight-shaped model with the fused bias-SwiGLU: fc1's output [N, 2F]
  // was saved in bf16; with the FP8 store the activation saves a one-byte copy and fc1's output goes.
  const double N = 2048, F = 11264;
  const Bytes bf16 = held_by_layer(parse(kLocalMoe, {"model.bias_activation_fusion=true"}), model::FfnKind::dense);
  const Bytes fp8 = held_by_layer(parse(kLocalMoe, {"model.bias_activation_fusion=true",
                                                    "model.activation_func_fp8_input_store=true"}),
                                  model::FfnKind::dense);
  CHECK(static_cast<double>((bf16 - fp8).value) == Approx(N * 2 * F * (2 - 1)));
  // The unfused GLU ignores the flag (mlp.py only passes it to the fused kernels).
  const Bytes unfused = held_by_layer(parse(kLocalMoe), model::FfnKind::dense);
  const Bytes unfused_store = held_by_layer(parse(kLocalMoe, {"model.activation_func_fp8_input_store=true"}), model::FfnKind::dense);
  CHECK(unfused == unfused_store);
}
