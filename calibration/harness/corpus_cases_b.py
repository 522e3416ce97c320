"""The corpus's later case groups (variants, distribute, cross_entropy, etp, routing_tp, offload,
fp8_store, cuda_graphs, defer_wgrad, output_gate, probs_on_input, mlp_chunks, mtp_repeated, families),
appended, in this order, to corpus_cases_a.cases when imported. Split out of make_corpus.py (issue #25).
Pure Python.
"""
from corpus_cases_a import add, full, pp2, seedlike, sel, tp2sp


# ---- module and layout variants on gqa2b (group "variants", calibration/data/h200_variants.jsonl) ----
add("variants_gpt3_style", "variants", "gqa2b",
    set={"model.normalization": "LayerNorm", "model.gated_linear_unit": False,
         "model.activation_func": "gelu", "model.add_bias_linear": True})
add("variants_squared_relu", "variants", "gqa2b",
    set={"model.gated_linear_unit": False, "model.activation_func": "squared_relu"})
add("variants_bias_dropout", "variants", "gqa2b",
    set={"model.add_bias_linear": True, "model.hidden_dropout": 0.1})
add("variants_tied_embeddings", "variants", "gqa2b",
    set={"model.share_embeddings_and_output_weights": True})
add("variants_learned_absolute", "variants", "gqa2b",
    set={"model.position_embedding_type": "learned_absolute"})
add("variants_rotary_half", "variants", "gqa2b", set={"model.rotary_percent": 0.5})
add("variants_mtp1", "variants", "gqa2b", set={"model.mtp_num_layers": 1})
add("variants_mtp1_core_attn", "variants", "gqa2b", set=dict(sel("core_attn"), **{"model.mtp_num_layers": 1}))
pp2_first1 = dict(pp2, **{"model.num_layers_in_first_pipeline_stage": 1})
pp2_layout = dict(pp2, **{"model.pipeline_model_parallel_layout": "Ett|ttL"})
for r in (0, 1):
    add(f"variants_pp2_first_stage_1_layer_r{r}", "variants", "gqa2b", set=pp2_first1, fake_rank=r)
    add(f"variants_pp2_layout_r{r}", "variants", "gqa2b", set=pp2_layout, fake_rank=r)
    add(f"variants_pp2_vpp2_mbs2_r{r}", "variants", "gqa2b",
        set=dict(pp2, **{"model.virtual_pipeline_model_parallel_size": 2,
                         "train.micro_batch_size": 2, "train.global_batch_size": 16}), fake_rank=r)

# ---- distribute_saved_activations (group "distribute", calibration/data/h200_distribute.jsonl) ----
# Full recompute, TP2 without SP (the two exclude each other), gqa2b at sequence 16384 with 8 layers so
# the checkpointed group inputs ([16384, 2048] bf16, 67 MB a layer) are large. Each pair differs only in
# distribute_saved_activations; PP2 ranks 0 (pp 0) and 2 (pp 1) show whether a received input stays whole.
dist = dict(full("uniform", 1), **{"model.tensor_model_parallel_size": 2, "model.sequence_parallel": False,
                                   "model.seq_length": 16384, "model.num_layers": 8})
for on in (False, True):
    tag = "on" if on else "off"
    add(f"distribute_tp2_{tag}_r0", "distribute", "gqa2b",
        set=dict(dist, **{"model.distribute_saved_activations": on, "cluster.num_gpus": 2,
                          "train.global_batch_size": 2}), fake_rank=0)
    for r in (0, 2):
        add(f"distribute_tp2_pp2_{tag}_r{r}", "distribute", "gqa2b",
            set=dict(dist, **{"model.distribute_saved_activations": on, "model.pipeline_model_parallel_size": 2,
                              "cluster.num_gpus": 4, "train.global_batch_size": 8}), fake_rank=r)

