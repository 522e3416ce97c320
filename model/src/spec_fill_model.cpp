// The model section of the checked document -> ModelSpec, topic by topic. Types were checked already
// (spec_keys.cpp), so a value of the wrong kind is skipped; the conversions that can still fail
// (names, tags) report.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "layer_plan_internal.hpp"
#include "spec_fill_detail.hpp"
#include "spec_schema.hpp"
#include "spec_suggest.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

void fill_shape(const Reader& r, ModelSpec& m) {
  // Shape
  r.read("num_layers", m.num_layers);
  r.read("hidden_size", m.hidden_size);
  r.read("ffn_hidden_size", m.ffn_hidden_size);
  r.read("num_attention_heads", m.num_attention_heads);
  r.read("num_query_groups", m.num_query_groups);
  r.read("kv_channels", m.kv_channels);
  r.read("vocab_size", m.vocab_size);
  r.read("make_vocab_size_divisible_by", m.make_vocab_size_divisible_by);
  r.read("should_pad_vocab", m.should_pad_vocab);
  r.read("seq_length", m.seq_length);
  m.max_position_embeddings = m.seq_length;  // Megatron-LM's default when unset
  if (r.has("max_position_embeddings")) r.read("max_position_embeddings", m.max_position_embeddings);
  r.read("share_embeddings_and_output_weights", m.share_embeddings_and_output_weights);
  if (auto n = r.name("normalization")) m.normalization = *n == "RMSNorm" ? Normalization::rms_norm : Normalization::layer_norm;
  r.read("gated_linear_unit", m.gated_linear_unit);
  if (auto n = r.name("activation_func")) {
    m.activation_func_name = *n;  // the name itself: quick_gelu's clamp has no fused kernel (module_common.cpp)
    if (*n == "silu") m.activation_func = Activation::silu;
    else if (*n == "squared_relu") m.activation_func = Activation::squared_relu;
    else if (*n == "relu") m.activation_func = Activation::relu;
    else m.activation_func = Activation::gelu;  // gelu and its variants save the same tensors
  }
  r.read("add_bias_linear", m.add_bias_linear);
  r.read("add_qkv_bias", m.add_qkv_bias);
  r.read("qk_layernorm", m.qk_layernorm);
  r.read("qk_layernorm_full_width", m.qk_layernorm_full_width);
  r.read("attention_output_gate", m.attention_output_gate);
  r.read("post_linear_layernorm", m.post_linear_layernorm);
  r.read("pre_linear_layernorm", m.pre_linear_layernorm);
  if (auto n = r.name("core_attention_module"))
    m.core_attention_module = *n == "gemma2" ? CoreAttentionModule::gemma2 : *n == "gemma3"    ? CoreAttentionModule::gemma3
                                                                         : *n == "dot_product" ? CoreAttentionModule::dot_product
                                                                                               : CoreAttentionModule::default_;
  r.read("scale_embeddings_by_hidden_size", m.scale_embeddings_by_hidden_size);
  r.read("final_logit_softcapping", m.final_logit_softcapping);
  if (auto n = r.name("position_embedding_type")) {
    if (*n == "rope") m.position_embedding_type = PositionEmbedding::rope;
    else if (*n == "yarn") m.position_embedding_type = PositionEmbedding::yarn;
    else if (*n == "none") m.position_embedding_type = PositionEmbedding::none;
    else m.position_embedding_type = PositionEmbedding::learned_absolute;
  }
}

