// The config builders over the validated arguments -> the run-spec document. Megatron-LM builds
// TransformerConfig (MLATransformerConfig under --multi-latent-attention) by copying every argument
// whose name is a field and then overriding some (core_transformer_config_from_args,
// argument_utils.py:277-381), the GPT / hybrid model config from a fixed list (:433-531), and the
// optimizer and DDP configs by name plus overrides (training.py:1983-2039). configs/schema/
// megatron_args.json's config_mapping lists every field and where it comes from; the run spec's keys
// are those field names. A key is written when the line gave its argument, when validate_args or a
// builder derived it, or when its value differs from the dataclass default the run spec would take.
#include "megatron_detail.hpp"
#include "spec_schema.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

const char* kUtils = "mcore:megatron/training/argument_utils.py:";
const char* kTraining = "mcore:megatron/training/training.py:";

// Fields whose Megatron-LM value is only a restatement of the dataclass's own derivation (or has no
// memory meaning): written only when the line sets them.
bool only_when_given(const std::string& key) {
  return key == "inference_sampling_seed" || key == "config_logger_dir" || key == "inference_cuda_graph_scope" ||
         key == "tensor_parallel_num_weight_shards" || key == "expert_tensor_parallel_num_weight_shards";
}

class Emitter {
 public:
  Emitter(const Namespace& ns, ImportContext& ctx, BuiltSpec& out) : ns_(ns), ctx_(ctx), out_(out) {}

  // Config field `key` of `section` takes `value`, read from argument `dest` (by name, or through the
  // builder line `builder`).
  void put(const std::string& section, const std::string& key, json value, const std::string& dest,
           const std::string& builder = "") {
    out_.consumed.insert(dest);
    const FieldSchema* f = find_field(section, key);
    if (!f) return;
    const bool given = ns_.has(dest), derived = ctx_.derived.count(dest) > 0;
    if (only_when_given(key) && !given) return;
    // A store_true argument whose argparse default is None (--use-cpu-initialization, arguments.py:2288)
    // reaches a bool field as None, which every reader takes as False (`if config.use_cpu_initialization:`).
    if (value.is_null() && !f->nullable && f->types.size() == 1 && f->types[0] == "bool") value = false;
    // [] and "full" both capture whole layers (cuda_graph_config.py:36-42).
    const bool same_graphs = key == "cuda_graph_modules" && value == json::array() && f->default_value && *f->default_value == "full";
    const bool differs = (!f->default_value || *f->default_value != value) && !same_graphs;
    if (!given && !derived && !differs) return;
    // Megatron-LM's False where the dataclass says None (--skip-train, training_config.py:141 vs Bridge's
    // TrainingConfig): both read as "no"; the run spec's default is kept.
    if (!given && !derived && value == false && f->default_value && f->default_value->is_null()) return;
    if (!f->default_value && !given && !derived && builder.empty()) return;  // an expression default restated
    if (value.is_number_integer() && f->types.size() == 1 && f->types[0] == "float") value = value.get<double>();
    Diagnostics scratch;
    if (!check_value(*f, value, section + "." + key, scratch)) {
      ctx_.error(option_of(ns_, dest), "value_not_representable",
                 option_of(ns_, dest) + ": the run spec's " + section + "." + key + " cannot hold " + value.dump() +
                     (scratch.empty() ? "" : " (" + scratch[0].message + ")"));
      return;
    }
    KeyOrigin o;
    if (given) o = {"Megatron-LM argument", option_of(ns_, dest), value.dump()};
    else if (derived) o = {"Megatron-LM validate_args", ctx_.derived.at(dest), value.dump()};
    else if (!builder.empty()) o = {"Megatron-LM config builder", builder, value.dump()};
    else o = {"Megatron-LM default", option_of(ns_, dest) + " default (" + arg_source(dest) + ")", value.dump()};
    if (!builder.empty() && given) o.source += " via " + builder;
    out_.origins[section + "." + key] = o;
    out_.doc[section][key] = std::move(value);
  }

  void copy(const std::string& section, const std::string& field) {
    if (ns_.v.count(field)) put(section, field, ns_.at(field), field);
  }