# ---- cross-entropy implementations (group "cross_entropy", calibration/data/h200_cross_entropy.jsonl) ----
# gqa8b's 128256-token vocabulary at sequence 4096 makes the logits the largest tensors (fp32: 2.1 GB),
# so the loss sets the peak. Megatron-Bridge's GPT provider defaults to cross_entropy_loss_fusion=True
# with the native implementation (fused_cross_entropy.py, its helpers under jit_fuser = torch.compile);
# Megatron Core's default is the unfused vocab_parallel_cross_entropy. Each pair differs only there.
ce_fused = {"model.cross_entropy_loss_fusion": True, "model.cross_entropy_fusion_impl": "native"}
for fused in (False, True):
    tag = "fused" if fused else "unfused"
    extra = ce_fused if fused else {}
    add(f"ce_{tag}_gqa8b", "cross_entropy", "gqa8b", set=dict(extra))
    add(f"ce_{tag}_gqa8b_mbs2", "cross_entropy", "gqa8b",
        set=dict(extra, **{"train.micro_batch_size": 2, "train.global_batch_size": 4}))
    add(f"ce_{tag}_gqa8b_tp2_r0", "cross_entropy", "gqa8b",
        set=dict(extra, **{"model.tensor_model_parallel_size": 2, "cluster.num_gpus": 2}), fake_rank=0)
add("ce_fused_gqa8b_loss_recompute", "cross_entropy", "gqa8b", set=dict(ce_fused, **full("uniform", 1)))

# ---- expert tensor parallelism (group "etp", calibration/data/h200_etp.jsonl) ----
# moonlight4 (SequentialMLP experts, 64 experts, top-6, alltoall) with the expert MLPs split over ETP
# ranks: the dispatcher all-gathers the received tokens over the ETP group after the all-to-all and
# reduce-scatters the experts' output (token_dispatcher.py), and each expert's fc1/fc2 are split by ETP.
# Fake process groups, rank 0. ETP2 with TP2 + SP (the Megatron default ETP = TP), ETP1 at the same
# TP for comparison, ETP2 at TP1, the allgather dispatcher, and the moe recompute tag.
etp_base = dict(tp2sp, **{"model.expert_model_parallel_size": 2, "model.expert_tensor_parallel_size": 2,
                          "cluster.num_gpus": 4, "train.global_batch_size": 4})
add("etp_tp2sp_etp2_ep1_r0", "etp", "moonlight4",
    set=dict(tp2sp, **{"model.expert_model_parallel_size": 1, "model.expert_tensor_parallel_size": 2,
                       "cluster.num_gpus": 2, "train.global_batch_size": 2}), fake_rank=0)
add("etp_tp2sp_etp2_ep2_r0", "etp", "moonlight4", set=dict(etp_base), fake_rank=0)
add("etp_tp2sp_etp1_ep2_r0", "etp", "moonlight4",
    set=dict(tp2sp, **{"model.expert_model_parallel_size": 2, "model.expert_tensor_parallel_size": 1,
                       "cluster.num_gpus": 2, "train.global_batch_size": 2}), fake_rank=0)
add("etp_tp2sp_etp2_ep2_allgather_r0", "etp", "moonlight4",
    set=dict(etp_base, **{"model.moe_token_dispatcher_type": "allgather"}), fake_rank=0)
add("etp_tp2sp_etp2_ep2_moe_r0", "etp", "moonlight4", set=dict(etp_base, **sel("moe")), fake_rank=0)
add("etp_tp1_etp2_ep1_r0", "etp", "moonlight4",
    set={"model.expert_model_parallel_size": 1, "model.expert_tensor_parallel_size": 2,
         "cluster.num_gpus": 2, "train.global_batch_size": 2}, fake_rank=0)
# Session 6, second call: the fake process group's uneven all-gather used to leave the other ETP
# ranks' rows uninitialised (NaN after iteration 1 in the cases above); with it filled, the same
# layouts at micro-batch 2 (the forward-backward, not the first step, sets the peak) and lr 1e-8.
for name, s in (("etp_tp2sp_etp2_ep1", dict(tp2sp, **{"model.expert_model_parallel_size": 1,
                                                      "model.expert_tensor_parallel_size": 2})),
                ("etp_tp2sp_etp2_ep2", dict(etp_base)),
                ("etp_tp2sp_etp2_ep2_allgather", dict(etp_base, **{"model.moe_token_dispatcher_type": "allgather"})),
                ("etp_tp2sp_etp2_ep2_moe", dict(etp_base, **sel("moe")))):
    dp = s["cluster.num_gpus"] // 2
    add(f"{name}_mbs2_r0", "etp", "moonlight4",
        set=dict(s, **{"train.micro_batch_size": 2, "train.global_batch_size": 4 * dp, "optimizer.lr": 1e-8}),
        fake_rank=0)