void fill_mla(const Reader& r, ModelSpec& m) {
  // Multi-latent attention
  r.read("multi_latent_attention", m.multi_latent_attention);
  r.read("q_lora_rank", m.q_lora_rank);
  r.read("kv_lora_rank", m.kv_lora_rank);
  r.read("qk_head_dim", m.qk_head_dim);
  r.read("qk_pos_emb_head_dim", m.qk_pos_emb_head_dim);
  r.read("v_head_dim", m.v_head_dim);
  // DeepSeek sparse attention's indexer, top-k sharing, loss and kernels (docs/research/dsa-memory-facts.md).
  r.read("dsa_indexer_n_heads", m.dsa_indexer_n_heads);
  r.read("dsa_indexer_head_dim", m.dsa_indexer_head_dim);
  r.read("dsa_indexer_topk", m.dsa_indexer_topk);
  r.read("dsa_indexer_topk_freq", m.dsa_indexer_topk_freq);
  r.read("dsa_indexer_skip_topk_offset", m.dsa_indexer_skip_topk_offset);
  r.read("dsa_indexer_loss_coeff", m.dsa_indexer_loss_coeff);
  r.read("dsa_indexer_use_sparse_loss", m.dsa_indexer_use_sparse_loss);
  r.read("dsa_indexer_rotate_activation", m.dsa_indexer_rotate_activation);
  r.read("dsa_indexer_k_norm_fp32", m.dsa_indexer_k_norm_fp32);
  r.read("dsa_kernel_backend", m.dsa_kernel_backend);
}

void fill_moe(const Reader& r, ModelSpec& m) {
  // Mixture of experts
  r.read("num_moe_experts", m.num_moe_experts);
  r.read("moe_ffn_hidden_size", m.moe_ffn_hidden_size);
  r.read("moe_router_topk", m.moe_router_topk);
  r.read("moe_shared_expert_intermediate_size", m.moe_shared_expert_intermediate_size);
  r.read("moe_shared_expert_gate", m.moe_shared_expert_gate);
  r.read("moe_apply_probs_on_input", m.moe_apply_probs_on_input);
  r.read("mlp_chunks_for_training", m.mlp_chunks_for_training);
  if (const json* v = r.find("moe_layer_freq")) {
    if (auto f = int_or_pattern(*v)) m.moe_layer_freq = std::move(*f);
  }
  r.read("moe_grouped_gemm", m.moe_grouped_gemm);
  if (auto n = r.name("moe_token_dispatcher_type")) {
    m.moe_token_dispatcher_type = *n == "alltoall" ? Dispatcher::alltoall : *n == "flex" ? Dispatcher::flex
                                                                                         : Dispatcher::allgather;
  }
  if (const json* v = r.find("moe_router_dtype"); v && v->is_string()) {
    m.moe_router_dtype_set = true;
    // DType has no fp64; an 8-byte element type keeps the router's byte counts right.
    m.moe_router_dtype = v->get<std::string>() == "fp64" ? DType::int64 : DType::fp32;
  }
  r.read("moe_shared_expert_overlap", m.moe_shared_expert_overlap);
  r.read("moe_router_enable_expert_bias", m.moe_router_enable_expert_bias);
  r.read("moe_expert_capacity_factor", m.moe_expert_capacity_factor);
  // A negative capacity factor means "no capacity" in Megatron (transformer_config.py:1687-1688).
  if (m.moe_expert_capacity_factor && *m.moe_expert_capacity_factor < 0) m.moe_expert_capacity_factor.reset();
  r.read("moe_pad_expert_input_to_capacity", m.moe_pad_expert_input_to_capacity);
  r.read("moe_permute_fusion", m.moe_permute_fusion);
  r.read("moe_input_jitter_eps", m.moe_input_jitter_eps);
  r.read("moe_layer_recompute", m.moe_layer_recompute);
  r.read("overlap_moe_expert_parallel_comm", m.overlap_moe_expert_parallel_comm);
  r.read("delay_wgrad_compute", m.delay_wgrad_compute);
  r.read("moe_latent_size", m.moe_latent_size);
  r.read("moe_routing_imbalance", m.moe_routing_imbalance);
  if (auto n = r.name("moe_router_score_function")) m.moe_router_score_function = *n;
  r.read("moe_router_force_load_balancing", m.moe_router_force_load_balancing);
  r.read("use_te_activation_func", m.use_te_activation_func);
}