  const Namespace& ns() const { return ns_; }
  ImportContext& ctx() { return ctx_; }
  void consume(const std::string& dest) { out_.consumed.insert(dest); }
  // Forget what an earlier step wrote for a key that a later builder decides alone.
  void erase(const std::string& section, const std::string& key) {
    if (out_.doc.contains(section)) out_.doc[section].erase(key);
    out_.origins.erase(section + "." + key);
  }

 private:
  const Namespace& ns_;
  ImportContext& ctx_;
  BuiltSpec& out_;

  std::string arg_source(const std::string& dest) const {
    const ArgDef* d = find_arg_by_dest(dest);
    return d ? d->j->value("source", "") : "validate_args";
  }
};

std::vector<std::string> fields_of(const std::string& cls) {
  std::vector<std::string> out;
  const json& m = megatron_args_document()["config_mapping"];
  if (m.contains(cls))
    for (const auto& f : m[cls]["fields"]) out.push_back(f["field"].get<std::string>());
  return out;
}

// core_transformer_config_from_args (argument_utils.py:277-381).
void transformer_config(Emitter& e) {
  const Namespace& ns = e.ns();
  const bool mla = ns.flag("multi_latent_attention");
  std::vector<std::string> fields = fields_of("TransformerConfig");
  if (mla)
    for (const auto& f : fields_of("MLATransformerConfig")) fields.push_back(f);
  const std::set<std::string> overridden = {
      "persist_layer_norm", "deallocate_pipeline_outputs", "pipeline_dtype", "batch_p2p_comm", "num_moe_experts",
      "num_layers_in_first_pipeline_stage", "num_layers_in_last_pipeline_stage", "fp8_param", "fp4_param",
      "activation_func", "gated_linear_unit", "bias_activation_fusion", "init_method", "num_query_groups",
      "cp_comm_type", "is_hybrid_model", "experimental_attention_variant", "inference_sampling_seed", "rope_type"};
  for (const auto& f : fields)
    if (!overridden.count(f)) e.copy("model", f);
  const auto at = [&](int line) { return kUtils + std::to_string(line); };
  e.put("model", "persist_layer_norm", !ns.flag("no_persist_layer_norm"), "no_persist_layer_norm", at(304));
  e.put("model", "deallocate_pipeline_outputs", true, "deallocate_pipeline_outputs", at(305));
  e.put("model", "pipeline_dtype", ns.at("params_dtype"), "params_dtype", at(306));
  e.put("model", "batch_p2p_comm", !ns.flag("overlap_p2p_comm"), "overlap_p2p_comm", at(307));
  e.put("model", "num_moe_experts", ns.at("num_experts"), "num_experts", at(308));
  e.put("model", "num_layers_in_first_pipeline_stage", ns.at("decoder_first_pipeline_num_layers"), "decoder_first_pipeline_num_layers", at(310));
  e.put("model", "num_layers_in_last_pipeline_stage", ns.at("decoder_last_pipeline_num_layers"), "decoder_last_pipeline_num_layers", at(311));
  e.put("model", "fp8_param", ns.flag("fp8_param_gather"), "fp8_param_gather", at(312));
  e.put("model", "fp4_param", ns.flag("fp4_param_gather"), "fp4_param_gather", at(313));
  if (ns.flag("swiglu")) {
    e.put("model", "activation_func", "silu", "swiglu", at(315));
    e.put("model", "gated_linear_unit", true, "swiglu", at(316));
    e.put("model", "bias_activation_fusion", ns.flag("bias_swiglu_fusion"), "bias_swiglu_fusion", at(317));
  } else {
    e.put("model", "bias_activation_fusion", ns.flag("bias_gelu_fusion"), "bias_gelu_fusion", at(319));
  }
  e.consume("bias_swiglu_fusion");
  e.consume("bias_gelu_fusion");
  if (ns.flag("squared_relu")) {
    if (ns.flag("swiglu")) e.ctx().error("--squared-relu", "squared_relu_with_swiglu", "--squared-relu and --swiglu exclude each other (" + at(321) + ")");
    e.put("model", "activation_func", "squared_relu", "squared_relu", at(322));
  } else if (ns.flag("quick_geglu")) {
    if (ns.flag("swiglu")) e.ctx().error("--quick-geglu", "quick_geglu_with_swiglu", "--quick-geglu and --swiglu exclude each other (" + at(324) + ")");
    e.put("model", "gated_linear_unit", true, "quick_geglu", at(325));
    e.put("model", "activation_func", "quick_gelu", "quick_geglu", at(326));
  }
  e.consume("squared_relu");
  e.consume("quick_geglu");
  if (ns.flag("init_method_xavier_uniform")) e.put("model", "init_method", "xavier_uniform_", "init_method_xavier_uniform", at(328));
  e.put("model", "num_query_groups", ns.flag("group_query_attention") ? ns.at("num_query_groups") : json(), "group_query_attention",
        at(ns.flag("group_query_attention") ? 331 : 333));
  e.consume("num_query_groups");
  if (!ns.none("rope_type")) {
    if (!mla && ns.str("rope_type") != "rope")
      e.ctx().error("--rope-type", "rope_type_needs_mla", "Common attention only support rope_type=\"rope\", but got " + ns.str("rope_type") + " (" + at(339) + ")");
    e.put("model", "rope_type", ns.at("rope_type"), "rope_type");
  }
  e.consume("rope_type");
  const json& cp = ns.at("cp_comm_type");
  e.put("model", "cp_comm_type", cp.is_array() && cp.size() == 1 ? cp[0] : cp, "cp_comm_type", at(344));
  if (!ns.none("hybrid_layer_pattern")) {
    e.put("model", "is_hybrid_model", true, "hybrid_layer_pattern", at(346));
    if (ns.str("hybrid_layer_pattern").find('D') != std::string::npos)
      e.put("model", "experimental_attention_variant", "dsa", "hybrid_layer_pattern", at(349));
  }
  e.put("model", "inference_sampling_seed", ns.at("seed"), "seed", at(351));
}

