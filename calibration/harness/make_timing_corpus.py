#!/usr/bin/env python3
"""Write calibration/harness/timing_corpus.json: the step-time cases (issue 4). Pure Python.

  python3 calibration/harness/make_timing_corpus.py

Two families, eight iterations each (iterations 3-8 are steady state):
- "timing": the memory corpus's recompute-policy cases at full size, so each policy's
  forward-backward overhead over its control is measured with repetitions, not one iteration.
- "timing_tiny": the same models shrunk until the GPU work is negligible (hidden 256, sequence
  256, same layer, expert and op structure). Their forward-backward time is the host's
  per-op cost (Python, autograd, kernel launches), which bounds small and launch-bound modules.
- "timing_multi": real 2-GPU runs (TP2+SP, EP2 alltoall) for the communication terms.
"""
import json
import os

import make_corpus as mc

HERE = os.path.dirname(os.path.abspath(__file__))
ITER = 8

policy_cases = {
    "gqa8b": [("none", {}), ("core_attn", mc.sel("core_attn")), ("mlp", mc.sel("mlp")),
              ("layernorm", mc.sel("layernorm")), ("core_attn_mlp", mc.sel("core_attn", "mlp")),
              ("full_uniform_1", mc.full("uniform", 1)), ("full_block_2", mc.full("block", 2))],
    "mla_noq": [("none", {}), ("core_attn", mc.sel("core_attn")),
                ("mla_up_proj", mc.sel("mla_up_proj")), ("layernorm", mc.sel("layernorm"))],
    "mla_q": [("none", {}), ("mla_up_proj", mc.sel("mla_up_proj")),
              ("core_attn", mc.sel("core_attn"))],
    "moonlight4": [("none", {}), ("moe", mc.sel("moe")),
                   ("shared_experts", mc.sel("shared_experts")),
                   ("layernorm", mc.sel("layernorm")), ("core_attn", mc.sel("core_attn")),
                   ("mlp", mc.sel("mlp")), ("mla_up_proj_moe", mc.sel("mla_up_proj", "moe")),
                   ("full_uniform_1", mc.full("uniform", 1))],
    "moe_gqa": [("none", {}), ("moe", mc.sel("moe"))],
    "moe_gqa_shared": [("none", {}), ("shared_experts", mc.sel("shared_experts")),
                       ("moe_shared", mc.sel("moe", "shared_experts"))],
}

# Shrunk shapes: every width small, structure (layers, experts, top-k, layer pattern) unchanged.
tiny_dense = {"model.hidden_size": 256, "model.ffn_hidden_size": 512,
              "model.num_attention_heads": 4, "model.kv_channels": 64, "model.vocab_size": 1024,
              "model.seq_length": 256}
tiny_mla = {"model.hidden_size": 256, "model.ffn_hidden_size": 512,
            "model.num_attention_heads": 4, "model.kv_lora_rank": 64, "model.qk_head_dim": 32,
            "model.qk_pos_emb_head_dim": 16, "model.v_head_dim": 32, "model.kv_channels": 32,
            "model.vocab_size": 1024, "model.seq_length": 256}
tiny = {"gqa8b": dict(tiny_dense, **{"model.num_query_groups": 2}),
        "mla_noq": tiny_mla,
        "mla_q": dict(tiny_mla, **{"model.q_lora_rank": 128}),
        "moonlight4": dict(tiny_mla, **{"model.moe_ffn_hidden_size": 128,
                                        "model.moe_shared_expert_intermediate_size": 256}),
        "moe_gqa": dict(tiny_dense, **{"model.num_query_groups": 2,
                                       "model.moe_ffn_hidden_size": 128}),
        "moe_gqa_shared": dict(tiny_dense, **{"model.num_query_groups": 2,
                                              "model.moe_ffn_hidden_size": 128,
                                              "model.moe_shared_expert_intermediate_size": 256})}