# ---- router spread under TP2 + SP, real against fake (group "routing_tp", calibration/data/h200_routing_tp2sp.jsonl) ----
# The fake process group's SP all-gather repeats the rank's own shard; do its routers spread the load
# like real ranks? Real 2-GPU TP2 + SP EP2 runs (both ranks) and their fake twins, with the seed's
# sigmoid router (seedlike settings) and with the default softmax router, lr 1e-8.
tp2sp_ep2 = dict(tp2sp, **{"model.expert_model_parallel_size": 2, "model.expert_tensor_parallel_size": 1,
                           "train.global_batch_size": 2, "optimizer.lr": 1e-8})
seedlike_router = {k: v for k, v in seedlike.items() if k.startswith("model.moe_router")}
for name, s in (("sigmoid", dict(tp2sp_ep2, **seedlike_router)), ("softmax", dict(tp2sp_ep2))):
    add(f"routing_real_tp2sp_ep2_{name}", "routing_tp", "moonlight4", set=s, gpus=2, iterations=3)
    for r in (0, 1):
        add(f"routing_fake_tp2sp_ep2_{name}_r{r}", "routing_tp", "moonlight4", set=s, fake_rank=r, iterations=3)

# ---- fine-grained activation offloading (group "offload", calibration/data/h200_offload.jsonl) ----
# Megatron's module-level offload manager (pipeline_parallel/fine_grained_activation_offload.py) on
# gqa8b: each offload module alone, all five, micro-batch 2, and PP2 (fake process group, both stages).
def fgo(*mods):
    return {"model.fine_grained_activation_offloading": True, "model.offload_modules": list(mods)}
for mod in ("attn_norm", "qkv_linear", "core_attn", "attn_proj", "mlp_norm"):
    add(f"fgo_gqa8b_{mod}", "offload", "gqa8b", set=fgo(mod), iterations=3)
add("fgo_gqa8b_all", "offload", "gqa8b",
    set=fgo("attn_norm", "qkv_linear", "core_attn", "attn_proj", "mlp_norm"), iterations=3)
add("fgo_gqa8b_core_attn_mbs2", "offload", "gqa8b",
    set=dict(fgo("core_attn"), **{"train.micro_batch_size": 2, "train.global_batch_size": 4}), iterations=3)
for r in (0, 1):
    add(f"fgo_gqa8b_core_attn_pp2_r{r}", "offload", "gqa8b", set=dict(pp2, **fgo("core_attn")),
        fake_rank=r, iterations=3)

# ---- activation_func_fp8_input_store (group "fp8_store", calibration/data/h200_fp8_store.jsonl) ----
# The fused SwiGLU (bias_activation_fusion) saves its input as FP8 instead of bf16
# (fused_bias_swiglu.py:117, :195): dense gqa8b and the SequentialMLP experts of moonlight4, each with
# and without the FP8 store.
for base in ("gqa8b", "moonlight4"):
    for store in (False, True):
        add(f"fp8store_{base}_{'on' if store else 'off'}", "fp8_store", base,
            set=dict({"model.bias_activation_fusion": True, "model.activation_func_fp8_input_store": store},
                     **({"train.micro_batch_size": 2, "train.global_batch_size": 4} if base == "moonlight4" else {})),
            iterations=3)

# ---- CUDA graphs, Megatron's local implementation (group "cuda_graphs", calibration/data/h200_cuda_graphs.jsonl) ----
# cuda_graph_impl "local" (CudaGraphManager): iteration 1 runs eagerly and records each layer, the
# schedule captures the graphs at its end (create_cudagraphs, schedules.py:871) into one private
# pool, later iterations replay them. Checkpoints inside a capture run plain (random.py:677), so a
# recompute tag inside the captured layer holds its whole saved set in the pool. Whole-layer scope on
# gqa8b with two micro-batches: no recompute, core_attn, mlp; the attn scope with core_attn; and PP2
# (a graph per micro-batch in flight), both stages. (layernorm needs TE: CheckpointWithoutOutput.)
cg = {"model.cuda_graph_impl": "local", "model.cuda_graph_modules": [], "train.global_batch_size": 2}
add("cg_gqa8b_none", "cuda_graphs", "gqa8b", set=dict(cg), iterations=4)
for tag in ("core_attn", "mlp"):
    add(f"cg_gqa8b_{tag}", "cuda_graphs", "gqa8b", set=dict(cg, **sel(tag)), iterations=4)
