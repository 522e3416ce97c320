// Per-layer CUDA graphs by iteration: replaying iterations allocate none of a captured layer's
// saved set (it lives in the graph pool), keep the graphs' static buffers, and need the pool beside
// them; eager iterations run as without graphs. Expectations are sums of the model's own shapes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/validate.hpp"
#include "peakcast/sim/prediction.hpp"

using namespace peakcast;

namespace {

constexpr std::int64_t kLayers = 4, kSeq = 2048, kHidden = 2048, kKvChannels = 128;

// A local-stack dense GQA model like the measured cuda_graphs corpus, smaller.
model::RunSpec local_spec(const std::string& graphs, const std::string& recompute) {
  const std::string text = R"({
    "model": {"num_layers": 4, "hidden_size": 2048, "ffn_hidden_size": 8192, "num_attention_heads": 16,
              "num_query_groups": 4, "kv_channels": 128, "vocab_size": 32768, "seq_length": 2048,
              "transformer_impl": "local", "attention_backend": "unfused", "masked_softmax_fusion": false,
              "normalization": "RMSNorm", "gated_linear_unit": true, "activation_func": "silu",
              "add_bias_linear": false, "attention_dropout": 0.0, "hidden_dropout": 0.0,
              "position_embedding_type": "rope", "bf16": true, "params_dtype": "bf16" )" +
                           graphs + recompute + R"(},
    "train": {"micro_batch_size": 1, "global_batch_size": 2},
    "optimizer": {"optimizer": "adam", "bf16": true, "use_distributed_optimizer": false},
    "ddp": {"grad_reduce_in_fp32": true, "use_distributed_optimizer": false},
    "cluster": {"num_gpus": 1, "gpu": "h200-141gb"}})";
  auto r = model::parse_run_spec(text);
  REQUIRE(r.spec);
  REQUIRE_FALSE(model::has_errors(model::validate(*r.spec)));
  return *r.spec;
}

const std::string kLocalGraphs = R"(, "cuda_graph_impl": "local", "cuda_graph_modules": [])";
const std::string kCoreAttn = R"(, "recompute_granularity": "selective", "recompute_modules": ["core_attn"])";

// The largest live bytes of one iteration's optimizer step in a recorded timeline.
Bytes optimizer_live(const sim::Prediction& p, int iteration) {
  Bytes best{};
  for (const auto& e : p.ranks.at(0).timeline)
    if (e.iteration == iteration && e.phase == sim::Phase::optimizer) best = max(best, e.live);
  return best;
}

// One iteration of a recorded timeline: the largest live bytes of its forward-backward and the live
// bytes at its gradient sync.
struct IterationLive {
  Bytes forward_backward, sync;
};
IterationLive forward_backward_and_sync(const sim::Prediction& p, int iteration) {
  IterationLive r;
  for (const auto& e : p.ranks.at(0).timeline) {
    if (e.iteration != iteration) continue;
    if (e.phase == sim::Phase::forward || e.phase == sim::Phase::backward) r.forward_backward = max(r.forward_backward, e.live);
    if (e.phase == sim::Phase::grad_sync) r.sync = e.live;
  }
  return r;
}

}  // namespace

TEST_CASE("local CUDA graphs: replaying iterations keep the static buffers, not the saved sets", "[sim][cuda_graph]") {
  sim::PredictOptions timeline;
  timeline.record_timeline = true;
  const auto eager = sim::predict(local_spec("", ""), timeline);
  const auto graphed = sim::predict(local_spec(kLocalGraphs, ""), timeline);
  // At the steady optimizer step no activation is alive: the only difference is the graphs'
  // static buffers, two hidden states per captured layer and six per chain, plus the rotary table
  // ([s, 1, 1, kv_channels] fp32).
  const Bytes hidden{kSeq * kHidden * 2};
  const Bytes statics = hidden * (2 * kLayers + 6) + Bytes{kSeq * kKvChannels * 4};
  CHECK(optimizer_live(graphed, 2) == optimizer_live(eager, 2) + statics);
  // The forward-backward of a replaying iteration holds no layer's saved set: its peak is below the
  // eager one by at least the layers' saved bytes less the static buffers.
  Bytes layers_held{};
  for (const auto& m : eager.ranks[0].modules)
    if (m.name.rfind("L", 0) == 0) layers_held += m.held;
  REQUIRE(layers_held.value > 0);
  CHECK(forward_backward_and_sync(graphed, 2).forward_backward <=
        forward_backward_and_sync(eager, 2).forward_backward - layers_held + statics);
}

