// The Megatron-LM launch-line front end: what the pinned parser refuses (each an error whose path is
// the argument), the line forms it accepts (environment, torchrun / python launchers, continuations,
// quotes), and the vocabulary rules of configs/tokenizers.json. Expectations come from the pinned
// Megatron-LM's parser behaviour (docs/megatron-args-mapping.md) and the tokenizer table's sizes.
#include "test_megatron_args.hpp"

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/validate.hpp"

using namespace megatron_test;
using nlohmann::json;
using peakcast::model::Severity;

TEST_CASE("Megatron-LM line: an undefined option is an error with the closest defined one") {
  // --tensor-parallel-size is not defined (the option is --tensor-model-parallel-size); Megatron-LM's
  // parse_args exits with "unrecognized arguments", so a silent TP 1 would be a wrong prediction.
  const auto* d = refused(kBase + "--tensor-parallel-size 2", "unknown_argument", "--tensor-parallel-size");
  CHECK(d->message.find("did you mean --tensor-model-parallel-size?") != std::string::npos);
  CHECK(d->message.find("unrecognized arguments: --tensor-parallel-size 2") != std::string::npos);
  // Underscores are not dashes.
  const auto* u = refused(kBase + "--tensor_model_parallel_size 2", "unknown_argument", "--tensor_model_parallel_size");
  CHECK(u->message.find("did you mean --tensor-model-parallel-size?") != std::string::npos);
  // allow_abbrev=False: a unique prefix is not the option.
  const auto* p = refused(kBase + "--tensor-model-parallel 2", "unknown_argument", "--tensor-model-parallel");
  CHECK(p->message.find("no abbreviations") != std::string::npos);
  // Fields excluded from the parser are not options either (arguments.py:2234: cpu_offloading).
  refused(kBase + "--cpu-offloading", "unknown_argument", "--cpu-offloading");
  // A stray value with no option.
  refused("stray " + kBase, "unknown_launcher", "stray");
}

TEST_CASE("Megatron-LM line: flags take no value, values are typed, choices are checked") {
  refused(kBase + "--bf16 true", "flag_given_value", "--bf16");
  refused(kBase + "--bf16=true", "flag_given_value", "--bf16");
  refused(kBase + "--num-layers 4 5", "unexpected_value", "--num-layers");
  refused(kBase + "--position-embedding-type sinusoidal", "invalid_choice", "--position-embedding-type");
  refused(kBase + "--hidden-dropout abc", "invalid_value", "--hidden-dropout");
  refused(kBase + "--tensor-model-parallel-size two", "invalid_value", "--tensor-model-parallel-size");
  refused(kBase + "--tensor-model-parallel-size 2.0", "invalid_value", "--tensor-model-parallel-size");
  refused(kBase + "--rampup-batch-size 1 2", "missing_value", "--rampup-batch-size");  // nargs=3
  refused(kBase + "--hierarchical-context-parallel-sizes", "missing_value", "--hierarchical-context-parallel-sizes");
  refused(kBase + "--moe-layer-freq '[1, 0]'", "invalid_value", "--moe-layer-freq");  // _eval_pattern allows no spaces
  // Python's int() and float() spellings are accepted: underscores, a sign, exponents, a leading dot.
  const json m = model_of("--ffn-hidden-size 2_048 --hidden-dropout .0 --attention-dropout 1e-1");
  CHECK(m["ffn_hidden_size"] == 2048);
  CHECK(m["hidden_dropout"] == 0.0);
  CHECK(m["attention_dropout"] == 0.1);
  // nargs '+' takes the following values; --opt=value is one value.
  CHECK(model_of("--context-parallel-size 4 --hierarchical-context-parallel-sizes 2 2")["hierarchical_context_parallel_sizes"] ==
        json::array({2, 2}));
  CHECK(model_of("--recompute-granularity=selective --recompute-modules core_attn mlp")["recompute_modules"] ==
        json::array({"core_attn", "mlp"}));
}

