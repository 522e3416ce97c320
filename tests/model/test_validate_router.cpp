// TopKRouter's rules on the typed router fields (validate_moe.cpp): each case breaks one rule with
// --set overrides on a small MoE spec and expects the diagnostic; its neighbour must not get it.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/validate.hpp"

using namespace peakcast::model;

namespace {

const char* kMoe = R"({
  "model": {"num_layers": 4, "hidden_size": 256, "num_attention_heads": 8, "vocab_size": 1000, "seq_length": 128,
            "bf16": true, "num_moe_experts": 8, "moe_ffn_hidden_size": 128, "moe_router_topk": 2,
            "moe_grouped_gemm": true, "expert_model_parallel_size": 2},
  "train": {"micro_batch_size": 1, "global_batch_size": 8},
  "cluster": {"num_gpus": 8, "gpu": {"name": "test-gpu", "memory_bytes": 80000000000}}
})";

Diagnostics diagnose(const std::vector<std::string>& sets) {
  const ParseResult r = parse_run_spec(kMoe, sets);
  Diagnostics out = r.diagnostics;
  if (r.spec) {
    const Diagnostics v = validate(*r.spec);
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

bool has(const Diagnostics& ds, const std::string& rule, const std::string& path, Severity s) {
  for (const auto& d : ds)
    if (d.rule == rule && d.path == path && d.severity == s) return true;
  return false;
}

struct Case {
  const char* rule;
  const char* path;
  Severity severity;
  std::vector<std::string> bad, good;
};

}  // namespace

TEST_CASE("router rules read the typed fields", "[validate][moe][router]") {
  const std::vector<Case> cases = {
      {"aux_loss_coeff_list_length", "model.moe_aux_loss_coeff", Severity::error, {R"(model.moe_router_load_balancing_type=["aux_loss","seq_aux_loss"])", "model.moe_aux_loss_coeff=[0.01]"}, {R"(model.moe_router_load_balancing_type=["aux_loss","seq_aux_loss"])", "model.moe_aux_loss_coeff=[0.01,0.0]"}},
      {"aux_loss_coeff_list_length", "model.moe_aux_loss_coeff", Severity::error, {R"(model.moe_router_load_balancing_type=["aux_loss"])", "model.moe_aux_loss_coeff=0.01"}, {R"(model.moe_router_load_balancing_type=["aux_loss"])", "model.moe_aux_loss_coeff=[0.01]"}},
      {"aux_loss_coeff_list_needs_type_list", "model.moe_aux_loss_coeff", Severity::error, {"model.moe_aux_loss_coeff=[0.01]"}, {"model.moe_aux_loss_coeff=0.01"}},
      {"expert_bias_needs_sigmoid", "model.moe_router_enable_expert_bias", Severity::error, {"model.moe_router_enable_expert_bias=true"}, {"model.moe_router_enable_expert_bias=true", "model.moe_router_score_function=sqrtsoftplus"}},
      {"topk1_needs_pre_softmax", "model.moe_router_topk", Severity::error, {"model.moe_router_topk=1"}, {"model.moe_router_topk=1", "model.moe_router_load_balancing_type=sinkhorn"}},
      {"group_topk_needs_groups", "model.moe_router_num_groups", Severity::error, {"model.moe_router_group_topk=1"}, {"model.moe_router_group_topk=1", "model.moe_router_num_groups=2"}},
      {"experts_divisible_by_groups", "model.moe_router_num_groups", Severity::error, {"model.moe_router_group_topk=1", "model.moe_router_num_groups=3"}, {"model.moe_router_group_topk=1", "model.moe_router_num_groups=4"}},
      {"topk_limited_devices_vs_group_topk", "model.moe_router_topk_limited_devices", Severity::error, {"model.moe_router_group_topk=1", "model.moe_router_num_groups=2", "model.moe_router_topk_limited_devices=1"}, {"model.moe_router_topk_limited_devices=1"}},
      {"sinkhorn_no_aux_loss", "model.moe_aux_loss_coeff", Severity::error, {"model.moe_router_load_balancing_type=sinkhorn", "model.moe_aux_loss_coeff=0.01"}, {"model.moe_router_load_balancing_type=sinkhorn"}},
      {"quantile_balancing_no_fusion", "model.moe_router_fusion", Severity::error, {"model.moe_router_load_balancing_type=quantile_balancing", "model.moe_router_fusion=true"}, {"model.moe_router_load_balancing_type=quantile_balancing"}},
      {"quantile_balancing_no_groups", "model.moe_router_group_topk", Severity::error, {"model.moe_router_load_balancing_type=quantile_balancing", "model.moe_router_topk_limited_devices=1"}, {"model.moe_router_load_balancing_type=quantile_balancing"}},
      {"router_fusion_no_fp64", "model.moe_router_dtype", Severity::error, {"model.moe_router_fusion=true", "model.moe_router_dtype=fp64"}, {"model.moe_router_fusion=true", "model.moe_router_dtype=fp32"}},
      {"capacity_factor_load_balancing", "model.moe_router_load_balancing_type", Severity::error, {"model.moe_expert_capacity_factor=1.0", R"(model.moe_router_load_balancing_type=["aux_loss","sinkhorn"])", "model.moe_aux_loss_coeff=[0.01,0.0]"}, {"model.moe_expert_capacity_factor=1.0", R"(model.moe_router_load_balancing_type=["aux_loss","none"])", "model.moe_aux_loss_coeff=[0.01,0.0]"}},
      {"force_biased_imbalance", "model.moe_router_force_biased", Severity::warning, {"model.moe_router_force_biased=1.0"}, {}},
  };
  for (const auto& c : cases) {
    INFO(c.rule);
    CHECK(has(diagnose(c.bad), c.rule, c.path, c.severity));
    CHECK_FALSE(has(diagnose(c.good), c.rule, c.path, c.severity));
  }
}

TEST_CASE("router keys it simulates no longer warn not_simulated", "[validate][moe][router]") {
  const auto ds = diagnose({"model.moe_z_loss_coeff=0.001", "model.moe_router_fusion=true", "model.moe_router_pre_softmax=true",
                            "model.moe_aux_loss_coeff=0.01", "model.moe_router_topk_scaling_factor=2.5"});
  for (const char* key : {"moe_z_loss_coeff", "moe_router_fusion", "moe_router_pre_softmax", "moe_aux_loss_coeff",
                          "moe_router_topk_scaling_factor"})
    CHECK_FALSE(has(ds, "not_simulated", std::string("model.") + key, Severity::warning));
  // Padding each expert's rows for quantisation changes the dispatcher's rows, which the router does not model.
  CHECK(has(diagnose({"model.moe_router_padding_for_quantization=true", "model.fp8=hybrid", "model.moe_token_dispatcher_type=alltoall"}),
            "not_simulated", "model.moe_router_padding_for_quantization", Severity::warning));
}