TEST_CASE("local CUDA graphs: the pool holds every captured layer's saved set, checkpoints bypassed", "[sim][cuda_graph]") {
  const auto eager = sim::predict(local_spec("", ""));
  const auto graphed = sim::predict(local_spec(kLocalGraphs, ""));
  const auto graphed_core_attn = sim::predict(local_spec(kLocalGraphs, kCoreAttn));
  // One graph set (PP 1): the layers' saved sets without recompute plus the largest working memory
  // of one captured layer.
  Bytes held{}, excess{};
  for (const auto& m : eager.ranks[0].modules) {
    if (m.name.rfind("L", 0) != 0) continue;
    held += m.held;
    excess = max(excess, max(m.forward_excess, m.backward_excess));
  }
  CHECK(graphed.ranks[0].reserved_outside_allocated == held + excess);
  // core_attn inside the captured layer runs plain during capture: the same pool.
  CHECK(graphed_core_attn.ranks[0].reserved_outside_allocated == graphed.ranks[0].reserved_outside_allocated);
  // Iteration 1 ends in the capture, which holds the whole saved sets: recompute buys nothing there.
  CHECK(graphed_core_attn.ranks[0].first_iteration_peak_allocated == graphed.ranks[0].first_iteration_peak_allocated);
  // What the device must hold in replaying iterations: their allocated peak plus the pool.
  CHECK(graphed.ranks[0].peak_with_graph_pool >= graphed.ranks[0].steady_peak_allocated + held);
}

TEST_CASE("local CUDA graphs: the allocator replay captures the layers into a pool of their own", "[sim][cuda_graph][allocator]") {
  sim::PredictOptions o;
  o.replay_allocator = true;
  const auto eager = sim::predict(local_spec("", ""), o);
  const auto graphed = sim::predict(local_spec(kLocalGraphs, ""), o);
  const auto& r = graphed.ranks[0];
  REQUIRE(r.allocator);
  Bytes held{};
  for (const auto& m : eager.ranks[0].modules)
    if (m.name.rfind("L", 0) == 0) held += m.held;
  // The forwards are captured before any backward: every layer's saved set is in the pool at once.
  const Bytes pool = r.allocator->graph_pool_replayed;
  CHECK(pool >= held);
  // The pool's segments come beside the cache's, which the captured layers no longer allocate in.
  CHECK(r.allocator->peak_reserved >= pool);
  CHECK(r.allocator->peak_reserved >= r.steady_peak_allocated + held);
  // Transformer Engine's graphs are not replayed capture by capture: their pool is the sum.
  auto te = local_spec(kLocalGraphs, "");
  te.model.cuda_graph_impl = model::CudaGraphImpl::transformer_engine;
  te.model.transformer_impl = model::TransformerImpl::transformer_engine;
  const auto te_pred = sim::predict(te, o);
  REQUIRE(te_pred.ranks[0].allocator);
  CHECK(te_pred.ranks[0].allocator->graph_pool_replayed == Bytes{});
}

TEST_CASE("Transformer Engine graphs: the warm-up iterations before the capture set the allocated peak", "[sim][cuda_graph]") {
  // A hybrid model's attention layers, captured whole by the attn scope, with core_attn recompute:
  // the eager iterations (cuda_graph_warmup_steps of them) recompute; the replaying ones do not
  // allocate the attention layers' saved sets at all.
  const auto spec_with = [](const std::string& extra) {
    const std::string text = R"({
      "model": {"preset": "nemotron-3-nano-30b-a3b", "num_layers": 4, "hybrid_override_pattern": "M*E*",
                "seq_length": 4096, "expert_model_parallel_size": 1, "num_moe_experts": 8, "moe_router_topk": 2,
                "cuda_graph_impl": "transformer_engine", "cuda_graph_modules": ["attn", "mamba"], "use_te_rng_tracker": true,
                "recompute_granularity": "selective", "recompute_modules": ["core_attn"] )" +
                             extra + R"(},
      "train": {"micro_batch_size": 1, "global_batch_size": 1},
      "cluster": {"num_gpus": 1, "gpu": "h200-141gb"}})";
    auto r = model::parse_run_spec(text);
    REQUIRE(r.spec);
    REQUIRE_FALSE(model::has_errors(model::validate(*r.spec)));
    return *r.spec;
  };
  auto no_graphs = spec_with("");
  no_graphs.model.cuda_graph_impl = model::CudaGraphImpl::none;
  const auto eager = sim::predict(no_graphs);
  const auto warm3 = sim::predict(spec_with(""));
  const auto warm1 = sim::predict(spec_with(R"(, "cuda_graph_warmup_steps": 1)"));
  // Three eager iterations: the steady eager one is the allocated peak, as without graphs.
  CHECK(warm3.ranks[0].peak_allocated == eager.ranks[0].peak_allocated);
  // One: iteration 2 on replays, whose allocated peak is lower; the pool comes beside it.
  CHECK(warm1.ranks[0].steady_peak_allocated < eager.ranks[0].steady_peak_allocated);
  CHECK(warm1.ranks[0].reserved_outside_allocated.value > 0);
  CHECK(warm1.ranks[0].reserved_outside_allocated == warm3.ranks[0].reserved_outside_allocated);
}

