// defer_embedding_wgrad_compute: the last stage keeps the output layer's input and its logits'
// gradient for each deferred micro-batch until the pipeline flush, which all-gathers the inputs into
// two global buffers that stay. Expectations are the tensors' shapes times bf16.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/sim/prediction.hpp"

using namespace peakcast;

namespace {

// Local stack, TP2 + SP, PP2, 6 micro-batches of 1 x 1024 tokens.
const char* kSpec = R"({
  "model": {"num_layers": 4, "hidden_size": 1024, "ffn_hidden_size": 4096, "num_attention_heads": 8,
            "num_query_groups": 8, "kv_channels": 128, "vocab_size": 32768, "seq_length": 1024,
            "transformer_impl": "local", "attention_backend": "unfused", "bf16": true,
            "tensor_model_parallel_size": 2, "sequence_parallel": true, "pipeline_model_parallel_size": 2,
            "gradient_accumulation_fusion": true, "hidden_dropout": 0.0, "attention_dropout": 0.0},
  "train": {"micro_batch_size": 1, "global_batch_size": 6},
  "cluster": {"num_gpus": 4, "gpu": "h200-141gb"}})";

constexpr std::int64_t kTokens = 1024, kTp = 2, kHidden = 1024, kVocab = 32768, kBf16 = 2, kMicrobatches = 6;
// One deferral entry: the final norm's output [tokens / TP, h] and the logits' gradient [tokens, V / TP].
constexpr std::int64_t kEntry = (kTokens / kTp * kHidden + kTokens * (kVocab / kTp)) * kBf16;
// The flush's two gather buffers, [tokens, h] each.
constexpr std::int64_t kGatherBuffers = 2 * kTokens * kHidden * kBf16;
// A kept input's autograd graph holds the stage's received input and its retained gradient,
// [tokens / TP, h] each, for every deferred micro-batch but the step's last.
constexpr std::int64_t kGraph = 2 * kTokens / kTp * kHidden * kBf16;

sim::Prediction run(const std::vector<std::string>& sets) {
  auto r = model::parse_run_spec(kSpec, sets);
  for (const auto& d : r.diagnostics) INFO(model::format(d));
  REQUIRE(r.spec.has_value());
  sim::PredictOptions o;
  o.record_timeline = true;
  return sim::predict(*r.spec, o);
}

const sim::RankPrediction& stage(const sim::Prediction& p, std::int64_t pp) {
  for (const auto& r : p.ranks)
    if (r.rank.pp_rank == pp) return r;
  FAIL("no rank " << pp);
  return p.ranks.front();
}

// Live bytes when the iteration's forward-backward is over: the last backward's end (no deferral)
// or the flush (deferral), which come right after it.
std::int64_t end_of_fwd_bwd(const sim::RankPrediction& r, int iteration) {
  std::int64_t live = -1;
  for (const auto& e : r.timeline)
    if (e.iteration == iteration && e.phase == sim::Phase::backward) live = e.live.value;
  REQUIRE(live >= 0);
  return live;
}

std::int64_t first_grad_sync(const sim::RankPrediction& r, int iteration) {
  for (const auto& e : r.timeline)
    if (e.iteration == iteration && e.phase == sim::Phase::grad_sync) return e.live.value;
  FAIL("no grad_sync event");
  return 0;
}

}  // namespace

TEST_CASE("deferred output-layer wgrad: every micro-batch's entry waits for the flush on the last stage",
          "[sim][defer]") {
  const auto off = run({});
  const auto all = run({"model.defer_embedding_wgrad_compute=true"});
  const auto two = run({"model.defer_embedding_wgrad_compute=true", "model.wgrad_deferral_limit=2"});
  // Steady state: the gather buffers are already kept; all six entries are alive at the flush.
  CHECK(end_of_fwd_bwd(stage(all, 1), 2) - end_of_fwd_bwd(stage(off, 1), 2) ==
        kMicrobatches * kEntry + (kMicrobatches - 1) * kGraph + kGatherBuffers);
  CHECK(end_of_fwd_bwd(stage(two, 1), 2) - end_of_fwd_bwd(stage(off, 1), 2) == 2 * (kEntry + kGraph) + kGatherBuffers);
  // Iteration 1: the first flush creates the gather buffers, which stay into the gradient sync.
  CHECK(end_of_fwd_bwd(stage(all, 1), 1) - end_of_fwd_bwd(stage(off, 1), 1) ==
        kMicrobatches * kEntry + (kMicrobatches - 1) * kGraph + kGatherBuffers);
  CHECK(first_grad_sync(stage(all, 1), 1) - first_grad_sync(stage(off, 1), 1) == kGatherBuffers);
  // Deferring can only raise the last stage's peak, and leaves the first stage alone.
  CHECK(stage(all, 1).peak_allocated >= stage(off, 1).peak_allocated);
  CHECK(stage(all, 0).peak_allocated == stage(off, 0).peak_allocated);
}

TEST_CASE("without sequence parallelism the flush gathers nothing", "[sim][defer]") {
  const auto off = run({"model.sequence_parallel=false"});
  const auto on = run({"model.sequence_parallel=false", "model.defer_embedding_wgrad_compute=true"});
  const std::int64_t entry = (kTokens * kHidden + kTokens * (kVocab / kTp)) * kBf16;  // the input is not split
  const std::int64_t graph = 2 * kTokens * kHidden * kBf16;
  CHECK(end_of_fwd_bwd(stage(on, 1), 2) - end_of_fwd_bwd(stage(off, 1), 2) == kMicrobatches * entry + (kMicrobatches - 1) * graph);
  CHECK(first_grad_sync(stage(on, 1), 1) == first_grad_sync(stage(off, 1), 1));
}

// The allocator replay keeps the two tensors themselves, not a copy of their size: in the replayed
// stream no request is an entry's combined size, and each micro-batch's logits' gradient
// [tokens, V / TP] stays allocated until the flush frees them together (the fragmentation that a fresh
// combined block adds was 5.5 GB of reservation on a measured PP2 run, calibration/data/h200_defer.jsonl).
TEST_CASE("the allocator replay keeps the deferred tensors themselves until the flush", "[sim][defer][allocator]") {
  auto r = model::parse_run_spec(kSpec, {"model.defer_embedding_wgrad_compute=true"});
  REQUIRE(r.spec.has_value());
  sim::PredictOptions o;
  o.replay_allocator = true;
  o.record_allocator_trace = true;
  const auto p = sim::predict(*r.spec, o);
  const auto& trace = stage(p, 1).allocator_trace;
  REQUIRE(!trace.empty());
  constexpr std::int64_t kLogitsGrad = kTokens * (kVocab / kTp) * kBf16;
  // The flush frees every entry in one run of frees: each micro-batch's logits' gradient among them.
  std::vector<std::int64_t> sizes;
  std::int64_t grads_in_run = 0, most_grads_in_run = 0;
  for (const std::int64_t e : trace) {
    if (e > 0) {
      sizes.push_back(e);
      CHECK(e != kEntry);
      CHECK(e != kEntry + kGraph);
      grads_in_run = 0;
    } else if (sizes[static_cast<std::size_t>(-e - 1)] == kLogitsGrad) {
      most_grads_in_run = std::max(most_grads_in_run, ++grads_in_run);
    }
  }
  CHECK(most_grads_in_run == kMicrobatches);
}
