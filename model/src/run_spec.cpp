#include "peakcast/model/run_spec.hpp"

#include <algorithm>
#include <array>

namespace peakcast::model {

namespace {
constexpr std::array<std::pair<RecomputeTag, const char*>, 8> kTagNames{{
    {RecomputeTag::core_attn, "core_attn"},
    {RecomputeTag::mla_up_proj, "mla_up_proj"},
    {RecomputeTag::layernorm, "layernorm"},
    {RecomputeTag::moe_act, "moe_act"},
    {RecomputeTag::mlp, "mlp"},
    {RecomputeTag::moe, "moe"},
    {RecomputeTag::shared_experts, "shared_experts"},
    {RecomputeTag::gdn_norm_out, "gdn_norm_out"},
}};

std::int64_t ceil_to(std::int64_t x, std::int64_t m) { return m <= 0 ? x : (x + m - 1) / m * m; }
}  // namespace

const char* to_string(RecomputeTag t) {
  for (const auto& [tag, name] : kTagNames)
    if (tag == t) return name;
  return "?";
}

std::optional<RecomputeTag> recompute_tag_from_string(const std::string& s) {
  for (const auto& [tag, name] : kTagNames)
    if (s == name) return tag;
  return std::nullopt;
}

bool has_tag(const Derived& d, RecomputeTag t) {
  return std::find(d.selective_tags.begin(), d.selective_tags.end(), t) != d.selective_tags.end();
}

Derived derive(const RunSpec& spec) {
  const ModelSpec& m = spec.model;
  Derived d;
  d.tp = m.tensor_model_parallel_size;
  d.pp = m.pipeline_model_parallel_size;
  d.vpp = m.virtual_pipeline_model_parallel_size.value_or(1);
  d.cp = m.context_parallel_size;
  d.ep = m.expert_model_parallel_size;
  d.etp = m.expert_tensor_parallel_size.value_or(d.tp);
  const std::int64_t world = spec.cluster.num_gpus;
  d.dp = std::max<std::int64_t>(1, world / std::max<std::int64_t>(1, d.tp * d.pp * d.cp));
  d.edp = std::max<std::int64_t>(1, world / std::max<std::int64_t>(1, d.etp * d.ep * d.pp));
  d.ffn = m.ffn_hidden_size.value_or(4 * m.hidden_size);
  d.kv_channels = m.kv_channels.value_or(m.num_attention_heads > 0 ? m.hidden_size / m.num_attention_heads : 0);
  d.query_groups = m.num_query_groups.value_or(m.num_attention_heads);
  d.moe_ffn = m.moe_ffn_hidden_size.value_or(d.ffn);
  // Megatron-LM pads to make_vocab_size_divisible_by * TP; Bridge pads only when should_pad_vocab.
  d.padded_vocab = m.should_pad_vocab ? ceil_to(m.vocab_size, m.make_vocab_size_divisible_by * d.tp) : m.vocab_size;
  const std::int64_t gbs = spec.train.global_batch_size.value_or(spec.train.micro_batch_size * d.dp);
  d.num_microbatches = std::max<std::int64_t>(1, gbs / std::max<std::int64_t>(1, spec.train.micro_batch_size * d.dp));
  d.act_dtype = m.bf16 ? DType::bf16 : (m.fp16 ? DType::fp16 : DType::fp32);
  d.param_dtype = d.act_dtype;
  d.distributed_optimizer = spec.optimizer.use_distributed_optimizer || spec.ddp.use_distributed_optimizer;
  // The DDP grad buffer dtype depends only on grad_reduce_in_fp32 (param_and_grad_buffer.py:924
  // group_params_for_buffers); OptimizerConfig.main_grads_dtype does not reach the buffer in MCore
  // (MLM's arguments.py:1169-1182 only uses it to set accumulate_allreduce_grads_in_fp32, and MB
  // copies grad_reduce_in_fp32 from MixedPrecisionConfig).
  d.grad_dtype = spec.ddp.grad_reduce_in_fp32 ? DType::fp32 : d.param_dtype;
  if (m.recompute_granularity == RecomputeGranularity::selective || m.moe_layer_recompute) {
    d.selective_tags = m.recompute_modules.value_or(std::vector<RecomputeTag>{RecomputeTag::core_attn});
    if (m.moe_layer_recompute && !has_tag(d, RecomputeTag::moe)) d.selective_tags.push_back(RecomputeTag::moe);
  }
  return d;
}

}  // namespace peakcast::model
