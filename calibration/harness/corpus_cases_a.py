"""The corpus's case builder (cases, add, sel, full) and its first case groups: the recompute policies
on dense, MLA and MoE models, full recompute, scaling, precision, OOM, the fake-process-group and real
2-GPU layouts, and the seed's Moonlight and Llama layouts. Split out of make_corpus.py (issue #25);
make_corpus.py writes corpus.json, corpus_cases_b.py appends the later groups. Pure Python.
"""

cases = []


def add(name, group, base, smoke=False, **kw):
    c = {"name": name, "group": group, "base": base}
    s = kw.pop("set", {})
    if s:
        c["set"] = s
    if smoke:
        c["smoke"] = True
    c.update(kw)
    cases.append(c)


def sel(*tags):
    return {"model.recompute_granularity": "selective", "model.recompute_modules": list(tags)}


def full(method, n):
    return {"model.recompute_granularity": "full", "model.recompute_method": method,
            "model.recompute_num_layers": n}


# ---- dense GQA (selective tags) -----------------------------------------------------------
add("dense_gqa8b_none", "dense", "gqa8b", smoke=True)
add("dense_gqa8b_sel_empty", "dense", "gqa8b", set=sel())
add("dense_gqa8b_core_attn", "dense", "gqa8b", set=sel("core_attn"))
add("dense_gqa8b_mlp", "dense", "gqa8b", set=sel("mlp"))
add("dense_gqa8b_layernorm", "dense", "gqa8b", set=sel("layernorm"))
add("dense_gqa8b_core_attn_mlp", "dense", "gqa8b", set=sel("core_attn", "mlp"))
add("dense_gqa8b_core_attn_layernorm_mlp", "dense", "gqa8b",
    set=sel("core_attn", "layernorm", "mlp"))
add("dense_gqa8b_softmax_fp32", "dense", "gqa8b",
    set={"model.attention_softmax_in_fp32": True})
add("dense_gqa8b_dropout", "dense", "gqa8b",
    set={"model.attention_dropout": 0.1, "model.hidden_dropout": 0.1})
add("dense_gqa8b_dropout_core_attn", "dense", "gqa8b",
    set=dict(sel("core_attn"), **{"model.attention_dropout": 0.1, "model.hidden_dropout": 0.1}))

# ---- MLA ------------------------------------------------------------------------------------
add("mla_noq_none", "mla", "mla_noq")
add("mla_noq_core_attn", "mla", "mla_noq", set=sel("core_attn"))
add("mla_noq_mla_up_proj", "mla", "mla_noq", smoke=True, set=sel("mla_up_proj"))
add("mla_noq_layernorm", "mla", "mla_noq", set=sel("layernorm"))
add("mla_noq_up_proj_core_attn_layernorm_mlp", "mla", "mla_noq",
    set=sel("mla_up_proj", "core_attn", "layernorm", "mlp"))
add("mla_q_none", "mla", "mla_q")
add("mla_q_mla_up_proj", "mla", "mla_q", set=sel("mla_up_proj"))
add("mla_q_core_attn", "mla", "mla_q", set=sel("core_attn"))

# ---- MoE ------------------------------------------------------------------------------------
add("moe_moonlight4_none", "moe", "moonlight4", smoke=True)
add("moe_moonlight4_moe", "moe", "moonlight4", set=sel("moe"))
add("moe_moonlight4_shared_experts", "moe", "moonlight4", set=sel("shared_experts"))
add("moe_moonlight4_layernorm", "moe", "moonlight4", smoke=True, set=sel("layernorm"))
add("moe_moonlight4_core_attn", "moe", "moonlight4", set=sel("core_attn"))
add("moe_moonlight4_mlp", "moe", "moonlight4", set=sel("mlp"))
add("moe_moonlight4_mla_up_proj_moe", "moe", "moonlight4", set=sel("mla_up_proj", "moe"))
add("moe_moonlight4_allgather", "moe", "moonlight4",
    set={"model.moe_token_dispatcher_type": "allgather"})