TEST_CASE("local CUDA graphs: the pool holds an mla_up_proj layer's whole saved set (the capture's warm-up runs it plain)",
          "[sim][cuda_graph]") {
  const auto mla = [](const std::string& extra) {
    const std::string text = R"({
      "model": {"num_layers": 4, "hidden_size": 2048, "ffn_hidden_size": 11264, "num_attention_heads": 16,
                "multi_latent_attention": true, "q_lora_rank": null, "kv_lora_rank": 512, "qk_head_dim": 128,
                "qk_pos_emb_head_dim": 64, "v_head_dim": 128, "kv_channels": 128, "vocab_size": 32768,
                "seq_length": 2048, "transformer_impl": "local", "attention_backend": "unfused",
                "normalization": "RMSNorm", "gated_linear_unit": true, "add_bias_linear": false,
                "attention_dropout": 0.0, "hidden_dropout": 0.0, "bf16": true, "params_dtype": "bf16",
                "cuda_graph_impl": "local" )" +
                             extra + R"(},
      "train": {"micro_batch_size": 1, "global_batch_size": 2},
      "optimizer": {"optimizer": "adam", "bf16": true},
      "cluster": {"num_gpus": 1, "gpu": "h200-141gb", "transformer_engine_available": false, "calibration_harness": true}})";
    auto r = model::parse_run_spec(text);
    REQUIRE(r.spec);
    REQUIRE_FALSE(model::has_errors(model::validate(*r.spec)));
    return sim::predict(*r.spec);
  };
  const auto none = mla("");
  const auto up = mla(R"(, "recompute_granularity": "selective", "recompute_modules": ["mla_up_proj"])");
  REQUIRE(none.ranks[0].reserved_outside_allocated.value > 0);
  CHECK(up.ranks[0].reserved_outside_allocated == none.ranks[0].reserved_outside_allocated);
  // Iteration 1 (recording, then the capture) still discards the up-projections' outputs eagerly.
  CHECK(up.ranks[0].first_iteration_peak_allocated <= none.ranks[0].first_iteration_peak_allocated);
}

TEST_CASE("full-iteration CUDA graph: the capture allocates as eager, the replays keep the forward-backward in the pool",
          "[sim][cuda_graph]") {
  sim::PredictOptions timeline;
  timeline.record_timeline = true;
  const auto eager = sim::predict(local_spec("", ""), timeline);
  const auto full = sim::predict(
      local_spec(R"(, "cuda_graph_impl": "full_iteration", "cuda_graph_modules": [], "cuda_graph_warmup_steps": 1)", ""),
      timeline);
  // The capture iteration (2) runs the forward-backward eagerly: the same allocated peak.
  CHECK(full.ranks[0].peak_allocated == eager.ranks[0].peak_allocated);
  // The pool is that iteration's forward-backward working set: its largest live bytes over what is
  // alive at the gradient sync (no activation left).
  const auto capture = forward_backward_and_sync(eager, 2);
  REQUIRE(capture.sync.value > 0);
  CHECK(full.ranks[0].reserved_outside_allocated == capture.forward_backward - capture.sync);
  // Replaying iterations (3 on) allocate nothing in the forward-backward.
  const auto replay = forward_backward_and_sync(full, 3);
  REQUIRE(replay.sync.value > 0);
  CHECK(replay.forward_backward == replay.sync);
}