add("cg_gqa8b_attn_scope_core_attn", "cuda_graphs", "gqa8b",
    set=dict(cg, **sel("core_attn"), **{"model.cuda_graph_modules": ["attn"]}), iterations=4)
# The graphs' static buffers against layers, micro-batch size and micro-batch count (none).
add("cg_gqa8b_2layers", "cuda_graphs", "gqa8b", set=dict(cg, **{"model.num_layers": 2}), iterations=3)
add("cg_gqa8b_8layers", "cuda_graphs", "gqa8b", set=dict(cg, **{"model.num_layers": 8}), iterations=3)
add("cg_gqa8b_mbs2", "cuda_graphs", "gqa8b",
    set=dict(cg, **{"train.micro_batch_size": 2, "train.global_batch_size": 4}), iterations=3)
add("cg_gqa8b_4mb", "cuda_graphs", "gqa8b", set=dict(cg, **{"train.global_batch_size": 4}), iterations=3)
# MLA layers (no q_lora) under the whole-layer capture: the static buffers of another layer kind, and
# mla_up_proj (CheckpointWithoutOutput, which stays active inside a capture: random.py:752-770).
add("cg_mla_noq_none", "cuda_graphs", "mla_noq", set=dict(cg), iterations=3)
add("cg_mla_noq_mla_up_proj", "cuda_graphs", "mla_noq", set=dict(cg, **sel("mla_up_proj")), iterations=3)
# Full-iteration graphs (FullCudaGraphWrapper around the whole forward-backward, as train() wraps it):
# cuda_graph_warmup_steps eager iterations, then one capture and replays. Checkpoints stay active in
# it (the wrapper sets no warm-up or capture flag): no recompute and core_attn, warm-up 1 and 2.
fi = {"model.cuda_graph_impl": "full_iteration", "model.cuda_graph_modules": [], "train.global_batch_size": 2}
add("cgfull_gqa8b_none_w1", "cuda_graphs", "gqa8b", set=dict(fi, **{"model.cuda_graph_warmup_steps": 1}), iterations=4)
add("cgfull_gqa8b_core_attn_w1", "cuda_graphs", "gqa8b",
    set=dict(fi, **sel("core_attn"), **{"model.cuda_graph_warmup_steps": 1}), iterations=4)
add("cgfull_gqa8b_none_w2", "cuda_graphs", "gqa8b", set=dict(fi, **{"model.cuda_graph_warmup_steps": 2}), iterations=5)
# Full recompute is allowed with full-iteration graphs only (transformer_config.py:2547-2551); and PP2.
add("cgfull_gqa8b_full_uniform_1_w1", "cuda_graphs", "gqa8b",
    set=dict(fi, **full("uniform", 1), **{"model.cuda_graph_warmup_steps": 1}), iterations=4)
for r in (0, 1):
    add(f"cgfull_gqa8b_pp2_w1_r{r}", "cuda_graphs", "gqa8b",
        set={**pp2, **fi, "train.global_batch_size": 4, "model.cuda_graph_warmup_steps": 1}, fake_rank=r, iterations=4)
for r in (0, 1):
    add(f"cg_gqa8b_pp2_r{r}", "cuda_graphs", "gqa8b", set={**pp2, **cg, "train.global_batch_size": 4},
        fake_rank=r, iterations=4)

