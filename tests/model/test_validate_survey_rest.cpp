// The last rows of the Megatron refusal survey (docs/megatron-refusals/): rules that had no test, and the
// ones added when the router keys were typed. One RuleCase per rule and condition (tests/model/rule_cases.hpp).
#include "rule_cases.hpp"

using namespace peakcast::model;
using namespace peakcast::model::test;

namespace {

const std::vector<std::string> kHybrid = {"model.num_layers=null", "model.hybrid_override_pattern=\"M*M*\""};
const std::vector<std::string> kBridgeHybridMtp = {"defaults=bridge", "model.num_layers=null", "model.hybrid_layer_pattern=\"M*M*\"",
                                                   "model.mtp_num_layers=1"};
const std::vector<std::string> kPp2 = {"model.pipeline_model_parallel_size=2", "model.pipeline_dtype=bf16"};
const std::vector<std::string> kMuon = {"optimizer.optimizer=muon"};
const std::vector<std::string> kDistOpt = {"optimizer.use_distributed_optimizer=true", "ddp.use_distributed_optimizer=true"};

const std::vector<RuleCase>& model_cases() {
  static const std::vector<RuleCase> k = {
      // qb_dual_update: (gathered tokens x top-k) % experts (moe_utils.py:237). 8 experts, top-2, MBS 1, TP 1:
      // seq 101 gives 202 assignments, seq 100 gives 200 = 25 x 8.
      {"quantile_balancing_divisible", "model.moe_router_load_balancing_type", Severity::error,
       plus(kMoe, {"model.moe_router_load_balancing_type=quantile_balancing", "model.seq_length=101"}),
       plus(kMoe, {"model.moe_router_load_balancing_type=quantile_balancing", "model.seq_length=100"})},
      // With SP the TP x CP gather gives the sequence once: 102 tokens x top-2 = 204 is not a multiple of 8 (counting
      // TP x 102 rows, as without SP, would give 408, which is); MBS 4 gives 408 x 2 = 816 = 102 x 8.
      {"quantile_balancing_divisible", "model.moe_router_load_balancing_type", Severity::error,
       plus(kMoe, {"model.moe_router_load_balancing_type=quantile_balancing", "model.seq_length=102", "model.tensor_model_parallel_size=2",
                   "model.sequence_parallel=true", "model.add_bias_linear=false"}),
       plus(kMoe, {"model.moe_router_load_balancing_type=quantile_balancing", "model.seq_length=102", "model.tensor_model_parallel_size=2",
                   "model.sequence_parallel=true", "model.add_bias_linear=false", "train.micro_batch_size=4", "train.global_batch_size=16"})},
      {"hybrid_pattern_symbol", "model.hybrid_override_pattern", Severity::error, {"model.num_layers=null", "model.hybrid_override_pattern=\"M*X*\""}, kHybrid},
      // in_proj output 2 d_inner + 2 groups x state + heads: 2*512 + 2*8*128 + 8 = 3080 is not a multiple of 16;
      // 16 heads of 64 give 2*1024 + 2048 + 16 = 4112 = 257 x 16.
      {"mamba_fp8_in_proj_alignment", "model.fp8", Severity::error,
       plus(kHybrid, {"model.fp8=e4m3", "model.fp8_recipe=tensorwise", "model.mamba_head_dim=64", "model.mamba_num_groups=8",
                      "model.mamba_state_dim=128"}),
       plus(kHybrid, {"model.fp8=e4m3", "model.fp8_recipe=tensorwise", "model.mamba_head_dim=64", "model.mamba_num_groups=8",
                      "model.mamba_state_dim=128", "model.mamba_num_heads=16"})},
      // Bridge's provider repeats mtp_hybrid_override_pattern mtp_num_layers times (hybrid_provider.py:198-223).
      {"mtp_num_layers_vs_hybrid_pattern", "model.mtp_num_layers", Severity::warning,
       plus(kBridgeHybridMtp, {"model.mtp_hybrid_override_pattern=\"M*/M*\""}), plus(kBridgeHybridMtp, {"model.mtp_hybrid_override_pattern=\"M*\""})},
      {"hybrid_mtp_patterns_identical", "model.mtp_hybrid_override_pattern", Severity::error,
       plus(kBridgeHybridMtp, {"model.mtp_hybrid_override_pattern=\"M*/*M\""}), plus(kBridgeHybridMtp, {"model.mtp_hybrid_override_pattern=\"M*/M*\""})},
      // All MTP layers in one rank's last virtual stage (pipeline_parallel_layer_layout.py:128).
      {"pipeline_layout_invalid", "model.pipeline_model_parallel_layout", Severity::error,
       plus(kPp2, {"model.mtp_num_layers=2", "model.pipeline_model_parallel_layout=\"Ettttttttm|mL\""}),
       plus(kPp2, {"model.mtp_num_layers=2", "model.pipeline_model_parallel_layout=\"Etttttttt|mmL\""})},
  };
  return k;
}

const std::vector<RuleCase>& run_cases() {
  static const std::vector<RuleCase> k = {
      // cuda_graph_config.py:98-112: the deprecated full_iteration scope.
      {"cuda_graph_scope_full_iteration", "model.cuda_graph_modules", Severity::error, {"model.cuda_graph_impl=local", R"(model.cuda_graph_modules=["full_iteration"])"}, {"model.cuda_graph_impl=local", R"(model.cuda_graph_modules=["attn"])"}},
      {"cuda_graph_scope_full_iteration", "model.cuda_graph_modules", Severity::error, {"model.cuda_graph_impl=transformer_engine", R"(model.cuda_graph_modules=["full_iteration"])"}, {"model.cuda_graph_impl=transformer_engine", R"(model.cuda_graph_modules=["attn"])"}},
      // normalize_cuda_graph_modules: a name that is no CudaGraphModule (transformer_config.py:2467).
      {"wrong_type", "model.cuda_graph_modules[0]", Severity::error, {"model.cuda_graph_impl=local", R"(model.cuda_graph_modules=["bogus"])"}, {"model.cuda_graph_impl=local", R"(model.cuda_graph_modules=["attn"])"}},
      // Emerging optimizers (optimizer/__init__.py:741-842).
      {"optimizer_not_modelled", "optimizer.optimizer", Severity::warning, kMuon, {"optimizer.optimizer=adam"}},
      {"layer_wise_no_moe", "optimizer.use_layer_wise_distributed_optimizer", Severity::error,
       plus(kMoe, plus(kMuon, plus(kDistOpt, {"optimizer.use_layer_wise_distributed_optimizer=true", "model.add_bias_linear=true"}))),
       plus(kMoe, plus(kMuon, plus(kDistOpt, {"optimizer.use_layer_wise_distributed_optimizer=true", "model.add_bias_linear=false"})))},
      {"optimizer_unknown", "optimizer.optimizer", Severity::warning, {"optimizer.optimizer=soap"}, kMuon},
      {"optimizer_unknown", "optimizer.optimizer", Severity::warning, {"optimizer.optimizer=lion"}, {"optimizer.optimizer=dist_adaptive_muon"}},
      {"emerging_optimizer_no_fp16", "optimizer.fp16", Severity::error, plus(kMuon, {"model.bf16=false", "model.fp16=true", "optimizer.bf16=false", "optimizer.fp16=true"}), {"model.bf16=false", "model.fp16=true", "optimizer.bf16=false", "optimizer.fp16=true"}},
      {"layer_wise_vs_param_gather_overlap", "optimizer.overlap_param_gather_with_optimizer_step", Severity::error,
       plus(kMuon, plus(kDistOpt, {"optimizer.use_layer_wise_distributed_optimizer=true", "optimizer.overlap_param_gather_with_optimizer_step=true"})),
       plus(kMuon, plus(kDistOpt, {"optimizer.overlap_param_gather_with_optimizer_step=true"}))},
      {"layer_wise_vs_param_gather_overlap", "optimizer.overlap_param_gather_with_optimizer_step", Severity::error,
       plus(kDistOpt, {"optimizer.optimizer=dist_muon", "optimizer.overlap_param_gather_with_optimizer_step=true"}),
       plus(kDistOpt, {"optimizer.optimizer=dist_muon"})},
      {"layer_wise_single_instance", "ddp.num_distributed_optimizer_instances", Severity::error,
       plus(kMuon, plus(kDistOpt, {"optimizer.use_layer_wise_distributed_optimizer=true", "ddp.num_distributed_optimizer_instances=2"})),
       plus(kMuon, plus(kDistOpt, {"ddp.num_distributed_optimizer_instances=2"}))},
  };
  return k;
}

}  // namespace

