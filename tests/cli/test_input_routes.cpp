// The other ways a user describes a run, through the built binary: a Megatron-LM launch line
// (--from-megatron-args, a file, or stdin with "-") and a Hugging Face config.json (--hf-config),
// for predict, rank and sweep. Good input exits 0; bad input exits 2 naming the argument or key.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "run_peakcast.hpp"

namespace {

namespace fs = std::filesystem;

using peakcast_test::Run;
using peakcast_test::run;

fs::path scratch() {
  const auto dir = fs::temp_directory_path() / ("peakcast-input-routes-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

std::string write(const std::string& name, const std::string& text) {
  const auto p = scratch() / name;
  std::ofstream(p) << text;
  return "'" + p.string() + "'";
}

const std::string kLine =
    "torchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py --num-layers 4 --hidden-size 512 --num-attention-heads 8 "
    "--seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 2 --tensor-model-parallel-size 2 --bf16";
const std::string kGpu = " --set 'cluster.gpu=\"h100-sxm-80gb\"'";

// Qwen/Qwen2.5-7B's public config.json (huggingface.co/Qwen/Qwen2.5-7B).
const std::string kQwen = R"({"architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
  "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 3584, "initializer_range": 0.02, "intermediate_size": 18944,
  "max_position_embeddings": 131072, "max_window_layers": 28, "model_type": "qwen2", "num_attention_heads": 28,
  "num_hidden_layers": 28, "num_key_value_heads": 4, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 131072,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.40.1", "use_cache": true,
  "use_mrope": false, "use_sliding_window": false, "vocab_size": 152064})";
const std::string kRest = R"({"model": {"seq_length": 4096, "tensor_model_parallel_size": 2},
  "train": {"micro_batch_size": 1, "global_batch_size": 32}, "cluster": {"num_gpus": 8, "gpu": "h100-sxm-80gb"}})";

}  // namespace

TEST_CASE("a Megatron-LM launch line: --from-megatron-args, a file, stdin", "[cli][binary][megatron]") {
  const Run a = run("predict --from-megatron-args '" + kLine + "'" + kGpu);
  INFO(a.out);
  CHECK(a.status == 0);
  const std::string file = write("launch.sh", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True \\\n  " + kLine + "\n");
  CHECK(run("predict " + file + kGpu).status == 0);
  CHECK(run("predict -" + kGpu + " < " + file).status == 0);
  CHECK(run("rank --from-megatron-args '" + kLine + "'" + kGpu + " --budget-gb 80").status == 0);
  CHECK(run("sweep --from-megatron-args '" + kLine + "'" + kGpu + " --vary train.micro_batch_size=1,2").status == 0);
}

TEST_CASE("a misspelt Megatron-LM argument is an error naming it, never a prediction", "[cli][binary][megatron]") {
  // Megatron-LM's parser (allow_abbrev=False) refuses an option it does not define.
  std::string line = kLine;
  line.replace(line.find("--tensor-model-parallel-size"), 28, "--tensor-parallel-size");
  const Run r = run("predict --from-megatron-args '" + line + "'" + kGpu);
  INFO(r.out);
  CHECK(r.status == 2);
  CHECK(r.out.find("--tensor-parallel-size") != std::string::npos);
  CHECK(r.out.find("--tensor-model-parallel-size") != std::string::npos);  // did you mean
  // A prefix of a defined option is not that option either.
  CHECK(run("predict --from-megatron-args '" + kLine + " --use-distributed-optim'" + kGpu).status == 2);
  CHECK(run("predict --from-megatron-args '" + kLine + " --data-path $DATA'" + kGpu).status == 2);
  CHECK(run("predict spec.json --from-megatron-args '" + kLine + "'").status == 2);  // one input, not two
}

TEST_CASE("predict/rank/sweep --hf-config: the architecture from Hugging Face, the rest from the spec", "[cli][binary][hf]") {
  const std::string cfg = write("qwen2.5-7b.json", kQwen);
  const std::string spec = write("rest.json", kRest);
  const Run p = run("predict " + spec + " --hf-config " + cfg + " --show-spec");
  INFO(p.out);
  CHECK(p.status == 0);
  CHECK(p.out.find("Hugging Face config") != std::string::npos);
  CHECK(run("rank " + spec + " --hf-config " + cfg).status == 0);
  CHECK(run("sweep " + spec + " --hf-config " + cfg + " --vary model.tensor_model_parallel_size=1,2").status == 0);
  // A spec key that disagrees with the config: exit 2 naming it.
  const Run c = run("predict " + spec + " --hf-config " + cfg + " --set model.hidden_size=4096");
  CHECK(c.status == 2);
  CHECK(c.out.find("model.hidden_size") != std::string::npos);
  // A config key nothing maps: exit 2 naming the file and the key.
  std::string bad = kQwen;
  bad.insert(1, R"("expert_width": 64, )");
  const Run u = run("predict " + spec + " --hf-config " + write("bad.json", bad));
  CHECK(u.status == 2);
  CHECK(u.out.find("expert_width") != std::string::npos);
  CHECK(u.out.find("bad.json") != std::string::npos);
  // model.hf_config in the spec, relative to the spec file.
  CHECK(run("predict " + write("with_key.json", R"({"model": {"hf_config": "qwen2.5-7b.json", "seq_length": 4096},
      "train": {"micro_batch_size": 1}, "cluster": {"num_gpus": 8, "gpu": "h100-sxm-80gb"}})"))
            .status == 0);
}
