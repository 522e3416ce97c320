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
  CHECK(a.reserved() == Bytes{12 * MiB});   // rounded up to 2 MiB
  CHECK(a.allocated() == Bytes{12 * MiB});  // remainder 1 MiB is not > 1 MiB: handed out whole
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
  const auto y = a.allocate(Bytes{11 * MiB});  // >= 10 MiB request, but the 14.5 MiB block fits
  CHECK(a.reserved() == Bytes{20 * MiB});
  CHECK(a.slack(x) == Bytes{0});
  CHECK(a.slack(y) == Bytes{0});              // 3.5 MiB rest split off
  const auto z = a.allocate(Bytes{3 * MiB});  // 0.5 MiB rest: whole 3.5 MiB block handed out
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

// Rules of c10/cuda/CUDACachingAllocator.cpp (DeviceCachingAllocator; function named in each test),
// with the defaults of c10/core/AllocatorConfig.h. docs/caching-allocator.md says which revision was
// read and what the H200 with torch 2.11 showed for the same sequences.
TEST_CASE("round_size: 512 B multiples, and power-of-two divisions when asked", "[model][allocator]") {
  using A = CachingAllocatorModel;
  CHECK(A::round_size(1) == 512);     // size < kMinBlockSize: kMinBlockSize
  CHECK(A::round_size(513) == 1024);  // kMinBlockSize * ceil(size / kMinBlockSize)
  CHECK(A::round_size(MiB + 1) == MiB + 512);
  model::AllocatorSettings four;
  four.roundup_power2_divisions.assign(16, 4);
  // roundup_power2_next_division: 3 MiB + 1 lies in [2 MiB, 4 MiB), steps of 512 KiB: 3.5 MiB.
  CHECK(A::round_size(3 * MiB + 1, four) == 7 * MiB / 2);
  CHECK(A::round_size(4 * MiB, four) == 4 * MiB);  // a power of two stays
  CHECK(A::round_size(2000, four) == 2048);        // size <= 512 x divisions: plain rounding
}

TEST_CASE("get_allocation_size: a 1 MiB + 1 request takes a 20 MiB segment, 1 MiB a 2 MiB one", "[model][allocator]") {
  CachingAllocatorModel a;
  a.allocate(Bytes{MiB + 1});  // > kSmallSize: large pool; < kMinLargeAlloc: kLargeBuffer
  CHECK(a.reserved() == Bytes{20 * MiB});
  CHECK(a.allocated() == Bytes{MiB + 512});
  CHECK(a.largest_free_block() == Bytes{20 * MiB - MiB - 512});  // split: the rest exceeds kSmallSize
  CachingAllocatorModel b;
  b.allocate(Bytes{MiB});  // <= kSmallSize: small pool, kSmallBuffer
  CHECK(b.reserved() == Bytes{2 * MiB});
  CachingAllocatorModel c;
  c.allocate(Bytes{10 * MiB + 1});  // >= kMinLargeAlloc: rounded up to kRoundLarge
  CHECK(c.reserved() == Bytes{12 * MiB});
}

TEST_CASE("should_split: a 15 MiB request after a freed 20 MiB block splits it", "[model][allocator]") {
  CachingAllocatorModel a;
  a.release(a.allocate(Bytes{20 * MiB}));      // a 20 MiB segment, cached
  const auto h = a.allocate(Bytes{15 * MiB});  // get_free_block: best fit is the cached block
  CHECK(a.reserved() == Bytes{20 * MiB});
  CHECK(a.slack(h) == Bytes{0});  // remaining 5 MiB > kSmallSize: split off
  CHECK(a.largest_free_block() == Bytes{5 * MiB});
  a.allocate(Bytes{5 * MiB});  // carved from the rest: still one segment
  CHECK(a.reserved() == Bytes{20 * MiB});
  CHECK(a.segments() == 1);
  // A 19.5 MiB request takes the whole cached 20 MiB block: 0.5 MiB is not > kSmallSize.
  CachingAllocatorModel b;
  b.release(b.allocate(Bytes{20 * MiB}));
  CHECK(b.slack(b.allocate(Bytes{39 * MiB / 2})) == Bytes{MiB / 2});
}