TEST_CASE("survey rows: routing, hybrid patterns, MTP layout", "[validate][refusals]") { check_rule_cases(model_cases()); }
TEST_CASE("survey rows: CUDA-graph scopes and emerging optimizers", "[validate][refusals]") { check_rule_cases(run_cases()); }

// Bridge's CommOverlapConfig.setup changes the pipeline's p2p settings without a message
// (bridge:src/megatron/bridge/training/comm_overlap.py:456, :604-643): overlapped p2p with VPP, batched
// p2p without it (model/src/bridge_runtime.cpp applies it).
TEST_CASE("survey rows: Bridge's comm_overlap sets the p2p flags by the pipeline layout", "[validate][refusals][bridge]") {
  const char* recipe = "bridge:llama3_70b_sft_32gpu_h100_bf16_config";
  const ParseResult vpp = parse_spec_input(recipe, "", {"model.pipeline_model_parallel_size=4", "model.virtual_pipeline_model_parallel_size=5", "comm_overlap.tp_comm_overlap=false"});
  for (const auto& d : vpp.diagnostics) UNSCOPED_INFO(format(d));
  REQUIRE(vpp.spec);
  CHECK(vpp.spec->model.overlap_p2p_comm);
  CHECK_FALSE(vpp.spec->model.batch_p2p_comm);
  const ParseResult plain = parse_spec_input(recipe, "", {"model.pipeline_model_parallel_size=4", "model.virtual_pipeline_model_parallel_size=null", "comm_overlap.tp_comm_overlap=false"});
  for (const auto& d : plain.diagnostics) UNSCOPED_INFO(format(d));
  REQUIRE(plain.spec);
  CHECK_FALSE(plain.spec->model.overlap_p2p_comm);
  CHECK(plain.spec->model.batch_p2p_comm);
}
