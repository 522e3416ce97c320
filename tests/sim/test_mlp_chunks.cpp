// mlp_chunks_for_training: the MLP runs on sequence chunks of the pre-MLP norm output and the outputs
// are concatenated (transformer_layer.py:857-905). What a layer keeps for backward is the same in total;
// the selective mlp checkpoint takes precedence and then nothing is chunked.
#include <catch2/catch.hpp>

#include <string>

#include "held_tensors.hpp"

using namespace peakcast;

namespace {
std::string spec_text(int chunks, const std::string& extra = "") {
  return R"({"model": {"preset": "llama3-8b", "num_layers": 2, "seq_length": 4096, "bf16": true,
      "transformer_impl": "local", "attention_backend": "unfused", "mlp_chunks_for_training": )" +
         std::to_string(chunks) + extra + R"(},
    "train": {"micro_batch_size": 1, "global_batch_size": 1}, "cluster": {"num_gpus": 1, "gpu": "h100-sxm-80gb"}})";
}

struct Held {
  Bytes total{};
  int chunk_tensors = 0;
};

Held layer0(int chunks, const std::string& extra = "") {
  auto held = test::held_by_module(test::valid_spec(spec_text(chunks, extra)));
  REQUIRE(held.count("L0"));
  Held h;
  h.total = test::total_bytes(held["L0"]);
  for (const auto& t : held["L0"]) h.chunk_tensors += t.name.find(".chunk") != std::string::npos ? 1 : 0;
  return h;
}
}  // namespace

TEST_CASE("MLP chunks keep the same bytes for backward, a share per chunk", "[sim][graph][mlp_chunks]") {
  const Held whole = layer0(1), four = layer0(4);
  CHECK(whole.chunk_tensors == 0);
  CHECK(four.chunk_tensors > 0);
  CHECK(four.total == whole.total);
  // 4096 rows in 3 chunks: torch.chunk sizes 1366, 1366, 1364; the total is still the same.
  CHECK(layer0(3).total == whole.total);
}

TEST_CASE("the selective mlp checkpoint takes precedence over MLP chunks", "[sim][graph][mlp_chunks]") {
  const std::string mlp = R"(, "recompute_granularity": "selective", "recompute_modules": ["mlp"])";
  const Held chunked = layer0(4, mlp), plain = layer0(1, mlp);
  CHECK(chunked.chunk_tensors == 0);
  CHECK(chunked.total == plain.total);
}

TEST_CASE("mlp_chunks_for_training must be at least 1", "[validate][mlp_chunks]") {
  auto r = model::parse_run_spec(spec_text(0));
  REQUIRE(r.spec);
  bool found = false;
  for (const auto& d : model::validate(*r.spec))
    found = found || (d.path == "model.mlp_chunks_for_training" && d.rule == "value_out_of_range");
  CHECK(found);
}