# ---- gradient-accumulation fusion and the deferred output-layer wgrad (group "defer_wgrad",
# calibration/data/h200_defer.jsonl) ----
# Fusion (Apex stand-in + TE's dummy-wgrad cache, megatron_env gaps 5-6) hands autograd one cached
# dummy per linear shape instead of a weight gradient per GEMM. defer_embedding_wgrad_compute keeps
# the output layer's input and logits gradient of every micro-batch (or the first wgrad_deferral_limit)
# on the last stage until the pipeline flush, which all-gathers the inputs (SP) into two global
# buffers. gqa8b, PP2 with 8 micro-batches: both stages with fusion alone, the last with every
# micro-batch deferred and with 3; TP2 + SP + PP2's last stage deferred; PP1 with fusion.
fusion = {"model.gradient_accumulation_fusion": True}
pp2_8 = dict(pp2, **{"train.global_batch_size": 8}, **fusion)
defer = {"model.defer_embedding_wgrad_compute": True}
for r in (0, 1):
    add(f"defer_pp2_gqa8b_fusion_r{r}", "defer_wgrad", "gqa8b", set=dict(pp2_8), fake_rank=r, iterations=3)
add("defer_pp2_gqa8b_all_r1", "defer_wgrad", "gqa8b", set=dict(pp2_8, **defer), fake_rank=1, iterations=3)
add("defer_pp2_gqa8b_limit3_r1", "defer_wgrad", "gqa8b",
    set=dict(pp2_8, **defer, **{"model.wgrad_deferral_limit": 3}), fake_rank=1, iterations=3)
tp2sp_pp2_8 = dict(pp2_8, **{"model.tensor_model_parallel_size": 2, "model.sequence_parallel": True,
                             "cluster.num_gpus": 4})
add("defer_tp2sp_pp2_gqa8b_all_r2", "defer_wgrad", "gqa8b", set=dict(tp2sp_pp2_8, **defer), fake_rank=2, iterations=3)
add("defer_tp2sp_pp2_gqa8b_fusion_r2", "defer_wgrad", "gqa8b", set=dict(tp2sp_pp2_8), fake_rank=2, iterations=3)
add("fusion_gqa8b", "defer_wgrad", "gqa8b", set=dict(fusion), iterations=3)

# ---- gated attention (group "output_gate", calibration/data/h200_output_gate.jsonl) ----
# attention_output_gate: linear_qkv also projects a query-sized gate and the core output is scaled by
# its sigmoid (torch.compile'd _apply_output_gate) before linear_proj. gqa8b (GQA, unfused core: V is
# expanded, so only the gate's saved view keeps the fused QKV output alive) with and without the gate,
# with core_attn (the gate sits outside that checkpoint), TP2 + SP rank 0 (fake process group) and
# micro-batch 2.
gate = {"model.attention_output_gate": True}
add("gate_gqa8b_off", "output_gate", "gqa8b", set={}, iterations=3)
add("gate_gqa8b_on", "output_gate", "gqa8b", set=dict(gate), iterations=3)
add("gate_gqa8b_on_core_attn", "output_gate", "gqa8b", set=dict(gate, **sel("core_attn")), iterations=3)
add("gate_gqa8b_on_tp2sp_r0", "output_gate", "gqa8b",
    set=dict(gate, **{"model.tensor_model_parallel_size": 2, "model.sequence_parallel": True,
                      "cluster.num_gpus": 2}), fake_rank=0, iterations=3)
add("gate_gqa8b_on_mbs2", "output_gate", "gqa8b",
    set=dict(gate, **{"train.micro_batch_size": 2, "train.global_batch_size": 4}), iterations=3)
# TP8: one query group per rank, where the gate's reshape can stay a view of the fused QKV output.
tp8sp = {"model.tensor_model_parallel_size": 8, "model.sequence_parallel": True, "cluster.num_gpus": 8,
         "model.make_vocab_size_divisible_by": 16}
add("gate_gqa8b_off_tp8sp_r0", "output_gate", "gqa8b", set=dict(tp8sp), fake_rank=0, iterations=3)
add("gate_gqa8b_on_tp8sp_r0", "output_gate", "gqa8b", set=dict(gate, **tp8sp), fake_rank=0, iterations=3)

