// Inputs the Bridge recipe catalogue needs beyond the recipes themselves: the GB200 / GB300 GPU presets
// (configs/gpus/), the world size of the Nemotron 3.5 Lightning recipes whose names carry none (each
// entry's num_gpus_source), and the tokenizer lengths (configs/tokenizers.json) that size the Gemma
// recipes' vocabularies. Expected values are derived here from the cited figures.
#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/validate.hpp"
#include "peakcast/sim/framework_fixed.hpp"

using namespace peakcast;

namespace {

constexpr std::int64_t kMiB = 1024 * 1024;

nlohmann::json config_file(const std::string& path) {
  std::ifstream in(std::string(PEAKCAST_SOURCE_DIR) + "/configs/" + path);
  return nlohmann::json::parse(in);
}

model::RunSpec on_gpu(const std::string& gpu) {
  const std::string spec = R"({"model": {"num_layers": 2, "hidden_size": 512, "num_attention_heads": 8, "seq_length": 1024,
    "max_position_embeddings": 1024, "vocab_size": 50304, "bf16": true},
    "train": {"micro_batch_size": 1, "global_batch_size": 1}, "cluster": {"num_gpus": 1, "gpu": ")" +
                           gpu + R"("}})";
  auto r = model::parse_run_spec(spec);
  for (const auto& d : r.diagnostics) UNSCOPED_INFO(model::format(d));
  REQUIRE(r.spec.has_value());
  return *r.spec;
}

model::ParseResult recipe(const std::string& name) {
  auto r = model::parse_spec_input("bridge:" + name, "", {});
  for (const auto& d : r.diagnostics) UNSCOPED_INFO(model::format(d));
  return r;
}

}  // namespace

TEST_CASE("GB200 and GB300 presets: usable memory from the cited nvidia-smi totals", "[model][gpu]") {
  // The presets' rule (configs/gpus/h200-141gb.json, measured on the H200): torch's total is nvidia-smi's
  // total less a 616 MiB reservation, and the CUDA context takes 552402944 B of what is left.
  const auto usable = [](std::int64_t smi_mib) { return Bytes{(smi_mib - 616) * kMiB - 552402944}; };
  // The rule gives the shipped H100 and B200 presets from their nvidia-smi totals.
  CHECK(on_gpu("h100-sxm-80gb").cluster.gpu.memory_bytes == usable(81559));
  CHECK(on_gpu("b200").cluster.gpu.memory_bytes == usable(183359));
  // nvidia-smi on GB200 / GB300 nodes (third-party logs, cited in the presets): 189471 and 284208 MiB.
  const auto gb200 = on_gpu("gb200").cluster.gpu;
  const auto gb300 = on_gpu("gb300").cluster.gpu;
  CHECK(gb200.memory_bytes == usable(189471));
  CHECK(gb300.memory_bytes == usable(284208));
  // Below the HBM3E fitted (8 stacks of 24 GiB on Blackwell, 8 of 36 GiB on Blackwell Ultra's 288 GB).
  CHECK(gb200.memory_bytes.value < 8 * 24 * 1024 * kMiB);
  CHECK(gb300.memory_bytes.value < 8 * 36 * 1024 * kMiB);
  // Compute capability 10.0 and 10.3: major 10 on both; the SM counts measured on the parts.
  CHECK(gb200.compute_capability_major == 10);
  CHECK(gb300.compute_capability_major == 10);
  CHECK(gb200.multiprocessor_count == 152);
  CHECK(gb300.multiprocessor_count == 152);
  CHECK(gb200.max_threads_per_multiprocessor == 2048);
  CHECK(gb300.max_threads_per_multiprocessor == 2048);
  // Dense rates: half the datasheets' sparse 5 / 10 PFLOPS (BF16 / FP8) a GPU.
  CHECK(gb200.bf16_dense_tflops == 5000.0 / 2);
  CHECK(gb200.fp8_dense_tflops == 10000.0 / 2);
  CHECK(gb300.fp8_dense_tflops == 720000.0 / 72 / 2);  // GB300 NVL72: 720 PFLOPS FP8 sparse over 72 GPUs
}

TEST_CASE("GB200 and GB300 keep PyTorch's and Transformer Engine's 32 MiB workspaces", "[model][gpu][sim]") {
  // PyTorch's parseChosenWorkspaceSize: ":4096:8" (4096 KiB x 8) when the major is 9, 10 or 12;
  // TE's get_cublas_workspace_size_bytes: 32 MiB + 1 KiB when the major is >= 9 (gemm.py at v2.16).
  for (const char* gpu : {"gb200", "gb300"}) {
    INFO(gpu);
    const auto spec = on_gpu(gpu);
    CHECK(sim::torch_cublas_workspace_bytes(spec.cluster) == Bytes{4096 * 1024 * 8});
    CHECK(sim::total_bytes(sim::transformer_engine_workspaces(spec)) == Bytes{32 * kMiB + 1024});
  }
}

TEST_CASE("a recipe of a gb200 folder trains on the GB200 preset", "[model][recipes][gpu]") {
  for (const char* name : {"nemotron_3_nano_pretrain_8gpu_gb200_bf16_config", "qwen3_30b_a3b_pretrain_8gpu_gb200_fp8mx_functional_config"}) {
    INFO(name);
    const auto r = recipe(name);
    REQUIRE(r.spec);
    CHECK(r.spec->cluster.gpu.name == "gb200");
    CHECK(r.spec->cluster.gpu.memory_bytes == on_gpu("gb200").cluster.gpu.memory_bytes);
    CHECK(r.spec->cluster.num_gpus == 8);  // "8gpu" in the name
    CHECK(r.origins.at("cluster.gpu").source.find("(gb200/, bridge:src/megatron/bridge/recipes/") != std::string::npos);
  }
}

