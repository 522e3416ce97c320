#!/usr/bin/env python3
"""Write calibration/harness/corpus.json (the measured case list). Pure Python.

The defaults and the base models are here; the cases are built by corpus_cases_a.py (with add, sel,
full) and corpus_cases_b.py, imported below in that order.

  python3 calibration/harness/make_corpus.py && python3 calibration/harness/corpus_lib.py
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

defaults = {
    "model": {
        "num_layers": 4,
        "transformer_impl": "local",
        "attention_backend": "unfused",
        "masked_softmax_fusion": False,
        "attention_softmax_in_fp32": False,
        "bf16": True,
        "params_dtype": "bf16",
        "pipeline_dtype": "bf16",
        "normalization": "RMSNorm",
        "gated_linear_unit": True,
        "activation_func": "silu",
        "add_bias_linear": False,
        "attention_dropout": 0.0,
        "hidden_dropout": 0.0,
        "position_embedding_type": "rope",
        "share_embeddings_and_output_weights": False,
        "make_vocab_size_divisible_by": 128,
        "tensor_model_parallel_size": 1,
        "pipeline_model_parallel_size": 1,
        "expert_model_parallel_size": 1,
        "context_parallel_size": 1,
        "sequence_parallel": False,
        "deallocate_pipeline_outputs": True,
        "recompute_granularity": None,
    },
    "train": {"micro_batch_size": 1, "global_batch_size": 2},
    "optimizer": {"optimizer": "adam", "implementation": "torch_adamw", "lr": 0.0001,
                  "weight_decay": 0.1, "clip_grad": 1.0, "bf16": True, "params_dtype": "bf16",
                  "use_distributed_optimizer": False},
    "ddp": {"grad_reduce_in_fp32": True, "overlap_grad_reduce": False,
            "use_distributed_optimizer": False},
    # The stack has no Transformer Engine; megatron_env.apply_all patches the local spec's gaps.
    "cluster": {"num_gpus": 1, "gpu": "h200-141gb", "transformer_engine_available": False, "calibration_harness": True},
}

# Llama-3-8B width, 4 layers.
gqa8b = {"model": {"hidden_size": 4096, "ffn_hidden_size": 14336, "num_attention_heads": 32,
                   "num_query_groups": 8, "kv_channels": 128, "vocab_size": 128256,
                   "seq_length": 4096, "rotary_base": 500000}}
# 2B-class dense GQA used for the sequence/micro-batch scaling and the OOM case.
gqa2b = {"model": {"hidden_size": 2048, "ffn_hidden_size": 8192, "num_attention_heads": 16,
                   "num_query_groups": 4, "kv_channels": 128, "vocab_size": 32768,
                   "seq_length": 4096}}
# Moonlight-16B attention (MLA, no q_lora) with a dense SwiGLU FFN.
mla_base = {"multi_latent_attention": True, "hidden_size": 2048, "num_attention_heads": 16,
            "kv_lora_rank": 512, "qk_head_dim": 128, "qk_pos_emb_head_dim": 64,
            "v_head_dim": 128, "qk_layernorm": True, "rope_type": "rope", "kv_channels": 128,
            "vocab_size": 163840, "seq_length": 4096, "rotary_base": 50000}
# Without q_lora the local spec rejects a q_layernorm (Megatron asks for a fused norm+linear),
# and qk_layernorm switches both q and kv norms: the no-q_lora models run with qk_layernorm off.
mla_noq = {"model": dict(mla_base, q_lora_rank=None, qk_layernorm=False, ffn_hidden_size=11264)}
mla_q = {"model": dict(mla_base, q_lora_rank=1536, ffn_hidden_size=11264)}
# Moonlight-16B, 4 layers: layer 1 dense (F=11264), layers 2-4 MoE 64 experts top-6 with a shared
# expert, alltoall dispatcher.
moonlight4 = {"model": dict(mla_base, q_lora_rank=None, qk_layernorm=False, ffn_hidden_size=11264,
                            num_moe_experts=64, moe_ffn_hidden_size=1408, moe_router_topk=6,
                            moe_shared_expert_intermediate_size=2816,
                            moe_layer_freq=[0, 1, 1, 1], moe_token_dispatcher_type="alltoall",
                            moe_router_load_balancing_type="aux_loss", moe_aux_loss_coeff=0.001,
                            moe_grouped_gemm=False)}
# GQA + MoE (16 experts top-4, every layer MoE), allgather dispatcher; with / without shared.
moe_gqa = {"model": dict(gqa2b["model"], num_moe_experts=16, moe_ffn_hidden_size=2048,
                         moe_router_topk=4, moe_layer_freq=1,
                         moe_token_dispatcher_type="allgather",
                         moe_router_load_balancing_type="aux_loss", moe_aux_loss_coeff=0.001,
                         moe_grouped_gemm=False)}
moe_gqa_shared = {"model": dict(moe_gqa["model"], moe_shared_expert_intermediate_size=4096)}

# Llama 3 70B width (the seed's historical FP8 study), layer count set per layout.
llama70b = {"model": {"hidden_size": 8192, "ffn_hidden_size": 28672, "num_attention_heads": 64,
                      "num_query_groups": 8, "kv_channels": 128, "vocab_size": 128256,
                      "seq_length": 4096, "rotary_base": 500000}}

# ---- families the corpus lacked (group "families", calibration/data/h200_families.jsonl) ----
# Qwen3-1.7B widths (hidden 2048, 16 heads / 8 KV groups, head dim 128, FFN 6144, vocab 151936,
# rope base 1e6) with per-head q/k RMSNorm (qk_layernorm), SwiGLU, untied, 6 layers.
qwen3 = {"model": {"hidden_size": 2048, "ffn_hidden_size": 6144, "num_attention_heads": 16,
                   "num_query_groups": 8, "kv_channels": 128, "vocab_size": 151936,
                   "seq_length": 4096, "rotary_base": 1000000, "qk_layernorm": True,
                   "num_layers": 6}}
# gqa2b with a non-gated GELU MLP, no biases (RMSNorm, RoPE).
dense_gelu = {"model": dict(gqa2b["model"], gated_linear_unit=False, activation_func="gelu")}
# gqa2b in fp16 with dynamic loss scaling (Megatron's Float16OptimizerWithFloat16Params and its
# DynamicGradScaler; optimizer.loss_scale unset = dynamic).
fp16_gqa2b = {"model": dict(gqa2b["model"], bf16=False, fp16=True, params_dtype="fp16",
                            pipeline_dtype="fp16"),
              "optimizer": {"bf16": False, "fp16": True, "params_dtype": "fp16"}}
# GPT-3 2.7B widths (hidden 2560, 32 heads of 80, MHA, FFN 10240, GPT-2 vocabulary 50257 padded to
# 50304), LayerNorm, GELU without gating, biases, learned absolute positions, tied embeddings; 6
# layers at sequence 2048, micro-batch 4 (the shape issue #23 reports).
gpt3 = {"model": {"hidden_size": 2560, "ffn_hidden_size": 10240, "num_attention_heads": 32,
                  "num_query_groups": 32, "kv_channels": 80, "vocab_size": 50304,
                  "seq_length": 2048, "num_layers": 6, "normalization": "LayerNorm",
                  "gated_linear_unit": False, "activation_func": "gelu", "add_bias_linear": True,
                  "position_embedding_type": "learned_absolute",
                  "share_embeddings_and_output_weights": True},
        "train": {"micro_batch_size": 4, "global_batch_size": 8}}

models = {"llama70b": llama70b, "gqa8b": gqa8b, "gqa2b": gqa2b, "mla_noq": mla_noq, "mla_q": mla_q,
          "moonlight4": moonlight4, "moe_gqa": moe_gqa, "moe_gqa_shared": moe_gqa_shared,
          "qwen3": qwen3, "dense_gelu": dense_gelu, "fp16_gqa2b": fp16_gqa2b, "gpt3": gpt3}

# The case list: corpus_cases_a builds it (and defines add, sel, full and the layout dicts that
# make_timing_corpus.py reads as mc.<name>); importing corpus_cases_b appends the later groups.
from corpus_cases_a import (add, cases, ep2, ep8, full, llama_layout, moonlight27, multi,  # noqa: E402,F401
                            pp2, seedlike, sel, tp2sp)
import corpus_cases_b  # noqa: E402,F401


if __name__ == "__main__":
    with open(os.path.join(HERE, "corpus.json"), "w") as f:
        json.dump({"defaults": defaults, "models": models, "cases": cases}, f, indent=1)
        f.write("\n")
    print(len(cases), "case entries written")
