// Mutated Megatron-LM launch lines (deterministic): the import never throws, and a defined option
// misspelt (a letter dropped, added or swapped) is always an error naming the misspelt word, as
// Megatron-LM's own parser (allow_abbrev=False) refuses it. scripts/fuzz_specs.py --inputs mlm does
// the same through the binary (exit 0 or 2, never a crash).
#include "test_megatron_args.hpp"

#include <random>
#include <set>
#include <sstream>

#include "megatron_detail.hpp"

using nlohmann::json;

namespace {

const std::vector<std::string> kSeeds = {
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True torchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py "
    "--num-layers 8 --hidden-size 1024 --num-attention-heads 16 --group-query-attention --num-query-groups 4 "
    "--seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 16 --bf16 "
    "--tensor-model-parallel-size 2 --sequence-parallel --pipeline-model-parallel-size 2 --use-distributed-optimizer "
    "--swiglu --position-embedding-type rope --untie-embeddings-and-output-weights --normalization RMSNorm "
    "--recompute-granularity selective --recompute-modules core_attn mlp --log-interval 1",
    "python -m torch.distributed.run --nproc_per_node 8 pretrain_gpt.py --num-layers 4 --hidden-size 512 "
    "--num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 2 --bf16 "
    "--num-experts 8 --moe-router-topk 2 --expert-model-parallel-size 4 --moe-grouped-gemm "
    "--moe-token-dispatcher-type alltoall --disable-bias-linear --use-distributed-optimizer --overlap-grad-reduce",
    "torchrun --nproc-per-node 4 pretrain_hybrid.py --hybrid-layer-pattern M*M-M*M- --hidden-size 512 "
    "--num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 1 "
    "--pipeline-model-parallel-size 2 --position-embedding-type rope --bf16 --mamba-num-heads 8"};

std::vector<std::string> words_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::set<std::string> defined_options() {
  std::set<std::string> out;
  for (const auto& def : peakcast::model::detail::megatron_arg_defs())
    for (const auto& o : def.options) out.insert(o);
  return out;
}

}  // namespace

TEST_CASE("fuzzed launch lines: never a throw, never a misspelt option accepted", "[megatron][fuzz]") {
  const std::set<std::string> options = defined_options();
  REQUIRE(options.count("--tensor-model-parallel-size") == 1);
  std::mt19937 rng(20);
  const std::string letters = "abcdefghijklmnopqrstuvwxyz-_";
  int misspelt_cases = 0;
  for (int i = 0; i < 400; ++i) {
    std::vector<std::string> words = words_of(kSeeds[rng() % kSeeds.size()]);
    std::size_t script = 0;  // the training script's word: the launcher's options come before it
    while (script < words.size() && words[script].find(".py") == std::string::npos) ++script;
    std::vector<std::size_t> opts;
    for (std::size_t j = script + 1; j < words.size(); ++j)
      if (options.count(words[j])) opts.push_back(j);
    std::string typo;
    const std::size_t at = opts[rng() % opts.size()];
    const std::string w = words[at];
    const std::size_t k = 2 + rng() % (w.size() - 2);
    switch (rng() % 3) {
      case 0: typo = w.substr(0, k) + w.substr(k + 1); break;                                // a letter dropped
      case 1: typo = w.substr(0, k) + letters[rng() % letters.size()] + w.substr(k); break;  // one added
      default: typo = k + 1 < w.size() ? w.substr(0, k) + w[k + 1] + w[k] + w.substr(k + 2) : w.substr(0, k); break;
    }
    if (typo.size() <= 2 || options.count(typo)) continue;  // still a defined option (or nothing): not a typo
    words[at] = typo;
    // A second mutation: a value replaced by one of the wrong type, or a token dropped.
    if (const std::size_t v = words.size() - 1 - rng() % 3; rng() % 2 && v != at && v > script)
      words[v] = (rng() % 2) ? "abc" : "-1";
    std::string line;
    for (const auto& x : words) line += (line.empty() ? "" : " ") + x;
    INFO(line);
    peakcast::model::MegatronLineImport r;
    REQUIRE_NOTHROW(r = megatron_test::import(line));
    CHECK(r.spec_json.empty());
    bool named = false;
    for (const auto& d : r.diagnostics)
      named = named || (d.severity == peakcast::model::Severity::error && d.path == typo);
    CHECK(named);
    ++misspelt_cases;
  }
  CHECK(misspelt_cases > 300);
}
