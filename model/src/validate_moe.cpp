// Mixture-of-experts rules of TransformerConfig.__post_init__ and the MoE layer constructors.
#include <sstream>

#include "validate_detail.hpp"

namespace peakcast::model::detail {

namespace {
std::string fmt_number(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}
}  // namespace

void validate_moe(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  const std::int64_t ep = m.expert_model_parallel_size;
  const std::int64_t etp = m.expert_tensor_parallel_size.value_or(m.tensor_model_parallel_size);

  if (ep > 1 && !m.num_moe_experts) {
    sink.error("model.expert_model_parallel_size", "ep_needs_experts",
               "num_moe_experts must be non None to use expert-parallel. (transformer_config.py:1469)");
  }
  // peakcast's routing load: the rows a rank receives are at most every routed row of its EP group.
  if (m.num_moe_experts &&
      (!(m.moe_routing_imbalance > 0.0) || m.moe_routing_imbalance > static_cast<double>(std::max<std::int64_t>(1, ep)))) {
    sink.error("model.moe_routing_imbalance", "routing_imbalance_range",
               "moe_routing_imbalance (" + fmt_number(m.moe_routing_imbalance) +
                   ") must be > 0 and at most expert_model_parallel_size (" + str(ep) +
                   "): a rank receives at most every routed row of its expert-parallel group");
  }
  if (!m.num_moe_experts && m.moe_routing_imbalance != 1.0) {
    sink.warning("model.moe_routing_imbalance", "routing_imbalance_without_experts",
                 "moe_routing_imbalance only applies to MoE layers; this model has none");
  }
  if (!m.num_moe_experts) {
    // moe_ffn_hidden_size without experts (transformer_config.py:1558-1574)
    if (m.moe_ffn_hidden_size) {
      const auto* freq = std::get_if<std::int64_t>(&m.moe_layer_freq);
      const auto* list = std::get_if<std::vector<std::int64_t>>(&m.moe_layer_freq);
      const bool mixed = (list && std::find(list->begin(), list->end(), 0) != list->end()) || (freq && *freq > 1);
      if (mixed)
        sink.warning("model.moe_ffn_hidden_size", "moe_ffn_without_experts",
                     "moe_ffn_hidden_size is set but num_moe_experts is None. This is expected for dense layers in a "
                     "mixed dense/MoE model; moe_ffn_hidden_size will be ignored for this layer. (transformer_config.py:1563)");
      else
        sink.error("model.moe_ffn_hidden_size", "moe_ffn_without_experts",
                   "moe_ffn_hidden_size is set but num_moe_experts is None. Please set num_moe_experts or remove "
                   "moe_ffn_hidden_size. (transformer_config.py:1571)");
    }
    return;
  }
  const std::int64_t experts = *m.num_moe_experts;
  if (m.moe_apply_probs_on_input && m.moe_router_topk != 1) {
    sink.error("model.moe_apply_probs_on_input", "probs_on_input_needs_top1",
               "`moe_apply_probs_on_input` only works with `moe_router_topk`=1. (experts.py:785, :1332)");
  }

  if (experts % ep != 0) {
    sink.error("model.num_moe_experts", "experts_divisible_by_ep",
               "num_moe_experts (" + str(experts) + ") must be divisible by expert_model_parallel_size (" + str(ep) +
                   "): each EP rank holds num_moe_experts / EP local experts (moe_layer.py:185)");
  }
  if (m.moe_router_topk > experts) {
    sink.error("model.moe_router_topk", "topk_exceeds_experts",
               "moe_router_topk (" + str(m.moe_router_topk) + ") is larger than num_moe_experts (" + str(experts) +
                   "): the router's torch.topk(logits, k=topk) would fail (router.py:308)");
  }
  if (const auto* list = std::get_if<std::vector<std::int64_t>>(&m.moe_layer_freq);
      list && !m.hybrid_override_pattern && static_cast<std::int64_t>(list->size()) != m.num_layers) {
    sink.error("model.moe_layer_freq", "moe_layer_freq_length",
               "Invalid length of moe_layer_pattern: " + std::to_string(list->size()) + ", expected " + str(m.num_layers) +
                   " (gpt_layer_specs.py:653)");
  }
  if (!m.moe_ffn_hidden_size) {
    sink.warning("model.moe_ffn_hidden_size", "moe_ffn_defaults_to_ffn",
                 "moe_ffn_hidden_size is not set, using ffn_hidden_size instead. (transformer_config.py:1556)");
  }
  // Shared expert overlap needs an all-to-all style dispatcher (transformer_config.py:1670-1676)
  if (m.moe_shared_expert_intermediate_size && m.moe_shared_expert_overlap &&
      m.moe_token_dispatcher_type == Dispatcher::allgather) {
    sink.error("model.moe_shared_expert_overlap", "shared_expert_overlap_needs_alltoall",
               "moe_shared_expert_overlap only works with alltoall or flex token dispatcher. (transformer_config.py:1674)");
  }
  // Capacity padding needs a capacity (transformer_config.py:1712-1716)
  if (m.moe_pad_expert_input_to_capacity && !m.moe_expert_capacity_factor) {
    sink.error("model.moe_pad_expert_input_to_capacity", "pad_to_capacity_needs_capacity_factor",
               "moe_expert_capacity_factor must be set to use moe_pad_expert_input_to_capacity (transformer_config.py:1714)");
  }
  // Expert biases only without expert TP (transformer_config.py:2305-2308)
  if (m.add_bias_linear && etp != 1) {
    sink.error("model.add_bias_linear", "moe_bias_needs_etp1", "Bias in Moe is only supported when ETP==1 (transformer_config.py:2307)");
  }
  // grouped GEMM experts are TE GroupedLinear or the legacy GroupedMLP; both exist. Nothing to reject.

  // EP all-to-all overlap (rule 29, transformer_config.py:2695-2740)
  if (m.overlap_moe_expert_parallel_comm) {
    const char* path = "model.overlap_moe_expert_parallel_comm";
    if (m.pipeline_model_parallel_size > 1 && !m.virtual_pipeline_model_parallel_size)
      sink.error(path, "ep_overlap_needs_vpp",
                 "If enabling EP A2A overlap, virtual_pipeline_model_parallel_size must be specified when "
                 "pipeline_model_parallel_size > 1 (transformer_config.py:2701)");
    if (ep <= 1)
      sink.error(path, "ep_overlap_needs_ep",
                 "overlap_moe_expert_parallel_comm is only supported with expert model parallelism (transformer_config.py:2707)");
    if (m.moe_token_dispatcher_type == Dispatcher::allgather)
      sink.error(path, "ep_overlap_needs_alltoall",
                 "overlap_moe_expert_parallel_comm is supported with alltoall/flex token dispatcher (transformer_config.py:2709)");
    if (!m.bf16 && !m.fp16)
      sink.error(path, "ep_overlap_needs_half_precision",
                 "overlap_moe_expert_parallel_comm is only supported with bf16 or fp16 model (transformer_config.py:2729)");
    if (m.moe_shared_expert_overlap)
      sink.error("model.moe_shared_expert_overlap", "ep_overlap_vs_shared_expert_overlap",
                 "disable moe_shared_expert_overlap when enabling overlap_moe_expert_parallel_comm (transformer_config.py:2733)");
    if (m.mtp_num_layers > 1)
      sink.error("model.mtp_num_layers", "ep_overlap_mtp_layers",
                 "MTP supports at most one layer when enabling overlap_moe_expert_parallel_comm. (transformer_config.py:2735)");
    // The MTP layer takes the last decoder layer's spec (gpt_builders.py:80-84); the overlap needs it MoE
    // (fine_grained_callables.py:40).
    const std::int64_t last = m.num_layers - 1;
    const auto* freq = std::get_if<std::int64_t>(&m.moe_layer_freq);
    const auto* list = std::get_if<std::vector<std::int64_t>>(&m.moe_layer_freq);
    const bool last_dense = !m.hybrid_override_pattern && last >= 0 &&
                            ((freq && *freq > 0 && last % *freq != 0) || (list && last < static_cast<std::int64_t>(list->size()) && (*list)[last] == 0));
    if (m.mtp_num_layers > 0 && last_dense)
      sink.error("model.mtp_num_layers", "ep_overlap_mtp_needs_moe",
                 "MTP layer in a2a overlap only supports MoE layer for now. (fine_grained_callables.py:40): the MTP layer copies "
                 "the last decoder layer, which moe_layer_freq makes dense");
  }
  // transformer_config.py:2818-2826 (numerics only)
  if (experts >= 32 && !m.moe_router_dtype_set)
    sink.warning("model.moe_router_dtype", "moe_router_dtype_recommended",
                 "Using a large number of experts (e.g. >=32) without fp32 routing. Consider enabling moe_router_dtype for better "
                 "numerical stability. (transformer_config.py:2825)");
  // delay_wgrad_compute rides on the EP overlap (rule 30, transformer_config.py:2775-2778)
  if (m.delay_wgrad_compute && !m.overlap_moe_expert_parallel_comm) {
    sink.error("model.delay_wgrad_compute", "delay_wgrad_needs_ep_overlap",
               "overlap_moe_expert_parallel_comm must be enabled when enabling delay_wgrad_compute (transformer_config.py:2777)");
  }
}

}  // namespace peakcast::model::detail