// TopKRouter's settings (router.py:744-871); the deprecated topk_limited_devices stays as given, the
// router builder applies Megatron's conversion (transformer_config.py:2383-2389).
void fill_router(const Reader& r, ModelSpec& m) {
  r.read("moe_router_pre_softmax", m.moe_router_pre_softmax);
  r.read("moe_router_num_groups", m.moe_router_num_groups);
  r.read("moe_router_group_topk", m.moe_router_group_topk);
  r.read("moe_router_topk_limited_devices", m.moe_router_topk_limited_devices);
  if (const json* v = r.find("moe_router_load_balancing_type")) {
    if (v->is_string()) {
      m.moe_router_load_balancing_type = v->get<std::string>();
    } else if (v->is_array()) {
      std::vector<std::string> types;
      for (const auto& e : *v)
        if (e.is_string()) types.push_back(e.get<std::string>());
      m.moe_router_load_balancing_type = std::move(types);
    }
  }
  if (const json* v = r.find("moe_aux_loss_coeff")) {
    if (v->is_number()) {
      m.moe_aux_loss_coeff = v->get<double>();
    } else if (v->is_array()) {
      std::vector<double> coeffs;
      for (const auto& e : *v)
        if (e.is_number()) coeffs.push_back(e.get<double>());
      m.moe_aux_loss_coeff = std::move(coeffs);
    }
  }
  r.read("moe_z_loss_coeff", m.moe_z_loss_coeff);
  r.read("moe_router_topk_scaling_factor", m.moe_router_topk_scaling_factor);
  r.read("moe_router_fusion", m.moe_router_fusion);
  r.read("moe_router_force_biased", m.moe_router_force_biased);
}

void fill_hybrid(const Reader& r, ModelSpec& m) {
  // Hybrid Mamba / GDN; hybrid_layer_pattern is the Bridge name, hybrid_override_pattern the old one.
  r.read("hybrid_override_pattern", m.hybrid_override_pattern);
  if (r.has("hybrid_layer_pattern")) r.read("hybrid_layer_pattern", m.hybrid_override_pattern);
  r.read("mamba_state_dim", m.mamba_state_dim);
  r.read("mamba_head_dim", m.mamba_head_dim);
  r.read("mamba_num_groups", m.mamba_num_groups);
  r.read("mamba_num_heads", m.mamba_num_heads);
  r.read("mamba_d_conv", m.mamba_d_conv);
  r.read("experimental_attention_variant", m.experimental_attention_variant);
  r.read("linear_key_head_dim", m.linear_key_head_dim);
  r.read("linear_value_head_dim", m.linear_value_head_dim);
  r.read("linear_num_key_heads", m.linear_num_key_heads);
  r.read("linear_num_value_heads", m.linear_num_value_heads);
  if (const json* v = r.find("linear_attention_freq")) m.linear_attention_freq = int_or_pattern(*v);
  r.read("linear_conv_kernel_dim", m.linear_conv_kernel_dim);
  if (const json* v = r.find("mtp_num_layers")) m.mtp_num_layers = v->is_null() ? 0 : Reader::as_int(*v).value_or(0);
  r.read("mtp_use_repeated_layer", m.mtp_use_repeated_layer);
}

