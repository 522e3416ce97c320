// Shape rules: every dimension Megatron splits over a parallel group it splits with divide()
// (megatron/core/utils.py:561-565), which asserts divisibility when the module is built. Each rule
// here guards one split that param_count_layers.cpp and the graph builders make, so a spec that
// Megatron would refuse at model construction is refused here, naming the dimension.
#include "validate_detail.hpp"

namespace peakcast::model::detail {

namespace {

void divisible(RuleSink& sink, const std::string& path, const std::string& rule, const std::string& what,
               std::int64_t dim, const std::string& group, std::int64_t parts, const std::string& source) {
  if (parts <= 1 || dim % parts == 0) return;
  sink.error(path, rule,
             what + " (" + str(dim) + ") must be divisible by " + group + " (" + str(parts) + "): Megatron splits it with divide() (" +
                 source + ")");
}

// VocabParallelEmbedding and the output ColumnParallelLinear split the (padded) vocabulary over TP
// (tensor_parallel/layers.py:266 -> tensor_parallel/utils.py:118; layers.py:966).
void vocab_rules(const ModelSpec& m, const Derived& d, RuleSink& sink) {
  if (d.tp <= 1 || d.padded_vocab % d.tp == 0) return;
  sink.error("model.vocab_size", "vocab_divisible_by_tp",
             "the vocabulary (" + str(d.padded_vocab) + (m.should_pad_vocab ? ", padded" : ", unpadded") +
                 ") must be divisible by tensor_model_parallel_size (" + str(d.tp) +
                 "): VocabParallelEmbedding splits it with divide() (tensor_parallel/utils.py:118)" +
                 (m.should_pad_vocab ? "" : "; set model.should_pad_vocab true to pad it to make_vocab_size_divisible_by * TP"));
}

// Self-attention's fused linear_qkv is a ColumnParallelLinear of width q + 2 kv (+ gate)
// (attention.py:1679-1684, layers.py:966); linear_proj a RowParallelLinear over q (layers.py:1327).
void attention_rules(const ModelSpec& m, const Derived& d, RuleSink& sink) {
  if (m.multi_latent_attention) return;  // MLA's projections split over heads, checked by heads_divisible_by_tp
  const std::int64_t q = m.num_attention_heads * d.kv_channels;
  const std::int64_t qkv = q + 2 * d.query_groups * d.kv_channels + (m.attention_output_gate ? q : 0);
  divisible(sink, "model.kv_channels", "qkv_width_divisible_by_tp", "linear_qkv's output width", qkv,
            "tensor_model_parallel_size", d.tp, "tensor_parallel/layers.py:966");
}

// Dense MLPs: fc1 column-parallel, fc2 row-parallel over ffn_hidden_size (mlp.py:120-160). Shared
// experts are a dense MLP over the TP group (shared_experts.py); routed experts split over ETP
// (experts.py TEGroupedMLP).
void mlp_rules(const ModelSpec& m, const Derived& d, RuleSink& sink) {
  if (!all_layers_moe(m))
    divisible(sink, "model.ffn_hidden_size", "ffn_divisible_by_tp", "ffn_hidden_size", d.ffn, "tensor_model_parallel_size",
              d.tp, "tensor_parallel/layers.py:1327");
  if (!is_moe_model(m)) return;
  divisible(sink, "model.moe_ffn_hidden_size", "moe_ffn_divisible_by_etp", "moe_ffn_hidden_size", d.moe_ffn,
            "expert_tensor_parallel_size", d.etp, "tensor_parallel/layers.py:1327");
  if (m.moe_shared_expert_intermediate_size)
    divisible(sink, "model.moe_shared_expert_intermediate_size", "shared_expert_ffn_divisible_by_tp",
              "moe_shared_expert_intermediate_size", *m.moe_shared_expert_intermediate_size, "tensor_model_parallel_size", d.tp,
              "tensor_parallel/layers.py:1327");
}

// Mamba mixers split heads and groups over TP (ssm/mamba_mixer.py:244-273).
void mamba_rules(const ModelSpec& m, const Derived& d, RuleSink& sink) {
  if (!m.hybrid_override_pattern || m.hybrid_override_pattern->find('M') == std::string::npos) return;
  const std::int64_t d_inner = 2 * m.hidden_size;  // expand = 2 (mamba_mixer.py:180, :217)
  if (!m.mamba_num_heads && d_inner % m.mamba_head_dim != 0) {
    sink.error("model.mamba_head_dim", "mamba_d_inner_divisible_by_head_dim",
               "d_inner = 2 * hidden_size (" + str(d_inner) + ") must be divisible by mamba_head_dim (" + str(m.mamba_head_dim) +
                   ") when mamba_num_heads is not given. (mamba_mixer.py:249)");
    return;
  }
  const std::int64_t heads = m.mamba_num_heads.value_or(d_inner / m.mamba_head_dim);
  divisible(sink, "model.mamba_num_heads", "mamba_heads_divisible_by_tp", "the Mamba head count", heads,
            "tensor_model_parallel_size", d.tp, "mamba_mixer.py:261");
  divisible(sink, "model.mamba_num_groups", "mamba_groups_divisible_by_tp", "mamba_num_groups", m.mamba_num_groups,
            "tensor_model_parallel_size", d.tp, "mamba_mixer.py:269");
  divisible(sink, "model.mamba_num_heads", "mamba_heads_divisible_by_groups", "the Mamba head count", heads, "mamba_num_groups",
            m.mamba_num_groups, "mamba_mixer.py:273");
  if (m.fp8 && (2 * heads * m.mamba_head_dim + 2 * m.mamba_num_groups * m.mamba_state_dim + heads) % 16 != 0)
    sink.error("model.fp8", "mamba_fp8_in_proj_alignment",
               "For FP8, the innermost dimension of the Mamba layer input projection output tensor must be a multiple of 16. "
               "(mamba_mixer.py:253)");
}

// MTP's eh_proj is a ColumnParallelLinear 2h -> h (multi_token_prediction.py:1000-1014).
void mtp_rules(const ModelSpec& m, const Derived& d, RuleSink& sink) {
  if (m.mtp_num_layers <= 0) return;
  divisible(sink, "model.hidden_size", "mtp_hidden_divisible_by_tp", "hidden_size (MTP eh_proj output)", m.hidden_size,
            "tensor_model_parallel_size", d.tp, "multi_token_prediction.py:1000");
}

}  // namespace

void validate_shapes(const RunSpec& spec, RuleSink& sink) {
  const Derived d = derive(spec);
  vocab_rules(spec.model, d, sink);
  attention_rules(spec.model, d, sink);
  mlp_rules(spec.model, d, sink);
  mamba_rules(spec.model, d, sink);
  mtp_rules(spec.model, d, sink);
}

}  // namespace peakcast::model::detail
