// Megatron-LM functional-test golden memory CSV -> records: what each row's world size is, and the
// flags a row implies although the CSV has no column for them.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "peakcast/calibration/ingest.hpp"
#include "peakcast/calibration/record.hpp"
#include "peakcast/model/run_spec.hpp"
#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/validate.hpp"

using namespace peakcast::calibration;
using nlohmann::json;

namespace {

// The CSV's leading columns, then the MODEL_ARGS columns the rows below use (the importer takes every
// column from num-layers on as an argument).
const std::string kHeader =
    "model,test_case,env_platform,max_alloc_first_GB,max_alloc_final_GB,alloc_steady_GB,first_step,last_step,alloc_conf,"
    "num-layers,hidden-size,num-attention-heads,num-query-groups,seq-length,micro-batch-size,global-batch-size,"
    "tensor-model-parallel-size,pipeline-model-parallel-size,num-layers-per-virtual-pipeline-stage,"
    "expert-model-parallel-size,num-experts,moe-router-topk,recompute-granularity,recompute-modules,bf16,train-iters,"
    "disable-bias-linear,swiglu\n";

// A 12-layer, hidden-512 GPT at MBS 4; the other cells come from the caller.
std::string row(const std::string& test_case, const std::string& platform, const std::string& groups,
                const std::string& gbs, const std::string& tp, const std::string& pp, const std::string& vp_layers,
                const std::string& moe = ",,,,", const std::string& flags = ",") {
  return "gpt," + test_case + "," + platform + ",1.0,2.0,0.5,1,50,,12,512,8," + groups + ",1024,4," + gbs + "," + tp + "," + pp +
         "," + vp_layers + "," + moe + ",True,50," + flags + "\n";
}

json spec_of(const Record& r) { return json::parse(r.spec_json); }

const Record* find(const CsvIngest& in, const std::string& name) {
  for (const auto& r : in.records)
    if (r.name == name) return &r;
  return nullptr;
}

}  // namespace

TEST_CASE("golden CSV: world size from the test name and platform (the recipes' nodes x gpus)") {
  const auto in = ingest_golden_memory_csv(kHeader + row("plain", "dev_dgx_gb200", "", "32", "1", "1", "") +
                                           row("plain", "dev_dgx_h100", "", "32", "1", "1", "") +
                                           row("small_1node", "dev_dgx_gb200", "", "32", "1", "1", "") +
                                           row("small_1node", "dev_dgx_h100", "", "32", "1", "1", "") +
                                           row("stated_dgx_gb200_1N4G", "dev_dgx_gb200", "", "32", "1", "1", ""));
  REQUIRE(in.skipped.empty());
  REQUIRE(in.records.size() == 5);
  // GB200: 2 nodes x 4 GPUs, a _1node recipe 1 x 4; DGX A100/H100 nodes hold 8.
  CHECK(spec_of(*find(in, "gpt/plain@dev_dgx_gb200"))["cluster"]["num_gpus"] == 2 * 4);
  CHECK(spec_of(*find(in, "gpt/plain@dev_dgx_h100"))["cluster"]["num_gpus"] == 8);
  CHECK(spec_of(*find(in, "gpt/small_1node@dev_dgx_gb200"))["cluster"]["num_gpus"] == 1 * 4);
  CHECK(spec_of(*find(in, "gpt/small_1node@dev_dgx_h100"))["cluster"]["num_gpus"] == 1 * 8);
  CHECK(spec_of(*find(in, "gpt/stated_dgx_gb200_1N4G@dev_dgx_gb200"))["cluster"]["num_gpus"] == 1 * 4);
}

TEST_CASE("golden CSV: num-query-groups means grouped-query attention, moe_act recompute means grouped GEMM") {
  const auto in = ingest_golden_memory_csv(kHeader + row("gqa", "dev_dgx_h100", "2", "32", "1", "1", "") +
                                           row("moe", "dev_dgx_h100", "", "32", "1", "1", "", "8,8,2,selective,[moe_act]",
                                               // TEGroupedMLP: no bias with bias-dropout fusion, SwiGLU for the fused
                                               // activation (experts.py:204, :846), as the functional tests' MoE runs
                                               "True,True"));
  REQUIRE(in.skipped.empty());
  REQUIRE(in.records.size() == 2);
  // Without --group-query-attention Megatron-LM would drop the 2 groups and keep 8 (one per head).
  CHECK(spec_of(*find(in, "gpt/gqa@dev_dgx_h100"))["model"]["num_query_groups"] == 2);
  const auto moe = spec_of(*find(in, "gpt/moe@dev_dgx_h100"))["model"];
  CHECK(moe["moe_grouped_gemm"] == true);
  CHECK(moe["recompute_modules"] == json::array({"moe_act"}));
}

