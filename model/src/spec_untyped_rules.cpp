// Megatron rules on fields that RunSpec does not carry: checked on the JSON document, with the
// same ids and wording as validate.cpp. Only rules about MoE, recompute, offloading and CUDA graphs.
#include "spec_parser_detail.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

class Model {
 public:
  explicit Model(const json& doc) {
    if (doc.is_object() && doc.contains("model") && doc["model"].is_object()) obj_ = &doc["model"];
  }
  const json* get(const char* key) const {
    if (obj_ == nullptr) return nullptr;
    const auto it = obj_->find(key);
    return it == obj_->end() || it->is_null() ? nullptr : &*it;
  }
  bool flag(const char* key) const {
    const json* v = get(key);
    return v != nullptr && v->is_boolean() && v->get<bool>();
  }
  std::string str(const char* key, const std::string& fallback = "") const {
    const json* v = get(key);
    return v != nullptr && v->is_string() ? v->get<std::string>() : fallback;
  }
  std::optional<std::int64_t> integer(const char* key) const {
    const json* v = get(key);
    if (v == nullptr || !v->is_number_integer()) return std::nullopt;
    return v->get<std::int64_t>();
  }
  std::optional<double> number(const char* key) const {
    const json* v = get(key);
    if (v == nullptr || !v->is_number()) return std::nullopt;
    return v->get<double>();
  }
  bool has_string_in(const char* key, const char* item) const {
    const json* v = get(key);
    if (v == nullptr || !v->is_array()) return false;
    for (const auto& e : *v) if (e.is_string() && e.get<std::string>() == item) return true;
    return false;
  }

 private:
  const json* obj_ = nullptr;
};

void error(Diagnostics& out, const char* key, const char* rule, const std::string& msg) {
  out.push_back({Severity::error, std::string("model.") + key, rule, msg});
}

}  // namespace