# ---- router probabilities on the experts' input (group "probs_on_input", calibration/data/h200_probs_on_input.jsonl) ----
# moe_apply_probs_on_input (top-1 only): SequentialMLP scales its rows by the fp32 probabilities before
# fc1 (experts.py:1329-1338), the multiply saving the unscaled rows. moe_gqa at top-1 with pre-softmax
# (Megatron's top-1 softmax rule), off and on, on at micro-batch 2 and under the moe tag.
top1 = {"model.moe_router_topk": 1, "model.moe_router_pre_softmax": True}
pin = {"model.moe_apply_probs_on_input": True}
add("probsin_moe_gqa_off", "probs_on_input", "moe_gqa", set=dict(top1), iterations=3)
add("probsin_moe_gqa_on", "probs_on_input", "moe_gqa", set=dict(top1, **pin), iterations=3)
add("probsin_moe_gqa_on_mbs2", "probs_on_input", "moe_gqa",
    set=dict(top1, **pin, **{"train.micro_batch_size": 2, "train.global_batch_size": 4}), iterations=3)
add("probsin_moe_gqa_on_moe", "probs_on_input", "moe_gqa", set=dict(top1, **pin, **sel("moe")), iterations=3)
# Second call, predicted before it ran: the fused weighted SwiGLU (bias_activation_fusion) saves its probs
# and input whatever their grad, so there the unscaled rows are an extra block per layer; and EP2 alltoall.
fused = {"model.bias_activation_fusion": True}
add("probsin_moe_gqa_fused_off", "probs_on_input", "moe_gqa", set=dict(top1, **fused), iterations=3)
add("probsin_moe_gqa_fused_on", "probs_on_input", "moe_gqa", set=dict(top1, **fused, **pin), iterations=3)
ep2a2a = {"model.expert_model_parallel_size": 2, "model.moe_token_dispatcher_type": "alltoall", "cluster.num_gpus": 2,
          "train.global_batch_size": 4}
add("probsin_moe_gqa_on_ep2_r0", "probs_on_input", "moe_gqa", set=dict(top1, **pin, **ep2a2a), fake_rank=0, iterations=3)
# Third call: the EP2 case's twin without the option (top-1 routing of an untrained router swings
# 10-8154 received rows a layer there).
add("probsin_moe_gqa_off_ep2_r0", "probs_on_input", "moe_gqa", set=dict(top1, **ep2a2a), fake_rank=0, iterations=3)

# ---- MLP chunks along the sequence (group "mlp_chunks", calibration/data/h200_mlp_chunks.jsonl) ----
# mlp_chunks_for_training (transformer_layer.py:857-905): the MLP / MoE layer runs on sequence chunks
# of the pre-MLP norm output and the outputs are concatenated. gqa8b with 4 chunks (and its twin with
# none), TP2 + SP rank 0, under the mlp tag (which takes precedence: no chunks), under full uniform 1;
# moonlight4 (MoE, SequentialMLP) with 2 chunks.
ch4 = {"model.mlp_chunks_for_training": 4}
add("chunks_gqa8b_1", "mlp_chunks", "gqa8b", set={}, iterations=3)
add("chunks_gqa8b_4", "mlp_chunks", "gqa8b", set=dict(ch4), iterations=3)
add("chunks_gqa8b_4_tp2sp_r0", "mlp_chunks", "gqa8b",
    set=dict(ch4, **{"model.tensor_model_parallel_size": 2, "model.sequence_parallel": True, "cluster.num_gpus": 2}),
    fake_rank=0, iterations=3)
add("chunks_gqa8b_4_mlp", "mlp_chunks", "gqa8b", set=dict(ch4, **sel("mlp")), iterations=3)
add("chunks_gqa8b_4_full_uniform_1", "mlp_chunks", "gqa8b", set=dict(ch4, **full("uniform", 1)), iterations=3)
add("chunks_moonlight4_2", "mlp_chunks", "moonlight4", set={"model.mlp_chunks_for_training": 2}, iterations=3)
add("chunks_moonlight4_1", "mlp_chunks", "moonlight4", set={}, iterations=3)
# Where the chunks move the peak (the last layer's MLP backward, predicted -0.14 GB with 4): a small
# vocabulary, sequence 1024 x micro-batch 4, twice gqa8b's FFN.
fusion = {"model.gradient_accumulation_fusion": True}
wide = {"model.vocab_size": 4096, "model.seq_length": 1024, "model.ffn_hidden_size": 28672,
        "train.micro_batch_size": 4, "train.global_batch_size": 8}
