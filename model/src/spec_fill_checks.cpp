// Typed reads of the keys only the validation rules use (validate_*.cpp): Megatron refuses or changes a
// run on them, the simulation does not read them. configs/schema/classify_memory_effect.py classifies
// every key read here (and nowhere in spec_fill.cpp / spec_fill_model.cpp) as rule_only, and checks
// that the fields filled here are read by no stage but validation. Defaults come from the Reader (the
// schema, or Bridge's classes under the bridge profile); a key whose schema default is an expression
// keeps its member initializer.
#include <algorithm>
#include <string>

#include "spec_fill_detail.hpp"
#include "spec_schema.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

std::optional<DType> dtype_named(const std::string& n) {
  if (n == "fp32" || n == "float32" || n == "float") return DType::fp32;
  if (n == "bf16" || n == "bfloat16") return DType::bf16;
  if (n == "fp16" || n == "float16" || n == "half") return DType::fp16;
  return std::nullopt;
}

std::vector<std::string> strings_of(const json& v) {
  std::vector<std::string> out;
  if (v.is_string()) out.push_back(v.get<std::string>());
  else if (v.is_array())
    for (const auto& e : v)
      if (e.is_string()) out.push_back(e.get<std::string>());
  return out;
}

void fill_attention_checks(const Reader& r, ModelSpec& m) {
  r.read("fused_residual_rmsnorm", m.fused_residual_rmsnorm);
  r.read("use_transformer_engine_op_fuser", m.use_transformer_engine_op_fuser);
  r.read("rotary_interleaved", m.rotary_interleaved);
  r.read("rope_type", m.rope_type);
  r.read("qk_l2_norm", m.qk_l2_norm);
  r.read("cache_mla_latents", m.cache_mla_latents);
  r.read("mla_down_proj_fusion", m.mla_down_proj_fusion);  // also read by one stage (classify_memory_effect.py PARTIAL_READS)
  r.read("apply_query_key_layer_scaling", m.apply_query_key_layer_scaling);
  r.read("dsa_indexer_scoring_relu", m.dsa_indexer_scoring_relu);
  r.read("qk_clip", m.qk_clip);
  r.read("qk_clip_alpha", m.qk_clip_alpha);
  r.read("qk_clip_threshold", m.qk_clip_threshold);
  r.read("layernorm_zero_centered_gamma", m.layernorm_zero_centered_gamma);
  r.read("persist_layer_norm", m.persist_layer_norm);
  r.read("memory_efficient_layer_norm", m.memory_efficient_layer_norm);
  r.read("fused_single_qkv_rope", m.fused_single_qkv_rope);
  r.read("flash_attention_version", m.flash_attention_version);
  r.read("use_mup", m.use_mup);
  r.read("mup_base_hidden_size", m.mup_base_hidden_size);
  r.read("inference_fuse_tp_communication", m.inference_fuse_tp_communication);
  r.read("inference_disable_triton_nvls_kernels", m.inference_disable_triton_nvls_kernels);
  r.read("calculate_per_token_loss", m.calculate_per_token_loss);
  r.read("restore_modelopt_state", m.restore_modelopt_state);
  r.read("fp16_lm_cross_entropy", m.fp16_lm_cross_entropy);
  r.read("fp32_residual_connection", m.fp32_residual_connection);
  r.read("is_vision_language", m.is_vision_language);
  if (const json* v = r.find("window_size")) m.window_size_is_int = v->is_number_integer();
  if (const json* v = r.find("interleaved_attn_pattern"); v && v->is_array()) {
    std::vector<std::int64_t> counts;
    for (const auto& e : *v) counts.push_back(Reader::as_int(e).value_or(-1));
    m.interleaved_attn_pattern = counts;
  }
  if (const json* v = r.find("no_rope_freq")) m.no_rope_freq = v->is_null() ? std::nullopt : int_or_pattern(*v);
  if (const json* v = r.find("cp_comm_type")) {
    if (v->is_null()) m.cp_comm_type.reset();
    else m.cp_comm_type = strings_of(*v);
    m.cp_comm_type_is_list = v->is_array();
  }
  if (const json* v = r.find("hierarchical_context_parallel_sizes"); v && v->is_array()) {
    std::vector<std::int64_t> sizes;
    for (const auto& e : *v) sizes.push_back(Reader::as_int(e).value_or(0));
    m.hierarchical_context_parallel_sizes = sizes;
  }
  r.read("hybrid_context_parallel", m.hybrid_context_parallel);
  r.read("deterministic_mode", m.deterministic_mode);
  r.read("batch_invariant_mode", m.batch_invariant_mode);
}