void fill_layout(const Reader& r, ModelSpec& m) {
  // Parallel layout
  r.read("tensor_model_parallel_size", m.tensor_model_parallel_size);
  r.read("pipeline_model_parallel_size", m.pipeline_model_parallel_size);
  r.read("virtual_pipeline_model_parallel_size", m.virtual_pipeline_model_parallel_size);
  r.read("context_parallel_size", m.context_parallel_size);
  r.read("expert_model_parallel_size", m.expert_model_parallel_size);
  r.read("expert_tensor_parallel_size", m.expert_tensor_parallel_size);
  r.read("sequence_parallel", m.sequence_parallel);
  if (const json* v = r.find("pipeline_model_parallel_layout")) {
    if (v->is_string()) {
      m.pipeline_model_parallel_layout = v->get<std::string>();
    } else if (v->is_array()) {
      // List form: one list of LayerType names per stage (embedding, decoder, mtp, loss; any case,
      // pipeline_parallel_layer_layout.py:60-70), written back in the string form "E,t|t,L".
      static const std::map<std::string, std::string> kSymbols = {{"embedding", "E"}, {"decoder", "t"}, {"mtp", "m"}, {"loss", "L"}};
      std::string layout;
      for (std::size_t i = 0; i < v->size(); ++i) {
        if (i > 0) layout += "|";
        const json& stage = (*v)[i];
        if (stage.is_array()) {
          for (std::size_t j = 0; j < stage.size(); ++j) {
            const std::string at = r.path("pipeline_model_parallel_layout") + "[" + std::to_string(i) + "][" + std::to_string(j) + "]";
            if (!stage[j].is_string()) {
              r.error(at, "wrong_type", "expected a LayerType name: embedding, decoder, mtp or loss");
              continue;
            }
            std::string name = stage[j].get<std::string>();
            name.erase(0, name.find_first_not_of(" \t"));
            name.erase(name.find_last_not_of(" \t") + 1);
            for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            const auto sym = kSymbols.find(name);
            if (sym == kSymbols.end()) {
              r.error(at, "pipeline_layout_invalid",
                      name.substr(0, 40) + " is not a valid LayerType (embedding, decoder, mtp, loss; pipeline_parallel_layer_layout.py:69)");
              continue;
            }
            if (j > 0) layout += ',';
            layout += sym->second;
          }
        } else {
          r.error(r.path("pipeline_model_parallel_layout") + "[" + std::to_string(i) + "]", "wrong_type",
                  "expected the list of layer symbols of one pipeline stage");
        }
      }
      m.pipeline_model_parallel_layout = layout;
    }
  }
  // A layout fixes the virtual stages per rank: without an explicit VPP size Megatron takes the
  // layout's (transformer_config.py:2006-2007). A malformed layout is left to validation.
  if (m.pipeline_model_parallel_layout && !m.virtual_pipeline_model_parallel_size && m.pipeline_model_parallel_size > 1) {
    try {
      const auto stages = static_cast<std::int64_t>(expand_pipeline_layout(*m.pipeline_model_parallel_layout).size());
      if (stages % m.pipeline_model_parallel_size == 0 && stages / m.pipeline_model_parallel_size > 1)
        m.virtual_pipeline_model_parallel_size = stages / m.pipeline_model_parallel_size;
    } catch (const std::exception&) {
    }
  }
  r.read("num_layers_in_first_pipeline_stage", m.num_layers_in_first_pipeline_stage);
  r.read("num_layers_in_last_pipeline_stage", m.num_layers_in_last_pipeline_stage);
  r.read("account_for_embedding_in_pipeline_split", m.account_for_embedding_in_pipeline_split);
  r.read("account_for_loss_in_pipeline_split", m.account_for_loss_in_pipeline_split);
  r.read("microbatch_group_size_per_vp_stage", m.microbatch_group_size_per_vp_stage);
  r.read("deallocate_pipeline_outputs", m.deallocate_pipeline_outputs);
}

