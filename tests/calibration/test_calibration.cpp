// Record reader strictness, Megatron-LM argument import, the memory fit and error statistics.
#include <catch2/catch.hpp>

#include <cmath>
#include <nlohmann/json.hpp>

#include "peakcast/calibration/evaluate.hpp"
#include "peakcast/calibration/fit.hpp"
#include "peakcast/calibration/record.hpp"
#include "peakcast/model/spec_parser.hpp"
#include "peakcast/sim/prediction.hpp"

using namespace peakcast::calibration;

namespace {
const std::string kSpec = R"("spec":{"model":{"num_layers":2}})";
}

TEST_CASE("record reader accepts a summary record and derives phase and times from a harness record") {
  const std::string text =
      R"({"record_version":1,"case":"a",)" + kSpec + R"(,"rank":{"pp_rank":1},"measured":{"max_allocated_bytes":1000,"oom":false}})"
                                                     "\n\n" +
      R"({"record_version":1,"case":"b",)" + kSpec + R"(,"rank":null,"measured":{"max_allocated_bytes":900,"model_build_peak_bytes":100,)"
                                                     R"("iterations":[{"iteration":1,"fwd_bwd_peak_bytes":700,"grad_sync_peak_bytes":600,"optimizer_peak_bytes":800,"fwd_bwd_time_s":1,"grad_sync_time_s":1,"optimizer_time_s":1},)"
                                                     R"({"iteration":2,"fwd_bwd_peak_bytes":900,"grad_sync_peak_bytes":600,"optimizer_peak_bytes":850,"fwd_bwd_time_s":0.5,"grad_sync_time_s":0.25,"optimizer_time_s":0.25}]}})";
  const auto r = read_records(text, "t.jsonl");
  REQUIRE(r.errors.empty());
  REQUIRE(r.records.size() == 2);
  CHECK(r.records[0].pp_rank == 1);
  CHECK(r.records[0].line == 1);
  CHECK(r.records[1].line == 3);
  CHECK(*r.records[1].measured.first_iteration_peak_bytes == 800);
  CHECK(*r.records[1].measured.peak_phase == "forward_backward");
  CHECK(*r.records[1].measured.step_time_s == Approx(1.0));
  // One steady iteration (2): its forward-backward and optimizer times are the medians.
  CHECK(*r.records[1].measured.fwd_bwd_time_s == Approx(0.5));
  CHECK(*r.records[1].measured.optimizer_time_s == Approx(0.25));
  CHECK_FALSE(r.records[0].measured.fwd_bwd_time_s.has_value());
}

// Found by the field scan under UBSan: a byte count of 1e308 was cast to int64 (undefined).
TEST_CASE("record reader refuses byte counts outside int64, float or integer, naming the key") {
  for (const std::string v : {"1e308", "-1e308", "9.3e18", "18446744073709551615"}) {
    INFO(v);
    const auto r = read_records(R"({"record_version":1,"case":"a",)" + kSpec + R"(,"measured":{"max_allocated_bytes":)" + v +
                                    R"(,"oom":false}})",
                                "t.jsonl");
    CHECK(r.records.empty());
    REQUIRE(r.errors.size() == 1);
    CHECK(r.errors[0].find("max_allocated_bytes") != std::string::npos);
  }
  const auto ok = read_records(R"({"record_version":1,"case":"a",)" + kSpec + R"(,"measured":{"max_allocated_bytes":1e3,"oom":false}})");
  REQUIRE(ok.records.size() == 1);
  CHECK(*ok.records[0].measured.peak_allocated_bytes == 1000);
}

