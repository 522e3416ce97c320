// Sweep inputs a user can get wrong or an attacker can plant: spreadsheet formulas in CSV cells,
// grids too large to count, misspelt axis keys (issue #27, items 6-8).
#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>
#include <sstream>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/sim/sweep.hpp"

using namespace peakcast;

namespace {
// The cells of one CSV line (RFC 4180: quoted cells may hold commas and doubled quotes).
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      out.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}
}  // namespace

TEST_CASE("sweep CSV neutralises cells a spreadsheet would run as formulas (OWASP CSV injection)") {
  sim::SweepResult r;
  r.axes = {{"=cmd|' /C calc'!A0", {}}};
  for (const char* v : {"=1+1", "+SUM(A1)", "-2+3", "@SUM(A1)", "\tx", "-1", "+4", "1e-3", "-2.5E+3", "plain"}) {
    sim::SweepPoint p;
    p.values = {v};
    p.valid = false;
    p.error = "=HYPERLINK(\"http://x\")";
    r.points.push_back(p);
  }
  std::istringstream in(sim::sweep_csv(r));
  std::string header;
  std::getline(in, header);
  const auto columns = cells(header);
  CHECK(columns.front() == "'=cmd|' /C calc'!A0");
  const auto error_at = static_cast<std::size_t>(std::find(columns.begin(), columns.end(), "error") - columns.begin());
  REQUIRE(error_at < columns.size());
  std::vector<std::string> first;
  for (std::string line; std::getline(in, line);) {
    const auto c = cells(line);
    first.push_back(c.front());
    REQUIRE(c.size() == columns.size());
    CHECK(c[error_at] == "'=HYPERLINK(\"http://x\")");
  }
  // Formula starts get an apostrophe; plain numbers (a negative batch size, an exponent) stay numbers.
  CHECK(first == std::vector<std::string>{"'=1+1", "'+SUM(A1)", "'-2+3", "'@SUM(A1)", "'\tx", "-1", "+4", "1e-3",
                                          "-2.5E+3", "plain"});
}

TEST_CASE("sweep CSV quotes a carriage return") {
  sim::SweepResult r;
  r.axes = {{"k", {}}};
  sim::SweepPoint p;
  p.values = {"a\rb"};
  r.points.push_back(p);
  const std::string csv = sim::sweep_csv(r);
  CHECK(csv.find("\"a\rb\"") != std::string::npos);
}

TEST_CASE("sweep grid size saturates instead of wrapping") {
  std::vector<sim::SweepAxis> axes(16, sim::SweepAxis{"k", std::vector<std::string>(16, "1")});
  CHECK(sim::sweep_size(axes) == std::numeric_limits<std::size_t>::max());  // 16^16 = 2^64
  axes.resize(4);
  CHECK(sim::sweep_size(axes) == 65536);
  CHECK(sim::sweep_size(axes) <= sim::kMaxSweepPoints);
}

TEST_CASE("a misspelt --vary key is found before the sweep runs") {
  const std::string text(model::default_run_spec_text());
  const auto errors = sim::sweep_axis_key_errors(text, "", {}, {{"model.seq_lenght", {"1024", "2048"}}, {"model.seq_length", {"1024"}}});
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].path == "model.seq_lenght");
  CHECK(errors[0].message.find("model.seq_length") != std::string::npos);  // the suggestion
  CHECK(sim::sweep_axis_key_errors(text, "", {}, {{"model.seq_length", {"1024"}}}).empty());
}