add("moe_gqa_none", "moe", "moe_gqa")
add("moe_gqa_moe", "moe", "moe_gqa", set=sel("moe"))
add("moe_gqa_alltoall", "moe", "moe_gqa", set={"model.moe_token_dispatcher_type": "alltoall"})
add("moe_gqa_shared_none", "moe", "moe_gqa_shared")
add("moe_gqa_shared_shared_experts", "moe", "moe_gqa_shared", set=sel("shared_experts"))
add("moe_gqa_shared_moe_shared", "moe", "moe_gqa_shared", set=sel("moe", "shared_experts"))
# moe_act: rejected by Megatron without grouped GEMM (validation record, not a measurement).
add("validation_moe_act_without_grouped_gemm", "validation", "moonlight4", smoke=True,
    set=sel("moe_act"), expect="validation_error")

# ---- full recompute -----------------------------------------------------------------------
for method in ("uniform", "block"):
    for n in (1, 2, 4):
        add(f"full_gqa8b_{method}_{n}", "full_recompute", "gqa8b", set=full(method, n))
add("full_moonlight4_uniform_1", "full_recompute", "moonlight4", set=full("uniform", 1))
add("full_moonlight4_block_2", "full_recompute", "moonlight4", set=full("block", 2))

# ---- sequence length and micro-batch scaling (gqa2b) --------------------------------------
for s in (2048, 4096, 8192):
    add(f"scaling_gqa2b_seq{s}_mbs1", "scaling", "gqa2b", set={"model.seq_length": s})
for b in (2, 4):
    add(f"scaling_gqa2b_seq4096_mbs{b}", "scaling", "gqa2b",
        set={"train.micro_batch_size": b, "train.global_batch_size": 2 * b})
add("scaling_gqa2b_seq8192_mbs1_core_attn", "scaling", "gqa2b",
    set=dict(sel("core_attn"), **{"model.seq_length": 8192}))
add("scaling_gqa2b_seq4096_mbs4_core_attn", "scaling", "gqa2b",
    set=dict(sel("core_attn"), **{"train.micro_batch_size": 4, "train.global_batch_size": 8}))

# ---- precision / optimizer ------------------------------------------------------------------
for fp32 in (True, False):
    for dist in (True, False):
        if fp32 and not dist:
            continue  # = dense_gqa8b_none
        add(f"precision_gqa8b_gradfp32_{str(fp32).lower()}_distopt_{str(dist).lower()}",
            "precision", "gqa8b",
            set={"ddp.grad_reduce_in_fp32": fp32, "optimizer.use_distributed_optimizer": dist})

# ---- out of memory on the 141 GB H200 -----------------------------------------------------
add("oom_gqa2b_seq8192_mbs16", "oom", "gqa2b",
    set={"model.seq_length": 8192, "train.micro_batch_size": 16, "train.global_batch_size": 16})
add("oom_gqa8b_seq8192_mbs4_softmax_fp32", "oom", "gqa8b",
    set={"model.seq_length": 8192, "model.attention_softmax_in_fp32": True,
         "train.micro_batch_size": 4, "train.global_batch_size": 4})

# ---- multi-rank layouts through the fake process group ----------------------------------
tp2sp = {"model.tensor_model_parallel_size": 2, "model.sequence_parallel": True,
         "cluster.num_gpus": 2}
add("layout_fake_tp2sp_gqa8b_none_r0", "layout", "gqa8b", smoke=True, set=tp2sp, fake_rank=0)
add("layout_fake_tp2sp_gqa8b_core_attn_r0", "layout", "gqa8b",
    set=dict(tp2sp, **sel("core_attn")), fake_rank=0)
ep8 = {"model.expert_model_parallel_size": 8, "cluster.num_gpus": 8,
       "train.global_batch_size": 16, "optimizer.use_distributed_optimizer": True}
add("layout_fake_ep8_moonlight4_none_r0", "layout", "moonlight4", smoke=True, set=ep8,
    fake_rank=0)
add("layout_fake_ep8_moonlight4_moe_r0", "layout", "moonlight4", set=dict(ep8, **sel("moe")),
    fake_rank=0)
add("layout_fake_ep8_moonlight4_allgather_r0", "layout", "moonlight4",
    set=dict(ep8, **{"model.moe_token_dispatcher_type": "allgather"}), fake_rank=0)
pp2 = {"model.pipeline_model_parallel_size": 2, "cluster.num_gpus": 2,
       "train.global_batch_size": 8}