void fill_precision_checks(const Reader& r, ModelSpec& m) {
  r.read("fp4", m.fp4);                // also read by one stage (classify_memory_effect.py PARTIAL_READS)
  r.read("fp4_recipe", m.fp4_recipe);  // likewise
  r.read("fp4_param", m.fp4_param);
  r.read("fp4_quantizer_factory", m.fp4_quantizer_factory);
  r.read("fp8_output_proj", m.fp8_output_proj);
  r.read("fp8_interval", m.fp8_interval);
  if (auto n = r.name("params_dtype"))
    if (auto d = dtype_named(*n)) m.params_dtype = *d;
  if (const json* v = r.find("pipeline_dtype")) {
    if (v->is_null()) m.pipeline_dtype.reset();
    else if (v->is_string()) m.pipeline_dtype = dtype_named(normalize_object_name(v->get<std::string>()));
  }
}

void fill_mlp_checks(const Reader& r, ModelSpec& m) {
  r.read("moe_single_grouped_weight", m.moe_single_grouped_weight);
  r.read("moe_single_grouped_bias", m.moe_single_grouped_bias);
  r.read("glu_linear_offset", m.glu_linear_offset);
  r.read("use_kitchen", m.use_kitchen);
  r.read("dense_grouped_gemm", m.dense_grouped_gemm);
  r.read("use_grouped_gemm_for_dense_mlp", m.use_grouped_gemm_for_dense_mlp);
  r.read("use_grouped_gemm_for_shared_expert", m.use_grouped_gemm_for_shared_expert);
  r.read("moe_shared_expert_glu_interleave_size", m.moe_shared_expert_glu_interleave_size);
  r.read("moe_mlp_glu_interleave_size", m.moe_mlp_glu_interleave_size);
  r.read("use_fused_weighted_squared_relu", m.use_fused_weighted_squared_relu);
}

void fill_moe_checks(const Reader& r, ModelSpec& m) {
  r.read("moe_paged_stash", m.moe_paged_stash);
  bool pad_fp8 = false;  // the alias enables the padding (transformer_config.py:2334-2340)
  r.read("moe_router_padding_for_quantization", m.moe_router_padding_for_quantization);
  r.read("moe_router_padding_for_fp8", pad_fp8);
  m.moe_router_padding_for_quantization = m.moe_router_padding_for_quantization || pad_fp8;
  r.read("moe_expert_rank_capacity_factor", m.moe_expert_rank_capacity_factor);
  r.read("moe_enable_deepep", m.moe_enable_deepep);
  r.read("moe_flex_dispatcher_backend", m.moe_flex_dispatcher_backend);
  m.moe_flex_dispatcher_backend_set = r.has("moe_flex_dispatcher_backend");
  r.read("moe_ncclep_static_shape", m.moe_ncclep_static_shape);
  r.read("moe_ncclep_zero_copy", m.moe_ncclep_zero_copy);
  r.read("moe_deepep_num_sms", m.moe_deepep_num_sms);
  r.read("moe_hybridep_num_sms", m.moe_hybridep_num_sms);
  r.read("moe_flex_dispatcher_num_sms", m.moe_flex_dispatcher_num_sms);
  r.read("variable_seq_lengths", m.variable_seq_lengths);
  r.read("overlap_dispatch_backward_with_experts_wgrad", m.overlap_dispatch_backward_with_experts_wgrad);
  r.read("ep_overlap_early_attn_memory_release", m.ep_overlap_early_attn_memory_release);
  r.read("gtp_weight_remat_size", m.gtp_weight_remat_size);
  r.read("expert_gtp_weight_remat_size", m.expert_gtp_weight_remat_size);
  r.read("tensor_parallel_num_weight_shards", m.tensor_parallel_num_weight_shards);
}

void fill_offload_checks(const Reader& r, ModelSpec& m) {
  r.read("activation_offload_fraction", m.activation_offload_fraction);
  r.read("delta_offload_bytes_across_pp_ranks", m.delta_offload_bytes_across_pp_ranks);
  r.read("fine_grained_offloading_max_inflight_offloads", m.fine_grained_offloading_max_inflight_offloads);
  r.read("num_microbatches_with_partial_activation_checkpoints", m.num_microbatches_with_partial_activation_checkpoints);
}

