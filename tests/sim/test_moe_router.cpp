// TopKRouter's saved tensors per setting (sim/src/moe_router.cpp), against byte counts written out from
// router.py / moe_utils.py's shapes: T tokens on the rank, E experts, k = topk, G groups, b micro-batch.
// int64 indices 8 bytes, fp32 scores 4, bool maps 1; the logits take the router dtype (the input's when
// moe_router_dtype is unset). The routing map the dispatcher keeps is counted with the router.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/validate.hpp"
#include "peakcast/sim/layer_graph.hpp"
#include "peakcast/sim/module_graphs.hpp"
#include "spec_layer.hpp"

using namespace peakcast;

namespace {

constexpr std::int64_t T = 256, E = 8, k = 2, h = 256, b = 1;  // seq 256, micro-batch 1, no SP

const char* kSpec = R"({
  "model": {"num_layers": 2, "hidden_size": 256, "num_attention_heads": 4, "ffn_hidden_size": 512, "vocab_size": 1024,
            "seq_length": 256, "bf16": true, "transformer_impl": "local", "attention_backend": "unfused",
            "normalization": "RMSNorm", "gated_linear_unit": true, "add_bias_linear": false, "hidden_dropout": 0.0,
            "attention_dropout": 0.0, "num_moe_experts": 8, "moe_ffn_hidden_size": 128, "moe_router_topk": 2,
            "moe_grouped_gemm": false, "moe_router_load_balancing_type": "aux_loss", "moe_aux_loss_coeff": 0.0},
  "train": {"micro_batch_size": 1, "global_batch_size": 2},
  "cluster": {"num_gpus": 2, "gpu": "h100-sxm-80gb"}})";

sim::LayerGraph moe_layer(const std::vector<std::string>& sets) { return test::spec_layer(kSpec, sets, {0, model::MixerKind::attention, model::FfnKind::moe, false}); }

// Bytes the router's own tensors keep from forward to backward.
std::int64_t router_saved(const std::vector<std::string>& sets) {
  const auto p = sim::profile_module(moe_layer(sets), sim::CheckpointSet{});
  std::int64_t bytes = 0;
  for (const auto& t : p.held_tensors)
    if (t.name.find("router.") != std::string::npos) bytes += t.bytes.value;
  return bytes;
}

std::int64_t layer_saved(const std::vector<std::string>& sets) {
  return sim::profile_module(moe_layer(sets), sim::CheckpointSet{}).held.value;
}

const sim::OpNode& op_named(const sim::LayerGraph& g, const std::string& suffix) {
  for (const auto& o : g.ops)
    if (o.name.size() >= suffix.size() && o.name.compare(o.name.size() - suffix.size(), suffix.size(), suffix) == 0) return o;
  FAIL("no op " << suffix);
  return g.ops.front();
}

constexpr std::int64_t kMap = T * E;       // the bool routing map
constexpr std::int64_t kTopk = T * k * 8;  // top-k indices (topk, scatter save the same tensor)

}  // namespace

TEST_CASE("softmax after top-k keeps the indices and the [T, k] softmax", "[sim][moe][router]") {
  CHECK(router_saved({}) == kTopk + T * k * 4 + kMap);
  // The logits' dtype changes no saved tensor here; scaling, capacity dropping and benchmark logits neither.
  CHECK(router_saved({"model.moe_router_dtype=fp32"}) == kTopk + T * k * 4 + kMap);
  CHECK(router_saved({"model.moe_router_topk_scaling_factor=2.5"}) == kTopk + T * k * 4 + kMap);
  CHECK(router_saved({"model.moe_expert_capacity_factor=1.0"}) == kTopk + T * k * 4 + kMap);
  CHECK(router_saved({"model.moe_expert_capacity_factor=1.0", "model.moe_pad_expert_input_to_capacity=true"}) ==
        kTopk + T * k * 4 + kMap);
  CHECK(router_saved({"model.moe_router_force_load_balancing=true"}) == kTopk + T * k * 4 + kMap);
  CHECK(router_saved({"model.moe_router_force_biased=1.0"}) == kTopk + T * k * 4 + kMap);
}

TEST_CASE("pre-softmax keeps the [T, E] fp32 softmax instead", "[sim][moe][router]") {
  CHECK(router_saved({"model.moe_router_pre_softmax=true"}) == T * E * 4 + kTopk + kMap);
}

TEST_CASE("sigmoid keeps its [T, E] result, the top-k scores and their [T] sum", "[sim][moe][router]") {
  const std::int64_t sigmoid = T * E * 4 + kTopk + T * k * 4 + T * 4 + kMap;
  CHECK(router_saved({"model.moe_router_score_function=sigmoid"}) == sigmoid);
  CHECK(router_saved({"model.moe_router_score_function=sigmoid", "model.moe_router_pre_softmax=true"}) == sigmoid);
  // Expert bias chooses on a biased copy; gather then saves the same sigmoid result and index.
  CHECK(router_saved({"model.moe_router_score_function=sigmoid", "model.moe_router_enable_expert_bias=true"}) == sigmoid);
  // sqrtsoftplus: softplus keeps its fp32 input (a copy of bf16 logits), sqrt its result.
  CHECK(router_saved({"model.moe_router_score_function=sqrtsoftplus"}) == 2 * T * E * 4 + kTopk + T * k * 4 + T * 4 + kMap);
}