// _apply_yarn_config_from_args (argument_utils.py:384-418): non-MLA YaRN reads yarn_* attributes.
void yarn(Emitter& e) {
  const Namespace& ns = e.ns();
  if (ns.str("position_embedding_type") != "yarn" || ns.flag("multi_latent_attention")) return;
  const struct {
    const char* key;
    const char* dest;
    json fallback;
  } map[] = {
      {"yarn_rotary_scaling_factor", "rotary_scaling_factor", 1.0},
      {"yarn_original_max_position_embeddings", "yarn_original_max_position_embeddings", 4096},
      {"yarn_beta_fast", "yarn_beta_fast", 32.0},
      {"yarn_beta_slow", "yarn_beta_slow", 1.0},
      {"yarn_mscale", "mscale", 1.0},
      {"yarn_mscale_all_dim", "mscale_all_dim", 0.0},
      {"yarn_correction_range_round_to_int", "yarn_correction_range_round_to_int", true}};
  for (const auto& m : map)
    e.put("model", m.key, ns.none(m.dest) ? m.fallback : ns.at(m.dest), m.dest, std::string(kUtils) + "411-418");
}

// gpt_config_from_args / hybrid_config_from_args (argument_utils.py:433-531). The model config's
// seq_length is --max-position-embeddings (:467, :517): the length the position tables are built
// for, which the run spec calls max_position_embeddings; its seq_length is the batch's --seq-length.
void model_config(Emitter& e, const Vocabulary& vocab) {
  const Namespace& ns = e.ns();
  const bool hybrid = e.ctx().hybrid;
  const auto at = [&](int gpt, int hyb) { return kUtils + std::to_string(hybrid ? hyb : gpt); };
  e.put("model", "fp16_lm_cross_entropy", ns.flag("fp16_lm_cross_entropy"), "fp16_lm_cross_entropy", at(459, 509));
  e.put("model", "position_embedding_type", ns.at("position_embedding_type"), "position_embedding_type", at(460, 511));
  e.put("model", "rotary_percent", ns.at("rotary_percent"), "rotary_percent", at(461, 512));
  e.put("model", "rotary_base", ns.at("rotary_base"), "rotary_base", at(462, 513));
  e.put("model", "make_vocab_size_divisible_by", ns.at("make_vocab_size_divisible_by"), "make_vocab_size_divisible_by", at(463, 514));
  if (!hybrid) e.put("model", "rope_scaling", ns.flag("use_rope_scaling"), "use_rope_scaling", at(464, 464));
  e.put("model", "seq_len_interpolation_factor", ns.at("rotary_seq_len_interpolation_factor"), "rotary_seq_len_interpolation_factor", at(466, 516));
  e.put("model", "max_position_embeddings", ns.at("max_position_embeddings"), "max_position_embeddings", at(467, 517));
  e.put("model", "share_embeddings_and_output_weights", !ns.flag("untie_embeddings_and_output_weights"), "untie_embeddings_and_output_weights",
        at(468, 518));
  if (hybrid) e.put("model", "hybrid_layer_pattern", ns.at("hybrid_layer_pattern"), "hybrid_layer_pattern", at(510, 510));
  for (const char* d : {"hybrid_override_pattern", "mtp_hybrid_override_pattern", "use_rotary_position_embeddings", "add_position_embedding"})
    e.consume(d);
  // The batch's sequence length (the data's --seq-length, validated <= max_position_embeddings).
  e.put("model", "seq_length", ns.at("seq_length"), "seq_length");
  e.consume("encoder_seq_length");
  e.consume("encoder_num_layers");
  if (vocab.size) {
    e.put("model", "vocab_size", *vocab.size, ns.none("padded_vocab_size") ? "vocab_size" : "padded_vocab_size", at(474, 524));
    e.put("model", "should_pad_vocab", vocab.pad, "pad_vocab_size", at(vocab.pad ? 479 : 475, vocab.pad ? 529 : 525));
  }
  for (const char* d : {"vocab_size", "padded_vocab_size", "pad_vocab_size", "tokenizer_type", "tokenizer_model", "vocab_file",
                        "merge_file", "special_tokens", "tiktoken_pattern", "tiktoken_num_special_tokens"})
    e.consume(d);
}