TEST_CASE("Nemotron 3.5 Lightning recipes take the world size their entry cites", "[model][recipes][nemotron]") {
  // The card's launch lines give nodes x GPUs a node; the one recipe the card only runs with its layout
  // overridden takes its base recipe's count, the "<N>gpu" of that recipe's name.
  static const std::regex launch("--nodes ([0-9]+) --gpus-per-node ([0-9]+)");
  static const std::regex base_name("nemotron_3_nano_[a-z]+_([0-9]+)gpu_h100");
  const std::vector<std::string> names = {"nemotron_3_5_lightning_pretrain_config",
                                          "nemotron_3_5_lightning_pretrain_8k_config",
                                          "nemotron_3_5_lightning_pretrain_8k_fsdp_config",
                                          "nemotron_3_5_lightning_sft_config",
                                          "nemotron_3_5_lightning_sft_openmathinstruct2_packed_config",
                                          "nemotron_3_5_lightning_sft_openmathinstruct2_packed_tp1_config",
                                          "nemotron_3_5_lightning_peft_config"};
  for (const auto& name : names) {
    INFO(name);
    const auto entry = config_file("recipes/" + name + ".json");
    const std::string cited = entry.at("num_gpus_source").get<std::string>();
    std::smatch m;
    std::int64_t expected = 0;
    if (cited.rfind("bridge:examples/model_verification_cards/", 0) == 0 && std::regex_search(cited, m, launch))
      expected = std::stoll(m[1].str()) * std::stoll(m[2].str());
    else if (std::regex_search(cited, m, base_name))
      expected = std::stoll(m[1].str());
    REQUIRE(expected > 0);
    CHECK(entry.at("num_gpus").get<std::int64_t>() == expected);
    const auto r = recipe(name);
    if (!r.spec) {  // Megatron FSDP is refused for its mechanism, not for its world size
      bool fsdp = false;
      for (const auto& d : r.diagnostics) fsdp = fsdp || d.rule == "fsdp_not_simulated";
      CHECK(fsdp);
      continue;
    }
    CHECK(r.spec->cluster.num_gpus == expected);
    CHECK(r.origins.at("cluster.num_gpus").source == cited);
    const auto& s = r.spec->model;
    CHECK(expected % (s.tensor_model_parallel_size * s.pipeline_model_parallel_size * s.context_parallel_size) == 0);
    CHECK(expected % s.expert_model_parallel_size == 0);
  }
}

TEST_CASE("Gemma recipes' vocabulary from the cited tokenizer lengths", "[model][recipes][vocab][gemma]") {
  const auto tokenizers = config_file("tokenizers.json").at("tokenizers");
  const auto len = [&](const std::string& id) { return tokenizers.at(id).at("vocab_size").get<std::int64_t>(); };
  const auto config_vocab = [](const std::string& file) { return config_file("hf/" + file).at("vocab_size").get<std::int64_t>(); };
  // SFT / PEFT: the HF config's vocabulary, grown to len(tokenizer) when that is larger
  // (_adjust_gemma*_vocab_size), kept unpadded by setup() (setup.py:772-780).
  struct Case {
    const char* recipe;
    const char* tokenizer;
    const char* config;
  };
  for (const Case& c : {Case{"gemma3_1b_sft_1gpu_h100_bf16_config", "google/gemma-3-1b-pt", "google--gemma-3-1b-pt.json"},
                        Case{"gemma3_1b_peft_1gpu_h100_bf16_config", "google/gemma-3-1b-pt", "google--gemma-3-1b-pt.json"}}) {
    INFO(c.recipe);
    const auto r = recipe(c.recipe);
    REQUIRE(r.spec);
    const std::int64_t want = std::max(config_vocab(c.config), len(c.tokenizer));
    CHECK(r.spec->model.vocab_size == want);
    CHECK_FALSE(r.spec->model.should_pad_vocab);
    CHECK(model::derive(*r.spec).padded_vocab == want);
  }
  // Gemma 3's tokenizer holds one token past the 262144 embedding rows (<image_soft_token>), so the recipe grows it.
  CHECK(len("google/gemma-3-1b-pt") == config_vocab("google--gemma-3-1b-pt.json") + 1);
  // Pretraining: use_tokenizer_vocab_size, len(tokenizer) padded to a multiple of 128 x TP (setup.py:761-765).
  for (const char* name : {"gemma2_2b_pretrain_2gpu_h100_bf16_config", "gemma2_9b_pretrain_8gpu_h100_bf16_config",
                           "gemma2_27b_pretrain_16gpu_h100_bf16_config"}) {
    INFO(name);
    const auto r = recipe(name);
    REQUIRE(r.spec);
    const std::string size = std::regex_replace(std::string(name), std::regex("gemma2_([0-9]+b)_.*"), "$1");
    const std::int64_t v = len("google/gemma-2-" + size);
    const std::int64_t multiple = 128 * r.spec->model.tensor_model_parallel_size;
    CHECK(r.spec->model.vocab_size == v);
    CHECK(r.spec->model.should_pad_vocab);
    CHECK(model::derive(*r.spec).padded_vocab == (v + multiple - 1) / multiple * multiple);
  }
}