TEST_CASE("Megatron-LM line: required values, repeated options, deprecated options") {
  // validate_args asserts max_position_embeddings (arguments.py:1262-1265); no fallback to --seq-length.
  refused("--num-layers 4 --hidden-size 512 --num-attention-heads 8 --seq-length 1024 --micro-batch-size 2",
          "required_argument", "--max-position-embeddings");
  refused("--num-layers 4 --hidden-size 512 --num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024",
          "required_argument", "--micro-batch-size");
  // The last occurrence wins (argparse), with a warning.
  const auto r = import(kBase + "--tensor-model-parallel-size 2 --tensor-model-parallel-size 4");
  CHECK(json::parse(r.spec_json)["model"]["tensor_model_parallel_size"] == 4);
  CHECK(find(r.diagnostics, "repeated_argument", "--tensor-model-parallel-size", Severity::warning) != nullptr);
  // Deprecated options: refused where validate_args asserts, warned where it still honours them.
  refused(kBase + "--batch-size 4", "deprecated_argument_refused", "--batch-size");
  refused(kBase + "--checkpoint-activations", "deprecated_argument_refused", "--checkpoint-activations");
  const auto mcore = import(kBase + "--use-mcore-models");
  CHECK(find(mcore.diagnostics, "deprecated_argument", "--use-mcore-models", Severity::warning) != nullptr);
  CHECK_FALSE(peakcast::model::has_errors(mcore.diagnostics));
}

TEST_CASE("Megatron-LM line: shell variables are errors naming them; shell syntax is read as a shell reads it") {
  const auto* v = refused(kBase + "--data-path $DATA_PATH/text", "shell_variable", "--data-path");
  CHECK(v->message.find("$DATA_PATH") != std::string::npos);
  const auto* b = refused(kBase + "--save=\"${CKPT}/run\"", "shell_variable", "--save");
  CHECK(b->message.find("${CKPT}") != std::string::npos);
  refused(kBase + "--tensorboard-dir $(pwd)", "shell_command_substitution", "");
  refused(kBase + "--log-interval 1 | tee log.txt", "shell_operator", "");
  refused(kBase + "--lr '1e-4", "shell_syntax", "");
  // '$' that starts no expansion is a literal; single quotes keep everything literal.
  CHECK(spec(kBase + "--wandb-exp-name 'cost $5'")["model"].is_object());
}

TEST_CASE("Megatron-LM line: the whole torchrun line, environment and continuations") {
  const std::string line =
      "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True CUDA_DEVICE_MAX_CONNECTIONS=1 \\\n"
      "torchrun --nnodes 2 --nproc-per-node=4 --master-port 29500 --rdzv-backend c10d pretrain_gpt.py \\\n"
      "    --num-layers 4 --hidden-size 512 --num-attention-heads 8 \\\n"
      "    --seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 2 \\\n"
      "    --tensor-model-parallel-size 2 --sequence-parallel   # TP2 with SP\n";
  peakcast::model::MegatronLineOptions o;
  o.gpu = "h100-sxm-80gb";
  const auto r = peakcast::model::import_megatron_line(line, o);
  show(r.diagnostics);
  REQUIRE_FALSE(peakcast::model::has_errors(r.diagnostics));
  const json j = json::parse(r.spec_json);
  CHECK(j["cluster"]["num_gpus"] == 2 * 4);  // torchrun --nnodes x --nproc-per-node
  CHECK(j["cluster"]["expandable_segments"] == true);
  CHECK(j["model"]["tensor_model_parallel_size"] == 2);
  CHECK(j["model"]["sequence_parallel"] == true);
  CHECK(r.script == "pretrain_gpt.py");
  bool env_listed = false, launcher_listed = false;
  for (const auto& i : r.ignored) {
    env_listed = env_listed || i.rfind("CUDA_DEVICE_MAX_CONNECTIONS=1", 0) == 0;
    launcher_listed = launcher_listed || i.find("--master-port 29500") != std::string::npos;
  }
  CHECK(env_listed);
  CHECK(launcher_listed);
  // The same run as python -m torch.distributed.run, then as parse_megatron_line gives it.
  const auto p = peakcast::model::parse_megatron_line(
      "python3 -u -m torch.distributed.run --nproc_per_node 8 pretrain_gpt.py " + kBase, {"cluster.gpu=\"h100-sxm-80gb\""});
  show(p.diagnostics);
  REQUIRE(p.spec);
  CHECK(p.spec->cluster.num_gpus == 8);
  CHECK(p.input_kind == "Megatron-LM launch line");
  CHECK(p.origins.at("model.hidden_size").origin == "Megatron-LM argument");
  CHECK(p.origins.at("model.hidden_size").source == "--hidden-size");
  // export lines before the command reach it; a WORLD_SIZE assignment gives python's world size.
  const json e = spec("export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False\nWORLD_SIZE=4 python pretrain_gpt.py " + kBase);
  CHECK(e["cluster"]["expandable_segments"] == false);
  // Without a world size or a GPU the parsed spec is refused, naming the key.
  const auto none = peakcast::model::parse_megatron_line(kBase);
  CHECK(find(none.diagnostics, "megatron_line_world_size_unknown", "cluster.num_gpus") != nullptr);
  CHECK(find(none.diagnostics, "megatron_line_gpu_unknown", "cluster.gpu") != nullptr);
}

