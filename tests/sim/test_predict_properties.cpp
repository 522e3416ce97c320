// Properties of whole predictions that must hold whatever the calibration: recompute never raises
// the peak, the peak grows with the micro-batch, the first stage holds the most activations.
#include <catch2/catch.hpp>

#include <algorithm>

#include <string>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/sim/prediction.hpp"

using namespace peakcast;

namespace {
model::RunSpec spec_from(const std::string& text, const std::vector<std::string>& sets = {}) {
  auto r = model::parse_run_spec(text, sets);
  for (const auto& d : r.diagnostics) INFO(model::format(d));
  REQUIRE(r.spec.has_value());
  return *r.spec;
}

const char* kDense = R"({
  "defaults": "megatron-core", "model": {"preset": "llama3-8b", "num_layers": 8, "tensor_model_parallel_size": 2, "sequence_parallel": true,
            "pipeline_model_parallel_size": 2, "seq_length": 4096, "bf16": true},
  "train": {"micro_batch_size": 1, "global_batch_size": 8},
  "optimizer": {"use_distributed_optimizer": true},
  "ddp": {"use_distributed_optimizer": true},
  "cluster": {"num_gpus": 8, "gpu": "h100-sxm-80gb"}
})";
}  // namespace

// Recompute never raises the peak, with one exception: under TE's fused attention with RoPE, TE copies V
// out of the fused QKV output and the output is freed (get_qkv_layout), while a core_attn checkpoint
// keeps its inputs, V a view that keeps the whole QKV output. Measured on the H200: +0.165 GB for
// core_attn on the 4-layer dense TE case (te_build/h200_te_stack_s13.jsonl), predicted +0.165 GB.
TEST_CASE("recompute never raises the peak, but core_attn under TE keeps the QKV output", "[sim][property]") {
  sim::Predictor p(spec_from(kDense));
  const auto none = p.run(sim::RecomputeChoice{model::RecomputeGranularity::selective, {}, {}, {}, false, 0});
  using model::RecomputeTag;
  for (auto tags : std::vector<std::vector<RecomputeTag>>{{RecomputeTag::core_attn}, {RecomputeTag::mlp}, {RecomputeTag::layernorm}, {RecomputeTag::core_attn, RecomputeTag::mlp}}) {
    const auto r = p.run(sim::RecomputeChoice{model::RecomputeGranularity::selective, tags, {}, {}, false, 0});
    if (std::find(tags.begin(), tags.end(), RecomputeTag::core_attn) == tags.end()) {
      CHECK(r.max_peak_allocated <= none.max_peak_allocated);
    } else {
      // At most, per layer and micro-batch in flight, the QKV output less the V copy: Llama 3 8B at TP 2,
      // 16 query and 4 KV heads of 128 on the rank, 4096 tokens (SP gathered), bf16; 4 layers a stage,
      // 2 micro-batches in flight on stage 0.
      const std::int64_t qkv = 4096 * (16 + 2 * 4) * 128 * 2, v = 4096 * 4 * 128 * 2;
      CHECK(r.max_peak_allocated <= none.max_peak_allocated + Bytes{(qkv - v) * 4 * 2});
    }
    // Under the TE spec a dense layer's norms are fused into its linears, so `layernorm` has
    // nothing to discard and replays nothing; every other tag replays work.
    if (tags == std::vector<RecomputeTag>{RecomputeTag::layernorm}) CHECK(r.replay_flops == 0);
    else CHECK(r.replay_flops > 0);
  }
  for (std::int64_t n : {1, 2, 4}) {
    const auto full = p.run(sim::RecomputeChoice{model::RecomputeGranularity::full, {}, model::RecomputeMethod::uniform, n, false, 0});
    INFO("uniform " << n);
    CHECK(full.max_peak_allocated < none.max_peak_allocated);
  }
}

TEST_CASE("the peak grows with the micro-batch size", "[sim][property]") {
  const auto one = sim::predict(spec_from(kDense));
  const auto two = sim::predict(spec_from(kDense, {"train.micro_batch_size=2", "train.global_batch_size=16"}));
  CHECK(two.max_peak_allocated > one.max_peak_allocated);
}

TEST_CASE("1F1B: the first pipeline stage keeps more activations than the last", "[sim][property]") {
  const auto p = sim::predict(spec_from(kDense));
  REQUIRE(p.ranks.size() >= 2);
  const auto& first = p.ranks.front();
  const auto& last = p.ranks.back();
  CHECK(first.rank.pp_rank == 0);
  CHECK(last.rank.pp_rank == 1);
  // Rank 0 holds min(pp, m) = 2 micro-batches of its layers at the start of its first backward.
  CHECK(first.breakdown.activations > last.breakdown.activations);
}

TEST_CASE("Adam moments appear at the first optimizer step, not before", "[sim][property]") {
  const auto p = sim::predict(spec_from(kDense));
  for (const auto& r : p.ranks) {
    // Iteration 1's forward/backward has no Adam state, so the steady peak (with it) is at least as high.
    CHECK(r.steady_peak_allocated >= r.peak_allocated - Bytes{1});
  }
}

