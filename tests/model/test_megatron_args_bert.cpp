// examples/bert/pretrain_bert.py launch lines: the script builds a BertModel (its model_provider, :29-60), chooses the
// layer spec by --spec alone (:39-45), defaults its tokenizer to BertWordPieceLowerCase (:185).
#include "test_megatron_args.hpp"

#include "peakcast/model/validate.hpp"

using namespace megatron_test;
using nlohmann::json;

namespace {
const std::string kBert = "torchrun examples/bert/pretrain_bert.py " + kBase + "--vocab-size 30522 ";
}

TEST_CASE("pretrain_bert.py: a BertModel with the TE layer spec unless --spec local", "[megatron][bert]") {
  const json te = spec(kBert + "--attention-backend unfused")["model"];
  CHECK(te["architecture"] == "bert");
  CHECK_FALSE(te.contains("transformer_impl"));  // the run spec's default, transformer_engine
  CHECK_FALSE(te.contains("bert_binary_head"));  // the default, on
  const json local = spec(kBert + "--spec local --attention-backend local")["model"];
  CHECK(local["transformer_impl"] == "local");
  CHECK(spec(kBert + "--bert-no-binary-head")["model"]["bert_binary_head"] == false);
  // --transformer-impl does not choose pretrain_bert.py's spec: a warning, and the TE layers it builds.
  const auto r = import(kBert + "--transformer-impl local");
  show(r.diagnostics);
  REQUIRE_FALSE(peakcast::model::has_errors(r.diagnostics));
  CHECK(find(r.diagnostics, "bert_spec_ignores_transformer_impl", "--transformer-impl", peakcast::model::Severity::warning));
  CHECK_FALSE(json::parse(r.spec_json)["model"].contains("transformer_impl"));
}

TEST_CASE("pretrain_bert.py: what BertModel is not given, and specs it does not know", "[megatron][bert]") {
  // BertModel keeps learned_absolute (pretrain_bert.py:47-58 passes no position type).
  const auto r = import(kBert + "--position-embedding-type rope");
  show(r.diagnostics);
  CHECK(find(r.diagnostics, "bert_position_embedding_not_passed", "--position-embedding-type", peakcast::model::Severity::warning));
  CHECK_FALSE(json::parse(r.spec_json)["model"].contains("position_embedding_type"));
  refused(kBert + "--spec my.module my_spec", "megatron_argument_not_modelled", "--spec");
  refused(kBert + "--hybrid-layer-pattern M*M-", "hybrid_pattern_with_gpt_script", "--hybrid-layer-pattern");
  // The local spec needs --attention-backend local or auto (bert_model.py:209-212), as a run-spec rule.
  const auto p = peakcast::model::parse_megatron_line(kBert + "--spec local --attention-backend unfused",
                                                      {"cluster.gpu=\"h100-sxm-80gb\"", "cluster.num_gpus=8"});
  REQUIRE(p.spec);
  CHECK(find(peakcast::model::validate(*p.spec), "bert_local_spec_attention_backend", "model.attention_backend"));
}

TEST_CASE("pretrain_bert.py: BertWordPieceLowerCase is the tokenizer when none is given", "[megatron][bert]") {
  // Its vocabulary is a file peakcast cannot open: --vocab-size states its length, else the error asks for it.
  const auto r = import("torchrun examples/bert/pretrain_bert.py " + kBase + "--vocab-file vocab.txt");
  const auto* e = find(r.diagnostics, "vocabulary_unknown", "--vocab-size");
  REQUIRE(e != nullptr);
  CHECK(e->message.find("BertWordPieceLowerCase") != std::string::npos);
}

// examples/t5/pretrain_t5.py: a T5Model (:68-137) whose layer specs --transformer-impl chooses (:105-114), both stacks
// of --encoder-num-layers layers (:91-103), the decoder's length from --decoder-seq-length (:211).
namespace {
const std::string kT5 =
    "torchrun examples/t5/pretrain_t5.py --encoder-num-layers 4 --decoder-num-layers 4 --hidden-size 512 "
    "--num-attention-heads 8 --encoder-seq-length 512 --decoder-seq-length 128 --max-position-embeddings 512 "
    "--micro-batch-size 2 --vocab-size 29096 ";
}

TEST_CASE("pretrain_t5.py: a T5Model with the encoder's layer count and both lengths", "[megatron][t5]") {
  const json m = spec(kT5 + "--transformer-impl local")["model"];
  CHECK(m["architecture"] == "t5");
  CHECK(m["num_layers"] == 4);
  CHECK(m["seq_length"] == 512);
  CHECK(m["decoder_seq_length"] == 128);
  CHECK(m["transformer_impl"] == "local");
  // --decoder-num-layers is read by no model code: a warning when it differs from the encoder's count.
  const auto r = import(kT5 + "--decoder-num-layers 6");
  show(r.diagnostics);
  CHECK(find(r.diagnostics, "t5_decoder_num_layers_not_read", "--decoder-num-layers", peakcast::model::Severity::warning));
  // --spec is never read by pretrain_t5.py.
  CHECK(find(import(kT5 + "--spec local").diagnostics, "t5_spec_not_read", "--spec", peakcast::model::Severity::warning));
  // PP > 1: pretrain_t5.py raises (:97-98), a run-spec rule.
  const auto p = peakcast::model::parse_megatron_line(kT5 + "--pipeline-model-parallel-size 2", {"cluster.gpu=\"h100-sxm-80gb\"", "cluster.num_gpus=8"});
  REQUIRE(p.spec);
  CHECK(find(peakcast::model::validate(*p.spec), "t5_pipeline_parallel", "model.pipeline_model_parallel_size"));
}
