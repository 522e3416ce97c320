// What BertModel and T5Model refuse or do not build (model/src/validate_architecture.cpp): one RuleCase per rule
// (tests/model/rule_cases.hpp).
#include "rule_cases.hpp"

using namespace peakcast::model;
using namespace peakcast::model::test;

namespace {

const std::vector<std::string> kBert = {"model.architecture=bert"};
const std::vector<std::string> kT5 = {"model.architecture=t5", "model.decoder_seq_length=64"};

const std::vector<RuleCase>& bert_cases() {
  static const std::vector<RuleCase> k = {
      {"bert_layer_spec", "model.num_moe_experts", Severity::error, plus(kBert, kMoe), kBert},
      {"bert_layer_spec", "model.multi_latent_attention", Severity::error, plus(kBert, {"model.multi_latent_attention=true"}), kBert},
      {"bert_layer_spec", "model.mtp_num_layers", Severity::error, plus(kBert, {"model.mtp_num_layers=1"}), kBert},
      {"bert_layer_spec", "model.softmax_type", Severity::error, plus(kBert, {"model.softmax_type=learnable"}), kBert},
      // bert_model.py:205-213: Megatron's DotProductAttention under the local spec takes local or auto only.
      {"bert_local_spec_attention_backend", "model.attention_backend", Severity::error,
       plus(kBert, {"model.transformer_impl=local", "model.attention_backend=unfused"}),
       plus(kBert, {"model.transformer_impl=local", "model.attention_backend=local"})},
      {"bert_position_embedding_type", "model.position_embedding_type", Severity::error,
       plus(kBert, {"model.position_embedding_type=none"}), plus(kBert, {"model.position_embedding_type=rope"})},
      {"bert_lm_head_layer_norm", "model.normalization", Severity::warning, plus(kBert, {"model.normalization=RMSNorm"}), kBert},
      {"bert_context_parallel_not_modelled", "model.context_parallel_size", Severity::error,
       plus(kBert, {"model.context_parallel_size=2", "model.attention_backend=fused"}), plus(kBert, {"model.attention_backend=fused"})},
      {"bert_binary_head_without_bert", "model.bert_binary_head", Severity::error, {"model.bert_binary_head=false"}, plus(kBert, {"model.bert_binary_head=false"})},
      {"architecture_without_bridge", "peft", Severity::error, plus(kBert, {"peft.dim=8"}), {"peft.dim=8"}},
  };
  return k;
}

const std::vector<RuleCase>& t5_cases() {
  static const std::vector<RuleCase> k = {
      {"t5_layer_spec", "model.num_moe_experts", Severity::error, plus(kT5, kMoe), kT5},
      {"t5_pipeline_parallel", "model.pipeline_model_parallel_size", Severity::error,
       plus(kT5, {"model.pipeline_model_parallel_size=2", "model.pipeline_dtype=bf16"}), kT5},
      {"t5_decoder_seq_length_required", "model.decoder_seq_length", Severity::error, {"model.architecture=t5"}, kT5},
      // arguments.py:1305-1306: max_position_embeddings (the base's 128, the seq_length) >= decoder_seq_length.
      {"decoder_seq_length_range", "model.decoder_seq_length", Severity::error, {"model.architecture=t5", "model.decoder_seq_length=256"}, {"model.architecture=t5", "model.decoder_seq_length=128"}},
      {"t5_cross_attention_gqa", "model.num_query_groups", Severity::error, plus(kT5, {"model.num_query_groups=4"}),
       plus(kT5, {"model.num_query_groups=8"})},
      {"t5_position_embedding_not_modelled", "model.position_embedding_type", Severity::error, plus(kT5, {"model.position_embedding_type=rope"}), kT5},
      {"t5_context_parallel_not_modelled", "model.context_parallel_size", Severity::error,
       plus(kT5, {"model.context_parallel_size=2", "model.attention_backend=fused"}), plus(kT5, {"model.attention_backend=fused"})},
      {"t5_recompute_not_modelled", "model.recompute_granularity", Severity::error, plus(kT5, {"model.recompute_granularity=selective"}), kT5},
      {"t5_cuda_graphs_not_modelled", "model.cuda_graph_impl", Severity::error, plus(kT5, {"model.cuda_graph_impl=local"}), kT5},
      {"decoder_seq_length_without_t5", "model.decoder_seq_length", Severity::error, {"model.decoder_seq_length=64"}, kT5},
  };
  return k;
}

}  // namespace

TEST_CASE("BERT: what BertModel refuses or does not build", "[validate][bert]") { check_rule_cases(bert_cases()); }
TEST_CASE("T5: what T5Model and pretrain_t5.py refuse, and what is not modelled", "[validate][t5]") { check_rule_cases(t5_cases()); }