TEST_CASE("CPU offloading moves whole layers' saved sets off the GPU", "[sim][property]") {
  // PP 1 (offloading forbids PP > 1), one micro-batch of 8 sequences so activations set the peak, identical layers: the activations held at the
  // forward peak drop by the same per-layer amount for each offloaded layer.
  const char* spec = R"({
    "defaults": "megatron-core", "model": {"preset": "llama3-8b", "num_layers": 8, "seq_length": 4096, "bf16": true, "attention_backend": "fused"},
    "train": {"micro_batch_size": 8, "global_batch_size": 8},
    "cluster": {"num_gpus": 1, "gpu": "h200-141gb"}})";
  sim::Predictor p(spec_from(spec));
  const auto run = [&](std::int64_t n) {
    return p.run(sim::RecomputeChoice{model::RecomputeGranularity::none, {}, {}, {}, n > 0, n});
  };
  const auto a0 = run(0), a1 = run(1), a2 = run(2);
  REQUIRE(a0.ranks.front().peak_phase == sim::Phase::forward);
  REQUIRE(a2.ranks.front().peak_phase == sim::Phase::forward);
  const Bytes per_layer = a0.ranks.front().breakdown.activations - a1.ranks.front().breakdown.activations;
  CHECK(per_layer > Bytes{0});
  CHECK(a0.ranks.front().breakdown.activations - a2.ranks.front().breakdown.activations == per_layer * 2);
  CHECK(a2.max_peak_allocated < a0.max_peak_allocated);
}

TEST_CASE("tied embeddings on one stage hold the output layer's weight gradient until the embedding's backward",
          "[sim][property]") {
  // Local stack, TP1 PP1: without gradient-accumulation fusion the output GEMM returns a [V, h]
  // bf16 weight gradient, which autograd keeps in the shared weight's input buffer until the
  // embedding adds its own; with the fusion the GEMM accumulates into main_grad directly.
  // (The embedding's own dense weight gradient is there either way.)
  const std::string text = R"({
    "model": {"num_layers": 2, "hidden_size": 1024, "ffn_hidden_size": 4096, "num_attention_heads": 8,
              "num_query_groups": 8, "kv_channels": 128, "vocab_size": 32768, "seq_length": 2048,
              "transformer_impl": "local", "attention_backend": "unfused", "bf16": true,
              "share_embeddings_and_output_weights": true},
    "train": {"micro_batch_size": 1, "global_batch_size": 1},
    "cluster": {"num_gpus": 1, "gpu": "h200-141gb"}})";
  const auto live_at = [&](bool fusion, const std::string& op) {
    sim::PredictOptions o;
    o.record_timeline = true;
    const auto p = sim::predict(spec_from(text, {std::string("model.gradient_accumulation_fusion=") + (fusion ? "true" : "false")}), o);
    for (const auto& e : p.ranks.front().timeline)
      if (e.iteration == 2 && e.phase == sim::Phase::backward && e.op == op) return e.live.value;
    FAIL("no event " << op);
    return std::int64_t{0};
  };
  const std::int64_t V = 32768, h = 1024, bf16 = 2;
  // With the fusion, autograd gets a dummy weight gradient per distinct linear shape, kept from
  // iteration 1 on: linear_qkv [(8 + 2 x 8) x 128, h], linear_proj [h, h], fc1 [4096, h] (no GLU),
  // fc2 [h, 4096] and the output layer [V, h].
  const std::int64_t dummies = ((8 + 2 * 8) * 128 * h + h * h + 4096 * h + h * 4096 + V * h) * bf16;
  // The last decoder layer's backward runs while the gradient waits; the output layer's own
  // backward (before it is carried) is the same either way.
  CHECK(live_at(false, "L1.backward") - live_at(true, "L1.backward") == V * h * bf16 - dummies);
  CHECK(live_at(false, "L0.backward") - live_at(true, "L0.backward") == V * h * bf16 - dummies);
}