TEST_CASE("record reader takes the routing of the largest forward-backward and drops diverged iterations") {
  const auto routing = [](int routed, int received) {
    return R"("moe_routing":[{"routed_rows":)" + std::to_string(routed) + R"(,"received_rows":)" +
           std::to_string(received) + R"(},{"routed_rows":)" + std::to_string(routed) + R"(,"received_rows":)" +
           std::to_string(received) + "}]";
  };
  // Iteration 2 has the larger forward-backward peak: its routing (received 150 of 100 routed
  // rows per layer) is the record's.
  const std::string ok = R"({"record_version":1,"case":"a",)" + kSpec + R"(,"measured":{"max_allocated_bytes":900,)"
                                                                        R"("iterations":[{"iteration":1,"fwd_bwd_peak_bytes":700,)" +
                         routing(100, 80) + R"(},)"
                                            R"({"iteration":2,"fwd_bwd_peak_bytes":900,)" +
                         routing(100, 150) + R"(}]}})";
  const auto a = read_records(ok);
  REQUIRE(a.errors.empty());
  REQUIRE(a.records.size() == 1);
  CHECK(*a.records[0].measured.moe_routing_imbalance == Approx(1.5));
  CHECK_FALSE(a.records[0].measured.diverged_after_first_iteration);
  // A later iteration whose loss is null (not finite) diverged: only iteration 1 is compared.
  const std::string nan = R"({"record_version":1,"case":"b",)" + kSpec + R"(,"measured":{"max_allocated_bytes":900,)"
                                                                         R"("iterations":[{"iteration":1,"fwd_bwd_peak_bytes":700,"last_microbatch_loss_sum":9.7,)" +
                          routing(100, 80) + R"(},)"
                                             R"({"iteration":2,"fwd_bwd_peak_bytes":900,"last_microbatch_loss_sum":null,)" +
                          routing(100, 800) + R"(}]}})";
  const auto b = read_records(nan);
  REQUIRE(b.errors.empty());
  REQUIRE(b.records.size() == 1);
  const auto& m = b.records[0].measured;
  CHECK(m.diverged_after_first_iteration);
  CHECK_FALSE(m.peak_allocated_bytes.has_value());
  CHECK(*m.first_iteration_peak_bytes == 700);
  CHECK(*m.moe_routing_imbalance == Approx(0.8));
  // Non-finite already in iteration 1: nothing of the run is a training step; the record is skipped.
  const std::string nan1 = R"({"record_version":1,"case":"d",)" + kSpec + R"(,"measured":{"max_allocated_bytes":900,)"
                                                                          R"("iterations":[{"iteration":1,"fwd_bwd_peak_bytes":700,"last_microbatch_loss_sum":null}]}})";
  const auto d = read_records(nan1);
  CHECK(d.errors.empty());
  CHECK(d.records.empty());
  CHECK(d.skipped.size() == 1);
  // Row counts must be present and not negative.
  const std::string bad = R"({"record_version":1,"case":"c",)" + kSpec + R"(,"measured":{"max_allocated_bytes":900,)"
                                                                         R"("iterations":[{"iteration":1,"fwd_bwd_peak_bytes":700,"moe_routing":[{"routed_rows":10}]}]}})";
  CHECK(read_records(bad).errors.size() == 1);
}

TEST_CASE("untrained-router spread: rms of (layer load - 1) x sqrt(local experts), per score function") {
  const auto line = [](const std::string& name, int ep, const std::string& score, int received) {
    return R"({"record_version":1,"case":")" + name + R"(","spec":{"model":{"num_moe_experts":64,"expert_model_parallel_size":)" +
           std::to_string(ep) + R"(,"moe_router_score_function":")" + score + R"("}},"measured":{"max_allocated_bytes":900,)"
                                                                              R"("iterations":[{"iteration":1,"fwd_bwd_peak_bytes":700,"moe_routing":[{"routed_rows":100,"received_rows":)" +
           std::to_string(received) + "}]}]}}\n";
  };
  // EP 8 (8 local experts) sigmoid: one layer at load 1.5; EP 2 (32 local experts) softmax: 0.9.
  // The EP 1 record (load 1 by construction) stays out.
  const auto r = read_records(line("a", 8, "sigmoid", 150) + line("b", 2, "softmax", 90) + line("c", 1, "softmax", 100));
  REQUIRE(r.records.size() == 3);
  const auto f = fit_routing(r.records);
  REQUIRE(f.by_score_function.size() == 2);
  for (const auto& [score, sp] : f.by_score_function) {
    CHECK(sp.records == 1);
    CHECK(sp.layers == 1);
    if (score == "sigmoid") CHECK(sp.expert_load_sigma == Approx(0.5 * std::sqrt(8.0)));
    else CHECK(sp.expert_load_sigma == Approx(0.1 * std::sqrt(32.0)));
  }
}

