#pragma once
// The local stack's MoE layer without grouped GEMM (SequentialMLP) that test_sequential_mlp.cpp and
// test_routing_band.cpp build: 4096 tokens x top-6 = 24576 rows on the rank (EP8 under a single-rank harness:
// the all-to-all returns what it sends), hidden 2048 bf16, 64 experts over 8 ranks = 8 local experts of 3072 rows.
namespace peakcast::test {

inline const char* kSequentialMlpSpec = R"({
  "model": {"num_layers": 2, "moe_layer_freq": [0, 1], "hidden_size": 2048, "num_attention_heads": 16,
            "ffn_hidden_size": 11264, "num_moe_experts": 64, "moe_ffn_hidden_size": 1408, "moe_router_topk": 6,
            "moe_router_dtype": "fp32", "vocab_size": 163840, "seq_length": 4096, "bf16": true,
            "transformer_impl": "local", "attention_backend": "unfused", "moe_grouped_gemm": false,
            "expert_model_parallel_size": 8, "normalization": "RMSNorm", "gated_linear_unit": true,
            "activation_func": "silu", "add_bias_linear": false, "hidden_dropout": 0.0, "attention_dropout": 0.0,
            "position_embedding_type": "rope"},
  "train": {"micro_batch_size": 1, "global_batch_size": 16},
  "cluster": {"num_gpus": 8, "gpu": "h200-141gb", "transformer_engine_available": false}})";

}  // namespace peakcast::test
