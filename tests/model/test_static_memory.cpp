// Static memory per rank, against values written out from shapes and dtypes. Small models keep
// the arithmetic readable; each case exercises one sharding or buffer rule.
#include <catch2/catch.hpp>

#include <algorithm>
#include <stdexcept>

#include "peakcast/model/layer_plan.hpp"
#include "peakcast/model/static_memory.hpp"
#include "test_params_models.hpp"

using namespace peakcast;
using namespace peakcast::model;

namespace {

// h=128, 4 heads of 32, 2 query groups (GQA), SwiGLU F=256, vocab 1024, 4 layers, RMSNorm, untied.
RunSpec tiny_gqa() {
  RunSpec s;
  test_models::llama_common(s.model);
  test_models::small_sizes(s.model, 4, 128, 256, 4, 32, 1024);
  s.model.num_query_groups = 2;
  s.ddp.grad_reduce_in_fp32 = true;
  return s;
}

// tiny_gqa at TP=2, per rank:
constexpr std::int64_t kTp2Layer = 128                             // fused input RMSNorm (replicated)
                                   + (128 + 2 * 2 * 32) / 2 * 128  // qkv: (q 128 + k,v 2*2*32) / TP rows x h
                                   + 128 * (128 / 2)               // proj: h x (q width / TP)
                                   + 128                           // fused pre-MLP RMSNorm
                                   + (2 * 256) / 2 * 128           // fc1: 2F / TP rows x h
                                   + 128 * (256 / 2);              // fc2: h x F / TP
constexpr std::int64_t kTp2Gemm = kTp2Layer - 2 * 128;
constexpr std::int64_t kTp2Vocab = 1024 / 2 * 128;  // embedding or output: V / TP rows x h
constexpr std::int64_t kFinalNorm = 128;

std::vector<RankStatic> run(RunSpec s) {
  const Derived d = derive(s);
  return static_memory_per_rank(s, d, build_layer_plan(s, d));
}

const RankStatic& at(const std::vector<RankStatic>& ranks, std::int64_t pp, std::int64_t dp = 0) {
  for (const auto& r : ranks)
    if (r.rank.pp_rank == pp && r.rank.dp_rank == dp) return r;
  throw std::runtime_error("no such rank entry");
}

}  // namespace