TEST_CASE("golden CSV: the interleaved schedule's group size is derived only when exactly one is accepted") {
  // PP 4 with one layer per virtual stage (VPP 12 / 4 / 1 = 3), MBS 4, GBS 40, TP 1.
  // 8 GPUs: DP 2, M = 40 / (4 * 2) = 5. Megatron's default N = PP = 4 leaves 5 % 4 = 1 < 4 (refused);
  // N must lie in [4, 5], and N = 5 leaves 0: the only accepted size.
  // 4 GPUs (_1node on GB200): DP 1, M = 10: N = 5 (rest 0), 6 (rest 4), 10 (rest 0) are accepted; 4, 7, 8, 9
  // leave 2, 3, 2, 1. Three candidates: the row is left out.
  const auto in = ingest_golden_memory_csv(kHeader + row("tunable", "dev_dgx_h100", "", "40", "1", "4", "1") +
                                           row("tunable_1node", "dev_dgx_gb200", "", "40", "1", "4", "1") +
                                           row("default_ok", "dev_dgx_h100", "", "32", "1", "4", "1"));
  REQUIRE(in.records.size() == 2);
  const auto m = spec_of(*find(in, "gpt/tunable@dev_dgx_h100"))["model"];
  CHECK(m["virtual_pipeline_model_parallel_size"] == 3);
  CHECK(m["microbatch_group_size_per_vp_stage"] == 5);
  CHECK(find(in, "gpt/tunable@dev_dgx_h100")->pp_rank == 3);  // the last pipeline stage logs memory
  // GBS 32 on 8 GPUs: M = 4 = PP, the default is accepted and nothing is added.
  CHECK_FALSE(spec_of(*find(in, "gpt/default_ok@dev_dgx_h100"))["model"].contains("microbatch_group_size_per_vp_stage"));
  REQUIRE(in.skipped.size() == 1);
  CHECK(in.skipped[0].find("tunable_1node") != std::string::npos);
  CHECK(in.skipped[0].find("M=10") != std::string::npos);
  CHECK(in.skipped[0].find("{5, 6, 10}") != std::string::npos);
}

// gpt/gpt3_mcore_te_tp2_pp2's model_config.yaml at d98e8a64 (configs/functional_test_args.json) passes
// --transformer-impl transformer_engine, --attention-backend unfused, --attention-softmax-in-fp32 and
// --no-gradient-accumulation-fusion, none of them a CSV column; its CSV columns are 12 layers, hidden 512,
// 8 heads, sequence 1024, MBS 4, GBS 32, TP 2, PP 2, bf16, 50 iterations.
TEST_CASE("golden CSV: a listed test case runs with its model_config.yaml's MODEL_ARGS, the CSV columns checked against them") {
  const auto in = ingest_golden_memory_csv(kHeader + row("gpt3_mcore_te_tp2_pp2", "dev_dgx_h100", "", "32", "2", "2", ""));
  REQUIRE(in.skipped.empty());
  REQUIRE(in.records.size() == 1);
  const json spec = spec_of(in.records[0]);
  CHECK(spec["model"]["transformer_impl"] == "transformer_engine");
  CHECK(spec["model"]["attention_backend"] == "unfused");
  CHECK(spec["model"]["attention_softmax_in_fp32"] == true);
  CHECK(spec["model"]["gradient_accumulation_fusion"] == false);
  CHECK(spec["model"]["tensor_model_parallel_size"] == 2);
  CHECK(spec["cluster"]["num_gpus"] == 8);  // h100/gpt.yaml: 1 node, _run_training.sh's 8 processes per node
  bool named = false;
  for (const auto& [k, v] : in.records[0].provenance)
    if (k == "arguments") named = v.find("gpt/gpt3_mcore_te_tp2_pp2/model_config.yaml") != std::string::npos;
  CHECK(named);

  // The same case with a CSV column that contradicts its MODEL_ARGS (TP 4): left out, naming the column.
  const auto bad = ingest_golden_memory_csv(kHeader + row("gpt3_mcore_te_tp2_pp2", "dev_dgx_h100", "", "32", "4", "2", ""));
  CHECK(bad.records.empty());
  REQUIRE(bad.skipped.size() == 1);
  CHECK(bad.skipped[0].find("column 'tensor-model-parallel-size' = '4' but MODEL_ARGS gives '2'") != std::string::npos);
}