TEST_CASE("Megatron-LM line: the script selects the model; other scripts are refused") {
  const json h = spec("python pretrain_mamba.py " + kBase + "--hybrid-layer-pattern M*M-");
  CHECK(h["model"]["hybrid_layer_pattern"] == "M*M-");
  CHECK(h["model"]["num_layers"] == 4);
  refused("torchrun pretrain_hybrid.py " + kBase, "hybrid_pattern_required", "--hybrid-layer-pattern");
  refused("torchrun pretrain_gpt.py " + kBase + "--hybrid-layer-pattern M*M-", "hybrid_pattern_with_gpt_script",
          "--hybrid-layer-pattern");
  refused("torchrun pretrain_vlm.py " + kBase, "unsupported_training_script", "pretrain_vlm.py");
  refused("deepspeed pretrain_gpt.py " + kBase, "unknown_launcher", "deepspeed");
  refused("python -m megatron.training pretrain_gpt.py " + kBase, "launcher_module", "-m");
}

TEST_CASE("Megatron-LM line: what no run-spec key takes is listed as ignored, what changes the run is refused") {
  const auto r = import(kBase + "--log-interval 10 --tensorboard-dir /tmp/tb --seed 7");
  bool log = false, tb = false;
  for (const auto& i : r.ignored) {
    log = log || i.rfind("--log-interval 10 (", 0) == 0;
    tb = tb || i.rfind("--tensorboard-dir /tmp/tb (", 0) == 0;
  }
  CHECK(log);
  CHECK(tb);
  refused(kBase + "--use-torch-fsdp2", "megatron_argument_not_modelled", "--use-torch-fsdp2");
  refused(kBase + "--yaml-cfg run.yaml", "megatron_argument_not_modelled", "--yaml-cfg");
  refused(kBase + "--freeze-all-layers", "megatron_argument_not_modelled", "--freeze-all-layers");
  refused(kBase + "--spec local", "megatron_argument_not_modelled", "--spec");
  // The hybrid default stack spec is what pretrain_hybrid.py builds anyway.
  CHECK(spec("torchrun pretrain_hybrid.py " + kBase +
             "--hybrid-layer-pattern M*M- --spec megatron.core.models.hybrid.hybrid_layer_specs hybrid_stack_spec")["model"]
            .is_object());
}