add("chunks_gqa8b_wide_1", "mlp_chunks", "gqa8b", set=dict(wide), iterations=3)
add("chunks_gqa8b_wide_4", "mlp_chunks", "gqa8b", set=dict(wide, **ch4), iterations=3)
# Second call, predicted before it ran: 2 chunks, and gradient-accumulation fusion with and without chunks.
add("chunks_gqa8b_wide_2", "mlp_chunks", "gqa8b", set=dict(wide, **{"model.mlp_chunks_for_training": 2}), iterations=3)
add("chunks_gqa8b_wide_1_fusion", "mlp_chunks", "gqa8b", set=dict(wide, **fusion), iterations=3)
add("chunks_gqa8b_wide_4_fusion", "mlp_chunks", "gqa8b", set=dict(wide, **ch4, **fusion), iterations=3)

# ---- one MTP layer for every depth (group "mtp_repeated", calibration/data/h200_mtp_repeated.jsonl) ----
# mtp_use_repeated_layer: the MTP block builds one layer and applies it mtp_num_layers times
# (multi_token_prediction.py:1771-1782, :1831). gqa2b with 2 and 3 depths, separate and repeated.
for depths in (2, 3):
    for rep in (False, True):
        add(f"mtprep_gqa2b_{depths}_{'repeated' if rep else 'separate'}", "mtp_repeated", "gqa2b",
            set={"model.mtp_num_layers": depths, "model.mtp_use_repeated_layer": rep}, iterations=3)
# Second call: two depths under core_attn (do the MTP layers take the decoder's selective checkpoints?).
add("mtprep_gqa2b_2_separate_core_attn", "mtp_repeated", "gqa2b",
    set=dict(sel("core_attn"), **{"model.mtp_num_layers": 2}), iterations=3)
add("mtprep_gqa2b_2_repeated_core_attn", "mtp_repeated", "gqa2b",
    set=dict(sel("core_attn"), **{"model.mtp_num_layers": 2, "model.mtp_use_repeated_layer": True}), iterations=3)
# Third call, predicted before it ran: MTP under full recompute (uniform 1 checkpoints each depth's
# projection and layer; block skips MTP recompute).
add("mtprep_gqa2b_1_full_uniform_1", "mtp_repeated", "gqa2b", set=dict(full("uniform", 1), **{"model.mtp_num_layers": 1}),
    iterations=3)
add("mtprep_gqa2b_2_full_uniform_1", "mtp_repeated", "gqa2b", set=dict(full("uniform", 1), **{"model.mtp_num_layers": 2}),
    iterations=3)
add("mtprep_gqa2b_1_full_block_2", "mtp_repeated", "gqa2b", set=dict(full("block", 2), **{"model.mtp_num_layers": 1}),
    iterations=3)

# ---- model families the corpus lacked (group "families", calibration/data/h200_families.jsonl) ----
# Issue #23: Qwen3-style dense (qk_layernorm), a non-gated GELU MLP without biases, fp16 with dynamic
# loss scaling, GPT-3 style (LayerNorm, GELU, biases, learned absolute positions, tied embeddings) and
# a long sequence that does not fit under any policy; each under several policies and PP2 (fake
# process group, both stages, 8 micro-batches). Predicted before they ran
# (calibration/data/predictions/families_predicted_before.jsonl). No `mlp` tag on add_bias_linear
# models: that case recurses without bound in the pinned revision.
fam_pp2 = dict(pp2)
# Qwen3-style, 6 layers.
add("fam_qwen3_none", "families", "qwen3", iterations=3)
add("fam_qwen3_core_attn", "families", "qwen3", set=sel("core_attn"), iterations=3)
add("fam_qwen3_mlp", "families", "qwen3", set=sel("mlp"), iterations=3)
add("fam_qwen3_core_attn_mlp", "families", "qwen3", set=sel("core_attn", "mlp"), iterations=3)
add("fam_qwen3_full_uniform_1", "families", "qwen3", set=full("uniform", 1), iterations=3)
add("fam_qwen3_full_block_2", "families", "qwen3", set=full("block", 2), iterations=3)
add("fam_qwen3_tp2sp_r0", "families", "qwen3",
    set=dict(tp2sp, **{"model.make_vocab_size_divisible_by": 64}), fake_rank=0, iterations=3)
