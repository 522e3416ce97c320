#pragma once
// Helpers of the Megatron-LM launch-line tests (test_megatron_args*.cpp).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>

#include "peakcast/model/megatron_args.hpp"

namespace megatron_test {

// A small GPT every test starts from: 4 layers, hidden 512, 8 heads, sequence 1024.
inline const std::string kBase =
    "--num-layers 4 --hidden-size 512 --num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024 "
    "--micro-batch-size 2 ";

inline peakcast::model::MegatronLineImport import(const std::string& line, std::int64_t gpus = 8) {
  peakcast::model::MegatronLineOptions o;
  o.num_gpus = gpus;
  o.gpu = "h100-sxm-80gb";
  return peakcast::model::import_megatron_line(line, o);
}

inline void show(const peakcast::model::Diagnostics& d) {
  for (const auto& x : d) UNSCOPED_INFO(peakcast::model::format(x));
}

// The imported spec; the line must import without errors.
inline nlohmann::json spec(const std::string& line, std::int64_t gpus = 8) {
  const auto r = import(line, gpus);
  show(r.diagnostics);
  REQUIRE_FALSE(peakcast::model::has_errors(r.diagnostics));
  return nlohmann::json::parse(r.spec_json);
}

inline nlohmann::json model_of(const std::string& line) { return spec(kBase + line)["model"]; }

// The value the run spec runs with for `key` ("model.position_embedding_type"), from its origin record:
// the import writes a key only when the line, validate_args or a builder sets it, or when it differs
// from the default the run spec would take.
inline nlohmann::json resolved(const std::string& line, const std::string& key) {
  const auto p = peakcast::model::parse_megatron_line(line, {"cluster.gpu=\"h100-sxm-80gb\"", "cluster.num_gpus=8"});
  show(p.diagnostics);
  REQUIRE(p.spec);
  REQUIRE(p.origins.count(key) == 1);
  return nlohmann::json::parse(p.origins.at(key).value);
}

// The diagnostic of `severity` with this rule and path, if any.
inline const peakcast::model::Diagnostic* find(const peakcast::model::Diagnostics& d, const std::string& rule,
                                               const std::string& path,
                                               peakcast::model::Severity severity = peakcast::model::Severity::error) {
  for (const auto& x : d)
    if (x.rule == rule && x.path == path && x.severity == severity) return &x;
  return nullptr;
}

// The line is refused with `rule` at `path`.
inline const peakcast::model::Diagnostic* refused(const std::string& line, const std::string& rule, const std::string& path) {
  const auto r = import(line);
  show(r.diagnostics);
  CHECK(r.spec_json.empty());
  static peakcast::model::Diagnostic kept;
  const auto* d = find(r.diagnostics, rule, path);
  REQUIRE(d != nullptr);
  kept = *d;
  return &kept;
}

}  // namespace megatron_test