cases = []
for base, pols in policy_cases.items():
    for pol, s in pols:
        cases.append({"name": f"timing_{base}_{pol}", "group": "timing", "base": base,
                      "set": dict(s), "iterations": ITER})
for base, pols in policy_cases.items():
    for pol, s in pols:
        cases.append({"name": f"timing_tiny_{base}_{pol}", "group": "timing_tiny", "base": base,
                      "set": dict(tiny[base], **s), "iterations": ITER})
# The full-size MoE runs are host-bound and vary by tens of ms between iterations: measured
# again one case at a time on one GPU, sixteen iterations each (group "timing_moe_serial";
# device_timing_serial.sh timing_moe_serial). They still spread by 80-210 ms, so their records are kept
# apart in calibration/data/h200_timing_moe_serial.jsonl.
for base in ("moonlight4", "moe_gqa", "moe_gqa_shared"):
    for pol, s in policy_cases[base]:
        cases.append({"name": f"timing_serial_{base}_{pol}", "group": "timing_moe_serial", "base": base,
                      "set": dict(s), "iterations": 16})
# Checkpoint-region host cost: shrunk 16-layer models where each policy adds 32 regions per
# iteration (2 micro-batches), twenty iterations, one case at a time (device_timing_serial.sh timing_regions).
region_cases = {
    "gqa8b": [("none", {}), ("core_attn", mc.sel("core_attn")), ("mlp", mc.sel("mlp")),
              ("core_attn_mlp", mc.sel("core_attn", "mlp")), ("full_uniform_1", mc.full("uniform", 1)),
              ("full_uniform_4", mc.full("uniform", 4)), ("full_block_8", mc.full("block", 8))],
    "mla_noq": [("none", {}), ("core_attn", mc.sel("core_attn")), ("mla_up_proj", mc.sel("mla_up_proj")),
                ("mla_up_proj_core_attn", mc.sel("mla_up_proj", "core_attn"))],
}
for base, pols in region_cases.items():
    for pol, s in pols:
        cases.append({"name": f"timing_regions_{base}_{pol}", "group": "timing_regions", "base": base,
                      "set": dict(tiny[base], **{"model.num_layers": 16}, **s), "iterations": 20})
# The seed's Moonlight pair [mla_up_proj] / [mla_up_proj, mlp] (issue 4: +15.8 ms measured on H100 for
# adding mlp, which replays one dense MLP there): on mla_noq (Moonlight's attention and dense FFN width,
# 4 dense layers, 2 micro-batches) adding mlp replays 8 dense MLPs per iteration. Twenty iterations, one
# case at a time (group "timing_seedpair"), measured twice in alternation.
for rep in ("a", "b"):
    for pol, s in (("mla_up_proj", mc.sel("mla_up_proj")), ("mla_up_proj_mlp", mc.sel("mla_up_proj", "mlp"))):
        cases.append({"name": f"timing_seedpair_mla_noq_{pol}_{rep}", "group": "timing_seedpair", "base": "mla_noq",
                      "set": dict(s), "iterations": 20})
multi = [("tp2sp_gqa8b_none", "gqa8b", dict(mc.tp2sp)),
         ("tp2sp_gqa8b_core_attn", "gqa8b", dict(mc.tp2sp, **mc.sel("core_attn"))),
         ("ep2_moonlight4_none", "moonlight4", dict(mc.ep2)),
         ("ep2_moonlight4_moe", "moonlight4", dict(mc.ep2, **mc.sel("moe")))]
for name, base, s in multi:
    cases.append({"name": f"timing_multi_{name}", "group": "timing_multi", "base": base,
                  "set": s, "gpus": 2, "iterations": ITER})

if __name__ == "__main__":
    with open(os.path.join(HERE, "timing_corpus.json"), "w") as f:
        json.dump({"defaults": mc.defaults, "models": mc.models, "cases": cases}, f, indent=1)
        f.write("\n")
    print(len(cases), "timing cases written")
