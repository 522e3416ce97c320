// A timeline stays bounded for a long step: it shows the first micro-batches (at least 16, all of a
// shorter step), with the same peaks as a prediction without one (issue #27, item 2).
#include <catch2/catch.hpp>

#include <set>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/sim/prediction.hpp"

using namespace peakcast;

namespace {
sim::Prediction predict(std::int64_t global_batch, bool timeline) {
  const std::string text = R"({"model": {"num_layers": 2, "hidden_size": 256, "num_attention_heads": 4, "vocab_size": 1024,
      "seq_length": 128, "transformer_impl": "local", "bf16": true},
    "train": {"micro_batch_size": 1, "global_batch_size": )" +
                           std::to_string(global_batch) + R"(},
    "cluster": {"num_gpus": 1, "gpu": "h200-141gb"}})";
  const auto parsed = model::parse_run_spec(text);
  REQUIRE(parsed.spec);
  sim::PredictOptions o;
  o.record_timeline = timeline;
  return sim::predict(*parsed.spec, o);
}

std::set<int> microbatches_shown(const sim::RankPrediction& r) {
  std::set<int> mbs;
  for (const auto& e : r.timeline)
    if (e.microbatch >= 0) mbs.insert(e.microbatch);
  return mbs;
}
}  // namespace

TEST_CASE("a timeline of a 100,000-micro-batch step shows 16 of them, with the same peaks") {
  const auto with = predict(100000, true);
  const auto without = predict(100000, false);
  const auto& r = with.ranks.at(0);
  CHECK(r.timeline_microbatches == 16);
  CHECK(microbatches_shown(r).size() == 16);
  CHECK(r.time.microbatches == 100000);  // the step time still counts every micro-batch
  CHECK(with.max_peak_allocated == without.max_peak_allocated);
  CHECK(r.step_time_s == Approx(without.ranks.at(0).step_time_s));
}

TEST_CASE("a timeline of a short step shows every micro-batch") {
  const auto p = predict(5, true);
  CHECK(p.ranks.at(0).timeline_microbatches == 5);
  CHECK(microbatches_shown(p.ranks.at(0)).size() == 5);
}