for r in (0, 1):
    add(f"layout_fake_pp2_gqa8b_none_r{r}", "layout", "gqa8b", smoke=(r == 1), set=pp2,
        fake_rank=r)
    add(f"layout_fake_pp2_gqa8b_core_attn_r{r}", "layout", "gqa8b",
        set=dict(pp2, **sel("core_attn")), fake_rank=r)
    add(f"layout_fake_pp2_vpp2_gqa8b_none_r{r}", "layout", "gqa8b", smoke=(r == 0),
        set=dict(pp2, **{"model.virtual_pipeline_model_parallel_size": 2}), fake_rank=r)

# ---- real 2-GPU runs and their fake-process-group twins ----------------------------------
# (group "multi_gpu"; these go to calibration/data/h200_multi_gpu.jsonl)
ep2 = {"model.expert_model_parallel_size": 2, "cluster.num_gpus": 2,
       "train.global_batch_size": 4, "optimizer.use_distributed_optimizer": True}
multi = [
    ("tp2sp_gqa8b_none", "gqa8b", dict(tp2sp)),
    ("tp2sp_gqa8b_core_attn", "gqa8b", dict(tp2sp, **sel("core_attn"))),
    ("tp2sp_gqa8b_full_uniform_1", "gqa8b", dict(tp2sp, **full("uniform", 1))),
    ("pp2_gqa8b_none", "gqa8b", dict(pp2)),
    ("pp2_gqa8b_core_attn", "gqa8b", dict(pp2, **sel("core_attn"))),
    ("ep2_moonlight4_none", "moonlight4", dict(ep2)),
    ("ep2_moonlight4_moe", "moonlight4", dict(ep2, **sel("moe"))),
]
for name, base, s in multi:
    add(f"multi_real_{name}", "multi_gpu", base, set=s, gpus=2, smoke=(name == "tp2sp_gqa8b_none"))
    for r in (0, 1):
        add(f"multi_fake_{name}_r{r}", "multi_gpu", base, set=s, fake_rank=r)

# ---- the seed's Moonlight layout on the local stack (fake process group, rank 0) -------------
# TP2 SP EP8 on 8 GPUs (DP4, EDP1), one micro-batch, bf16 grads, overlapped shared experts and
# the DeepSeek-V3 router (sigmoid, expert bias, fp32, seq_aux_loss): every mechanism of the seed
# study except the Transformer Engine modules (group "seedlike", calibration/data/h200_seedlike.jsonl).
seedlike = dict(tp2sp, **{"model.expert_model_parallel_size": 8,
                          "model.expert_tensor_parallel_size": 1, "cluster.num_gpus": 8,
                          "train.global_batch_size": 4,
                          "optimizer.use_distributed_optimizer": True,
                          "ddp.use_distributed_optimizer": True, "ddp.grad_reduce_in_fp32": False,
                          "model.moe_shared_expert_overlap": True,
                          "model.moe_router_score_function": "sigmoid",
                          "model.moe_router_enable_expert_bias": True,
                          "model.moe_router_dtype": "fp32", "model.moe_router_pre_softmax": True,
                          "model.moe_router_topk_scaling_factor": 2.446,
                          "model.moe_router_load_balancing_type": "seq_aux_loss",
                          # A learning rate that leaves the router as initialised: the fake
                          # process group's emulated tensor-parallel updates let routing collapse
                          # onto one rank's experts within two steps at 1e-4.
                          "optimizer.lr": 1e-8})
add("seedlike_moonlight4_none_r0", "seedlike", "moonlight4", set=seedlike, fake_rank=0, iterations=5)
add("seedlike_moonlight4_no_overlap_r0", "seedlike", "moonlight4",
    set=dict(seedlike, **{"model.moe_shared_expert_overlap": False}), fake_rank=0, iterations=5)
add("seedlike_moonlight4_mla_up_proj_r0", "seedlike", "moonlight4",
    set=dict(seedlike, **sel("mla_up_proj")), fake_rank=0, iterations=5)
add("seedlike_moonlight4_core_attn_r0", "seedlike", "moonlight4",
    set=dict(seedlike, **sel("core_attn")), fake_rank=0, iterations=5)
add("seedlike_moonlight4_mlp_r0", "seedlike", "moonlight4",
    set=dict(seedlike, **sel("mlp")), fake_rank=0, iterations=5)
