#pragma once
// The validation tests' harness: a small valid base spec, and one RuleCase per rule: --set overrides
// that break it (the diagnostic must name the rule, the key path and the severity) and a neighbouring
// spec that keeps it (parses, and does not get the rule).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/validate.hpp"

namespace peakcast::model::test {

inline const char* kBase = R"({
  "model": {"num_layers": 8, "hidden_size": 256, "num_attention_heads": 8, "vocab_size": 1000, "seq_length": 128,
            "bf16": true, "hidden_dropout": 0.0, "attention_dropout": 0.0},
  "train": {"micro_batch_size": 1, "global_batch_size": 8},
  "optimizer": {"bf16": true},
  "cluster": {"num_gpus": 8, "gpu": {"name": "test-gpu", "memory_bytes": 80000000000}}
})";

// A dense-free MoE model on the same base.
inline const std::vector<std::string> kMoe = {"model.num_moe_experts=8", "model.moe_ffn_hidden_size=128",
                                              "model.moe_router_topk=2", "model.moe_grouped_gemm=true"};

struct Outcome {
  Diagnostics diagnostics;
  bool parsed = false;
};

inline Outcome run(std::vector<std::string> sets) {
  Outcome o;
  const ParseResult r = parse_run_spec(kBase, sets);
  o.diagnostics = r.diagnostics;
  if (r.spec) {
    o.parsed = true;
    const Diagnostics v = validate(*r.spec);
    o.diagnostics.insert(o.diagnostics.end(), v.begin(), v.end());
  }
  return o;
}

inline std::vector<std::string> plus(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

inline std::string dump(const Diagnostics& ds) {
  std::string s;
  for (const auto& d : ds) s += format(d) + "\n";
  return s;
}

inline bool has_rule(const Diagnostics& ds, const std::string& rule, const std::string& path = "") {
  for (const auto& d : ds) {
    if (d.rule == rule && (path.empty() || d.path == path)) return true;
  }
  return false;
}

struct RuleCase {
  std::string rule;
  std::string path;
  Severity severity;
  std::vector<std::string> breaks;  // overrides that break the rule
  std::vector<std::string> keeps;   // a neighbouring spec that does not
};

// Every case: the breaking config gets the rule at its path with its severity; the neighbour parses and
// does not get it (not_simulated is one rule per key: only that key counts).
inline void check_rule_cases(const std::vector<RuleCase>& cases) {
  for (const RuleCase& c : cases) {
    DYNAMIC_SECTION(c.rule << " at " << c.path) {
      const Outcome bad = run(c.breaks);
      INFO("breaking config:\n"
           << dump(bad.diagnostics));
      bool found = false;
      for (const auto& d : bad.diagnostics) {
        if (d.rule == c.rule && d.path == c.path && d.severity == c.severity) {
          found = true;
          CHECK_FALSE(d.message.empty());
        }
      }
      CHECK(found);
      const Outcome good = run(c.keeps);
      INFO("neighbouring config:\n"
           << dump(good.diagnostics));
      CHECK(good.parsed);
      CHECK_FALSE(has_rule(good.diagnostics, c.rule, c.rule == "not_simulated" ? c.path : ""));
    }
  }
}

}  // namespace peakcast::model::test
