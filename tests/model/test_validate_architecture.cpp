// What BertModel refuses or does not build (model/src/validate_architecture.cpp): one RuleCase per rule
// (tests/model/rule_cases.hpp).
#include "rule_cases.hpp"

using namespace peakcast::model;
using namespace peakcast::model::test;

namespace {

const std::vector<std::string> kBert = {"model.architecture=bert"};

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
      {"bert_lm_head_layer_norm", "model.normalization", Severity::error, plus(kBert, {"model.normalization=RMSNorm"}), kBert},
      {"bert_context_parallel_not_modelled", "model.context_parallel_size", Severity::error,
       plus(kBert, {"model.context_parallel_size=2", "model.attention_backend=fused"}), plus(kBert, {"model.attention_backend=fused"})},
      {"bert_binary_head_without_bert", "model.bert_binary_head", Severity::error, {"model.bert_binary_head=false"}, plus(kBert, {"model.bert_binary_head=false"})},
  };
  return k;
}

}  // namespace

TEST_CASE("BERT: what BertModel refuses or does not build", "[validate][bert]") { check_rule_cases(bert_cases()); }