// BERT's cases run examples/bert/pretrain_bert.py (recipe h100/bert.yaml) with their MODEL_ARGS: the local-spec case
// passes --spec local --attention-backend local, the others neither (the TE spec) with --attention-backend unfused;
// BertWordPieceLowerCase over bert-base-uncased's vocab.txt (configs/tokenizers.json). CSV columns: 24 layers, hidden
// 1024, 16 heads, sequence 512, MBS 4, GBS 128, TP 2, PP 2, bf16, 50 iterations.
TEST_CASE("golden CSV: a BERT case imports as BertModel with its layer spec", "[bert]") {
  const std::string header =
      "model,test_case,env_platform,max_alloc_first_GB,max_alloc_final_GB,alloc_steady_GB,first_step,last_step,alloc_conf,"
      "num-layers,hidden-size,num-attention-heads,seq-length,micro-batch-size,global-batch-size,tensor-model-parallel-size,"
      "pipeline-model-parallel-size,bf16,train-iters\n";
  const auto bert = [](const std::string& test_case) { return "bert," + test_case + ",dev_dgx_h100,2.3,3.1,1.8,1,50,,24,1024,16,512,4,128,2,2,True,50\n"; };
  const auto in = ingest_golden_memory_csv(header + bert("bert_mcore_tp2_pp2") + bert("bert_mcore_tp2_pp2_local_spec"));
  for (const auto& s : in.skipped) UNSCOPED_INFO(s);
  REQUIRE(in.records.size() == 2);
  const json te = spec_of(in.records[0])["model"], local = spec_of(in.records[1])["model"];
  CHECK(in.records[0].group == "megatron-functional-bert");
  CHECK(te["architecture"] == "bert");
  CHECK(te["attention_backend"] == "unfused");
  CHECK_FALSE(te.contains("transformer_impl"));  // the TE spec, the run spec's default
  CHECK(local["architecture"] == "bert");
  CHECK(local["transformer_impl"] == "local");
  CHECK(local["attention_backend"] == "local");
  CHECK(te["vocab_size"] == 30522);
  CHECK(in.records[0].pp_rank == 1);  // the last rank logs: the last pipeline stage, with BERT's heads
}

// T5's cases run examples/t5/pretrain_t5.py (recipe h100/t5.yaml) with their MODEL_ARGS (--encoder-num-layers,
// --decoder-seq-length, --transformer-impl; none a CSV column): BertWordPieceCase with 100 extra ids
// (configs/tokenizers.json). CSV columns: hidden 768, FFN 3072, 12 heads of 64, MBS 4, GBS 32, TP 2, bf16, 100 iterations.
TEST_CASE("golden CSV: a T5 case imports as T5Model with both stacks' lengths", "[t5]") {
  const std::string header =
      "model,test_case,env_platform,max_alloc_first_GB,max_alloc_final_GB,alloc_steady_GB,first_step,last_step,alloc_conf,"
      "num-layers,hidden-size,ffn-hidden-size,num-attention-heads,seq-length,micro-batch-size,global-batch-size,"
      "tensor-model-parallel-size,pipeline-model-parallel-size,bf16,kv-channels,train-iters\n";
  const auto in = ingest_golden_memory_csv(header + "t5,t5_mcore_tp2_pp1_vp1,dev_dgx_h100,2.4,3.3,2.2,1,100,,,768,3072,12,,4,32,2,1,True,64,100\n");
  for (const auto& s : in.skipped) UNSCOPED_INFO(s);
  REQUIRE(in.records.size() == 1);
  const json m = spec_of(in.records[0])["model"];
  CHECK(in.records[0].group == "megatron-functional-t5");
  CHECK(m["architecture"] == "t5");
  CHECK(m["num_layers"] == 12);
  CHECK(m["seq_length"] == 512);
  CHECK(m["decoder_seq_length"] == 128);
  CHECK(m["transformer_impl"] == "local");
  CHECK(m["vocab_size"] == 29096);
}

// The committed import (calibration/data/external_megatron.jsonl, what CI validates) is what the import
// makes of the shared CSV today, and it covers what it covered when committed (249 of 273 usable rows: the 4 fine-grained offloading rows since #21).
// Skipped where the CSV is not on the machine (CI's clean clone).
TEST_CASE("golden CSV: the committed functional-test corpus is today's import of the CSV") {
  const std::string csv_path = "/work/shared/external-validation/megatron_functional_golden_memory.csv";
  std::ifstream csv(csv_path);
  if (!csv) {
    WARN(csv_path + " is not on this machine; skipped");
    return;
  }
  const std::string text((std::istreambuf_iterator<char>(csv)), std::istreambuf_iterator<char>());
  const auto in = ingest_golden_memory_csv(text);
  CHECK(in.usable == 273);
  CHECK(in.usable_imported >= 249);
  std::ifstream committed(std::string(PEAKCAST_SOURCE_DIR) + "/calibration/data/external_megatron.jsonl");
  REQUIRE(committed);
  std::vector<std::string> lines;
  for (std::string l; std::getline(committed, l);)
    if (!l.empty()) lines.push_back(l);
  REQUIRE(lines.size() == in.records.size());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    INFO(in.records[i].name);
    CHECK(json::parse(lines[i]) == json::parse(to_json_line(in.records[i])));
  }
}
