// `peakcast rank` and `peakcast sweep` as a user runs them: exit status, JSON keys, CSV, HTML.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace {

struct Run {
  int status;
  std::string out;
};

Run run(const std::string& args) {
  const std::string cmd = std::string(PEAKCAST_BINARY) + " " + args + " 2>/dev/null";
  Run r{-1, {}};
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string src(const std::string& rel) { return std::string(PEAKCAST_SOURCE_DIR) + "/" + rel; }

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream b;
  b << in.rdbuf();
  return b.str();
}

}  // namespace

TEST_CASE("rank --json carries the interface.md keys") {
  const Run r = run("rank " + src("configs/runs/moonlight-16b-8xh100.json") + " --budget-gb 36 --json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("schema_version") == 1);
  CHECK(j.at("budget_bytes") == 36'000'000'000LL);
  CHECK(j.contains("narrowest_viable"));
  REQUIRE(j.at("candidates").is_array());
  REQUIRE_FALSE(j.at("candidates").empty());
  for (const auto& c : j.at("candidates")) {
    for (const char* k : {"recompute_granularity", "recompute_modules", "recompute_method", "recompute_num_layers",
                          "viable", "max_peak_allocated_bytes", "replay_flops", "replay_time_s", "step_time_s", "reason"})
      CHECK(c.contains(k));
  }
}

TEST_CASE("rank exits 0 when nothing is viable") {
  const Run r = run("rank " + src("configs/runs/moonlight-16b-8xh100.json") + " --budget-gb 1 --json");
  CHECK(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("narrowest_viable").is_null());
  CHECK(j.at("candidates").at(0).at("viable") == false);
  CHECK(j.at("candidates").at(0).at("reason").get<std::string>().find("pp_rank") != std::string::npos);
}

TEST_CASE("rank checks the busiest expert-parallel rank by default; --moe-balanced opts out") {
  const std::string spec = src("configs/runs/moonlight-16b-8xh100.json");
  const auto busiest = nlohmann::json::parse(run("rank " + spec + " --budget-gb 36 --json").out);
  const auto balanced = nlohmann::json::parse(run("rank " + spec + " --budget-gb 36 --json --moe-balanced").out);
  CHECK(busiest.at("moe_routing_imbalance").get<double>() > 1.0);
  CHECK(balanced.at("moe_routing_imbalance").get<double>() == 1.0);
  // The busiest rank holds more: the same policy peaks higher there.
  CHECK(busiest.at("narrowest_viable").at("label") == balanced.at("narrowest_viable").at("label"));
  const auto peak_of = [](const nlohmann::json& j, const std::string& label) {
    for (const auto& c : j.at("candidates"))
      if (c.at("label") == label) return c.at("max_peak_allocated_bytes").get<long long>();
    return -1LL;
  };
  CHECK(peak_of(busiest, "[]") > peak_of(balanced, "[]"));
  // A spec that fixes the load keeps it.
  const auto fixed = nlohmann::json::parse(run("rank " + spec + " --budget-gb 36 --json --set model.moe_routing_imbalance=1.5").out);
  CHECK(fixed.at("moe_routing_imbalance").get<double>() == 1.5);
  CHECK(run("rank " + spec + " --moe-balanced --moe-busiest-rank").status == 2);
  // A router without a measured spread: the default falls back to balanced; asking for it is an error.
  const std::string sqrt_router = " --set model.moe_router_score_function='\"sqrtsoftplus\"'";
  const Run fallback = run("rank " + spec + " --budget-gb 36 --json" + sqrt_router);
  REQUIRE(fallback.status == 0);
  CHECK(nlohmann::json::parse(fallback.out).at("moe_routing_imbalance").get<double>() == 1.0);
  CHECK(run("rank " + spec + " --budget-gb 36 --moe-busiest-rank" + sqrt_router).status == 2);
}

TEST_CASE("rank --order: narrowest by default, replay-time on request") {
  const std::string spec = src("configs/runs/moonlight-16b-8xh100.json");
  const auto narrow = nlohmann::json::parse(run("rank " + spec + " --budget-gb 36 --json").out);
  const auto by_time = nlohmann::json::parse(run("rank " + spec + " --budget-gb 36 --json --order replay-time").out);
  CHECK(narrow.at("order") == "narrowest");
  CHECK(by_time.at("order") == "replay_time");
  // Replay-time order puts the cheapest viable first; both name the same cheapest one.
  REQUIRE_FALSE(by_time.at("narrowest_viable").is_null());
  CHECK(by_time.at("narrowest_viable").at("label") == by_time.at("cheapest_viable").at("label"));
  CHECK(narrow.at("cheapest_viable").at("label") == by_time.at("cheapest_viable").at("label"));
  double prev = -1;
  for (const auto& c : by_time.at("candidates")) {
    if (!c.at("viable").get<bool>()) break;
    CHECK(c.at("replay_time_s").get<double>() >= prev);
    prev = c.at("replay_time_s").get<double>();
  }
  // Narrowest order: no selective boundary after a whole-layer one among the viable.
  int tier = 0;
  for (const auto& c : narrow.at("candidates")) {
    if (!c.at("viable").get<bool>()) break;
    CHECK(c.at("boundary_tier").get<int>() >= tier);
    tier = c.at("boundary_tier").get<int>();
  }
  CHECK(narrow.at("narrowest_viable").at("boundary_tier") == 0);
  CHECK(run("rank " + spec + " --order fastest").status == 2);
}

TEST_CASE("rank rejects an invalid spec with status 2") {
  CHECK(run("rank " + src("configs/runs/moonlight-16b-8xh100.json") + " --set model.no_such_key=1").status == 2);
}

TEST_CASE("sweep: invalid point skipped, CSV and HTML written") {
  const std::string csv = "/tmp/peakcast_test_sweep.csv", html = "/tmp/peakcast_test_sweep.html";
  const Run r = run("sweep " + src("configs/runs/moonlight-16b-8xh100.json") +
                    " --vary model.seq_length=2048,4096 --vary 'model.recompute_modules=[],[\"bogus\"]' --csv " + csv +
                    " --html " + html + " --json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("points").size() == 4);
  CHECK(j.at("invalid_count") == 2);
  const std::string text = slurp(csv);
  CHECK(text.rfind("model.seq_length,model.recompute_modules,valid,fits,", 0) == 0);
  const std::string page = slurp(html);
  CHECK(page.find("<svg") != std::string::npos);
  CHECK(page.find("<script") == std::string::npos);
  CHECK(page.find("http://") == page.find("http://www.w3.org"));  // only the SVG namespace
}

TEST_CASE("rank --html writes a self-contained page") {
  const std::string html = "/tmp/peakcast_test_rank.html";
  REQUIRE(run("rank " + src("configs/runs/moonlight-16b-8xh100.json") + " --budget-gb 36 --html " + html).status == 0);
  const std::string page = slurp(html);
  CHECK(page.find("narrowest viable") != std::string::npos);
  CHECK(page.find("<polyline") != std::string::npos);  // a timeline
  CHECK(page.find("<script") == std::string::npos);
}