TEST_CASE("TP=2 with GQA, no DistOpt: 2 + 4 + 4 + 8 bytes per parameter", "[model][static]") {
  auto s = tiny_gqa();
  s.model.tensor_model_parallel_size = 2;
  s.cluster.num_gpus = 2;
  const auto ranks = run(s);
  REQUIRE(ranks.size() == 1);
  const auto& m = ranks[0].memory;
  const std::int64_t p = 4 * kTp2Layer + 2 * kTp2Vocab + kFinalNorm;
  CHECK(p == 427'136);
  CHECK(m.params.dense == p);
  CHECK(m.params.expert == 0);
  CHECK(m.parameters.value == 2 * p);         // bf16 params
  CHECK(m.gradients.value == 4 * p);          // fp32 grad buffer (grad_reduce_in_fp32), unpadded
  CHECK(m.main_params.value == 4 * p);        // Float16Optimizer fp32 main params
  CHECK(m.optimizer_states.value == 8 * p);   // fp32 exp_avg + exp_avg_sq
  CHECK(m.step_transient_steady.value == 0);  // fp32 grads: main.grad is a view
  CHECK(m.ddp_init_transient.value == 0);     // no param_data remap without DistOpt
  CHECK(m.fp8_weight_cache.value == 0);

  SECTION("bf16 grads: 2-byte buffer and a fp32 copy during step()") {
    s.ddp.grad_reduce_in_fp32 = false;
    const auto b = run(s)[0].memory;
    CHECK(b.gradients.value == 2 * p);
    CHECK(b.step_transient_steady.value == 4 * p);
    CHECK(b.step_transient_first.value == 4 * p);
  }
  SECTION("FP8 compute keeps rowwise + columnwise FP8 copies of the TE GEMM weights only") {
    s.model.fp8 = "hybrid";
    CHECK(run(s)[0].memory.fp8_weight_cache.value == 2 * 4 * kTp2Gemm);
  }
  SECTION("first_last_layers_bf16: the BF16 edge layers' GEMM weights are neither cached nor held in FP8") {
    s.model.fp8 = "hybrid";
    s.model.fp8_recipe = Fp8Recipe::tensorwise;
    s.model.first_last_layers_bf16 = true;  // layers 0 and 3 of 4 (one at each end by default)
    CHECK(run(s)[0].memory.fp8_weight_cache.value == 2 * 2 * kTp2Gemm);
    s.model.num_layers_at_start_in_bf16 = 0;
    s.model.num_layers_at_end_in_bf16 = 2;  // layers 2 and 3
    CHECK(run(s)[0].memory.fp8_weight_cache.value == 2 * 2 * kTp2Gemm);
    s.model.num_layers_at_end_in_bf16 = 1;  // layer 3 only
    CHECK(run(s)[0].memory.fp8_weight_cache.value == 2 * 3 * kTp2Gemm);
    // FP8 params: the FP8 layers' GEMM weights take one byte (uint8 buffer), the edge layer's two.
    s.model.fp8_param = true;
    const auto fp8p = run(s)[0].memory;
    CHECK(fp8p.parameters.value == 2 * p - 3 * kTp2Gemm);
    CHECK(fp8p.fp8_weight_cache.value == 3 * kTp2Gemm);  // one transpose per FP8 weight
    s.model.first_last_layers_bf16 = false;
    CHECK(run(s)[0].memory.parameters.value == 2 * p - 4 * kTp2Gemm);
  }
  SECTION("torch AdamW (foreach) holds one fp32 temporary per owned element during step()") {
    s.optimizer.implementation = OptimizerImpl::torch_adamw;
    CHECK(run(s)[0].memory.step_transient_steady.value == 4 * p);
  }
}

TEST_CASE("PP=2: embedding on the first stage, final norm and head on the last; tied copies", "[model][static]") {
  auto s = tiny_gqa();
  s.model.tensor_model_parallel_size = 2;
  s.model.pipeline_model_parallel_size = 2;
  s.cluster.num_gpus = 4;
  auto ranks = run(s);
  REQUIRE(ranks.size() == 2);
  CHECK(at(ranks, 0).memory.params.dense == kTp2Vocab + 2 * kTp2Layer);
  CHECK(at(ranks, 1).memory.params.dense == 2 * kTp2Layer + kFinalNorm + kTp2Vocab);

  SECTION("tied, PP>1: the last stage still allocates its copy of the weight") {
    s.model.share_embeddings_and_output_weights = true;
    ranks = run(s);
    CHECK(at(ranks, 0).memory.params.dense == kTp2Vocab + 2 * kTp2Layer);
    CHECK(at(ranks, 1).memory.params.dense == 2 * kTp2Layer + kFinalNorm + kTp2Vocab);
  }
  SECTION("tied, PP=1: one shared weight") {
    s.model.share_embeddings_and_output_weights = true;
    s.model.pipeline_model_parallel_size = 1;
    s.cluster.num_gpus = 2;
    CHECK(run(s)[0].memory.params.dense == kTp2Vocab + 4 * kTp2Layer + kFinalNorm);
  }
}

TEST_CASE("VPP=2: each rank holds two chunks of one layer", "[model][static]") {
  auto s = tiny_gqa();
  s.model.tensor_model_parallel_size = 2;
  s.model.pipeline_model_parallel_size = 2;
  s.model.virtual_pipeline_model_parallel_size = 2;
  s.cluster.num_gpus = 4;
  const auto ranks = run(s);
  REQUIRE(ranks.size() == 2);
  CHECK(at(ranks, 0).vpp_chunks == std::vector<std::int64_t>{0, 1});
  CHECK(at(ranks, 0).memory.params.dense == kTp2Vocab + 2 * kTp2Layer);               // layers 0 and 2
  CHECK(at(ranks, 1).memory.params.dense == 2 * kTp2Layer + kFinalNorm + kTp2Vocab);  // layers 1 and 3
}

TEST_CASE("MTP on the last stage: duplicate embedding, enorm/hnorm/eh_proj, one layer, its norm", "[model][static]") {
  auto s = tiny_gqa();
  s.model.tensor_model_parallel_size = 2;
  s.model.pipeline_model_parallel_size = 2;
  s.model.mtp_num_layers = 1;
  s.cluster.num_gpus = 4;
  const auto ranks = run(s);
  const std::int64_t mtp = kTp2Vocab          // embedding duplicate on the MTP stage
                           + 128 + 128        // enorm, hnorm
                           + (128 / 2) * 256  // eh_proj: h / TP rows x 2h
                           + kTp2Layer        // same kind as the last decoder layer
                           + 128;             // MTP final layernorm
  CHECK(at(ranks, 0).memory.params.dense == kTp2Vocab + 2 * kTp2Layer);
  CHECK(at(ranks, 1).memory.params.dense == 2 * kTp2Layer + kFinalNorm + mtp + kTp2Vocab);
}

// h=96, 2 heads of 48, F=160, vocab 1000, one layer, TP=1: the 96-element norms break the
// 64-element alignment, so the DistOpt layout has gaps.
TEST_CASE("DistOpt layout: 64-element param alignment, bucket end padded to lcm(dp, 128), shard remainders", "[model][static]") {
  RunSpec s;
  test_models::llama_common(s.model);
  test_models::small_sizes(s.model, 1, 96, 160, 2, 48, 1000);
  s.ddp.grad_reduce_in_fp32 = true;
  s.optimizer.use_distributed_optimizer = true;
  s.ddp.use_distributed_optimizer = true;
  s.cluster.num_gpus = 5;  // DP = 5, one bucket (overlap_grad_reduce off)

  // Reverse registration order, starts rounded up to 64:
  //   output 96000 [0, 96000)        final norm 96 [96000, 96096) -> next start 96128
  //   fc2 96x160 [96128, 111488)     fc1 320x96 [111488, 142208)
  //   fc1 norm 96 [142208, 142304) -> 142336
  //   proj 96x96 [142336, 151552)    qkv 288x96 [151552, 179200)
  //   qkv norm 96 [179200, 179296) -> 179328
  //   embedding 96000 [179328, 275328)
  const std::int64_t unpadded = 2 * 96000 + 3 * 96 + 15360 + 30720 + 9216 + 27648;
  CHECK(unpadded == 275'232);
  const std::int64_t end = 275'328;
  const std::int64_t padded = (end + 639) / 640 * 640;  // lcm(5, 128) = 640
  CHECK(padded == 275'840);
  const std::int64_t shard = padded / 5;  // 55168
  // Shard 0 lies inside the output weight; shards 1-3 each straddle one 32-element gap; shard 4
  // ends at the embedding's end, before 512 elements of bucket padding.
  const std::int64_t owned_first = shard;
  const std::int64_t owned_last = end - 4 * shard;
  CHECK(owned_last == 54'656);

  const auto ranks = run(s);
  REQUIRE(ranks.size() == 2);
  const auto& first = at(ranks, 0, 0).memory;
  const auto& last = at(ranks, 0, 4).memory;
  CHECK(first.params.dense == unpadded);
  CHECK(first.parameters.value == 2 * padded);  // param_data includes the padding
  CHECK(first.gradients.value == 4 * padded);
  CHECK(first.main_params.value == 4 * owned_first);
  CHECK(first.optimizer_states.value == 8 * owned_first);
  CHECK(last.main_params.value == 4 * owned_last);
  CHECK(last.optimizer_states.value == 8 * owned_last);
  // DDP init: param_data + grad_data are allocated while the old bf16 params still exist.
  CHECK(first.ddp_init_transient.value == 2 * unpadded);

  SECTION("pad_buckets_for_high_nccl_busbw pads to lcm(5, 128, 65536)") {
    s.ddp.pad_buckets_for_high_nccl_busbw = true;
    const std::int64_t big = (end + 327679) / 327680 * 327680;
    CHECK(run(s)[0].memory.parameters.value == 2 * big);
  }
}

// h=64, 2 heads of 32, 8 SwiGLU experts of F=64 in both layers, vocab 512, TP=2.
TEST_CASE("EP/ETP: routed experts split over EP and ETP, sharded over expert DP", "[model][static]") {
  RunSpec s;
  auto& m = s.model;
  test_models::llama_common(m);
  test_models::small_sizes(m, 2, 64, 256, 2, 32, 512);
  m.num_moe_experts = 8;
  m.moe_ffn_hidden_size = 64;
  m.moe_router_topk = 2;
  m.moe_grouped_gemm = true;
  m.moe_router_enable_expert_bias = true;
  m.tensor_model_parallel_size = 2;
  m.expert_model_parallel_size = 4;
  m.expert_tensor_parallel_size = 1;
  s.cluster.num_gpus = 8;  // DP = 8 / 2 = 4; expert DP = 8 / (1 * 4) = 2
  s.ddp.grad_reduce_in_fp32 = true;
  s.optimizer.use_distributed_optimizer = true;
  s.ddp.use_distributed_optimizer = true;

  const std::int64_t dense_layer = 64                     // fused input norm
                                   + (64 + 128) / 2 * 64  // qkv / TP
                                   + 64 * 32              // proj
                                   + 64                   // pre-MLP norm (TENorm, MoE layer)
                                   + 8 * 64;              // router, replicated
  const std::int64_t dense = 2 * dense_layer + 2 * (512 / 2 * 64) + 64;
  CHECK(dense == 50'496);
  const std::int64_t expert = 2 * (8 / 4) * (2 * 64 * 64 + 64 * 64);  // 2 layers x 2 local experts x (fc1 + fc2)
  CHECK(expert == 49'152);
  const std::int64_t dense_padded = (dense + 127) / 128 * 128;  // lcm(4, 128); all sizes are multiples of 64
  const std::int64_t dense_shard = dense_padded / 4;            // 12640
  const std::int64_t expert_shard = expert / 2;                 // lcm(2, 128) divides 49152

  const auto ranks = run(s);
  REQUIRE(ranks.size() == 2);
  const auto& r0 = at(ranks, 0, 0);
  const auto& r3 = at(ranks, 0, 3);
  CHECK(r0.memory.params.dense == dense);
  CHECK(r0.memory.params.expert == expert);
  CHECK(r0.memory.parameters.value == 2 * (dense_padded + expert));
  CHECK(r0.memory.main_params.value == 4 * (dense_shard + expert_shard));
  // DP rank 3 owns the last dense shard (minus 64 padding) and expert-DP shard 1.
  CHECK(r3.memory.main_params.value == 4 * (dense_shard - (dense_padded - dense) + expert_shard));
  CHECK(r3.rank.ep_rank == 2);  // global rank 6 = etp 0 + ep 2 + 4 * edp 1
  // fp32 expert_bias + local_tokens_per_expert per MoE layer.
  CHECK(r0.memory.buffers.value == 2 * 2 * 8 * 4);

  SECTION("torch AdamW: a chain of dense and expert optimizers holds the larger one's temporary") {
    // EP4: experts are expert-parallel and get their own optimizer, stepped after the dense one.
    // fp32 grads, so the only step temporary is torch's foreach sqrt buffer (fp32, 4 bytes).
    s.optimizer.implementation = OptimizerImpl::torch_adamw;
    const auto chained_ranks = run(s);
    const auto& chained = at(chained_ranks, 0, 0);
    CHECK(chained.memory.step_transient_steady.value == 4 * std::max(dense_shard, expert_shard));
    // EP1 with ETP = TP: the experts stay in the dense optimizer, one temporary over all of it.
    s.model.expert_model_parallel_size = 1;
    s.model.expert_tensor_parallel_size = 2;
    s.optimizer.use_distributed_optimizer = false;
    s.ddp.use_distributed_optimizer = false;
    const auto single_ranks = run(s);
    const auto& single = at(single_ranks, 0, 0);
    CHECK(single.memory.step_transient_steady.value == 4 * (single.memory.params.dense + single.memory.params.expert));
  }

  SECTION("ETP=2 splits each expert's FFN dimension") {
    s.model.expert_model_parallel_size = 2;
    s.model.expert_tensor_parallel_size = 2;
    CHECK(run(s)[0].memory.params.expert == 2 * (8 / 2) * ((2 * 64 / 2) * 64 + 64 * (64 / 2)));
  }

  SECTION("latent MoE: two duplicated projections per layer, the experts latent wide") {
    // fc1_latent_proj [16, 64] and fc2_latent_proj [64, 16], TELinear duplicated: whole on every TP rank,
    // dense (moe_layer.py:273-296); the experts' fc1 [2F, 16] and fc2 [16, F] (experts.py:216-251).
    s.model.moe_latent_size = 16;
    const auto latent_ranks = run(s);
    const auto& latent = at(latent_ranks, 0, 0);
    CHECK(latent.memory.params.dense == dense + 2 * (2 * 64 * 16));
    CHECK(latent.memory.params.expert == 2 * (8 / 4) * (2 * 64 * 16 + 16 * 64));
  }
}

TEST_CASE("Precision-aware optimizer: TE master weights vs MCore fp32 master", "[model][static]") {
  auto s = tiny_gqa();
  s.model.tensor_model_parallel_size = 2;
  s.cluster.num_gpus = 4;  // DP = 2
  s.ddp.grad_reduce_in_fp32 = false;
  s.optimizer.use_distributed_optimizer = true;
  s.ddp.use_distributed_optimizer = true;
  s.optimizer.use_precision_aware_optimizer = true;
  s.optimizer.main_grads_dtype = DType::bf16;
  s.optimizer.exp_avg_dtype = DType::bf16;
  s.optimizer.exp_avg_sq_dtype = DType::bf16;
  const std::int64_t p = 4 * kTp2Layer + 2 * kTp2Vocab + kFinalNorm;  // multiple of lcm(2, 128)
  const std::int64_t owned = p / 2;

  SECTION("fp8_recipe delayed: TE FusedAdam keeps int16 remainders, no MCore main shard, no grad copy") {
    s.model.fp8_recipe = Fp8Recipe::delayed;
    const auto m = run(s)[0].memory;
    CHECK(m.gradients.value == 2 * p);
    CHECK(m.main_params.value == 0);
    CHECK(m.optimizer_states.value == (2 + 2 + 2) * owned);
    CHECK(m.step_transient_steady.value == 0);
  }
  SECTION("fp8_recipe tensorwise (Bridge default): MCore fp32 main shard and a fp32 grad copy") {
    s.model.fp8_recipe = Fp8Recipe::tensorwise;
    const auto m = run(s)[0].memory;
    CHECK(m.main_params.value == 4 * owned);
    CHECK(m.optimizer_states.value == (2 + 2) * owned);
    CHECK(m.step_transient_steady.value == 4 * owned);
  }
}

TEST_CASE("Hybrid pattern with '|': Mamba + attention on stage 0, MLP + MoE on stage 1", "[model][static]") {
  RunSpec s;
  auto& m = s.model;
  test_models::small_sizes(m, 4, 64, 96, 2, 32, 256);
  m.num_query_groups = 1;
  m.normalization = Normalization::rms_norm;
  m.gated_linear_unit = false;
  m.activation_func = Activation::squared_relu;
  m.add_bias_linear = false;
  m.position_embedding_type = PositionEmbedding::none;
  m.share_embeddings_and_output_weights = false;
  m.bf16 = true;
  m.hybrid_override_pattern = "M*|-E";
  m.mamba_num_heads = 4;
  m.mamba_head_dim = 32;
  m.mamba_num_groups = 2;
  m.mamba_state_dim = 16;
  m.mamba_d_conv = 4;
  m.num_moe_experts = 4;
  m.moe_ffn_hidden_size = 32;
  m.moe_router_topk = 2;
  m.pipeline_model_parallel_size = 2;
  s.cluster.num_gpus = 2;
  const std::int64_t d_inner = 4 * 32, gs = 2 * 16;
  const std::int64_t mamba = 64                                 // fused norm
                             + (2 * d_inner + 2 * gs + 4) * 64  // in_proj: z, x, B, C, dt
                             + (d_inner + 2 * gs) * (4 + 1)     // conv1d weight (kernel 4) + bias
                             + 3 * 4                            // dt_bias, A_log, D
                             + d_inner                          // gated RMSNorm
                             + 64 * d_inner;                    // out_proj
  const std::int64_t attention = 64 + (64 + 2 * 32) * 64 + 64 * 64;
  const std::int64_t mlp = 64 + 96 * 64 + 64 * 96;                 // not gated
  const std::int64_t moe = 64 + 4 * 64 + 4 * (32 * 64 + 64 * 32);  // norm, router, experts
  const auto ranks = run(s);
  REQUIRE(ranks.size() == 2);
  CHECK(at(ranks, 0).memory.params.dense == 256 * 64 + mamba + attention);
  CHECK(at(ranks, 1).memory.params.dense == mlp + (moe - 4 * (32 * 64 + 64 * 32)) + 64 + 256 * 64);
  CHECK(at(ranks, 1).memory.params.expert == 4 * (32 * 64 + 64 * 32));
}
