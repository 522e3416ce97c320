// Sweep value splitting, point order, invalid points, CSV columns.
#include <catch2/catch.hpp>

#include <sstream>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/validate.hpp"
#include "peakcast/sim/sweep.hpp"

using namespace peakcast;

TEST_CASE("sweep values: commas inside JSON lists and strings do not split; ';' is an alternative") {
  using V = std::vector<std::string>;
  CHECK(sim::split_sweep_values("1,2,4") == V{"1", "2", "4"});
  CHECK(sim::split_sweep_values(R"([],["core_attn","mlp"])") == V{"[]", R"(["core_attn","mlp"])"});
  CHECK(sim::split_sweep_values(R"([];["core_attn","mlp"])") == V{"[]", R"(["core_attn","mlp"])"});
  CHECK(sim::split_sweep_values(R"("a,b",c)") == V{R"("a,b")", "c"});
  CHECK(sim::split_sweep_values(R"({"name":"x","memory_bytes":1},h200-141gb)") ==
        V{R"({"name":"x","memory_bytes":1})", "h200-141gb"});
  std::string err;
  CHECK_FALSE(sim::parse_vary("no_equals", &err));
  CHECK_FALSE(err.empty());
  const auto axis = sim::parse_vary("model.seq_length=4096,8192", &err);
  REQUIRE(axis);
  CHECK(axis->key == "model.seq_length");
  CHECK(axis->values.size() == 2);
}

TEST_CASE("sweep: cartesian product in input order, an invalid point skipped and reported") {
  const std::string text(model::default_run_spec_text());
  const std::vector<sim::SweepAxis> axes = {
      {"model.seq_length", {"2048", "4096"}},
      {"model.recompute_modules", {"[]", R"(["not_a_tag"])", R"(["moe_act"])"}}};
  sim::SweepOptions opt;
  opt.threads = 2;
  const auto r = sim::run_sweep(text, {}, axes, opt);
  REQUIRE(r.points.size() == 6);
  CHECK(r.invalid_count() == 2);
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    CHECK(r.points[i].values[0] == axes[0].values[i / 3]);
    CHECK(r.points[i].values[1] == axes[1].values[i % 3]);
    const bool bad = i % 3 == 1;
    CHECK(r.points[i].valid == !bad);
    if (bad) CHECK(r.points[i].error.find("recompute_modules") != std::string::npos);
    else CHECK(r.points[i].max_peak > Bytes{});
  }
  // Longer sequences never need less memory.
  CHECK(r.points[3].max_peak >= r.points[0].max_peak);

  // Same answers single-threaded.
  opt.threads = 1;
  const auto s = sim::run_sweep(text, {}, axes, opt);
  for (std::size_t i = 0; i < r.points.size(); ++i) CHECK(s.points[i].max_peak == r.points[i].max_peak);
}

TEST_CASE("sweep CSV: axis keys then the fixed columns, one row per point") {
  const std::string text(model::default_run_spec_text());
  const auto r = sim::run_sweep(text, {}, {{"train.micro_batch_size", {"1", "2"}}});
  const std::string csv = sim::sweep_csv(r);
  std::istringstream in(csv);
  std::string header;
  std::getline(in, header);
  CHECK(header ==
        "train.micro_batch_size,valid,fits,max_peak_bytes,max_peak_gb,limit_bytes,headroom_gb,peak_pp_rank,peak_phase,"
        "peak_op,step_time_s,replay_time_s,reserved_p90_gb,fragmentation_risk,graph_pool_gb,error,verdict,verdict_cause,margin_bytes");
  int rows = 0;
  for (std::string line; std::getline(in, line);) ++rows;
  CHECK(rows == 2);
}