// The vocabulary keys from the tokenizer (configs/tokenizers.json, build_tokenizer.py:124-143), as `builder` passes them.
void vocabulary_keys(Emitter& e, const Vocabulary& vocab, const std::string& builder) {
  const Namespace& ns = e.ns();
  if (vocab.size) {
    e.put("model", "vocab_size", *vocab.size, ns.none("padded_vocab_size") ? "vocab_size" : "padded_vocab_size", builder);
    e.put("model", "should_pad_vocab", vocab.pad, "pad_vocab_size", builder);
  }
  for (const char* d : {"vocab_size", "padded_vocab_size", "pad_vocab_size", "tokenizer_type", "tokenizer_model", "vocab_file",
                        "merge_file", "special_tokens", "tiktoken_pattern", "tiktoken_num_special_tokens"})
    e.consume(d);
}

// examples/bert/pretrain_bert.py's model_provider (:29-60): the config of core_transformer_config_from_args, and
// BertModel's arguments. The layer spec is chosen by --spec alone (:39-45), so transformer_impl here says which
// spec's modules run; BertModel is given no position type, rotary settings or fp16_lm_cross_entropy, and takes its
// defaults (learned_absolute; bert_model.py:61-82).
void bert_model_config(Emitter& e, const Vocabulary& vocab) {
  const Namespace& ns = e.ns();
  const auto at = [](const std::string& lines) { return "mcore:examples/bert/pretrain_bert.py:" + lines; };
  e.put("model", "architecture", "bert", "", at("47-58 (BertModel)"));
  e.put("model", "bert_binary_head", ns.flag("bert_binary_head"), "bert_binary_head", at("37, :53"));
  const json& spec = ns.at("spec");
  const bool local = spec.is_array() && spec.size() == 1 && spec[0] == "local";
  if (!local && ns.str("transformer_impl") == "local")
    e.ctx().warning("--transformer-impl", "bert_spec_ignores_transformer_impl",
                    "pretrain_bert.py builds bert_layer_with_transformer_engine_spec unless --spec local is given, whatever "
                    "--transformer-impl says (mcore:examples/bert/pretrain_bert.py:39-45)");
  e.erase("model", "transformer_impl");
  e.put("model", "transformer_impl", local ? "local" : "transformer_engine", "spec", at("39-45 (--spec chooses the layer spec)"));
  if (ns.has("position_embedding_type") && ns.str("position_embedding_type") != "learned_absolute")
    e.ctx().warning(option_of(ns, "position_embedding_type"), "bert_position_embedding_not_passed",
                    "pretrain_bert.py does not pass --position-embedding-type to BertModel (mcore:examples/bert/pretrain_bert.py:47-58), "
                    "which keeps its learned_absolute default (mcore:megatron/core/models/bert/bert_model.py:73)");
  e.put("model", "make_vocab_size_divisible_by", ns.at("make_vocab_size_divisible_by"), "make_vocab_size_divisible_by");
  e.put("model", "max_position_embeddings", ns.at("max_position_embeddings"), "max_position_embeddings", at("51"));
  e.put("model", "share_embeddings_and_output_weights", !ns.flag("untie_embeddings_and_output_weights"), "untie_embeddings_and_output_weights",
        at("54"));
  e.put("model", "seq_length", ns.at("seq_length"), "seq_length");
  e.consume("encoder_seq_length");
  e.consume("encoder_num_layers");
  vocabulary_keys(e, vocab, at("50 (vocab_size=args.padded_vocab_size)"));
}