void fill_recompute(const Reader& r, ModelSpec& m) {
  // Recompute and offloading
  if (auto n = r.name("recompute_granularity")) {
    m.recompute_granularity = *n == "full" ? RecomputeGranularity::full : RecomputeGranularity::selective;
  }
  if (const json* v = r.find("recompute_modules"); v && v->is_array()) {
    // Megatron checks the tags only under selective granularity (transformer_config.py:1792-1808).
    const bool selective = m.recompute_granularity == RecomputeGranularity::selective || m.moe_layer_recompute;
    std::vector<RecomputeTag> tags;
    std::vector<std::string> allowed;
    for (int t = 0; t < 8; ++t) allowed.emplace_back(to_string(static_cast<RecomputeTag>(t)));
    for (std::size_t i = 0; i < v->size(); ++i) {
      const json& e = (*v)[i];
      if (!e.is_string()) continue;
      const std::string tag = e.get<std::string>();
      if (auto t = recompute_tag_from_string(tag)) {
        if (std::find(tags.begin(), tags.end(), *t) == tags.end()) tags.push_back(*t);
        continue;
      }
      std::string msg = "Invalid choices for recompute_modules: {'" + tag.substr(0, 60) +
                        "'}. Allowed modules are: core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, "
                        "shared_experts, gdn_norm_out (transformer_config.py:1805)";
      if (auto s = closest_name(tag, allowed)) msg += "; did you mean \"" + *s + "\"?";
      const std::string where = r.path("recompute_modules") + "[" + std::to_string(i) + "]";
      if (selective) r.error(where, "recompute_module_unknown", msg);
      else r.warning(where, "recompute_module_unknown", msg + "; ignored because recompute_granularity is not selective");
    }
    m.recompute_modules = std::move(tags);
  }
  if (auto n = r.name("recompute_method")) m.recompute_method = *n == "block" ? RecomputeMethod::block : RecomputeMethod::uniform;
  r.read("recompute_num_layers", m.recompute_num_layers);
  r.read("distribute_saved_activations", m.distribute_saved_activations);
  r.read("cpu_offloading", m.cpu_offloading);
  r.read("cpu_offloading_num_layers", m.cpu_offloading_num_layers);
  r.read("cpu_offloading_activations", m.cpu_offloading_activations);
  r.read("cpu_offloading_weights", m.cpu_offloading_weights);
  r.read("fine_grained_activation_offloading", m.fine_grained_activation_offloading);
  // The groups fine-grained offloading runs and the smallest tensor it moves (sim/src/stage_builder.cpp); the
  // validation rules read them too (validate_offloading.cpp).
  if (const json* v = r.find("offload_modules")) {
    m.offload_modules.clear();
    if (v->is_string()) m.offload_modules.push_back(v->get<std::string>());
    else if (v->is_array())
      for (const auto& e : *v)
        if (e.is_string()) m.offload_modules.push_back(e.get<std::string>());
  }
  r.read("min_offloaded_tensor_size", m.min_offloaded_tensor_size);
}

void fill_precision(const Reader& r, ModelSpec& m) {
  // Precision
  r.read("bf16", m.bf16);
  r.read("fp16", m.fp16);
  r.read("fp8", m.fp8);
  if (auto n = r.name("fp8_recipe")) {
    if (*n == "tensorwise") m.fp8_recipe = Fp8Recipe::tensorwise;
    else if (*n == "mxfp8") m.fp8_recipe = Fp8Recipe::mxfp8;
    else if (*n == "blockwise") m.fp8_recipe = Fp8Recipe::blockwise;
    else if (*n == "delayed") m.fp8_recipe = Fp8Recipe::delayed;
    else r.error(r.path("fp8_recipe"), "unsupported_value",
                 "fp8_recipe \"" + *n + "\" (a user quantizer factory) is not modelled; use delayed, tensorwise, mxfp8 or blockwise");
  }
  r.read("fp8_param", m.fp8_param);
  r.read("first_last_layers_bf16", m.first_last_layers_bf16);
  r.read("num_layers_at_start_in_bf16", m.num_layers_at_start_in_bf16);
  r.read("num_layers_at_end_in_bf16", m.num_layers_at_end_in_bf16);
}