TEST_CASE("streams: a block freed on one stream is not reused by another", "[model][allocator]") {
  CachingAllocatorModel a;
  a.release(a.allocate(Bytes{20 * MiB}, 0));
  a.allocate(Bytes{20 * MiB}, 1);  // get_free_block compares the stream first
  CHECK(a.reserved() == Bytes{40 * MiB});
  a.allocate(Bytes{20 * MiB}, 0);  // stream 0 finds its own block
  CHECK(a.reserved() == Bytes{40 * MiB});
}

TEST_CASE("a block another stream used leaves the allocated bytes at free but the cache only after its events",
          "[model][allocator]") {
  // CUDACachingAllocator free(): the stats drop, then insert_events; process_events frees the block.
  CachingAllocatorModel a;
  const auto g = a.allocate(Bytes{100 * MiB});
  a.release_deferred(g);
  CHECK(a.allocated() == Bytes{0});
  CHECK(a.reserved() == Bytes{100 * MiB});
  const auto x = a.allocate(Bytes{100 * MiB});  // the deferred block is not reusable: a new segment
  CHECK(a.reserved() == Bytes{200 * MiB});
  a.release(x);
  a.complete_deferred();  // both 100 MiB segments cached now
  a.allocate(Bytes{100 * MiB});
  a.allocate(Bytes{100 * MiB});
  CHECK(a.reserved() == Bytes{200 * MiB});
  CHECK(a.allocated() == Bytes{200 * MiB});
  // Before freeing cached segments for a request the device refuses, torch synchronizes and frees the
  // deferred blocks (release_cached_blocks -> synchronize_and_free_events): they can be released too.
  CachingAllocatorModel b(model::AllocatorSettings{.capacity = 200 * MiB});
  const auto y = b.allocate(Bytes{100 * MiB});
  b.allocate(Bytes{100 * MiB});
  b.release_deferred(y);
  CHECK(b.allocate(Bytes{150 * MiB}) == CachingAllocatorModel::kFailed);  // 100 MiB still held, 100 free after the retry
  CHECK(b.reserved() == Bytes{100 * MiB});
  CHECK(b.allocate(Bytes{100 * MiB}) != CachingAllocatorModel::kFailed);
}

TEST_CASE("max_split_size: oversize blocks are not split and serve only requests within 20 MiB", "[model][allocator]") {
  model::AllocatorSettings s;
  s.max_split_size = 100 * MiB;
  CachingAllocatorModel a(s);
  const auto big = a.allocate(Bytes{200 * MiB});
  a.release(big);               // a cached oversize (>= max_split_size) block
  a.allocate(Bytes{50 * MiB});  // get_free_block: no oversize block for a smaller request
  CHECK(a.reserved() == Bytes{250 * MiB});
  const auto h = a.allocate(Bytes{190 * MiB});  // >= max_split_size, and 200 < 190 + max_non_split_rounding
  CHECK(a.reserved() == Bytes{250 * MiB});
  CHECK(a.slack(h) == Bytes{10 * MiB});  // should_split: size >= max_split_size, not split
  a.release(h);
  a.allocate(Bytes{170 * MiB});  // 200 >= 170 + 20 MiB: a new segment
  CHECK(a.reserved() == Bytes{420 * MiB});
}

TEST_CASE("out of memory: cached whole segments are freed and the request retried", "[model][allocator]") {
  model::AllocatorSettings s;
  s.capacity = 100 * MiB;
  CachingAllocatorModel a(s);
  a.release(a.allocate(Bytes{60 * MiB}));
  const auto h = a.allocate(Bytes{70 * MiB});  // 60 + 70 > 100: release_cached_blocks, then alloc_block again
  CHECK(h != CachingAllocatorModel::kFailed);
  CHECK(a.reserved() == Bytes{70 * MiB});
  CHECK(a.alloc_retries() == 1);
  CHECK(a.peak_reserved() == Bytes{70 * MiB});
}

