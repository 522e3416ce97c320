// PYTORCH_CUDA_ALLOC_CONF as torch's AllocatorConfig::parseArgs reads it (c10/core/AllocatorConfig.cpp),
// and cluster.pytorch_cuda_alloc_conf in a run spec.
#include <catch2/catch.hpp>

#include <string>

#include "peakcast/model/caching_allocator.hpp"
#include "peakcast/model/spec_parser.hpp"

using namespace peakcast;

namespace {
constexpr std::int64_t MiB = 1 << 20;

model::ParseResult parse_with(const std::string& conf, const std::string& extra = "") {
  const std::string text = R"({"model": {"preset": "llama3-8b", "num_layers": 2}, "train": {"micro_batch_size": 1, "global_batch_size": 8},
      "cluster": {"num_gpus": 8, "gpu": "h100-sxm-80gb", "pytorch_cuda_alloc_conf": ")" +
                           conf + "\"" + extra + "}}";
  return model::parse_run_spec(text);
}

bool has_rule(const model::ParseResult& r, const std::string& rule, model::Severity s) {
  for (const auto& d : r.diagnostics)
    if (d.rule == rule && d.severity == s && d.path == "cluster.pytorch_cuda_alloc_conf") return true;
  return false;
}
}  // namespace

TEST_CASE("alloc conf: the options the model follows, in MiB and per interval", "[model][allocator][alloc_conf]") {
  auto p = model::parse_alloc_conf("expandable_segments:True, max_split_size_mb:512,max_non_split_rounding_mb:64");
  CHECK(p.error.empty());
  CHECK(p.expandable_given);
  CHECK(p.settings.expandable_segments);
  CHECK(p.settings.max_split_size == 512 * MiB);
  CHECK(p.settings.max_non_split_rounding == 64 * MiB);
  CHECK(p.settings.roundup_power2_divisions.empty());
  // One number: every one of the 16 intervals.
  p = model::parse_alloc_conf("roundup_power2_divisions:4");
  REQUIRE(p.settings.roundup_power2_divisions.size() == 16);
  CHECK(p.settings.roundup_power2_divisions[0] == 4);
  CHECK(p.settings.roundup_power2_divisions[15] == 4);
  // A list: 256 MiB is interval 8 ([2^28, 2^29) bytes), the first entry also fills the intervals below
  // it, ">" fills from the last named interval on, that one included (parseRoundUpPower2Divisions'
  // std::fill from last_index), so 512's 2 becomes 8.
  p = model::parse_alloc_conf("roundup_power2_divisions:[256:1,512:2,>:8]");
  CHECK(p.error.empty());
  REQUIRE(p.settings.roundup_power2_divisions.size() == 16);
  CHECK(p.settings.roundup_power2_divisions[0] == 1);
  CHECK(p.settings.roundup_power2_divisions[8] == 1);
  CHECK(p.settings.roundup_power2_divisions[9] == 8);
  CHECK(p.settings.roundup_power2_divisions[10] == 8);
  CHECK(p.settings.roundup_power2_divisions[15] == 8);
  // 3 MiB + 1 with 4 divisions of [2, 4) MiB rounds to 3.5 MiB.
  CHECK(model::CachingAllocatorModel::round_size(3 * MiB + 1, model::parse_alloc_conf("roundup_power2_divisions:4").settings) ==
        3 * MiB + MiB / 2);
}

TEST_CASE("alloc conf: what torch refuses is an error, what the model does not follow is named", "[model][allocator][alloc_conf]") {
  CHECK_FALSE(model::parse_alloc_conf("max_split_size_mb:10").error.empty());     // under kLargeBuffer's 20 MiB
  CHECK_FALSE(model::parse_alloc_conf("expandable_segments:yes").error.empty());  // True or False only
  CHECK_FALSE(model::parse_alloc_conf("roundup_power2_divisions:3").error.empty());
  CHECK_FALSE(model::parse_alloc_conf("no_such_option:1").error.empty());
  CHECK_FALSE(model::parse_alloc_conf("max_split_size_mb").error.empty());
  const auto p = model::parse_alloc_conf("garbage_collection_threshold:0.8,backend:native");
  CHECK(p.error.empty());
  REQUIRE(p.unmodelled.size() == 1);
  CHECK(p.unmodelled[0] == "garbage_collection_threshold:0.8");
}

TEST_CASE("cluster.pytorch_cuda_alloc_conf: read, checked, and its expandable_segments taken", "[model][alloc_conf]") {
  auto r = parse_with("expandable_segments:True,max_split_size_mb:256");
  REQUIRE(r.spec.has_value());
  CHECK(r.spec->cluster.expandable_segments);
  CHECK(r.spec->cluster.pytorch_cuda_alloc_conf == "expandable_segments:True,max_split_size_mb:256");
  r = parse_with("max_split_size_mb:8");
  CHECK(has_rule(r, "alloc_conf_invalid", model::Severity::error));
  r = parse_with("expandable_segments:False", R"(, "expandable_segments": true)");
  CHECK(has_rule(r, "alloc_conf_conflict", model::Severity::error));
  r = parse_with("garbage_collection_threshold:0.6");
  CHECK(has_rule(r, "not_simulated", model::Severity::warning));
}