TEST_CASE("group-limited routing keeps the [T, E] group mask, but not when expert bias chooses", "[sim][moe][router]") {
  const std::vector<std::string> groups = {"model.moe_router_num_groups=4", "model.moe_router_group_topk=2"};
  std::vector<std::string> sets = groups;
  CHECK(router_saved(sets) == kTopk + T * k * 4 + kMap + T * E);
  // The deprecated alias: group_topk = it, one group per EP rank.
  CHECK(router_saved({"model.moe_router_topk_limited_devices=1", "model.expert_model_parallel_size=2"}) ==
        kTopk + T * k * 4 + kMap + T * E);
  sets.insert(sets.end(), {"model.moe_router_score_function=sigmoid", "model.moe_router_enable_expert_bias=true"});
  CHECK(router_saved(sets) == T * E * 4 + kTopk + T * k * 4 + T * 4 + kMap);
}

TEST_CASE("z-loss keeps the logits and their logsumexp in the router dtype", "[sim][moe][router]") {
  const std::int64_t base = kTopk + T * k * 4 + kMap;
  CHECK(router_saved({"model.moe_z_loss_coeff=0.001"}) == base + T * E * 2 + T * 2);
  CHECK(router_saved({"model.moe_z_loss_coeff=0.0"}) == base + T * E * 2 + T * 2);  // set, so it runs
  CHECK(router_saved({"model.moe_z_loss_coeff=0.001", "model.moe_router_dtype=fp32"}) == base + T * E * 4 + T * 4);
}

TEST_CASE("aux losses keep one [T, E] fp32 score tensor and each type's tokens per expert", "[sim][moe][router]") {
  const std::int64_t base = kTopk + T * k * 4 + kMap;
  CHECK(router_saved({"model.moe_aux_loss_coeff=0.01"}) == base + T * E * 4 + E * 8);
  CHECK(router_saved({"model.moe_aux_loss_coeff=0.01", "model.moe_router_load_balancing_type=seq_aux_loss"}) ==
        base + T * E * 4 + b * E * 8);
  CHECK(router_saved({"model.moe_aux_loss_coeff=0.01", "model.moe_router_load_balancing_type=global_aux_loss"}) ==
        base + T * E * 4 + E * 4);
  CHECK(router_saved({"model.moe_aux_loss_coeff=0.01", "model.moe_router_load_balancing_type=none"}) == base);
  CHECK(router_saved({R"(model.moe_router_load_balancing_type=["aux_loss","seq_aux_loss"])", "model.moe_aux_loss_coeff=[0.01,0.01]"}) ==
        base + T * E * 4 + E * 8 + b * E * 8);
  CHECK(router_saved({R"(model.moe_router_load_balancing_type=["aux_loss","seq_aux_loss"])", "model.moe_aux_loss_coeff=[0.0,0.01]"}) ==
        base + T * E * 4 + b * E * 8);
  // Sigmoid scores for the loss: their own sigmoid result and the [T] denominator of the normalisation.
  const std::int64_t sigmoid = T * E * 4 + kTopk + T * k * 4 + T * 4 + kMap;
  CHECK(router_saved({"model.moe_aux_loss_coeff=0.01", "model.moe_router_score_function=sigmoid"}) ==
        sigmoid + T * E * 4 + T * 4 + E * 8);
}

TEST_CASE("Transformer Engine's fused router keeps fp32 [T, E] intermediates", "[sim][moe][router]") {
  CHECK(router_saved({"model.moe_router_fusion=true"}) == T * E * 4 + kMap);
  CHECK(router_saved({"model.moe_router_fusion=true", "model.moe_aux_loss_coeff=0.01"}) == 2 * T * E * 4 + kMap + E * 8 + 2 * 4);
}

TEST_CASE("sinkhorn keeps its activation, quantile balancing the gathered logits", "[sim][moe][router]") {
  CHECK(router_saved({"model.moe_router_load_balancing_type=sinkhorn"}) == T * E * 4 + kMap);
  CHECK(router_saved({"model.moe_router_load_balancing_type=sinkhorn", "model.moe_router_topk=1"}) == T * E * 2 + kMap);
  // Post-softmax: gather keeps the logits; the index is a view of the [T, k + 1] top-k indices (TP x CP = 1).
  CHECK(router_saved({"model.moe_router_load_balancing_type=quantile_balancing"}) ==
        T * E * 2 + T * (k + 1) * 8 + T * k * 4 + kMap);
}

TEST_CASE("input jitter keeps the noise and the jittered copy instead of the input", "[sim][moe][router]") {
  CHECK(layer_saved({"model.moe_input_jitter_eps=0.01"}) - layer_saved({}) == T * h * 2);
}

TEST_CASE("the gating GEMM casts to an fp32 router dtype without Transformer Engine", "[sim][moe][router]") {
  const auto local = moe_layer({"model.moe_router_dtype=fp32"});
  CHECK(op_named(local, "router.gating").forward_workspace.value == (T + E) * h * 4);
  CHECK(op_named(local, "router.gating").backward_workspace.value == (T + E) * h * 4);
  const auto bf16 = moe_layer({});
  CHECK(op_named(bf16, "router.gating").forward_workspace.value == 0);
  CHECK(op_named(bf16, "router.gating").backward_workspace.value == E * h * 2);  // the weight gradient
  const auto te = moe_layer({"model.moe_router_dtype=fp32", "model.transformer_impl=transformer_engine",
                             "model.attention_backend=auto"});
  CHECK(op_named(te, "router.gating").forward_workspace.value == 0);
}
