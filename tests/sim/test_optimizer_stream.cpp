// The optimizer step in the replayed allocator stream, as the H200 allocator traces show it
// (calibration/data/diagnostics/alloc_traces_s16/): the parameters in registration order
// (linear_proj before linear_qkv, attention.py:413 and :1682), gradient clipping's fp32 `src * scale`
// per main gradient on torch's fallback (utils.py:1337-1340), each freed before the next, then the
// first step's two Adam moments per parameter in the same order. Sizes derived from the shapes below.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/sim/prediction.hpp"

using namespace peakcast;

namespace {

constexpr std::int64_t kHidden = 1024, kHeads = 8, kGroups = 4, kHeadDim = kHidden / kHeads, kFfn = 2048, kVocab = 2048;
constexpr std::int64_t kFp32 = 4, kMiB = 1 << 20;

const char* kSpec = R"({"model": {"num_layers": 1, "hidden_size": 1024, "num_attention_heads": 8, "num_query_groups": 4,
    "ffn_hidden_size": 2048, "vocab_size": 2048, "make_vocab_size_divisible_by": 128, "seq_length": 512,
    "max_position_embeddings": 512, "normalization": "RMSNorm", "gated_linear_unit": true, "activation_func": "silu",
    "add_bias_linear": false, "position_embedding_type": "rope", "share_embeddings_and_output_weights": false,
    "transformer_impl": "local", "attention_backend": "unfused", "bf16": true, "params_dtype": "bf16"},
  "train": {"micro_batch_size": 1, "global_batch_size": 1},
  "optimizer": {"implementation": "torch_adamw", "use_distributed_optimizer": false, "bf16": true, "clip_grad": CLIP},
  "ddp": {"grad_reduce_in_fp32": true},
  "cluster": {"num_gpus": 1, "gpu": "h200-141gb", "transformer_engine_available": false}})";

std::vector<std::int64_t> trace_with_clip(double clip) {
  std::string text = kSpec;
  text.replace(text.find("CLIP"), 4, std::to_string(clip));
  auto r = model::parse_run_spec(text);
  for (const auto& d : r.diagnostics) INFO(model::format(d));
  REQUIRE(r.spec.has_value());
  sim::PredictOptions o;
  o.record_allocator_trace = true;
  const auto p = sim::predict(*r.spec, o);
  REQUIRE(p.ranks.size() == 1);
  return p.ranks.front().allocator_trace;
}

// The large-pool parameters' fp32 sizes in registration order: word embeddings, linear_proj, linear_qkv
// (queries and the groups' keys and values), linear_fc1 (gate and up), linear_fc2, output layer.
std::vector<std::int64_t> main_grad_bytes() {
  const std::int64_t qkv_rows = kHidden + 2 * kGroups * kHeadDim;
  return {kVocab * kHidden * kFp32, kHidden * kHidden * kFp32, qkv_rows * kHidden * kFp32,
          2 * kFfn * kHidden * kFp32, kHidden * kFfn * kFp32, kVocab * kHidden * kFp32};
}

// Runs of large requests freed right after they are made (their own free next in the stream).
std::vector<std::vector<std::int64_t>> alloc_free_runs(const std::vector<std::int64_t>& trace) {
  std::vector<std::vector<std::int64_t>> runs;
  std::vector<std::int64_t> sizes, run;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    if (trace[i] <= 0) continue;
    const auto id = static_cast<std::int64_t>(sizes.size());
    sizes.push_back(trace[i]);
    // Small-pool neighbours (the norms) sit between them; only large requests make a run.
    if (trace[i] <= kMiB) continue;
    if (i + 1 < trace.size() && trace[i + 1] == -id - 1) {
      run.push_back(trace[i]);
    } else if (!run.empty()) {
      runs.push_back(run);
      run.clear();
    }
  }
  return runs;
}

// Whether `run` holds `part` as a contiguous stretch (a run may begin with the backward's own transients).
bool contains(const std::vector<std::int64_t>& run, const std::vector<std::int64_t>& part) {
  return std::search(run.begin(), run.end(), part.begin(), part.end()) != run.end();
}

}  // namespace

TEST_CASE("clipping on torch's fallback makes one fp32 temporary per main gradient, in registration order", "[sim][allocator][optimizer]") {
  const auto expected = main_grad_bytes();
  int clip_runs = 0;
  for (const auto& run : alloc_free_runs(trace_with_clip(1.0)))
    if (contains(run, expected)) ++clip_runs;
  CHECK(clip_runs >= 2);  // the first step and a steady one
  for (const auto& run : alloc_free_runs(trace_with_clip(0.0))) CHECK_FALSE(contains(run, expected));
}

TEST_CASE("the first step's Adam moments follow the clipping, two per parameter in registration order", "[sim][allocator][optimizer]") {
  const auto trace = trace_with_clip(1.0);
  const auto grads = main_grad_bytes();
  std::vector<std::int64_t> moments;
  for (const std::int64_t g : grads) moments.insert(moments.end(), {g, g});
  // The large requests after the first clipping run's last free, before any of them is freed.
  std::vector<std::int64_t> sizes, after;
  std::size_t clip_seen = 0;
  bool collecting = false;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    if (trace[i] < 0) {
      if (collecting && !after.empty()) break;
      continue;
    }
    sizes.push_back(trace[i]);
    if (collecting) {
      if (trace[i] > kMiB) after.push_back(trace[i]);
      continue;
    }
    if (clip_seen < grads.size() && trace[i] == grads[clip_seen] && i + 1 < trace.size() &&
        trace[i + 1] == -static_cast<std::int64_t>(sizes.size())) {
      if (++clip_seen == grads.size()) collecting = true;
    } else if (trace[i] > kMiB) {
      clip_seen = 0;
    }
  }
  REQUIRE(after.size() >= moments.size());
  after.resize(moments.size());
  CHECK(after == moments);
}