void fill_implementation(const Reader& r, ModelSpec& m) {
  // Implementation choices
  if (auto n = r.name("transformer_impl")) {
    if (*n == "local") m.transformer_impl = TransformerImpl::local;
    else if (*n == "transformer_engine") m.transformer_impl = TransformerImpl::transformer_engine;
    else r.error(r.path("transformer_impl"), "unsupported_value",
                 "transformer_impl \"inference_optimized\" builds inference layers; peakcast simulates training "
                 "(use transformer_engine or local)");
  }
  if (auto n = r.name("attention_backend")) {
    if (*n == "flash") m.attention_backend = AttentionBackend::flash;
    else if (*n == "fused") m.attention_backend = AttentionBackend::fused;
    else if (*n == "unfused") m.attention_backend = AttentionBackend::unfused;
    else if (*n == "local") m.attention_backend = AttentionBackend::local;
    else m.attention_backend = AttentionBackend::auto_;
  }
  r.read("masked_softmax_fusion", m.masked_softmax_fusion);
  r.read("attention_softmax_in_fp32", m.attention_softmax_in_fp32);
  if (auto n = r.name("softmax_type")) {
    if (*n == "learnable") m.softmax_type = SoftmaxType::learnable;
    else if (*n == "off-by-one") m.softmax_type = SoftmaxType::off_by_one;
    else m.softmax_type = SoftmaxType::vanilla;
  }
  r.read("activation_func_clamp_value", m.activation_func_clamp_value);
  r.read("bias_dropout_fusion", m.bias_dropout_fusion);
  r.read("bias_activation_fusion", m.bias_activation_fusion);
  r.read("activation_func_fp8_input_store", m.activation_func_fp8_input_store);
  r.read("apply_rope_fusion", m.apply_rope_fusion);
  r.read("rotary_percent", m.rotary_percent);
  r.read("cross_entropy_loss_fusion", m.cross_entropy_loss_fusion);
  if (auto n = r.name("cross_entropy_fusion_impl")) m.cross_entropy_fusion_impl = *n == "te" ? CrossEntropyImpl::te : CrossEntropyImpl::native;
  // The impl only matters when the fusion is on; say "unfused" so later stages read one field.
  if (!m.cross_entropy_loss_fusion) m.cross_entropy_fusion_impl = CrossEntropyImpl::unfused;
  r.read("attention_dropout", m.attention_dropout);
  r.read("hidden_dropout", m.hidden_dropout);
  if (auto n = r.name("cuda_graph_impl")) {
    if (*n == "local") m.cuda_graph_impl = CudaGraphImpl::local;
    else if (*n == "transformer_engine") m.cuda_graph_impl = CudaGraphImpl::transformer_engine;
    else if (*n == "full_iteration") m.cuda_graph_impl = CudaGraphImpl::full_iteration;
    else m.cuda_graph_impl = CudaGraphImpl::none;
  }
  // Deprecated booleans (transformer_config.py:2391-2407): enable_cuda_graph means impl local,
  // external_cuda_graph means impl transformer_engine.
  bool enable_cuda_graph = false, external_cuda_graph = false;
  r.read("enable_cuda_graph", enable_cuda_graph);
  r.read("external_cuda_graph", external_cuda_graph);
  if (enable_cuda_graph || external_cuda_graph) {
    const char* key = enable_cuda_graph ? "enable_cuda_graph" : "external_cuda_graph";
    if (m.cuda_graph_impl != CudaGraphImpl::none) {
      r.error(r.path(key), "deprecated_cuda_graph_flag",
              "Do not use enable_cuda_graph or external_cuda_graph with cuda_graph_impl. (transformer_config.py:2392)");
    } else if (enable_cuda_graph && external_cuda_graph) {
      r.error(r.path(key), "deprecated_cuda_graph_flag",
              "enable_cuda_graph and external_cuda_graph cannot be enabled at the same time. (transformer_config.py:2395)");
    } else {
      m.cuda_graph_impl = enable_cuda_graph ? CudaGraphImpl::local : CudaGraphImpl::transformer_engine;
      r.warning(r.path(key), "deprecated_cuda_graph_flag",
                std::string(key) + " is deprecated, use cuda_graph_impl=" + (enable_cuda_graph ? "local" : "transformer_engine") +
                    " instead. (transformer_config.py:2400)");
    }
  }
  // cuda_graph_modules: "full" (or []) is the whole layer; cuda_graph_scope is its deprecated name.
  const char* modules_key = r.has("cuda_graph_scope") ? "cuda_graph_scope" : "cuda_graph_modules";
  if (const json* v = r.find(modules_key)) {
    std::vector<std::string> names;
    if (v->is_string()) names.push_back(normalize_object_name(v->get<std::string>()));
    else if (v->is_array())
      for (const auto& e : *v)
        if (e.is_string()) names.push_back(normalize_object_name(e.get<std::string>()));
    m.cuda_graph_modules.clear();
    for (std::size_t i = 0; i < names.size(); ++i) {
      const std::string& n = names[i];
      if (n == "full") continue;
      if (n == "full_iteration") {
        // Deprecated CudaGraphScope.full_iteration: now cuda_graph_impl="full_iteration" (enums.py:85-88).
        r.error(r.path(modules_key), "cuda_graph_scope_full_iteration",
                "cuda_graph_modules 'full_iteration' is deprecated; use cuda_graph_impl=\"full_iteration\" with "
                "empty cuda_graph_modules instead (transformer_config.py:2440-2446)");
        continue;
      }
      if (n == "full_iteration_inference") continue;  // inference only: no effect on training
      if (std::find(m.cuda_graph_modules.begin(), m.cuda_graph_modules.end(), n) == m.cuda_graph_modules.end())
        m.cuda_graph_modules.push_back(n);
    }
  }
  r.read("cuda_graph_warmup_steps", m.cuda_graph_warmup_steps);
  r.read("gradient_accumulation_fusion", m.gradient_accumulation_fusion);
  r.read("tp_comm_overlap", m.tp_comm_overlap);
  read_userbuffer_overrides(r, m);
  r.read("defer_embedding_wgrad_compute", m.defer_embedding_wgrad_compute);
  r.read("wgrad_deferral_limit", m.wgrad_deferral_limit);
}