// examples/t5/pretrain_t5.py's model_provider (:68-137): T5Model gets the position type, rotary settings, the maximum
// length, tied weights and fp16_lm_cross_entropy from the arguments, its layer specs from --transformer-impl
// (:105-114, never --spec), and both blocks the config's num_layers, which is --encoder-num-layers (:91-95, :100-103).
void t5_model_config(Emitter& e, const Vocabulary& vocab) {
  const Namespace& ns = e.ns();
  const auto at = [](const std::string& lines) { return "mcore:examples/t5/pretrain_t5.py:" + lines; };
  e.put("model", "architecture", "t5", "", at("117-135 (T5Model)"));
  if (ns.has("spec"))
    e.ctx().warning("--spec", "t5_spec_not_read",
                    "pretrain_t5.py chooses its layer specs by --transformer-impl (mcore:examples/t5/pretrain_t5.py:105-114) and never "
                    "reads --spec");
  e.consume("spec");
  if (!ns.none("decoder_num_layers") && ns.integer("decoder_num_layers") != ns.integer("num_layers"))
    e.ctx().warning(option_of(ns, "decoder_num_layers"), "t5_decoder_num_layers_not_read",
                    "--decoder-num-layers " + std::to_string(ns.integer("decoder_num_layers")) +
                        " is read by no model code: pretrain_t5.py builds the decoder with the config's num_layers, --encoder-num-layers " +
                        std::to_string(ns.integer("num_layers")) + " (mcore:examples/t5/pretrain_t5.py:91-114)");
  e.consume("decoder_num_layers");
  e.put("model", "decoder_seq_length", ns.at("decoder_seq_length"), "decoder_seq_length", at("211"));
  e.put("model", "position_embedding_type", ns.at("position_embedding_type"), "position_embedding_type", at("129"));
  e.put("model", "rotary_percent", ns.at("rotary_percent"), "rotary_percent", at("130"));
  e.put("model", "fp16_lm_cross_entropy", ns.flag("fp16_lm_cross_entropy"), "fp16_lm_cross_entropy", at("126"));
  e.put("model", "make_vocab_size_divisible_by", ns.at("make_vocab_size_divisible_by"), "make_vocab_size_divisible_by");
  e.put("model", "max_position_embeddings", ns.at("max_position_embeddings"), "max_position_embeddings", at("123"));
  e.put("model", "share_embeddings_and_output_weights", !ns.flag("untie_embeddings_and_output_weights"), "untie_embeddings_and_output_weights",
        at("128"));
  e.put("model", "seq_length", ns.at("seq_length"), "seq_length");
  e.consume("encoder_seq_length");
  e.consume("encoder_num_layers");
  vocabulary_keys(e, vocab, at("122 (vocab_size=args.padded_vocab_size)"));
}