add("seedlike_moonlight4_none_r1", "seedlike", "moonlight4", set=seedlike, fake_rank=1, iterations=5)
# Where a TP2 + SP difference comes from: MLA alone, MoE without expert parallelism.
add("seedlike_mla_noq_tp2sp_r0", "seedlike", "mla_noq",
    set=dict(tp2sp, **{"optimizer.lr": 1e-8}), fake_rank=0, iterations=3)
add("seedlike_mla_noq_tp1_r0", "seedlike", "mla_noq", set={"optimizer.lr": 1e-8}, fake_rank=0,
    iterations=3)
add("seedlike_moonlight4_tp2sp_ep1_r0", "seedlike", "moonlight4",
    set=dict(tp2sp, **{"model.expert_tensor_parallel_size": 1, "optimizer.lr": 1e-8}),
    fake_rank=0, iterations=3)
add("seedlike_moonlight4_tp1_r0", "seedlike", "moonlight4",
    set=dict(seedlike, **{"model.tensor_model_parallel_size": 1, "model.sequence_parallel": False,
                          "train.global_batch_size": 8}), fake_rank=0, iterations=5)

# The seed's full Moonlight 16B (27 layers: 1 dense + 26 MoE) in its layout, rank 0 of TP2 EP8 on
# the local stack: the whole depth at the seed's shapes (iteration 1 is the comparable one; see above).
moonlight27 = dict(seedlike, **{"model.num_layers": 27, "model.moe_layer_freq": [0] + [1] * 26})
add("seedfull_moonlight27_none_r0", "seedlike", "moonlight4", set=moonlight27, fake_rank=0, iterations=2)
add("seedfull_moonlight27_mla_up_proj_r0", "seedlike", "moonlight4",
    set=dict(moonlight27, **sel("mla_up_proj")), fake_rank=0, iterations=2)
add("seedfull_moonlight27_core_attn_r0", "seedlike", "moonlight4",
    set=dict(moonlight27, **sel("core_attn")), fake_rank=0, iterations=2)

# The seed's Llama 3 70B layout on the local stack in bf16 (no FP8, no CUDA graphs, no TP overlap):
# all 80 layers, TP4 + SP, PP4, VPP5, DP2 with the distributed optimizer and bf16 grads, 16
# micro-batches, and the seed's variants PP8 (DP1), TP8 (DP1) and VPP10. Fake process group
# ranks: global rank = tp + 4 dp + 8 pp for TP4 DP2.
# Group "seedllama", calibration/data/h200_seedllama.jsonl.
llama_layout = dict(tp2sp, **{"model.tensor_model_parallel_size": 4,
                              "model.pipeline_model_parallel_size": 4,
                              "model.virtual_pipeline_model_parallel_size": 5,
                              "model.num_layers": 80, "cluster.num_gpus": 32,
                              "train.global_batch_size": 32,
                              "optimizer.use_distributed_optimizer": True,
                              "ddp.use_distributed_optimizer": True,
                              "ddp.grad_reduce_in_fp32": False, "optimizer.lr": 1e-8,
                              # 128256 = 2^8 x 501: unpadded at TP4 and TP8 (the harness builds
                              # the model at the vocabulary size it is given)
                              "model.make_vocab_size_divisible_by": 32})
for tags in (("core_attn",), ("mlp",), ("core_attn", "mlp")):
    for rank, pp in ((0, 0), (24, 3)):
        add(f"seedllama_tp4pp4vpp5_{'_'.join(tags)}_pp{pp}", "seedllama", "llama70b",
            set=dict(llama_layout, **sel(*tags)), fake_rank=rank, iterations=2)
add("seedllama_tp4pp8vpp5_core_attn_pp0", "seedllama", "llama70b",
    set=dict(llama_layout, **sel("core_attn"), **{"model.pipeline_model_parallel_size": 8}), fake_rank=0, iterations=2)
add("seedllama_tp8pp4vpp5_core_attn_pp0", "seedllama", "llama70b",
    set=dict(llama_layout, **sel("core_attn"), **{"model.tensor_model_parallel_size": 8}),
    fake_rank=0, iterations=2)
add("seedllama_tp4pp4vpp10_core_attn_pp0", "seedllama", "llama70b",
    set=dict(llama_layout, **sel("core_attn"), **{"model.virtual_pipeline_model_parallel_size": 10}), fake_rank=0, iterations=2)