TEST_CASE("Megatron-LM line: the vocabulary comes from the tokenizer table, never from a silent default") {
  // HuggingFaceTokenizer: len(tokenizer) of a known name (configs/tokenizers.json: Llama 3 128000 BPE +
  // 256 special tokens), whatever --vocab-size says (build_tokenizer.py:67-76 does not read it).
  const json llama = model_of("--tokenizer-type HuggingFaceTokenizer --tokenizer-model meta-llama/Meta-Llama-3-8B");
  CHECK(llama["vocab_size"] == 128000 + 256);
  CHECK(llama["should_pad_vocab"] == true);
  const auto ignored = import(kBase + "--tokenizer-type HuggingFaceTokenizer --tokenizer-model Qwen/Qwen2.5-7B --vocab-size 152064");
  CHECK(json::parse(ignored.spec_json)["model"]["vocab_size"] == 151665);  // 151,643 BPE + 22 control tokens
  CHECK(find(ignored.diagnostics, "vocab_size_not_read", "--vocab-size", Severity::warning) != nullptr);
  // An unknown tokenizer needs --vocab-size, which is then taken as its length, with a warning.
  refused(kBase + "--tokenizer-type HuggingFaceTokenizer --tokenizer-model /ckpt/tokenizer", "vocabulary_unknown", "--vocab-size");
  const auto stated = import(kBase + "--tokenizer-type HuggingFaceTokenizer --tokenizer-model /ckpt/tokenizer --vocab-size 32000");
  CHECK(json::parse(stated.spec_json)["model"]["vocab_size"] == 32000);
  CHECK(find(stated.diagnostics, "vocab_size_taken_as_tokenizer_length", "--vocab-size", Severity::warning) != nullptr);
  // GPT2BPETokenizer (pretrain_gpt.py's default) without files downloads GPT-2's: 50257; with files
  // named as GPT-2's published ones, the same; with other files the size is required.
  CHECK(model_of("")["vocab_size"] == 50257);
  CHECK(model_of("--vocab-file /data/gpt2-vocab.json --merge-file /data/gpt2-merges.txt")["vocab_size"] == 50257);
  refused(kBase + "--vocab-file /data/bpe/vocab.json --merge-file /data/bpe/merges.txt", "vocabulary_unknown", "--vocab-size");
  CHECK(model_of("--vocab-file /data/bpe/vocab.json --merge-file /data/bpe/merges.txt --vocab-size 50257")["vocab_size"] == 50257);
  // NullTokenizer is --vocab-size as is; TikTokenizer defaults to 131072.
  CHECK(model_of("--tokenizer-type NullTokenizer --vocab-size 131073")["vocab_size"] == 131073);
  refused(kBase + "--tokenizer-type NullTokenizer", "required_argument", "--vocab-size");
  CHECK(model_of("--tokenizer-type TikTokenizer --tokenizer-model /t.json")["vocab_size"] == 131072);
  // --padded-vocab-size is the model's vocabulary, not padded again (argument_utils.py:473-475).
  const json padded = model_of("--padded-vocab-size 50304");
  CHECK(padded["vocab_size"] == 50304);
  CHECK(resolved(kBase + "--padded-vocab-size 50304", "model.should_pad_vocab") == false);
}

TEST_CASE("Megatron-LM line: the imported spec parses and validates as a run spec") {
  const auto p = peakcast::model::parse_megatron_line(
      "torchrun --nproc-per-node 8 pretrain_gpt.py " + kBase +
          "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --bf16 --use-distributed-optimizer --swiglu",
      {"cluster.gpu=\"h100-sxm-80gb\""});
  show(p.diagnostics);
  REQUIRE(p.spec);
  CHECK_FALSE(peakcast::model::has_errors(peakcast::model::validate(*p.spec)));
  const auto d = peakcast::model::derive(*p.spec);
  CHECK(d.dp == 8 / (2 * 2));
  // No --global-batch-size: Megatron-LM's MBS x DP (arguments.py:684-685), one micro-batch per step.
  CHECK(d.num_microbatches == 1);
  // Through parse_spec_input, as predict reads a file or stdin.
  const auto q = peakcast::model::parse_spec_input("-", "torchrun --nproc-per-node 8 pretrain_gpt.py " + kBase,
                                                   {"cluster.gpu=\"h100-sxm-80gb\""});
  REQUIRE(q.spec);
  CHECK(q.input_kind == "Megatron-LM launch line");
}