for r in (0, 1):
    add(f"fam_qwen3_pp2_none_r{r}", "families", "qwen3", set=dict(fam_pp2), fake_rank=r, iterations=3)
    add(f"fam_qwen3_pp2_core_attn_r{r}", "families", "qwen3", set=dict(fam_pp2, **sel("core_attn")),
        fake_rank=r, iterations=3)
# Non-gated GELU MLP, no biases (gqa2b widths, 4 layers).
add("fam_gelu_none", "families", "dense_gelu", iterations=3)
add("fam_gelu_mlp", "families", "dense_gelu", set=sel("mlp"), iterations=3)
add("fam_gelu_core_attn_mlp", "families", "dense_gelu", set=sel("core_attn", "mlp"), iterations=3)
add("fam_gelu_full_uniform_1", "families", "dense_gelu", set=full("uniform", 1), iterations=3)
for r in (0, 1):
    add(f"fam_gelu_pp2_none_r{r}", "families", "dense_gelu", set=dict(fam_pp2), fake_rank=r, iterations=3)
    add(f"fam_gelu_pp2_mlp_r{r}", "families", "dense_gelu", set=dict(fam_pp2, **sel("mlp")), fake_rank=r,
        iterations=3)
# fp16 with dynamic loss scaling (gqa2b). At Megatron's initial_loss_scale 2**32 every early step
# overflows and is skipped (optimizer.py:820-822), so no Adam state is ever created in 3 iterations;
# the other cases start at 2**12, where the steps run.
ls12 = {"optimizer.initial_loss_scale": 4096.0}
add("fam_fp16_none_scale32", "families", "fp16_gqa2b", iterations=3)
add("fam_fp16_none", "families", "fp16_gqa2b", set=dict(ls12), iterations=3)
add("fam_fp16_core_attn", "families", "fp16_gqa2b", set=dict(ls12, **sel("core_attn")), iterations=3)
add("fam_fp16_mlp", "families", "fp16_gqa2b", set=dict(ls12, **sel("mlp")), iterations=3)
add("fam_fp16_full_uniform_1", "families", "fp16_gqa2b", set=dict(ls12, **full("uniform", 1)), iterations=3)
for r in (0, 1):
    add(f"fam_fp16_pp2_none_r{r}", "families", "fp16_gqa2b", set=dict(fam_pp2, **ls12), fake_rank=r,
        iterations=3)
# GPT-3 style, the shape of issue #23 (6 layers, hidden 2560, seq 2048, MBS 4, GBS 8); PP2 at GBS 32
# (8 micro-batches).
add("fam_gpt3_sel_empty", "families", "gpt3", set=sel(), iterations=3)
add("fam_gpt3_core_attn", "families", "gpt3", set=sel("core_attn"), iterations=3)
add("fam_gpt3_full_uniform_1", "families", "gpt3", set=full("uniform", 1), iterations=3)
for r in (0, 1):
    add(f"fam_gpt3_pp2_sel_empty_r{r}", "families", "gpt3",
        set=dict(fam_pp2, **sel(), **{"train.global_batch_size": 32}), fake_rank=r, iterations=3)
    add(f"fam_gpt3_pp2_core_attn_r{r}", "families", "gpt3",
        set=dict(fam_pp2, **sel("core_attn"), **{"train.global_batch_size": 32}), fake_rank=r, iterations=3)
# A long sequence that does not fit under any policy: Qwen3-style at sequence 32768 (each layer's
# unfused [16, 32768, 32768] bf16 scores are 32 GiB); peakcast at 80f9f68 predicts 178 GiB under full
# uniform 1 recompute (iteration 1: 171 GiB) against the H200's 139 GiB. The record carries the OOM phase.
oom32k = {"model.seq_length": 32768}
add("fam_oom_qwen3_seq32k_none", "families", "qwen3", set=dict(oom32k), iterations=3)
add("fam_oom_qwen3_seq32k_core_attn", "families", "qwen3", set=dict(oom32k, **sel("core_attn")), iterations=3)
add("fam_oom_qwen3_seq32k_core_attn_mlp", "families", "qwen3", set=dict(oom32k, **sel("core_attn", "mlp")),
    iterations=3)
add("fam_oom_qwen3_seq32k_full_uniform_1", "families", "qwen3", set=dict(oom32k, **full("uniform", 1)), iterations=3)