TEST_CASE("a moe checkpoint leaves its input and the input's gradient allocated until the layer's next forward",
          "[sim][property]") {
  // The dispatcher's probabilities attribute keeps the replay's graph, whose leaf is the checkpoint's
  // detached input (measured: 2 x [tokens, h] per MoE layer after the step, allgather and alltoall).
  const std::string text = R"({
    "model": {"num_layers": 2, "hidden_size": 1024, "ffn_hidden_size": 4096, "num_attention_heads": 8,
              "num_query_groups": 8, "kv_channels": 128, "vocab_size": 32768, "seq_length": 2048,
              "num_moe_experts": 8, "moe_ffn_hidden_size": 1024, "moe_router_topk": 2, "moe_layer_freq": 1,
              "moe_grouped_gemm": false, "moe_token_dispatcher_type": "alltoall",
              "transformer_impl": "local", "attention_backend": "unfused", "bf16": true},
    "train": {"micro_batch_size": 1, "global_batch_size": 1},
    "optimizer": {"use_distributed_optimizer": true}, "ddp": {"use_distributed_optimizer": true},
    "cluster": {"num_gpus": 1, "gpu": "h200-141gb"}})";
  const auto optimizer_live = [&](const std::vector<std::string>& sets) {
    sim::PredictOptions o;
    o.record_timeline = true;
    const auto p = sim::predict(spec_from(text, sets), o);
    for (const auto& e : p.ranks.front().timeline)
      if (e.iteration == 2 && e.phase == sim::Phase::optimizer) return e.live.value;
    FAIL("no optimizer event");
    return std::int64_t{0};
  };
  const std::int64_t tokens = 2048, h = 1024, bf16 = 2, moe_layers = 2;
  const std::vector<std::string> moe = {"model.recompute_granularity=selective", "model.recompute_modules=[\"moe\"]"};
  CHECK(optimizer_live(moe) - optimizer_live({}) == moe_layers * 2 * tokens * h * bf16);
}

TEST_CASE("the per-module replay times add up to the rank's replay time", "[sim][property][time]") {
  // kDense: GBS 8 over DP 2 = 4 micro-batches per rank; `mlp` replays every layer's MLP.
  const auto p = sim::predict(spec_from(kDense, {"model.recompute_granularity=\"selective\"", "model.recompute_modules=[\"mlp\"]"}));
  for (const auto& r : p.ranks) {
    double per_microbatch = 0;
    int layers = 0;
    for (const auto& m : r.modules) {
      per_microbatch += m.replay_s;
      if (m.name.rfind("L", 0) == 0) {
        ++layers;
        CHECK(m.replay_s > 0);
        CHECK(m.forward_s > 0);
        CHECK(m.backward_s > m.forward_s);  // dgrad + wgrad
      } else {
        CHECK(m.replay_s == 0);  // embedding and loss have no checkpoint
      }
    }
    CHECK(layers == 4);
    CHECK(r.replay_time_s == Approx(4 * per_microbatch));
  }
}

TEST_CASE("distribute_saved_activations keeps each checkpointed group input as a 1/TP slice", "[sim][property]") {
  // The measured layout (calibration/data/h200_distribute.jsonl): 2B-class dense model, 8 layers,
  // TP2 without SP, sequence 16384, full uniform 1, one micro-batch in flight. At the peak (the last
  // group's backward) the other 7 groups hold half their input [16384, 2048] bf16; the last group
  // has swapped its slice for the all-gathered input (random.py:640-645), so it saves nothing.
  const std::string text = R"({"model":{"hidden_size":2048,"ffn_hidden_size":8192,"num_attention_heads":16,
    "num_query_groups":4,"kv_channels":128,"vocab_size":32768,"num_layers":8,"seq_length":16384,"bf16":true,
    "normalization":"RMSNorm","gated_linear_unit":true,"add_bias_linear":false,"transformer_impl":"local",
    "tensor_model_parallel_size":2,"sequence_parallel":false,
    "recompute_granularity":"full","recompute_method":"uniform","recompute_num_layers":1},
    "train":{"micro_batch_size":1,"global_batch_size":1},"cluster":{"num_gpus":2,"gpu":"h200-141gb"}})";
  const auto off = sim::predict(spec_from(text));
  const auto on = sim::predict(spec_from(text, {"model.distribute_saved_activations=true"}));
  REQUIRE(off.ranks.front().peak_phase == sim::Phase::backward);
  REQUIRE(on.ranks.front().peak_phase == sim::Phase::backward);
  const std::int64_t input = 16384LL * 2048 * 2;
  CHECK((off.max_peak_allocated - on.max_peak_allocated).value == 7 * input / 2);
  // The measured difference of the same pair: 28.329566720 - 28.094685696 GB = 7 x 33.55 MB.
  CHECK((off.max_peak_allocated - on.max_peak_allocated).value == 28329566720LL - 28094685696LL);
}

TEST_CASE("a layout's empty virtual stage keeps nothing and passes the hidden state on", "[sim][property]") {
  // PP2 with four virtual stages, the last of rank 0 empty (found by the spec fuzzer: it crashed).
  const auto spec = spec_from(kDense, {R"(model.num_layers=4)", R"(model.pipeline_model_parallel_layout="Et|t||ttL")"});
  sim::PredictOptions timeline;
  timeline.record_timeline = true;
  const auto p = sim::predict(spec, timeline);
  REQUIRE(p.ranks.size() == 2);
  const auto& events = p.ranks[0].timeline;
  int empty_forwards = 0;
  for (std::size_t i = 1; i < events.size(); ++i) {
    if (events[i].chunk != 1 || events[i].op != "chunk1.forward_done") continue;
    ++empty_forwards;
    CHECK(events[i].live == events[i - 1].live);
  }
  CHECK(empty_forwards > 0);
}
