// Token dispatchers (flex: DeepEP, HybridEP, NCCL EP), paged stashing and the EP-overlap companions:
// TransformerConfig.__post_init__ and the dispatcher constructors (transformer/moe/token_dispatcher.py).
#include <algorithm>
#include <string>

#include "validate_detail.hpp"

namespace peakcast::model::detail {

namespace {

// The config checks, formerly on the raw JSON (the removed spec_untyped_rules.cpp); same ids and messages.
void flex_config(const ModelSpec& m, RuleSink& sink) {
  const bool flex = m.moe_token_dispatcher_type == Dispatcher::flex;
  const std::string& backend = m.moe_flex_dispatcher_backend;
  // moe_enable_deepep (transformer_config.py:1615-1619)
  if (m.moe_enable_deepep) {
    if (!flex)
      sink.error("model.moe_enable_deepep", "deepep_needs_flex",
                 "DeepEP backend is only supported with flex token dispatcher. (transformer_config.py:1617)");
    if (backend == "hybridep")
      sink.error("model.moe_enable_deepep", "deepep_vs_hybridep",
                 "Only one backend is supported for flex token dispatcher. (transformer_config.py:1619)");
  }
  // Flex + DeepEP cannot pad to capacity (transformer_config.py:1626-1633)
  if (flex && m.moe_pad_expert_input_to_capacity && (m.moe_enable_deepep || backend == "deepep")) {
    sink.error("model.moe_pad_expert_input_to_capacity", "flex_deepep_no_capacity_padding",
               "Flex token dispatcher with deepep backend does not support moe_pad_expert_input_to_capacity (transformer_config.py:1630)");
  }
  // Router padding for quantization (transformer_config.py:2342-2352)
  if (m.moe_router_padding_for_quantization) {
    if (!m.fp8 && !m.fp4)
      sink.error("model.moe_router_padding_for_quantization", "router_padding_needs_fp8",
                 "fp8/fp4 must be specified when moe_router_padding_for_quantization is True. (transformer_config.py:2344)");
    if (m.moe_token_dispatcher_type == Dispatcher::allgather)
      sink.error("model.moe_router_padding_for_quantization", "router_padding_vs_allgather",
                 "allgather and alltoall_seq dispatcher does not support moe_router_padding_for_quantization. (transformer_config.py:2349)");
  }
  if (backend == "ncclep" && !flex) {
    sink.error("model.moe_flex_dispatcher_backend", "ncclep_needs_flex",
               "moe_flex_dispatcher_backend='ncclep' requires moe_token_dispatcher_type='flex'. (transformer_config.py:1637)");
  }
  // Deprecated SM-count knobs (transformer_config.py:1645-1660)
  if (m.moe_deepep_num_sms || m.moe_hybridep_num_sms) {
    const char* key = m.moe_deepep_num_sms ? "model.moe_deepep_num_sms" : "model.moe_hybridep_num_sms";
    if (!m.moe_flex_dispatcher_num_sms && m.moe_deepep_num_sms && m.moe_hybridep_num_sms && *m.moe_deepep_num_sms != *m.moe_hybridep_num_sms)
      sink.error(key, "deprecated_num_sms_knobs",
                 "Conflicting deprecated SM-count knobs {moe_deepep_num_sms, moe_hybridep_num_sms}; set a single "
                 "moe_flex_dispatcher_num_sms instead. (transformer_config.py:1657)");
    else
      sink.warning(key, "deprecated_num_sms_knobs",
                   "moe_deepep_num_sms / moe_hybridep_num_sms is deprecated. Use moe_flex_dispatcher_num_sms instead. "
                   "(transformer_config.py:1651)");
  }
  // moe_expert_rank_capacity_factor (transformer_config.py:1718-1731)
  if (m.moe_expert_rank_capacity_factor) {
    if (backend != "hybridep" && backend != "ncclep")
      sink.error("model.moe_expert_rank_capacity_factor", "rank_capacity_factor_backend",
                 "moe_expert_rank_capacity_factor requires moe_flex_dispatcher_backend to be 'hybridep' or 'ncclep'. "
                 "(transformer_config.py:1720)");
    else if (backend == "hybridep" && !m.use_transformer_engine_op_fuser)
      sink.error("model.moe_expert_rank_capacity_factor", "rank_capacity_factor_backend",
                 "moe_expert_rank_capacity_factor with the 'hybridep' backend requires use_transformer_engine_op_fuser to be "
                 "enabled. (transformer_config.py:1728)");
  }
  // moe_paged_stash (transformer_config.py:1930-1946); the cpu_offloading half: validate_offloading.cpp.
  if (m.moe_paged_stash && !m.moe_expert_rank_capacity_factor)
    sink.error("model.moe_paged_stash", "paged_stash_needs_rank_capacity",
               "moe_paged_stash requires moe_expert_rank_capacity_factor to be set; there is no need to use paged stashing "
               "without it. (transformer_config.py:1934)");
  if (m.moe_paged_stash && (offloads(m, "expert_fc1") || offloads(m, "moe_act") || offloads(m, "fused_group_mlp")))
    sink.error("model.offload_modules", "paged_stash_vs_moe_offload",
               "When moe_paged_stash is enabled, offload_modules must not include expert_fc1, moe_act, or fused_group_mlp "
               "(paged stash covers those activations). (transformer_config.py:1942)");
}

// The flex dispatcher's constructors, at model construction (token_dispatcher.py).
void flex_construction(const ModelSpec& m, RuleSink& sink) {
  if (!is_moe_model(m) || m.moe_token_dispatcher_type != Dispatcher::flex) return;
  const std::string& backend = m.moe_flex_dispatcher_backend;
  const std::int64_t etp = m.expert_tensor_parallel_size.value_or(m.tensor_model_parallel_size);
  if ((backend == "deepep" || backend == "ncclep") && etp * m.expert_model_parallel_size == 1)
    sink.error("model.expert_model_parallel_size", "flex_dispatcher_needs_etp_ep",
               std::string(backend == "deepep" ? "DeepEP dispatcher requires TPxEP > 1 (token_dispatcher.py:1775)"
                                               : "NCCL EP dispatcher requires TPxEP > 1 (token_dispatcher.py:1793)") +
                   ": expert_tensor_parallel_size x expert_model_parallel_size is 1");
  if (backend == "ncclep") {
    if (m.moe_ncclep_zero_copy && !m.moe_ncclep_static_shape)
      sink.error("model.moe_ncclep_zero_copy", "ncclep_zero_copy_needs_static_shape",
                 "moe_ncclep_zero_copy requires moe_ncclep_static_shape (fixed [recv_capacity, hidden] symm buffers). "
                 "(token_dispatcher.py:1535)");
    if (m.moe_ncclep_static_shape && !(m.use_transformer_engine_op_fuser && m.moe_grouped_gemm))
      sink.error("model.moe_ncclep_static_shape", "ncclep_static_shape_needs_fused_grouped_gemm",
                 "moe_ncclep_static_shape=True requires BOTH use_transformer_engine_op_fuser and moe_grouped_gemm (the fused "
                 "grouped GEMM over device-side per-expert counts). (token_dispatcher.py:1545)");
    if (!m.moe_expert_rank_capacity_factor)
      sink.error("model.moe_expert_rank_capacity_factor", "ncclep_needs_rank_capacity_factor",
                 "The 'ncclep' backend requires moe_expert_rank_capacity_factor to be set: it sizes the per-rank receive "
                 "buffer. (token_dispatcher.py:1569)");
    if (m.moe_ncclep_zero_copy && m.overlap_moe_expert_parallel_comm)
      sink.warning("model.moe_ncclep_zero_copy", "ncclep_zero_copy_overlap_extra_copy",
                   "moe_ncclep_zero_copy + overlap_moe_expert_parallel_comm (1F1B EP overlap): dispatch-backward gradient is "
                   "not symm-mem-backed under the overlap schedule, so it is staged into a symm buffer with one extra copy per "
                   "dispatch-backward. (token_dispatcher.py:1634); that copy is not simulated");
  }
  // DeepEP / HybridEP take fp32 probabilities; bf16/fp16 ones are cast every forward (token_dispatcher.py:1133-1137, :1309-1313).
  if ((backend == "deepep" || backend == "hybridep") && !m.moe_router_dtype_set && (m.bf16 || m.fp16))
    sink.warning("model.moe_router_dtype", "flex_dispatcher_wants_fp32_router",
                 std::string(backend == "deepep" ? "DeepEP" : "HybridEP") +
                     " only supports float32 probs, please set --moe-router-dtype=fp32 (token_dispatcher.py:" +
                     (backend == "deepep" ? "1311" : "1135") +
                     "): the router's half-precision probabilities are cast to fp32 "
                     "every forward");
}

}  // namespace

void validate_moe_dispatch(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  flex_config(m, sink);
  flex_construction(m, sink);
  // Paged stashing encodes (layer, micro-batch) keys below 1000 each (moe/paged_stash.py:456).
  if (m.moe_paged_stash) {
    const Derived d = derive(spec);
    if (d.num_microbatches >= 1000 || m.num_layers >= 1000)
      sink.error("model.moe_paged_stash", "paged_stash_microbatch_limit",
                 "Schedule encoding overflow (moe/paged_stash.py:456): moe_paged_stash needs fewer than 1000 micro-batches per "
                 "iteration and fewer than 1000 layers; this run has " +
                     str(d.num_microbatches) + " micro-batches");
  }
  // The allgather dispatcher cannot take variable sequence lengths (transformer_config.py:2668-2674).
  if (m.moe_token_dispatcher_type == Dispatcher::allgather && m.variable_seq_lengths)
    sink.error("model.variable_seq_lengths", "allgather_no_variable_seq_lengths",
               "Token dispatcher type: allgather does not support variable sequence length, please use alltoall dispatcher "
               "instead. (transformer_config.py:2672)");
  // Rule 31 (transformer_config.py:2785-2796)
  if (m.overlap_dispatch_backward_with_experts_wgrad) {
    if (m.overlap_moe_expert_parallel_comm)
      sink.error("model.overlap_dispatch_backward_with_experts_wgrad", "dispatch_wgrad_overlap_exclusive",
                 "overlap_moe_expert_parallel_comm must be disabled when enabling overlap_dispatch_backward_with_experts_wgrad. "
                 "(transformer_config.py:2786)");
    if (m.delay_wgrad_compute)
      sink.error("model.overlap_dispatch_backward_with_experts_wgrad", "dispatch_wgrad_overlap_exclusive",
                 "delay_wgrad_compute and overlap_dispatch_backward_with_experts_wgrad are mutually exclusive; use only one "
                 "(transformer_config.py:2793)");
  }
  // ep_overlap_early_attn_memory_release needs the EP overlap (transformer_config.py:2798-2802)
  if (m.ep_overlap_early_attn_memory_release && !m.overlap_moe_expert_parallel_comm)
    sink.error("model.ep_overlap_early_attn_memory_release", "early_attn_release_needs_ep_overlap",
               "overlap_moe_expert_parallel_comm must be enabled when enabling ep_overlap_early_attn_memory_release "
               "(transformer_config.py:2799)");
  // NCCL EP under the EP overlap (transformer_config.py:2742-2760)
  if (m.overlap_moe_expert_parallel_comm && m.moe_token_dispatcher_type == Dispatcher::flex && m.moe_flex_dispatcher_backend == "ncclep") {
    if (m.fine_grained_activation_offloading && offloads(m, "expert_fc1"))
      sink.error("model.offload_modules", "ncclep_ep_overlap_offload",
                 "overlap_moe_expert_parallel_comm with ncclep does not support offloading 'expert_fc1' (transformer_config.py:2755)");
    else if (!m.moe_ncclep_static_shape)
      sink.warning("model.moe_ncclep_static_shape", "ncclep_ep_overlap_offload",
                   "overlap_moe_expert_parallel_comm with ncclep and moe_ncclep_static_shape=False: a device-to-host sync "
                   "serializes the 1F1B overlap (transformer_config.py:2748)");
  }
}

}  // namespace peakcast::model::detail