TEST_CASE("fragmentation: a request fails with the allocated bytes under the capacity", "[model][allocator]") {
  model::AllocatorSettings s;
  s.capacity = 100 * MiB;
  CachingAllocatorModel a(s);
  a.release(a.allocate(Bytes{40 * MiB}));
  a.allocate(Bytes{20 * MiB});  // splits the cached 40 MiB segment: 20 MiB of it stay free
  a.allocate(Bytes{50 * MiB});  // a new 50 MiB segment: 90 MiB reserved
  CHECK(a.reserved() == Bytes{90 * MiB});
  // 30 MiB: no cached block fits; a new segment would make 120 MiB; the free 20 MiB is part of a
  // split segment, which release_cached_blocks cannot return: OutOfMemoryError with 70 MiB allocated.
  CHECK(a.allocate(Bytes{30 * MiB}) == CachingAllocatorModel::kFailed);
  CHECK(a.ooms() == 1);
  CHECK(a.allocated() == Bytes{70 * MiB});
  CHECK(a.largest_free_block() == Bytes{20 * MiB});
  // The same requests with expandable segments fit: pages are mapped where the free space is.
  s.expandable_segments = true;
  CachingAllocatorModel e(s);
  e.release(e.allocate(Bytes{40 * MiB}));
  e.allocate(Bytes{20 * MiB});
  e.allocate(Bytes{50 * MiB});
  CHECK(e.allocate(Bytes{30 * MiB}) != CachingAllocatorModel::kFailed);
  CHECK(e.reserved() == Bytes{100 * MiB});
}

TEST_CASE("expandable segments grow in 20 MiB pages (large pool) and 2 MiB pages (small pool)", "[model][allocator]") {
  model::AllocatorSettings s;
  s.expandable_segments = true;
  CachingAllocatorModel a(s);
  a.allocate(Bytes{MiB + 1});  // map_block: one 20 MiB page of the large pool's segment
  CHECK(a.reserved() == Bytes{20 * MiB});
  a.allocate(Bytes{30 * MiB});  // the free rest of that page plus one more page
  CHECK(a.reserved() == Bytes{40 * MiB});
  CHECK(a.largest_free_block() == Bytes{40 * MiB - (MiB + 512) - 30 * MiB});
  a.allocate(Bytes{1000});  // small pool: a 2 MiB page of its own segment
  CHECK(a.reserved() == Bytes{42 * MiB});
  // Without expandable segments the 30 MiB request takes a segment of its own.
  CachingAllocatorModel b;
  b.allocate(Bytes{MiB + 1});
  b.allocate(Bytes{30 * MiB});
  CHECK(b.reserved() == Bytes{50 * MiB});
  // should_split with expandable segments: any rest of 512 B or more is split off.
  CachingAllocatorModel c(s);
  c.release(c.allocate(Bytes{20 * MiB}));
  CHECK(c.slack(c.allocate(Bytes{39 * MiB / 2})) == Bytes{0});
}

TEST_CASE("expandable segments: empty_cache unmaps the free pages", "[model][allocator]") {
  model::AllocatorSettings s;
  s.expandable_segments = true;
  CachingAllocatorModel a(s);
  const auto x = a.allocate(Bytes{100 * MiB});  // five pages
  const auto y = a.allocate(Bytes{MiB + 1});    // a sixth
  CHECK(a.reserved() == Bytes{120 * MiB});
  a.release(x);
  a.empty_cache();  // unmap_block: the five whole free pages before y
  CHECK(a.reserved() == Bytes{20 * MiB});
  a.release(y);
  a.empty_cache();
  CHECK(a.reserved() == Bytes{0});
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
    if (j.at("case") == "moe_moonlight4_none") {
      rec = j;
      break;
    }
  }
  REQUIRE(rec.is_object());
  const auto& m = rec.at("measured");
  const std::int64_t n = m.at("parameters_on_rank");
  const std::int64_t built = m.at("allocated_after_model_build_bytes");
  const std::int64_t ddp = m.at("allocated_after_ddp_bytes");
  const std::int64_t opt = m.at("allocated_after_optimizer_build_bytes");
  const std::int64_t measured_param_slack = built - 2 * n;     // bf16 parameters
  const std::int64_t measured_main_slack = opt - ddp - 4 * n;  // fp32 main parameters

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
