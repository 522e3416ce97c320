// The caching-allocator model against the rules of CUDACachingAllocator.cpp, sizes written out.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "peakcast/model/caching_allocator.hpp"
#include "peakcast/model/layer_plan.hpp"
#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/static_memory.hpp"

using namespace peakcast;
using model::CachingAllocatorModel;

namespace {
constexpr std::int64_t MiB = 1 << 20;
}

TEST_CASE("an 11 MiB request gets a 12 MiB segment whose 1 MiB rest is not split off", "[model][allocator]") {
  CachingAllocatorModel a;
  const auto h = a.allocate(Bytes{11 * MiB});
  CHECK(a.reserved() == Bytes{12 * MiB});    // rounded up to 2 MiB
  CHECK(a.allocated() == Bytes{12 * MiB});   // remainder 1 MiB is not > 1 MiB: handed out whole
  CHECK(a.requested() == Bytes{11 * MiB});
  CHECK(a.slack(h) == Bytes{MiB});
  // 13 MiB: segment 14 MiB, same rule.
  CachingAllocatorModel b;
  CHECK(b.slack(b.allocate(Bytes{13 * MiB})) == Bytes{MiB});
  // 12.5 MiB: segment 14 MiB, 1.5 MiB rest is split off: no slack.
  CachingAllocatorModel c;
  CHECK(c.slack(c.allocate(Bytes{25 * MiB / 2})) == Bytes{0});
}

TEST_CASE("requests under 10 MiB share 20 MiB segments, best fit, and split while the rest exceeds 1 MiB",
          "[model][allocator]") {
  CachingAllocatorModel a;
  const auto x = a.allocate(Bytes{11 * MiB / 2});  // 5.5 MiB: new 20 MiB segment, 14.5 MiB left
  CHECK(a.reserved() == Bytes{20 * MiB});
  const auto y = a.allocate(Bytes{11 * MiB});      // >= 10 MiB request, but the 14.5 MiB block fits
  CHECK(a.reserved() == Bytes{20 * MiB});
  CHECK(a.slack(x) == Bytes{0});
  CHECK(a.slack(y) == Bytes{0});                   // 3.5 MiB rest split off
  const auto z = a.allocate(Bytes{3 * MiB});       // 0.5 MiB rest: whole 3.5 MiB block handed out
  CHECK(a.slack(z) == Bytes{MiB / 2});
  CHECK(a.allocated() == Bytes{20 * MiB});
}

TEST_CASE("small requests round to 512 B in 2 MiB segments, and freed neighbours merge", "[model][allocator]") {
  CachingAllocatorModel a;
  const auto s = a.allocate(Bytes{1000});
  CHECK(a.allocated() == Bytes{1024});
  CHECK(a.reserved() == Bytes{2 * MiB});
  a.release(s);
  CHECK(a.allocated() == Bytes{0});
  // Two halves of one large segment, freed, merge back: a whole-segment request needs no new one.
  CachingAllocatorModel b;
  const auto p = b.allocate(Bytes{9 * MiB});  // under 10 MiB: a 20 MiB segment
  const auto q = b.allocate(Bytes{9 * MiB});  // from its 11 MiB rest (2 MiB left, split off)
  CHECK(b.reserved() == Bytes{20 * MiB});
  b.release(p);
  b.release(q);
  b.allocate(Bytes{20 * MiB});
  CHECK(b.reserved() == Bytes{20 * MiB});
}

TEST_CASE("memory already cached is carved before new segments", "[model][allocator]") {
  CachingAllocatorModel a;
  a.add_free_segment(Bytes{100 * MiB});
  const auto h = a.allocate(Bytes{11 * MiB});
  CHECK(a.reserved() == Bytes{100 * MiB});
  CHECK(a.slack(h) == Bytes{0});
}

TEST_CASE("step slack: requests that fit in the freed memory carry none", "[model][allocator]") {
  model::AllocatorSlack s;
  s.step_request_end = {Bytes{10}, Bytes{20}, Bytes{30}, Bytes{40}};
  s.step_slack = {Bytes{1}, Bytes{2}, Bytes{4}, Bytes{8}};
  s.moments = 2;
  CHECK(s.step(Bytes{0}).moments == Bytes{3});
  CHECK(s.step(Bytes{0}).temporaries == Bytes{12});
  CHECK(s.step(Bytes{20}).moments == Bytes{0});
  CHECK(s.step(Bytes{29}).temporaries == Bytes{12});
  CHECK(s.step(Bytes{30}).temporaries == Bytes{8});
}

TEST_CASE("the replayed allocations give the slack measured on the 4-layer MoE model without DistOpt",
          "[model][allocator]") {
  // moe_moonlight4_none (h200_corpus.jsonl): 64 SequentialMLP experts per MoE layer, bf16 params,
  // fp32 main params. Measured: allocated bytes after each build phase against the parameters' bytes.
  std::ifstream f(std::string(PEAKCAST_SOURCE_DIR) + "/calibration/data/h200_corpus.jsonl");
  REQUIRE(f);
  nlohmann::json rec;
  for (std::string line; std::getline(f, line);) {
    auto j = nlohmann::json::parse(line);
    if (j.at("case") == "moe_moonlight4_none") { rec = j; break; }
  }
  REQUIRE(rec.is_object());
  const auto& m = rec.at("measured");
  const std::int64_t n = m.at("parameters_on_rank");
  const std::int64_t built = m.at("allocated_after_model_build_bytes");
  const std::int64_t ddp = m.at("allocated_after_ddp_bytes");
  const std::int64_t opt = m.at("allocated_after_optimizer_build_bytes");
  const std::int64_t measured_param_slack = built - 2 * n;             // bf16 parameters
  const std::int64_t measured_main_slack = opt - ddp - 4 * n;          // fp32 main parameters

  auto r = model::parse_run_spec(rec.at("spec").dump());
  REQUIRE(r.spec);
  const model::Derived d = model::derive(*r.spec);
  const auto ranks = model::static_memory_per_rank(*r.spec, d, model::build_layer_plan(*r.spec, d));
  REQUIRE(ranks.size() == 1);
  const auto& slack = ranks.front().memory.slack;
  // Without the replay: 0 and 0. The measured figures also hold a few small non-parameter buffers.
  CHECK(std::abs(slack.parameters.value - measured_param_slack) < 2 * MiB);
  CHECK(std::abs(slack.main_params.value - measured_main_slack) < 8 * MiB);
  CHECK(slack.main_params.value > 150 * MiB);
}

TEST_CASE("with the distributed optimizer nothing is replayed", "[model][allocator]") {
  auto r = model::parse_run_spec(R"({"model": {"preset": "moonlight-16b", "num_layers": 2, "moe_layer_freq": [0, 1]},
    "train": {"micro_batch_size": 1, "global_batch_size": 8},
    "optimizer": {"use_distributed_optimizer": true}, "ddp": {"use_distributed_optimizer": true},
    "cluster": {"num_gpus": 8, "gpu": "h200-141gb"}})");
  REQUIRE(r.spec);
  const model::Derived d = model::derive(*r.spec);
  for (const auto& rank : model::static_memory_per_rank(*r.spec, d, model::build_layer_plan(*r.spec, d))) {
    CHECK(rank.memory.slack.parameters == Bytes{0});
    CHECK(rank.memory.slack.main_params == Bytes{0});
    CHECK(rank.memory.slack.step_slack.empty());
  }
}