TEST_CASE("sweep budget overrides the GPU capacity") {
  const std::string text(model::default_run_spec_text());
  sim::SweepOptions opt;
  opt.budget = Bytes{1'000'000'000};
  const auto r = sim::run_sweep(text, {}, {{"model.seq_length", {"4096"}}}, opt);
  REQUIRE(r.points.size() == 1);
  CHECK(r.points[0].limit == Bytes{1'000'000'000});
  CHECK_FALSE(r.points[0].fits);
}

TEST_CASE("sweep flags a point that fits by allocated bytes but not by the p90 reserved estimate") {
  // The ratio estimate's path (--no-allocator-replay), on a device between the peak and the estimate.
  const std::string text(model::default_run_spec_text());
  sim::SweepOptions ratio;
  ratio.replay_allocator = false;
  const auto free_run = sim::run_sweep(text, {}, {{"model.seq_length", {"4096"}}}, ratio);
  REQUIRE(free_run.points.size() == 1);
  const auto& pt = free_run.points[0];
  REQUIRE(pt.reserved_p90 > pt.max_peak);
  CHECK_FALSE(pt.fragmentation_risk);
  const std::int64_t between = (pt.max_peak.value + pt.reserved_p90.value) / 2;
  const std::vector<std::string> device = {"cluster.gpu={\"name\": \"h100-sxm-80gb\", \"memory_bytes\": " + std::to_string(between) + "}"};
  const auto tight = sim::run_sweep(text, device, {{"model.seq_length", {"4096"}}}, ratio);
  REQUIRE(tight.points[0].valid);
  CHECK(tight.points[0].fits);
  CHECK(tight.points[0].verdict == sim::FitKind::fits_without_reservation_margin);
  CHECK(tight.points[0].fragmentation_risk);
}

namespace {

std::string describe(const model::ParseResult& r) {
  std::string s = r.spec ? "spec;" : "no spec;";
  s += r.partial ? "partial;" : "";
  for (const auto& d : r.diagnostics)
    s += std::to_string(static_cast<int>(d.severity)) + "|" + d.path + "|" + d.rule + "|" + d.message + "\n";
  return s;
}

}  // namespace

TEST_CASE("SpecText: the text read once parses like parse_run_spec for every override set") {
  const std::string text(model::default_run_spec_text());
  const model::SpecText once(text);
  const std::vector<std::vector<std::string>> sets = {
      {},
      {"model.seq_length=8192", "cluster.gpu=h200-141gb"},  // a bare word where a string is taken
      {"cluster.gpu=\"b200\"", "model.recompute_modules=[\"moe_act\"]"},
      {"model.recompute_modules=[\"not_a_tag\"]"},  // a value error
      {"model.seq_lenght=4096"},                    // an unknown key
      {"model.seq_length=\"long\""},                // a wrong type
      {"model.seq_length=[1,"},                     // not JSON, no bare strings here
      {"cluster.gpu=no-such-gpu"},
      {"model.preset=llama3-8b", "model.expert_model_parallel_size=1"},  // another preset
      {"model.tensor_model_parallel_size=3"},                            // parses; validation rejects it
  };
  for (const auto& overrides : sets) {
    const auto a = model::parse_run_spec(text, overrides);
    const auto b = once.parse(overrides);
    CHECK(describe(a) == describe(b));
    if (a.spec && b.spec) {
      CHECK(a.spec->model.seq_length == b.spec->model.seq_length);
      CHECK(a.spec->cluster.gpu.memory_bytes == b.spec->cluster.gpu.memory_bytes);
      const auto errors = model::validate(*a.spec);
      CHECK(errors.size() == model::validate(*b.spec).size());
      if (!model::has_errors(errors))
        CHECK(sim::predict(*a.spec).max_peak_allocated == sim::predict(*b.spec).max_peak_allocated);
    }
  }
  // Parsing never changes what was read: the first override set again gives the same answer.
  CHECK(describe(once.parse({})) == describe(model::parse_run_spec(text)));

  // A text that is not a spec gives the same errors either way, for every call.
  for (const std::string bad : {"", "[1, 2]", "{\"model\": {\"seq_length\": 1, \"seq_length\": 2}}", "{\"model\": "}) {
    const model::SpecText t(bad);
    CHECK(describe(t.parse({"model.seq_length=4096"})) == describe(model::parse_run_spec(bad, {"model.seq_length=4096"})));
    CHECK_FALSE(t.parse().spec);
  }
}