void check_hybrid_pattern(const Reader& r, ModelSpec& m) {
  // Hybrid models take their layer count from the pattern (Bridge hybrid_provider.py:233-245).
  if (m.hybrid_override_pattern) {
    const std::string main = m.hybrid_override_pattern->substr(0, m.hybrid_override_pattern->find('/'));
    const auto count = static_cast<std::int64_t>(std::count_if(main.begin(), main.end(), [](char c) { return c != '|'; }));
    const char* pattern_key = r.has("hybrid_layer_pattern") ? "hybrid_layer_pattern" : "hybrid_override_pattern";
    if (r.has("num_layers") && m.num_layers != count) {
      r.error(r.path("num_layers"), "num_layers_vs_hybrid_pattern",
              "num_layers (" + std::to_string(m.num_layers) + ") does not match the number of layers derived from " +
                  pattern_key + " (" + std::to_string(count) +
                  "). Please correct num_layers or the pattern. "
                  "(Bridge hybrid_provider.py:237)");
    }
    m.num_layers = count;
    for (char c : main) {
      if (std::string_view("MG*D+-E|").find(c) == std::string_view::npos) {
        r.error(r.path(pattern_key), "hybrid_pattern_symbol",
                std::string("unknown layer symbol '") + (c >= 0x20 && c < 0x7f ? std::string(1, c) : std::string("?")) +
                    "'; valid symbols are M (Mamba), G (GDN), * (attention), D (DSA), + (MLA), - (MLP), E (MoE) and | "
                    "(pipeline stage) (hybrid_layer_allocation.py:14-26)");
        break;
      }
    }
  }
}

}  // namespace

void fill_model(const Reader& r, ModelSpec& m) {
  r.read("preset", m.preset);
  if (auto n = r.name("architecture")) m.architecture = *n == "bert" ? Architecture::bert : *n == "t5" ? Architecture::t5
                                                                                                       : Architecture::gpt;
  r.read("bert_binary_head", m.bert_binary_head);
  r.read("decoder_seq_length", m.decoder_seq_length);
  std::optional<std::string> hf_config;  // already applied by the parser (spec_hf_config.cpp); read for its origin
  r.read("hf_config", hf_config);
  fill_shape(r, m);
  fill_mla(r, m);
  fill_moe(r, m);
  fill_router(r, m);
  fill_hybrid(r, m);
  fill_layout(r, m);
  fill_recompute(r, m);
  fill_precision(r, m);
  fill_implementation(r, m);
  check_hybrid_pattern(r, m);
}

}  // namespace peakcast::model::detail