void check_untyped_rules(const json& doc, Diagnostics& out) {
  const Model m(doc);
  const std::string dispatcher = m.str("moe_token_dispatcher_type", "allgather");
  const std::string backend = m.str("moe_flex_dispatcher_backend", "deepep");

  // The pipelined schedules only hand a per-micro-batch flag to forward_step_func as a third argument
  // (schedules.py:1197, :1597, :2265); no Megatron Core model reads it, and pretrain_gpt.py's forward_step
  // would take it as return_schedule_plan. What a rank holds does not change, so say so instead of
  // calling it unsimulated.
  if (const json* v = m.get("num_microbatches_with_partial_activation_checkpoints"); v != nullptr && !v->is_null()) {
    out.push_back({Severity::warning, "model.num_microbatches_with_partial_activation_checkpoints",
                   "partial_activation_checkpoints_unread",
                   "num_microbatches_with_partial_activation_checkpoints is only passed to the forward-step function "
                   "under pipeline parallelism (schedules.py:1597, :2265); Megatron Core's models do not read it, so every "
                   "micro-batch is checkpointed by the recompute policy alone (what is predicted)"});
  }

  // Gated attention's own rules (transformer_config.py:2216-2217; MLATransformerConfig, :3028-3029).
  if (m.flag("attention_output_gate")) {
    if (m.flag("fused_single_qkv_rope"))
      error(out, "fused_single_qkv_rope", "output_gate_vs_fused_single_qkv_rope",
            "fused_single_qkv_rope does not support gated attention for now. (transformer_config.py:2217)");
    if (m.flag("multi_latent_attention"))
      error(out, "attention_output_gate", "output_gate_vs_mla",
            "Output gate is not supported for MLA yet. (transformer_config.py:3029)");
  }

  // moe_enable_deepep (transformer_config.py:1615-1619)
  if (m.flag("moe_enable_deepep")) {
    if (dispatcher != "flex")
      error(out, "moe_enable_deepep", "deepep_needs_flex", "DeepEP backend is only supported with flex token dispatcher. (transformer_config.py:1617)");
    if (backend == "hybridep" && m.get("moe_flex_dispatcher_backend") != nullptr)
      error(out, "moe_enable_deepep", "deepep_vs_hybridep", "Only one backend is supported for flex token dispatcher. (transformer_config.py:1619)");
  }
  // Flex + DeepEP cannot pad to capacity (transformer_config.py:1626-1633)
  if (dispatcher == "flex" && m.flag("moe_pad_expert_input_to_capacity") &&
      (m.flag("moe_enable_deepep") || (backend == "deepep"))) {
    error(out, "moe_pad_expert_input_to_capacity", "flex_deepep_no_capacity_padding",
          "Flex token dispatcher with deepep backend does not support moe_pad_expert_input_to_capacity (transformer_config.py:1630)");
  }
  if (backend == "ncclep" && dispatcher != "flex") {
    error(out, "moe_flex_dispatcher_backend", "ncclep_needs_flex",
          "moe_flex_dispatcher_backend='ncclep' requires moe_token_dispatcher_type='flex'. (transformer_config.py:1637)");
  }
  // The MXFP8 LM head (TELMHeadColumnParallelLinear, fp8_utils.py:732-747) has no deferral buffers
  // (extensions/transformer_engine.py:1784-1787).
  if (m.flag("defer_embedding_wgrad_compute") && m.flag("fp8_output_proj") && m.get("fp8") != nullptr &&
      m.str("fp8_recipe", "delayed") == "mxfp8" && m.str("transformer_impl", "transformer_engine") == "transformer_engine") {
    error(out, "defer_embedding_wgrad_compute", "defer_wgrad_vs_mxfp8_output_proj",
          "TE MXFP8 output projection does not support defer_embedding_wgrad_compute. (extensions/transformer_engine.py:1786)");
  }
  // Router padding for quantization (transformer_config.py:2342-2352)
  if (m.flag("moe_router_padding_for_quantization") || m.flag("moe_router_padding_for_fp8")) {
    if (m.get("fp8") == nullptr && m.get("fp4") == nullptr)
      error(out, "moe_router_padding_for_quantization", "router_padding_needs_fp8",
            "fp8/fp4 must be specified when moe_router_padding_for_quantization is True. (transformer_config.py:2344)");
    if (dispatcher == "allgather")
      error(out, "moe_router_padding_for_quantization", "router_padding_vs_allgather",
            "allgather and alltoall_seq dispatcher does not support moe_router_padding_for_quantization. (transformer_config.py:2349)");
  }
  // moe_paged_stash excludes layer-level CPU offloading (transformer_config.py:1930-1932)
  if (m.flag("moe_paged_stash") && m.flag("cpu_offloading")) {
    error(out, "moe_paged_stash", "paged_stash_vs_cpu_offloading", "moe_paged_stash cannot be enabled with cpu_offloading. (transformer_config.py:1932)");
  }
  // The allgather dispatcher cannot take variable sequence lengths (transformer_config.py:2668-2674).
  if (dispatcher == "allgather" && m.flag("variable_seq_lengths"))
    error(out, "variable_seq_lengths", "allgather_no_variable_seq_lengths",
          "Token dispatcher type: allgather does not support variable sequence length, please use alltoall "
          "dispatcher instead. (transformer_config.py:2672)");
  // Fine-grained activation offloading's own checks (transformer_config.py:1874-1929).
  if (m.flag("fine_grained_activation_offloading")) {
    const json* mods = m.get("offload_modules");
    if (mods == nullptr || !mods->is_array() || mods->empty()) {
      error(out, "offload_modules", "offload_modules_required",
            "fine_grained_activation_offloading needs a non-empty offload_modules. (transformer_config.py:1878)");
    } else {
      static const char* const kAllowed[] = {"core_attn", "attn_proj", "expert_fc1", "fused_group_mlp",
                                             "moe_act",   "attn_norm", "mlp_norm",   "qkv_linear"};
      for (std::size_t i = 0; i < mods->size(); ++i) {
        const json& e = (*mods)[i];
        bool ok = false;
        if (e.is_string())
          for (const char* a : kAllowed) ok = ok || e.get<std::string>() == a;
        if (!ok)
          out.push_back({Severity::error, "model.offload_modules[" + std::to_string(i) + "]", "offload_module_unknown",
                         "Invalid choice for offload_modules: " + e.dump() +
                             ". Allowed modules are: core_attn, attn_proj, expert_fc1, fused_group_mlp, moe_act, "
                             "attn_norm, mlp_norm, qkv_linear. (transformer_config.py:1889)"});
      }
      if (m.has_string_in("offload_modules", "attn_proj") && !m.has_string_in("offload_modules", "core_attn"))
        error(out, "offload_modules", "attn_proj_offload_needs_core_attn",
              "attn_proj cannot be set to offload_modules alone without core_attn because the input of attn_proj is "
              "the output of core_attn, which is needed in core_attn.backward(). (transformer_config.py:1895)");
      if (m.has_string_in("offload_modules", "fused_group_mlp")) {
        if (!m.flag("use_transformer_engine_op_fuser"))
          error(out, "offload_modules", "fused_group_mlp_needs_op_fuser",
                "fused_group_mlp requires use_transformer_engine_op_fuser. (transformer_config.py:1923)");
        if (m.has_string_in("offload_modules", "expert_fc1") || m.has_string_in("offload_modules", "moe_act"))
          error(out, "offload_modules", "fused_group_mlp_vs_partial",
                "fused_group_mlp offloads the whole fused grouped MLP and cannot be combined with expert_fc1 or "
                "moe_act. (transformer_config.py:1925)");
      }
    }
    if (m.integer("min_offloaded_tensor_size").value_or(0) < 0)
      error(out, "min_offloaded_tensor_size", "min_offloaded_tensor_size_range",
            "min_offloaded_tensor_size must be non-negative. (transformer_config.py:1912)");
    if (const auto f = m.number("activation_offload_fraction"); f && (*f < 0.0 || *f > 1.0))
      error(out, "activation_offload_fraction", "activation_offload_fraction_range",
            "activation_offload_fraction must be in range [0, 1]. (transformer_config.py:1915)");
    if (m.integer("delta_offload_bytes_across_pp_ranks").value_or(0) < 0)
      error(out, "delta_offload_bytes_across_pp_ranks", "delta_offload_bytes_range",
            "delta_offload_bytes_across_pp_ranks must be non-negative. (transformer_config.py:1918)");
  }
  // Fine-grained offloading inside a recomputed MoE (rule 19, transformer_config.py:1900-1908)
  if (m.flag("fine_grained_activation_offloading") && m.str("recompute_granularity") == "selective" &&
      m.has_string_in("recompute_modules", "moe")) {
    for (const char* inner : {"moe_act", "expert_fc1", "fused_group_mlp"}) {
      if (m.has_string_in("offload_modules", inner))
        error(out, "offload_modules", "offload_inside_moe_recompute",
              std::string("offload_modules must not contain '") + inner +
                  "' when 'moe' is recomputed: the MoE checkpoint already drops it. (transformer_config.py:1904)");
    }
  }
  // Rule 31 (transformer_config.py:2785-2796)
  if (m.flag("overlap_dispatch_backward_with_experts_wgrad")) {
    if (m.flag("overlap_moe_expert_parallel_comm"))
      error(out, "overlap_dispatch_backward_with_experts_wgrad", "dispatch_wgrad_overlap_exclusive",
            "overlap_moe_expert_parallel_comm must be disabled when enabling overlap_dispatch_backward_with_experts_wgrad. (transformer_config.py:2786)");
    if (m.flag("delay_wgrad_compute"))
      error(out, "overlap_dispatch_backward_with_experts_wgrad", "dispatch_wgrad_overlap_exclusive",
            "delay_wgrad_compute and overlap_dispatch_backward_with_experts_wgrad are mutually exclusive; use only one (transformer_config.py:2793)");
  }
  // Rule 28: GTP weight remat + local graphs + fp8 cannot recompute the captured shared expert.
  if (m.integer("gtp_weight_remat_size").value_or(1) > 1 && m.str("cuda_graph_impl", "none") == "local" &&
      (m.get("fp8") != nullptr || m.get("fp4") != nullptr) && m.get("moe_shared_expert_intermediate_size") != nullptr &&
      !m.flag("moe_shared_expert_overlap") && m.str("recompute_granularity") == "selective" &&
      m.has_string_in("recompute_modules", "shared_experts")) {
    const json* scope = m.get("cuda_graph_modules");
    const bool covers = scope == nullptr || (scope->is_string() && scope->get<std::string>() == "full") ||
                        (scope->is_array() && scope->empty()) || m.has_string_in("cuda_graph_modules", "moe") ||
                        m.has_string_in("cuda_graph_modules", "moe_router");
    if (covers)
      error(out, "recompute_modules", "gtp_local_graph_shared_experts",
            "GTP + local CUDA graphs that capture shared_experts (moe_router/moe scope) cannot recompute it under "
            "fp8/fp4. (transformer_config.py:2613)");
  }
  // Fine-grained offloading under per-layer or full-iteration CUDA graphs (transformer_config.py:2622-2667).
  if (m.flag("fine_grained_activation_offloading") && m.str("cuda_graph_impl", "none") != "none") {
    const std::string impl = m.str("cuda_graph_impl", "none");
    const char* scope_key = m.get("cuda_graph_scope") != nullptr ? "cuda_graph_scope" : "cuda_graph_modules";
    const json* scope = m.get(scope_key);
    const bool whole_layer = scope == nullptr || (scope->is_array() && scope->empty()) ||
                             (scope->is_string() && scope->get<std::string>() == "full");
    const json* mods = m.get("offload_modules");
    bool moe_parts_only = mods != nullptr && mods->is_array() && !mods->empty();
    if (moe_parts_only)
      for (const auto& e : *mods)
        moe_parts_only = moe_parts_only && e.is_string() &&
                         (e.get<std::string>() == "expert_fc1" || e.get<std::string>() == "moe_act" ||
                          e.get<std::string>() == "fused_group_mlp");
    bool reported = false;
    if (impl == "local" && !moe_parts_only) {
      error(out, "offload_modules", "offload_local_graph_modules",
            "fine-grained activation offloading with cuda_graph_impl='local' only supports offload_modules "
            "'expert_fc1', 'moe_act', and 'fused_group_mlp'. (transformer_config.py:2627)");
      reported = true;
    } else if (impl == "local" && whole_layer) {
      error(out, scope_key, "offload_local_graph_whole_layer",
            "fine-grained activation offloading with cuda_graph_impl='local' is not supported with whole-layer CUDA "
            "graph capture. (transformer_config.py:2633)");
      reported = true;
    }
    const bool local_partial_moe = impl == "local" && moe_parts_only && !m.has_string_in(scope_key, "moe");
    if (!reported && impl != "transformer_engine" && impl != "full_iteration" && !local_partial_moe) {
      error(out, "cuda_graph_impl", "offload_graph_impl",
            "fine-grained activation offloading is only supported with transformer_engine CUDA graph "
            "implementation or local CUDA graph implementation with partial MoE offload. (transformer_config.py:2643)");
      reported = true;
    }
    if (!reported && m.has_string_in(scope_key, "moe")) {
      error(out, scope_key, "offload_graph_moe_scope",
            "Token-drop MoE is temporarily not supported with activation offloading. (transformer_config.py:2653)");
      reported = true;
    }
    if (!reported && m.integer("cuda_graph_warmup_steps").value_or(3) <= 0) {
      error(out, "cuda_graph_warmup_steps", "offload_graph_warmup_steps",
            "cuda_graph_warmup_steps must be greater than 0 when enabling fine-grained activation offloading. "
            "(transformer_config.py:2656)");
      reported = true;
    }
    if (!reported && impl == "full_iteration") {
      const auto inflight = m.integer("fine_grained_offloading_max_inflight_offloads");
      if (!inflight || *inflight < 0)
        error(out, "fine_grained_offloading_max_inflight_offloads", "offload_full_graph_inflight",
              "fine_grained_offloading_max_inflight_offloads must be a non-negative integer when using fine-grained "
              "activation offloading with full-iteration CUDA graphs. (transformer_config.py:2661)");
    }
  }
  // ep_overlap_early_attn_memory_release needs the EP overlap (transformer_config.py:2798-2802)
  if (m.flag("ep_overlap_early_attn_memory_release") && !m.flag("overlap_moe_expert_parallel_comm")) {
    error(out, "ep_overlap_early_attn_memory_release", "early_attn_release_needs_ep_overlap",
          "overlap_moe_expert_parallel_comm must be enabled when enabling ep_overlap_early_attn_memory_release (transformer_config.py:2799)");
  }
  // fp4 and fp8 together (transformer_config.py:1454)
  if (m.get("fp4") != nullptr && m.get("fp8") != nullptr) {
    error(out, "fp4", "fp4_and_fp8", "fp4 and fp8 cannot be used simultaneously. Please choose one. (transformer_config.py:1455)");
  }
  // first/last layers in BF16 under delayed scaling (transformer_config.py:1402)
  if (m.get("fp8") != nullptr && m.flag("first_last_layers_bf16") && m.str("fp8_recipe", "delayed") == "delayed") {
    error(out, "first_last_layers_bf16", "delayed_no_bf16_edges", "Delayed scaling does not support first / last layer in BF16. (transformer_config.py:1403)");
  }
}

}  // namespace peakcast::model::detail