void fill_layout_checks(const Reader& r, ModelSpec& m) {
  r.read("hybrid_attention_ratio", m.hybrid_attention_ratio);
  r.read("hybrid_mlp_ratio", m.hybrid_mlp_ratio);
  m.hybrid_pattern_from_deprecated_key = r.has("hybrid_override_pattern");
  r.read("mamba_chunk_size", m.mamba_chunk_size);
  r.read("mtp_hybrid_override_pattern", m.mtp_hybrid_override_pattern);
  r.read("use_te_rng_tracker", m.use_te_rng_tracker);
  r.read("overlap_p2p_comm", m.overlap_p2p_comm);
  r.read("batch_p2p_comm", m.batch_p2p_comm);
  // The raw CUDA-graph scope list: spec_fill_model.cpp drops "full" and the inference scope.
  const char* modules_key = r.has("cuda_graph_scope") ? "cuda_graph_scope" : "cuda_graph_modules";
  // The default ("full", transformer_config.py:1047) counts as listed, as Megatron's normalisation counts it
  // (used_full_scope, :2435-2444): a spec that omits the key and a ConfigContainer that states it agree.
  if (const json* v = r.find(modules_key)) {
    const auto names = strings_of(*v);
    const auto is = [](const std::string& want) { return [want](const std::string& n) { return normalize_object_name(n) == want; }; };
    const bool full = std::any_of(names.begin(), names.end(), is("full"));
    m.cuda_graph_modules_full_listed = full;
    m.cuda_graph_modules_full_with_others = full && names.size() > 1;
    m.cuda_graph_modules_full_iteration_inference = std::any_of(names.begin(), names.end(), is("full_iteration_inference"));
  }
}

}  // namespace

void fill_model_checks(const Reader& r, ModelSpec& m) {
  fill_attention_checks(r, m);
  fill_precision_checks(r, m);
  fill_mlp_checks(r, m);
  fill_moe_checks(r, m);
  fill_offload_checks(r, m);
  fill_layout_checks(r, m);
}

void fill_train_checks(const Reader& r, TrainSpec& t) {
  if (const json* v = r.find("rampup_batch_size"); v && v->is_array()) {
    std::vector<std::int64_t> ramp;
    for (const auto& e : *v) ramp.push_back(Reader::as_int(e).value_or(0));
    t.rampup_batch_size = ramp;
  }
  r.read("step_batch_size_schedule", t.step_batch_size_schedule);
  r.read("decrease_batch_size_if_needed", t.decrease_batch_size_if_needed);
  r.read("manual_gc", t.manual_gc);
  r.read("manual_gc_interval", t.manual_gc_interval);
  r.read("train_samples", t.train_samples);
  r.read("num_epochs", t.num_epochs);
  t.train_iters_given = r.has("train_iters");
}

void fill_optimizer_checks(const Reader& r, OptimizerSpec& o) {
  r.read("initial_loss_scale", o.initial_loss_scale);
  r.read("min_loss_scale", o.min_loss_scale);
  r.read("loss_scale_window", o.loss_scale_window);
  r.read("hysteresis", o.hysteresis);
  r.read("decoupled_weight_decay", o.decoupled_weight_decay);
  r.read("reuse_grad_buf_for_mxfp8_param_ag", o.reuse_grad_buf_for_mxfp8_param_ag);
  r.read("fp8_recipe", o.fp8_recipe);
  r.read("overlap_param_gather", o.overlap_param_gather);
  r.read("bf16", o.bf16);
  r.read("fp16", o.fp16);
  r.read("use_layer_wise_distributed_optimizer", o.use_layer_wise_distributed_optimizer);
}

void fill_ddp_checks(const Reader& r, DdpSpec& d) {
  r.read("num_buckets", d.num_buckets);
  r.read("megatron_fsdp_version", d.megatron_fsdp_version);
  r.read("reuse_grad_buf_for_mxfp8_param_ag", d.reuse_grad_buf_for_mxfp8_param_ag);
  r.read("fp8_param_gather", d.fp8_param_gather);
  r.read("nccl_ub", d.nccl_ub);
  if (const json* v = r.find("param_name_patterns_for_fp32_local_accumulation"))
    d.fp32_local_accumulation_patterns = v->is_array() && !v->empty();
  r.read("average_in_collective", d.average_in_collective);
  r.read("reduce_scatter_with_fp32_accumulation", d.reduce_scatter_with_fp32_accumulation);
  r.read("fsdp_double_buffer", d.fsdp_double_buffer);
  r.read("fsdp_manual_registration", d.fsdp_manual_registration);
}

void fill_cluster_checks(const Reader& r, ClusterSpec& c) {
  r.read("transformer_engine_available", c.transformer_engine_available);
  r.read("calibration_harness", c.calibration_harness);
}

}  // namespace peakcast::model::detail