// get_megatron_optimizer_config / get_megatron_ddp_config (training.py:1983-2039).
void optimizer_and_ddp(Emitter& e) {
  const Namespace& ns = e.ns();
  for (const auto& f : fields_of("OptimizerConfig")) e.copy("optimizer", f);
  const std::set<std::string> overridden = {
      "grad_reduce_in_fp32", "check_for_nan_in_grad", "check_for_large_grads", "num_buckets", "bucket_size",
      "pad_buckets_for_high_nccl_busbw", "reduce_scatter_with_fp32_accumulation", "param_name_patterns_for_fp32_local_accumulation",
      "average_in_collective", "megatron_fsdp_main_params_dtype", "megatron_fsdp_main_grads_dtype", "megatron_fsdp_grad_comm_dtype",
      "megatron_fsdp_use_decoupled_grad", "fsdp_all_gather_in_start_param_sync", "megatron_fsdp_cuda_graph_mode"};
  for (const auto& f : fields_of("DistributedDataParallelConfig"))
    if (!overridden.count(f)) e.copy("ddp", f);
  const auto at = [](int line) { return kTraining + std::to_string(line); };
  e.put("ddp", "grad_reduce_in_fp32", ns.flag("accumulate_allreduce_grads_in_fp32"), "accumulate_allreduce_grads_in_fp32", at(2009));
  e.consume("grad_reduce_in_bf16");
  e.put("ddp", "check_for_nan_in_grad", ns.flag("check_for_nan_in_loss_and_grad"), "check_for_nan_in_loss_and_grad", at(2010));
  e.put("ddp", "check_for_large_grads", ns.flag("check_for_large_grads"), "check_for_large_grads", at(2011));
  e.put("ddp", "num_buckets", ns.at("ddp_num_buckets"), "ddp_num_buckets", at(2012));
  e.put("ddp", "bucket_size", ns.at("ddp_bucket_size"), "ddp_bucket_size", at(2013));
  e.put("ddp", "pad_buckets_for_high_nccl_busbw", ns.flag("ddp_pad_buckets_for_high_nccl_busbw"), "ddp_pad_buckets_for_high_nccl_busbw", at(2014));
  e.put("ddp", "reduce_scatter_with_fp32_accumulation", ns.flag("ddp_reduce_scatter_with_fp32_accumulation"),
        "ddp_reduce_scatter_with_fp32_accumulation", at(2015));
  e.put("ddp", "param_name_patterns_for_fp32_local_accumulation", ns.at("ddp_param_name_patterns_for_fp32_local_accumulation"),
        "ddp_param_name_patterns_for_fp32_local_accumulation", at(2016));
  e.put("ddp", "average_in_collective", ns.flag("ddp_average_in_collective"), "ddp_average_in_collective", at(2018));
  e.consume("use_precision_aware_optimizer");
  if (ns.flag("use_megatron_fsdp")) {  // Megatron-FSDP's own settings (:2020-2037)
    for (const char* f : {"megatron_fsdp_main_params_dtype", "megatron_fsdp_main_grads_dtype", "megatron_fsdp_grad_comm_dtype"})
      e.put("ddp", f, ns.at(f), f, at(2020));
    e.put("ddp", "megatron_fsdp_use_decoupled_grad", ns.flag("use_precision_aware_optimizer"), "use_precision_aware_optimizer", at(2023));
    const std::string impl = ns.str("cuda_graph_impl");
    if (ns.integer("megatron_fsdp_version", 1) == 2 || impl == "full_iteration")
      e.put("ddp", "fsdp_all_gather_in_start_param_sync", false, "use_megatron_fsdp", at(ns.integer("megatron_fsdp_version", 1) == 2 ? 2027 : 2037));
    if (impl != "none") e.put("ddp", "megatron_fsdp_cuda_graph_mode", true, "cuda_graph_impl", at(2031));
  }
}

// TrainingConfig fields (the batch) are run-spec train keys by the same names.
void training_config(Emitter& e) {
  if (const SectionSchema* train = section_schema("train"))
    for (const auto& [key, _] : *train)
      if (e.ns().v.count(key) && !e.ns().none(key)) e.copy("train", key);
}

}  // namespace

BuiltSpec build_run_spec_document(const Namespace& ns, ImportContext& ctx) {
  BuiltSpec out;
  for (const char* s : {"model", "train", "optimizer", "ddp"}) out.doc[s] = json::object();
  const Vocabulary vocab = resolve_vocabulary(ns, ctx);
  if (vocab.size) {
    ctx.notes.push_back("vocab_size " + std::to_string(*vocab.size) + (vocab.pad ? " (padded to make_vocab_size_divisible_by x TP)" : "") +
                        ": " + vocab.why);
    ctx.derived["vocab_size"] = vocab.why;
  }
  Emitter e(ns, ctx, out);
  transformer_config(e);
  yarn(e);
  if (ctx.bert) bert_model_config(e, vocab);
  else if (ctx.t5) t5_model_config(e, vocab);
  else model_config(e, vocab);
  optimizer_and_ddp(e);
  training_config(e);
  return out;
}

}  // namespace peakcast::model::detail