TEST_CASE("untrained-router spread leaves out ETP runs and layers that sent every token to the same experts") {
  const auto line = [](const std::string& name, const std::string& model_extra, const std::string& counts) {
    return R"({"record_version":1,"case":")" + name + R"(","spec":{"model":{"num_moe_experts":8,"moe_router_topk":2,)"
                                                      R"("expert_model_parallel_size":2,"moe_router_score_function":"softmax")" +
           model_extra +
           R"(}},"measured":{"max_allocated_bytes":900,"iterations":[{"iteration":1,"fwd_bwd_peak_bytes":700,)"
           R"("moe_routing":[{"routed_rows":100,"received_rows":120,"expert_counts":)" +
           counts + "}]}]}}\n";
  };
  // Spread over 3 experts: kept. Every token on the same 2 (= top-k) experts: left out. ETP 2:
  // the harness's stand-in gathered rows reach later routers, left out.
  const auto r = read_records(line("kept", "", "[30,30,40,0,0,0,0,0]") +
                              line("collapsed", "", "[100,100,0,0,0,0,0,0]") +
                              line("etp", R"(,"expert_tensor_parallel_size":2)", "[30,30,40,0,0,0,0,0]"));
  REQUIRE(r.records.size() == 3);
  CHECK(*r.records[0].measured.first_iteration_min_active_experts == 3);
  CHECK(*r.records[1].measured.first_iteration_min_active_experts == 2);
  const auto f = fit_routing(r.records);
  REQUIRE(f.by_score_function.size() == 1);
  CHECK(f.by_score_function[0].second.records == 1);
  CHECK(f.by_score_function[0].second.expert_load_sigma == Approx(0.2 * std::sqrt(4.0)));
}

TEST_CASE("record reader rejects bad lines with their line numbers") {
  const std::string text =
      "not json\n"
      R"({"record_version":2,"case":"x",)" +
      kSpec + R"(,"measured":{}})"
              "\n" +
      R"({"record_version":1,"case":"y",)" + kSpec + R"(,"measured":{"max_allocated_bytes":"12"}})"
                                                     "\n" +
      R"({"record_version":1,"case":"z",)" + kSpec + R"(,"measured":{"oom":false}})"
                                                     "\n" +
      R"({"record_version":1,"spec":{},"measured":{}})"
      "\n" +
      R"({"record_version":1,"case":"v",)" + kSpec + R"(,"measured":null,"validation_error":{"type":"ValueError"}})";
  const auto r = read_records(text, "bad.jsonl");
  REQUIRE(r.errors.size() == 5);
  CHECK(r.errors[0].rfind("bad.jsonl:1: ", 0) == 0);
  CHECK(r.errors[1].find("record_version 2") != std::string::npos);
  CHECK(r.errors[2].find("bad.jsonl:3: y: measured.max_allocated_bytes must be an integer") == 0);
  CHECK(r.errors[3].find("needs max_allocated_bytes") != std::string::npos);
  CHECK(r.errors[4].find("missing \"case\"") != std::string::npos);
  CHECK(r.records.empty());
  CHECK(r.skipped.size() == 1);
}

// The Megatron-LM launch-line front end is tested in tests/model/test_megatron_args.cpp.

TEST_CASE("the fit recovers a known fixed term from synthetic records") {
  const double fixed = 812.0e6;
  std::vector<FitPoint> pts;
  for (int i = 0; i < 40; ++i) {
    const double sim = 5e9 + 1e8 * i;
    const double noise = (i % 2 ? 1 : -1) * 4e6;  // +-4 MB, zero mean
    pts.push_back({sim, sim + fixed + noise});
  }
  const auto f = fit_stack("local", pts);
  CHECK(f.framework_fixed == Approx(fixed).epsilon(1e-9));
  CHECK(f.sigma == Approx(4e6 * std::sqrt(40.0 / 39.0)).epsilon(1e-6));
  CHECK(safe_upper_bound(1e9, f.sigma) == Approx(1e9 + 2 * f.sigma));
}

TEST_CASE("error statistics on a tiny corpus") {
  const auto s = error_stats({0.05, 0.01, 0.02, 0.10, 0.03});
  CHECK(s.n == 5);
  CHECK(s.median == Approx(0.03));
  CHECK(s.p90 == Approx(0.05 + 0.6 * 0.05));  // position 3.6 between 0.05 and 0.10
  CHECK(s.worst == Approx(0.10));
}

TEST_CASE("reserved / allocated quantiles over whole measured runs") {
  const auto line = [](const std::string& name, const std::string& measured) {
    return R"({"record_version":1,"case":")" + name + R"(",)" + kSpec + R"(,"measured":)" + measured + "}\n";
  };
  // Ratios 1.0, 1.1, 1.2, 1.3, 1.4; then an OOM run and a run without max_reserved_bytes, left out.
  std::string text;
  for (int i = 0; i < 5; ++i)
    text += line("r" + std::to_string(i), R"({"max_allocated_bytes":1000,"max_reserved_bytes":)" + std::to_string(1000 + 100 * i) + "}");
  text += line("oom", R"({"oom":true,"max_reserved_bytes":5000})");
  text += line("plain", R"({"max_allocated_bytes":1000})");
  const auto r = read_records(text);
  REQUIRE(r.records.size() == 7);
  const auto f = fit_reserved(r.records);
  CHECK(f.records == 5);
  CHECK(fit_reserved(r.records, true).records == 0);  // none of them ran with expandable_segments
  CHECK(f.median == Approx(1.2));
  CHECK(f.p90 == Approx(1.3 + 0.6 * 0.1));  // position 0.9 x 4 = 3.6 between 1.3 and 1.4
  CHECK(f.max == Approx(1.4));
}

TEST_CASE("reserved ratios are fitted apart for runs with expandable_segments") {
  const std::string plain = R"({"record_version":1,"case":"p","spec":{"model":{"num_layers":2}},"measured":{"max_allocated_bytes":1000,"max_reserved_bytes":1100}})";
  const std::string grown = R"({"record_version":1,"case":"g","spec":{"model":{"num_layers":2},"cluster":{"expandable_segments":true}},"measured":{"max_allocated_bytes":1000,"max_reserved_bytes":1010}})";
  const auto r = read_records(plain + "\n" + grown + "\n");
  REQUIRE(r.records.size() == 2);
  CHECK(fit_reserved(r.records).median == Approx(1.1));
  CHECK(fit_reserved(r.records, true).median == Approx(1.01));
}

TEST_CASE("a memory report printed after iteration 1 is compared with the predicted first iteration, also when the run ran out of memory later") {
  const std::string spec = R"("spec":{"model":{"num_layers":2,"hidden_size":512,"ffn_hidden_size":2048,"num_attention_heads":8,)"
                           R"("vocab_size":32000,"seq_length":1024,"transformer_impl":"local","attention_backend":"unfused","bf16":true},)"
                           R"("train":{"micro_batch_size":1,"global_batch_size":1},"cluster":{"num_gpus":1,"gpu":"h200-141gb"}})";
  const auto line = [&](const std::string& name, const std::string& measured) {
    return R"({"record_version":1,"case":")" + name + R"(",)" + spec + R"(,"rank":null,"measured":)" + measured + "}\n";
  };
  const auto r = read_records(line("later_oom", R"({"oom":true,"first_iteration_max_allocated_bytes":1000000000})") +
                              line("oom_in_1", R"({"oom":true,"oom_iteration":1,"first_iteration_max_allocated_bytes":1000000000})") +
                              line("no_oom", R"({"oom":false,"first_iteration_max_allocated_bytes":1000000000})"));
  REQUIRE(r.errors.empty());
  REQUIRE(r.records.size() == 3);
  const auto ev = evaluate_records(r.records);
  const auto parsed = peakcast::model::parse_run_spec(nlohmann::json::parse("{" + spec + "}").at("spec").dump());
  REQUIRE(parsed.spec.has_value());
  const auto p = peakcast::sim::predict(*parsed.spec);
  REQUIRE(p.ranks.size() == 1);
  // Iteration 1 peaks before the Adam moments exist, below the whole run's peak.
  REQUIRE(p.ranks[0].first_iteration_peak_allocated < p.ranks[0].peak_allocated);
  for (int i : {0, 2}) {
    INFO(r.records[static_cast<std::size_t>(i)].name);
    CHECK(ev[static_cast<std::size_t>(i)].usable);
    CHECK(ev[static_cast<std::size_t>(i)].measured_first_iteration_only);
    CHECK(ev[static_cast<std::size_t>(i)].predicted_peak == Approx(static_cast<double>(p.ranks[0].first_iteration_peak_allocated.value)));
    CHECK(ev[static_cast<std::size_t>(i)].predicted_phase == peakcast::sim::to_string(p.ranks[0].first_iteration_peak_phase));
    CHECK_FALSE(ev[static_cast<std::size_t>(i)].fits_fixed_term());
  }
  // Out of memory inside iteration 1: the report cannot be a whole iteration's.
  CHECK_FALSE(ev[1].usable);
}
