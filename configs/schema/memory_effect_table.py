"""Hand-written part of configs/schema/memory_effect.json (see classify_memory_effect.py).

One entry per accepted key: what it changes in Megatron Core 24bad8e6 / Bridge 600d069b, where
Megatron uses it (the use, not the declaration), and whether its schema default leaves memory as
peakcast assumes. Classes "simulated" and "rule_only" are decided mechanically by the script from
peakcast's sources; the table gives them a why/source (and, for rule_only, changes_memory).

Helpers:
  S(why, src)               simulated (the script checks it); src None -> the script looks up the first use
  R(why, src, changes)      rule_only; changes: does the key change training GPU memory
  U(why, src, inert=True)   not_simulated: changes training GPU memory (or refuses to run)
  N(why, src)               no_memory_effect
Paths: "mcore:" = Megatron-LM 24bad8e6 (megatron/...), "bridge:" = Megatron-Bridge 600d069b (src/...),
"peakcast:" = this repository.
"""

TABLE = {}


def _put(section, key, **entry):
    assert (section, key) not in TABLE, (section, key)
    TABLE[(section, key)] = entry


def S(section, key, why, src=None, inert=True):
    _put(section, key, **{"class": "simulated", "why": why, "source": src, "default_is_inert": inert, "changes_memory": True})


def R(section, key, why, src, changes, inert=True):
    _put(section, key, **{"class": "rule_only", "why": why, "source": src, "default_is_inert": inert, "changes_memory": changes})


def U(section, key, why, src, inert=True):
    _put(section, key, **{"class": "not_simulated", "why": why, "source": src, "default_is_inert": inert})


def N(section, key, why, src):
    _put(section, key, **{"class": "no_memory_effect", "why": why, "source": src, "default_is_inert": True})


M, O, D, T = "model", "optimizer", "ddp", "train"
TE = "mcore:megatron/core/extensions/transformer_engine.py"
TC = "mcore:megatron/core/transformer/transformer_config.py"
MPC = "mcore:megatron/core/model_parallel_config.py"
SCHED = "mcore:megatron/core/pipeline_parallel/schedules.py"
P2P = "mcore:megatron/core/pipeline_parallel/p2p_communication.py"
ROUTER = "mcore:megatron/core/transformer/moe/router.py"
EXPERTS = "mcore:megatron/core/transformer/moe/experts.py"
DISP = "mcore:megatron/core/transformer/moe/token_dispatcher.py"
ATTN = "mcore:megatron/core/transformer/attention.py"
MLA = "mcore:megatron/core/transformer/multi_latent_attention.py"
DSA = "mcore:megatron/core/transformer/experimental_attention_variant/dsa.py"
GPTP = "bridge:src/megatron/bridge/models/gpt_provider.py"
HYBP = "bridge:src/megatron/bridge/models/hybrid/hybrid_provider.py"
INF = "inference only: not built or not read in a training step"

# ============================================================================================
# model: ModelParallelConfig
# ============================================================================================
S(M, "tensor_model_parallel_size", "TP degree: shards weights and (with SP) activations")
U(M, "tensor_parallel_num_weight_shards",
  "GTP: >TP shards every weight tensor_parallel_num_weight_shards ways along out_features and re-gathers it per weight "
  "in forward and backward, so parameter/grad/optimizer bytes shrink by 1/GTP and per-weight all-gather buffers appear "
  "(world = TP*GTP*CP*DP). Note: Bridge 600d069b never passes gtp_remat_size to initialize_model_parallel (no match "
  "in src/ outside megatron_mimo), so under Bridge the GTP group may stay of size 1",
  f"{MPC}:512; mcore:megatron/core/tensor_parallel/generalized_tensor_parallelism.py:527")
R(M, "gtp_weight_remat_size",
  "derived from tensor_parallel_num_weight_shards in __post_init__; >1 is GTP weight sharding + per-weight "
  "rematerialisation (see tensor_parallel_num_weight_shards)",
  f"{MPC}:512; mcore:megatron/core/parallel_state.py:939", True)
N(M, "pipeline_model_parallel_comm_backend", "process-group backend of the PP p2p group (nccl or ucc); no tensor changes",
  "mcore:megatron/core/parallel_state.py:1244")
S(M, "pipeline_model_parallel_size", "PP degree: layers per stage, in-flight micro-batches")
S(M, "virtual_pipeline_model_parallel_size", "interleaved PP: model chunks per rank and warm-up depth")
S(M, "sequence_parallel", "SP: activations outside TP regions sharded over TP")
S(M, "context_parallel_size", "CP: sequence sharded over CP ranks")
U(M, "hierarchical_context_parallel_sizes",
  "group sizes of hierarchical CP (cp_comm_type a2a+p2p): the a2a level exchanges heads for sequence inside its "
  "sub-group, so attention-internal buffers differ from the p2p ring peakcast assumes; no effect unless cp_comm_type "
  "uses a2a+p2p", f"{TE}:2102")
U(M, "max_seqlen_per_dp_cp_rank",
  "with hybrid_context_parallel: the longest sub-sample a DPxCP rank is given, i.e. the tokens a rank processes per "
  "micro-batch", "mcore:megatron/core/datasets/data_schedule.py:46")
U(M, "hybrid_context_parallel",
  "dynamic (hybrid) CP: packed sub-samples of varying length are spread over DPxCP ranks per micro-batch, so tokens "
  "per rank are not seq_length/CP", f"{SCHED}:777")
S(M, "expert_model_parallel_size", "EP degree: local experts per rank")
S(M, "expert_tensor_parallel_size", "ETP degree for expert weights and dispatched rows")
U(M, "expert_tensor_parallel_num_weight_shards",
  "expert GTP: routed-expert weights sharded ETP*EGTP ways and re-gathered per weight in forward and backward (expert "
  "parameter/grad/optimizer bytes /EGTP, plus gather buffers)", f"{MPC}:519; mcore:megatron/core/parallel_state.py:1343")
U(M, "expert_gtp_weight_remat_size",
  "derived from expert_tensor_parallel_num_weight_shards in __post_init__; >1 selects expert GTP (expert process groups, "
  "weight sharding)", f"{MPC}:519; {TE}:1207")
N(M, "perform_initialization", "only whether init_method runs on freshly allocated weights", f"{TE}:418")
N(M, "use_cpu_initialization",
  "weights are created and initialised on the host, then moved to the device; after the model build the device holds "
  "the same parameters (only the build-time transient differs)", f"{TE}:407")
U(M, "params_dtype",
  "dtype modules create their weights in. With bf16/fp16, Float16Module casts every parameter (module.py:458-467), so "
  "steady-state parameter bytes follow bf16/fp16; but params_dtype stays the fallback of autocast_dtype "
  "(model_parallel_config.py:534), of Mamba's training SSM-state dtype (mamba_mixer.py:229) and, in fp32 training "
  "(bf16=fp16=false), the weights themselves stay in params_dtype",
  f"{TE}:404; mcore:megatron/core/transformer/module.py:463-464; mcore:megatron/core/ssm/mamba_mixer.py:229")
N(M, "timers", "callable: timing hooks installed by the training loop", f"{P2P}:438")
N(M, "finalize_model_grads_func", "callable installed by the training loop (grad all-reduce of embeddings/layernorms)", f"{SCHED}:845")
N(M, "grad_scale_func", "callable: loss scaling of the output grad (a scalar multiply)", f"{SCHED}:251")
N(M, "moe_grad_scale_func", "callable installed by the training loop; no allocation (no reader in megatron/core with config.)",
  f"{MPC}:200")
N(M, "mtp_grad_scale_func", "callable installed by the training loop; no allocation (no reader in megatron/core with config.)",
  f"{MPC}:205")
N(M, "no_sync_func", "callable installed by the training loop from the DDP wrapper; the grad buffers do not depend on it", f"{SCHED}:750")
N(M, "grad_sync_func", "callable installed by the training loop (overlapped grad reduce); buffers follow ddp.*", f"{SCHED}:1096")
N(M, "param_sync_func", "callable installed by the training loop (overlapped param gather); buffers follow ddp.*", f"{SCHED}:1099")
U(M, "deterministic_mode",
  "GDN layers swap the fused chunk_gated_delta_rule for torch_chunk_gated_delta_rule and the causal-conv kernel for "
  "F.conv1d on a transposed copy (gdn.py:59-62, :199-205), whose autograd saves the intermediates; for TE attention it "
  "only checks NVTE_ALLOW_NONDETERMINISTIC_ALGO=0 (the backend is chosen by that variable)",
  "mcore:megatron/core/ssm/gated_delta_net/gdn.py:59; mcore:megatron/core/extensions/transformer_engine.py:2109")
U(M, "enable_autocast",
  "forward runs under torch.autocast(autocast_dtype): activations saved in the autocast dtype and autocast's cache of "
  "cast weights lives through the forward", f"{SCHED}:503")
U(M, "autocast_dtype", "dtype of torch.autocast when enable_autocast (defaults to params_dtype)", f"{SCHED}:504")
R(M, "num_microbatches_with_partial_activation_checkpoints",
  "only handed to forward_step_func under pipelined schedules; no Megatron Core model reads it (peakcast warns "
  "partial_activation_checkpoints_unread)", f"{SCHED}:1597", False)
N(M, "use_te_rng_tracker", "TE's CUDA RNG tracker instead of Megatron's (needed by CUDA graphs); RNG states only",
  f"{GPTP}:234")
U(M, "tp_comm_bulk_wgrad",
  "with tp_comm_overlap: TE overlaps the wgrad all-gather in the bulk userbuffer; off, the gathered input is a new "
  "allocation in backward (the userbuffers themselves are sized by tp_comm_overlap_cfg)", f"{TE}:1425")
U(M, "tp_comm_bulk_dgrad",
  "with tp_comm_overlap: bulk dgrad overlap in the userbuffer; off, the dgrad reduce-scatter/all-gather output is a "
  "new allocation", f"{TE}:1426")
U(M, "tp_comm_overlap_ag",
  "with tp_comm_overlap: ub_overlap_ag; off, the SP all-gather before column-parallel GEMMs allocates its output "
  "instead of using the userbuffer", f"{TE}:1161")
U(M, "tp_comm_overlap_rs",
  "with tp_comm_overlap: ub_overlap_rs; off, the reduce-scatter after row-parallel GEMMs allocates its input/output "
  "instead of using the userbuffer", f"{TE}:1166")
U(M, "tp_comm_overlap_rs_dgrad", "with tp_comm_overlap: dgrad reduce-scatter through the userbuffer (TE >= 1.6)", f"{TE}:1436")
N(M, "tp_comm_split_ag",
  "ignored with TE >= 1.5: the layer takes tp_comm_overlap_ag because hasattr(config, 'tp_comm_overlap_ag') is always "
  "true for the dataclass", f"{TE}:1160")
N(M, "tp_comm_atomic_ag", "ignored with TE >= 1.5 (as tp_comm_split_ag)", f"{TE}:1160")
N(M, "tp_comm_split_rs", "ignored with TE >= 1.5 (tp_comm_overlap_rs is used)", f"{TE}:1165")
N(M, "tp_comm_atomic_rs", "ignored with TE >= 1.5 (tp_comm_overlap_rs is used)", f"{TE}:1165")
U(M, "tp_comm_overlap_disable_qkv",
  "with tp_comm_overlap: the QKV layer stops using ub_overlap_ag / rs_dgrad, so its all-gather output is a new "
  "allocation", f"{TE}:1440")
U(M, "tp_comm_overlap_disable_fc1", "as tp_comm_overlap_disable_qkv, for fc1", f"{TE}:1444")
N(M, "tp_comm_bootstrap_backend", "host-side bootstrap of the userbuffer communicator (nccl/mpi/gloo)",
  "bridge:src/megatron/bridge/training/initialize.py:373; mcore:megatron/training/initialize.py:238")
R(M, "overlap_dispatch_backward_with_experts_wgrad",
  "MoE: delays expert wgrad to overlap the dispatch backward; the expert fc1/fc2 inputs and output grads are kept until "
  "the delayed wgrad runs", "mcore:megatron/core/transformer/moe/moe_layer.py:433; " f"{TE}:2375", True)
R(M, "ep_overlap_early_attn_memory_release",
  "with overlap_moe_expert_parallel_comm: releases the attention backward's memory earlier in the combined 1F1B "
  "schedule", "mcore:megatron/core/models/common/model_chunk_schedule_plan.py:280", True)
U(M, "pipeline_dtype",
  "dtype of the PP p2p send/recv buffers (p2p_communication.py:335); with PP>1 and null, Megatron Core refuses to run "
  "(model_parallel_config.py:528-531; Bridge's finalize sets it to params_dtype)", f"{P2P}:335; {MPC}:528", inert=False)
R(M, "variable_seq_lengths",
  "PP p2p exchanges tensor shapes every micro-batch; sequence lengths then vary per micro-batch (the peak follows the "
  "longest), and the allgather MoE dispatcher refuses it", f"{P2P}:322; {SCHED}:2113", True)
U(M, "overlap_p2p_comm",
  "interleaved PP: p2p on a side stream with the next receive posted right after a send, so a receive buffer (one "
  "stage-input tensor per direction) is allocated one compute step earlier and is alive across the other pass "
  "(schedules.py:1679-1740). Bridge's CommOverlapConfig turns it on when PP>1 and VP>1. Uncertain: effect size not "
  "measured", f"{SCHED}:1679")
N(M, "batch_p2p_comm", "batched isend/irecv vs separate calls; same buffers", f"{P2P}:374")
N(M, "batch_p2p_sync", "a cuda synchronize after batched p2p", f"{P2P}:416")
N(M, "use_ring_exchange_p2p", "custom ring-exchange p2p kernel instead of NCCL p2p; same buffers", f"{P2P}:226")
U(M, "overlap_p2p_comm_warmup_flush",
  "interleaved PP: the early-posted receives of overlap_p2p_comm also in warm-up and flush (see overlap_p2p_comm)",
  f"{SCHED}:1558")
U(M, "mtp_standalone",
  "MTP layers on a stage of their own (derived from pipeline_model_parallel_layout, transformer_config.py:2010); p2p "
  "shapes become variable", f"{P2P}:322")
U(M, "cpu_offloading_double_buffering",
  "with cpu_offloading: TE keeps a second GPU reload buffer so the next layer's activations reload while one is used",
  "mcore:megatron/core/transformer/transformer_block.py:306")
N(M, "cpu_offloading_retain_pinned_cpu_buffers", "with cpu_offloading: keeps the pinned host buffers between steps (host memory)",
  "mcore:megatron/core/transformer/transformer_block.py:307")
N(M, "barrier_with_L1_time", "a barrier before timers", f"{SCHED}:745")

# ============================================================================================
# model: TransformerConfig
# ============================================================================================
N(M, "mtp_loss_scaling_factor", "scalar weight of the MTP loss", "mcore:megatron/core/transformer/multi_token_prediction.py:875")
N(M, "mtp_detach_heads",
  "MTP uses detached copies of the output weight and decoder input (no grad into the trunk); the MTP layers save "
  "the same tensors", "mcore:megatron/core/transformer/multi_token_prediction.py:818")
U(M, "mtp_hybrid_override_pattern",
  "hybrid models: the layer pattern of each MTP depth, appended to hybrid_layer_pattern by the provider (Mamba/"
  "attention/MoE MTP layers). peakcast simulates the depths of a joined pattern ('<main>/<mtp>/...'), which its "
  "emulation of Bridge's finalize builds (model/src/bridge_runtime.cpp); given beside a pattern without '/' "
  "outside that path, the depths are not simulated", f"{HYBP}:196-231")
N(M, "flash_attention_version",
  "which flash-attn generation TE may use (2/3/4); all save the output and the softmax LSE. Uncertain: workspace "
  "differs between versions", "mcore:megatron/core/models/common/language_module/language_module.py:154")
N(M, "softmax_scale", "a scalar in the attention kernels", f"{MLA}:213; {TE}:2133")
S(M, "softmax_type",
  "off-by-one / learnable softmax (attention sinks): 'learnable' adds an [heads/TP] parameter a layer; MCore's "
  "unfused attention takes the torch softmax with a sink column (fused_softmax.py:154-176, :233-236), TE's unfused "
  "one likewise (backends.py:626-653); TE's fused attention saves what it saves without sinks; flash-attn takes none",
  f"{TE}:2138; mcore:megatron/core/fusions/fused_softmax.py:233")
U(M, "fp32_residual_connection",
  "residual stream kept in fp32 (residual.float() before each add): the hidden states between sub-layers, saved by "
  "the next norm and sent between PP stages, are fp32",
  "mcore:megatron/core/transformer/transformer_layer.py:639; mcore:megatron/core/models/common/embeddings/language_model_embedding.py:139")
U(M, "apply_residual_connection_post_layernorm",
  "no reader in megatron/core at 24bad8e6 (declaration only); Bridge passes it to TE's TransformerLayer only under "
  "use_transformer_engine_full_layer_spec (gpt_full_te_layer_autocast_spec.py:198), where the residual is taken after "
  "the norm. Without that spec it changes nothing",
  "bridge:src/megatron/bridge/models/gpt_full_te_layer_autocast_spec.py:198")
N(M, "layernorm_epsilon", "numerics of the norms", f"{TE}:1488")
N(M, "layernorm_zero_centered_gamma", "the norm weight is stored as gamma-1 and 1 is added in the kernel", f"{TE}:1070")
N(M, "glu_linear_offset",
  "quick-GeGLU offset: the fused kernel takes a scalar; the unfused GLU adds it out of place even at the default 0.0 "
  "(mlp.py:327-329), so the value does not change what is saved", "mcore:megatron/core/transformer/mlp.py:291")
S(M, "qk_layernorm_full_width",
  "OLMoE's q/k norms over all heads' channels (Bridge olmoe_layer_spec): the split query and key are reshaped "
  "into copies that the norms save, and the norm weights are heads x kv_channels wide",
  "bridge:src/megatron/bridge/models/olmoe/olmoe_provider.py:168-186")
S(M, "activation_func_clamp_value",
  "clamped GLU (gpt-oss): the unfused GLU clamps both halves out of place (clamp saves its input for backward, the "
  "activation the clamped half), mlp.py:322-324 and experts.py:865-867; the fused quick-GeGLU clamps out of place "
  "before its kernel and saves the clamped copy (fused_bias_geglu.py:421-431)", "mcore:megatron/core/transformer/mlp.py:322")
N(M, "rotary_interleaved",
  "which rotary dimensions pair up; same tensors. Uncertain: a fused-RoPE kernel without interleaved support would fall "
  "back to the unfused path", "mcore:megatron/core/models/common/embeddings/rotary_pos_embedding.py:167")
N(M, "window_size",
  "sliding-window attention. TE's fused/flash kernels save the output and LSE whatever the window; MCore's unfused "
  "attention swaps the cached [s,s] causal mask for a same-size sliding mask (fused_softmax.py:321-322) and still "
  "saves the full [b,np,s,s] scores (the window does not shrink them). Uncertain: TE may pick a different backend "
  "(or its unfused path) when no fused backend supports the window for the shape",
  f"{TE}:2125; mcore:megatron/core/transformer/dot_product_attention.py:93")
N(M, "window_attn_skip_freq", "which layers use the sliding window (see window_size)", f"{TE}:2118")
G2P = "bridge:src/megatron/bridge/models/gemma/gemma2_provider.py"
G3P = "bridge:src/megatron/bridge/models/gemma/gemma3_provider.py"
S(M, "post_linear_layernorm",
  "the Gemma layer specs' TERowParallelLinearLayerNorm as linear_proj and linear_fc2: a TENorm on each output, which "
  "saves that output and the fp32 inverse RMS (TE ops/basic/rmsnorm.py:187-203), two [h] weights a layer",
  "bridge:src/megatron/bridge/models/common/te_layers.py:47-57")
S(M, "pre_linear_layernorm",
  "false: EXAONE 4's layer spec, plain TEColumnParallelLinear linear_qkv / linear_fc1 and no input or pre-MLP norm: "
  "the linears save the layer input and the post-attention residual themselves, no normalized copy or inverse RMS, "
  "and no norm weights", "bridge:src/megatron/bridge/models/exaone/exaone4/exaone4_provider.py:78")
S(M, "core_attention_module",
  "gemma2: Gemma2FlexDotProductAttention's FlexAttention path (query, key, the whole QKV output as the value's base, "
  "the output and an fp32 LSE saved; no score-sized tensor); gemma3: Gemma3TEDotProductAttention, TE attention with a "
  "per-layer window (same tensors as TE's); dot_product: Megatron's DotProductAttention (GQA-expanded K and V, the "
  "[b, np, s, s] scores and probabilities, the global 'mpu' scores buffer)", f"{G2P}:385-403")
S(M, "scale_embeddings_by_hidden_size",
  "Gemma's embedding * sqrt(hidden) out of place: one embedding-sized transient at the lookup, nothing saved",
  "bridge:src/megatron/bridge/models/gemma/modules.py:39-40")
S(M, "final_logit_softcapping",
  "Gemma2OutputLayer's scale * tanh(logits / scale): TanhBackward keeps a [tokens, V/tp] tensor until the output "
  "layer's backward; three logits-sized tensors at its forward", f"{G2P}:413-425")
N(M, "attn_logit_softcapping",
  "the attention scores' tanh soft-cap: a FlexAttention score_mod evaluated inside the kernels (no tensor); the "
  "unfused fallback that would save a tanh of the scores is refused (gemma2_unfused_attention_not_simulated)",
  f"{G2P}:337; {G2P}:242")
N(M, "query_pre_attn_scalar", "Gemma 2's softmax scale 1/sqrt(query_pre_attn_scalar) (a scalar)", f"{G2P}:150")
N(M, "interleaved_attn_pattern",
  "Gemma 3's local / global layer pattern: which layers get the TE attention window, whose fused and flash kernels "
  "save the same tensors either way; read for validation (a pattern Bridge cannot take raises)", f"{G3P}:349-357")
U(M, "is_vision_language",
  "Gemma 3's vision-language attention: no-mask TE attention with the VL model's attention biases "
  "(post-scale bias tensors) instead of the causal / windowed kernel; refused", f"{G3P}:244-260")
U(M, "qk_l2_norm", "L2Norm on the query and key heads (attention.py:1699), saving their inputs like qk_layernorm does", f"{ATTN}:1699")
N(M, "qk_clip",
  "after the optimizer step, rescales W_q/W_k in place when the max attention logit exceeds the threshold; TE returns "
  "a per-head max-logit vector (return_max_logit, TE >= 2.9)", f"{ATTN}:1970; {TE}:2172")
N(M, "qk_clip_alpha", "scalar of qk_clip's in-place rescale", f"{ATTN}:2051")
N(M, "qk_clip_threshold", "scalar of qk_clip", f"{ATTN}:1990")
N(M, "log_max_attention_logit", "TE returns a per-head max-logit vector for logging", f"{TE}:2172")
N(M, "test_mode", "runs self-tests in attention (and disables fused_single_qkv_rope)", f"{ATTN}:1928")
N(M, "calculate_per_token_loss", "loss normalised by a token count (a scalar per micro-batch)", f"{SCHED}:357")
U(M, "no_rope_freq",
  "layers listed skip RoPE (attention.py:1320-1324), so the rotated q/k copies that core attention saves are not made "
  "(the QKV projection output stays alive through v either way). Uncertain how peakcast's RoPE accounting maps onto it",
  f"{ATTN}:1321")
N(M, "experimental_attention_variant_loss_scale_func", "callable; no reader with config. in megatron/core", f"{TC}:297")
_DSA_MF = " (docs/research/dsa-memory-facts.md)"
S(M, "dsa_indexer_n_heads", "DSA indexer heads: the indexer's linear_wq_b / linear_weights_proj and its q, weights and gradients" + _DSA_MF,
  f"{DSA}:1123")
S(M, "dsa_indexer_head_dim", "DSA indexer head size: the indexer's q / k projections, its key and scoring" + _DSA_MF, f"{DSA}:1124")
S(M, "dsa_indexer_topk", "keys each query attends to in DSA: the top-k indices, FlashMLA's work, the loss tensors" + _DSA_MF,
  f"{DSA}:1561")
S(M, "dsa_indexer_topk_freq", "top-k sharing: skip layers build no indexer and reuse a computing layer's top-k from a holder" + _DSA_MF,
  f"{DSA}:1562")
S(M, "dsa_indexer_skip_topk_offset", "which layers compute top-k under sharing (see dsa_indexer_topk_freq)" + _DSA_MF, f"{DSA}:1563")
S(M, "dsa_indexer_loss_coeff", ">0 runs the indexer KL loss in training: its fp32 [b, sq, K] tensors and the saved indexer gradients" + _DSA_MF,
  f"{DSA}:1890")
S(M, "dsa_indexer_use_sparse_loss", "the loss over the selected keys (simulated); the dense loss is refused as not simulated" + _DSA_MF,
  f"{DSA}:1926")
S(M, "dsa_kernel_backend", "cudnn is simulated; none (PyTorch reference) and tilelang are refused as not simulated" + _DSA_MF,
  "mcore:megatron/core/transformer/experimental_attention_variant/dsa_kernels.py:32")
N(M, "dsa_indexer_rope_interleaved", "layout of the indexer's rotary dimensions", f"{DSA}:1240")
S(M, "dsa_indexer_rotate_activation", "Hadamard-rotated copies of the indexer q / k" + _DSA_MF, f"{DSA}:1311")
N(M, "dsa_indexer_scoring_relu", "ReLU in the indexer score (same shapes); the cuDNN kernels require it (a rule)", f"{DSA}:1354")
N(M, "dsa_indexer_k_norm_epsilon", "numerics of the indexer k norm", f"{DSA}:1186")
S(M, "dsa_indexer_k_norm_fp32", "the indexer k norm on an fp32 copy" + _DSA_MF, f"{DSA}:1297")
N(M, "init_method", "weight initialisation", "mcore:megatron/core/models/gpt/gpt_model.py:276")
N(M, "output_layer_init_method", "weight initialisation", f"{MLA}:225")
N(M, "init_method_std", "weight initialisation", f"{TC}:2287")
N(M, "embedding_init_method", "weight initialisation", "mcore:megatron/core/models/common/embeddings/language_model_embedding.py:62")
N(M, "embedding_init_method_std", "weight initialisation", f"{TC}:2272")
N(M, "init_model_with_meta_device",
  "modules built on the meta device and materialised later (Megatron-FSDP); the trained model holds the same tensors",
  f"{TE}:409; {GPTP}:274")
U(M, "use_mup",
  "muP: the logits are multiplied by mup_output_mult out of place (language_module.py:341-342, a second [s,b,V/TP] "
  "logits tensor at the loss) and the embeddings by mup_embedding_mult (language_model_embedding.py:135-136)",
  "mcore:megatron/core/models/common/language_module/language_module.py:242")
N(M, "mup_width_mult", "muP scalars (init std, softmax scale, output mult); the memory effect is under use_mup", f"{TC}:2229")
N(M, "mup_base_hidden_size", "muP scalar (see use_mup)", f"{TC}:2229")
N(M, "mup_embedding_mult", "muP scalar; the out-of-place multiply happens only under use_mup and != 1 (see use_mup)",
  "mcore:megatron/core/models/common/embeddings/language_model_embedding.py:135")
N(M, "mup_output_mult", "muP scalar; the out-of-place logits multiply happens only under use_mup and != 1 (see use_mup)",
  "mcore:megatron/core/models/common/language_module/language_module.py:341")
N(M, "mup_base_head_dim", "muP softmax-scale scalar", f"{TC}:2234")
N(M, "mup_attn_scale_power", "muP softmax-scale scalar", f"{TC}:2236")
N(M, "apply_query_key_layer_scaling", "a scalar on the attention scores (fp16 only)", "mcore:megatron/core/transformer/dot_product_attention.py:89")
N(M, "disable_bf16_reduced_precision_matmul", "a torch backend flag (matmul accumulation precision)", f"{TC}:1320")
N(M, "persist_layer_norm", "Apex persistent LayerNorm kernel (local impl); saves the same tensors", "mcore:megatron/core/fusions/fused_layer_norm.py:135")
U(M, "memory_efficient_layer_norm",
  "local impl with Apex FusedLayerNorm: saves the output instead of the input for backward (the input can be freed)",
  "mcore:megatron/core/fusions/fused_layer_norm.py:138")
U(M, "use_fused_weighted_squared_relu", "MoE squared-ReLU experts: fused weighted squared ReLU (fewer saved intermediates)", f"{EXPERTS}:850")
R(M, "fused_single_qkv_rope",
  "one kernel splits the fused QKV output and applies RoPE (no separate q/k copies); refused with gated attention",
  f"{ATTN}:1365", True)
U(M, "fused_residual_rmsnorm", "TE fuses the residual add into the RMSNorm (the sum is not a separate saved tensor)", f"{TE}:1046")
R(M, "use_transformer_engine_op_fuser",
  "dense MLP as TEFusedMLP (TE operation fuser; different saved tensors, gpt_layer_specs.py:536-540) and fused grouped "
  "MoE MLP (experts.py:286)", "mcore:megatron/core/models/gpt/gpt_layer_specs.py:538; " f"{EXPERTS}:286", True)
N(M, "fp8_quantizer_factory", "only read with fp8_recipe='custom', which peakcast refuses (unsupported_value)",
  "mcore:megatron/core/fp8_utils.py:793")
N(M, "fp8_margin", "delayed-scaling scalar", f"{TE}:3286")
N(M, "fp8_interval", "delayed-scaling update interval", f"{TE}:3281")
N(M, "fp8_amax_history_len",
  "length of the delayed-scaling amax history: an [len, n] fp32 tensor per TE module's FP8 metadata (KBs per module)", f"{TE}:3289")
N(M, "fp8_amax_compute_algo", "delayed-scaling reduction of the history", f"{TE}:3288")
U(M, "fp8_wgrad",
  "false: the wgrad GEMM runs in high precision (override_linear_precision=(False, False, True)), so TE keeps the "
  "high-precision GEMM inputs for wgrad instead of their FP8 (transposed) copies (delayed / tensorwise recipes)",
  "mcore:megatron/core/fp8_utils.py:777")
R(M, "fp8_output_proj", "the output layer (LM head) runs in MXFP8 through TE: its saved input and weight copies are FP8",
  "mcore:megatron/core/fp8_utils.py:740", True)
U(M, "fp8_dot_product_attention", "TE attention in FP8 (fp8_dpa): q/k/v and the saved attention tensors in FP8",
  "mcore:megatron/core/fp8_utils.py:781")
U(M, "fp8_multi_head_attention", "TE attention with FP8 inputs/outputs through the whole MHA block (fp8_mha)", f"{TE}:3279")
N(M, "tp_only_amax_red", "amax reduction over TP only (which group reduces a scalar)", "mcore:megatron/core/fp8_utils.py:842")
U(M, "use_kitchen", "Kitchen quantized linear layers replace TE's in the layer spec (gpt_layer_specs.py:585)",
  "mcore:megatron/core/models/gpt/gpt_layer_specs.py:585")
U(M, "use_kitchen_attention", "Kitchen attention replaces TE's core attention", "mcore:megatron/core/models/gpt/gpt_layer_specs.py:587")
U(M, "kitchen_attention_backend", "backend of Kitchen attention (sdpa/...); only with use_kitchen_attention",
  "mcore:megatron/core/models/gpt/gpt_layer_specs.py:588")
R(M, "fp4",
  "NVFP4 GEMMs (fp4_utils.py:258): saved GEMM inputs and weight copies in FP4 plus scales; peakcast has no FP4 model",
  "mcore:megatron/core/fp4_utils.py:258; mcore:megatron/core/models/hybrid/hybrid_block.py:329", True)
U(M, "fp4_recipe", "which FP4 recipe (nvfp4 / custom quantizers); only with fp4", "mcore:megatron/core/fp4_utils.py:222")
U(M, "fp4_param", "parameters kept in FP4 (fp4 model init)", "mcore:megatron/core/fp4_utils.py:258")
U(M, "fp4_quantizer_factory", "with fp4_recipe='custom': the user's quantizers decide the saved dtypes", "mcore:megatron/core/fp4_utils.py:234")
N(M, "high_priority_a2a_comm_stream", "priority of the EP all-to-all stream", "mcore:megatron/core/pipeline_parallel/combined_1f1b.py:67")
U(M, "use_grouped_gemm_for_shared_expert",
  "shared experts as a TE op-fuser GroupedLinear(num_groups=1) -> ScaledSwiGLU chain (shared_experts.py:455-470)",
  "mcore:megatron/core/models/gpt/moe_module_specs.py:32")
U(M, "moe_shared_expert_glu_interleave_size", "GLU interleave of the grouped shared expert (required by it)",
  "mcore:megatron/core/transformer/moe/shared_experts.py:462")
S(M, "moe_router_load_balancing_type",
  "sinkhorn / quantile_balancing replace top-k routing (router.py:769-775): sinkhorn saves its [tokens, experts] "
  "activation, QB gathers fp32 logits over TP x CP; the aux-loss types compute scores_for_aux_loss ([tokens, experts] "
  "fp32, saved by its softmax or sigmoid) only when the matching moe_aux_loss_coeff > 0 (router.py:802); list form as "
  "get_aux_loss_coeff reads it (router.py:388-401). Simulated in sim/src/moe_router.cpp",
  f"{ROUTER}:769; {ROUTER}:802")
N(M, "moe_enable_routing_replay", "records / replays the [tokens, topk] indices of each router (RL)", f"{ROUTER}:259")
S(M, "moe_router_topk_limited_devices",
  "deprecated alias of group-limited routing: group_topk = it, num_groups = EP (transformer_config.py:2383-2389); "
  "the group mask [tokens, experts] bool saved", f"{TC}:2388")
R(M, "moe_router_padding_for_quantization",
  "pads each expert's routed rows to the FP8/FP4 GEMM alignment, so dispatched/permuted tensors get extra rows",
  "mcore:megatron/core/transformer/moe/moe_utils.py:1484; " f"{DISP}:544", True)
R(M, "moe_router_padding_for_fp8", "deprecated alias of moe_router_padding_for_quantization", f"{TC}:2334", True)
S(M, "moe_router_num_groups",
  "group-limited routing (group_limited_topk, moe_utils.py:673-728): group scores and masks as working tensors, the "
  "[tokens, experts] bool mask saved by masked_fill (unfused)", f"{ROUTER}:781")
S(M, "moe_router_group_topk", "group-limited routing (see moe_router_num_groups)", f"{ROUTER}:782")
S(M, "moe_router_pre_softmax",
  "softmax over all experts before top-k: the saved softmax output is [tokens, experts] fp32 instead of [tokens, topk]",
  f"{ROUTER}:780")
S(M, "moe_router_topk_scaling_factor", "a scalar on the routing probabilities: one [tokens, topk] fp32 working copy",
  f"{ROUTER}:783")
N(M, "moe_router_bias_update_rate", "expert-bias update scalar (in finalize_model_grads)", "mcore:megatron/core/distributed/finalize_model_grads.py:366")
N(M, "moe_router_quantile_balancing_ema", "quantile-balancing EMA scalar (in finalize_model_grads)",
  "mcore:megatron/core/distributed/finalize_model_grads.py:408")
S(M, "moe_router_force_biased",
  "benchmark: random logits plus a shared bias, two [tokens, experts] working copies (simulated); the routing it "
  "makes deliberately imbalanced is not: validate_moe.cpp warns force_biased_imbalance (peakcast's "
  "moe_routing_imbalance is the way to say how busy a rank is)", f"{ROUTER}:863")
U(M, "use_grouped_gemm_for_dense_mlp", "with the TE op fuser, the dense MLP becomes TEFusedMLPWithGroupedLinear",
  "mcore:megatron/core/models/gpt/gpt_layer_specs.py:536")
N(M, "moe_single_grouped_weight", "one grouped parameter for all local experts' weights (same bytes)", f"{TC}:1587")
N(M, "moe_single_grouped_bias", "one grouped parameter for all local experts' biases (same bytes)", f"{TC}:1612")
S(M, "moe_aux_loss_coeff",
  ">0 turns on the load-balancing aux loss: compute_routing_scores_for_aux_loss makes a [tokens, experts] fp32 score "
  "tensor that its softmax / sigmoid saves (router.py:802-810); 0 (default) skips it", f"{ROUTER}:404; {ROUTER}:802")
S(M, "moe_z_loss_coeff", "z-loss on the router logits (set, 0.0 included): logsumexp keeps the [tokens, experts] logits "
  "and its [tokens] result for backward", f"{ROUTER}:655")
N(M, "moe_token_dropping",
  "no reader in megatron/core at 24bad8e6 (declaration only, 'currently unsupported so should remain False'); token "
  "dropping is moe_expert_capacity_factor",
  f"{TC}:857")
R(M, "moe_enable_deepep",
  "flex dispatcher through DeepEP: DeepEP's NVLink/RDMA communication buffers (fused_a2a.py:35-68, sized by DeepEP from "
  "hidden bytes, EP size and SM count) are not modelled", "mcore:megatron/core/transformer/moe/fused_a2a.py:67", True)
R(M, "moe_flex_dispatcher_backend",
  "deepep / hybridep / ncclep: each allocates its own communication buffers (DeepEP Buffer fused_a2a.py:67, HybridEPBuffer "
  ":339, NCCL-EP EpBuffer :693), none modelled; also decides fused permutes", "mcore:megatron/core/transformer/moe/fused_a2a.py:339", True)
U(M, "moe_permute_fusion_into_hybridep", "HybridEP dispatch returns rows already permuted (no separate permute copy)", f"{DISP}:1159")
U(M, "moe_hybridep_pad_uneven_dispatch_inputs", "pads HybridEP dispatch inputs to a uniform token count", f"{DISP}:1070")
N(M, "moe_per_layer_logging", "logging (no reader with config. in megatron/core)", f"{TC}:885")
N(M, "moe_pad_experts_for_cuda_graph_inference", INF, "mcore:megatron/core/inference/text_generation_controllers/text_generation_controller.py:776")
N(M, "moe_token_drop_policy", "with a capacity factor: which tokens are dropped (probs or position); same counts", f"{ROUTER}:797")
S(M, "moe_router_fusion", "Transformer Engine's fused router kernels: top-k saves the bool map and an fp32 [tokens, "
  "experts] intermediate, the aux-loss scores another fp32 intermediate (TE 2.17.1 pytorch/router.py)",
  f"{ROUTER}:786")
U(M, "moe_flex_dispatcher_num_sms",
  "SMs for DeepEP/HybridEP kernels; DeepEP sizes its NVLink buffer from a Config that includes the SM count "
  "(third-party: DeepEP csrc/config.hpp), HybridEP likewise takes it at buffer init", f"{DISP}:1153")
U(M, "moe_deepep_num_sms", "deprecated: folded into moe_flex_dispatcher_num_sms (transformer_config.py:1642-1661)", f"{TC}:1661")
U(M, "moe_hybridep_num_sms", "deprecated: folded into moe_flex_dispatcher_num_sms (transformer_config.py:1642-1661)", f"{TC}:1661")
N(M, "moe_hybridep_num_blocks_permute",
  "HybridEP launch configuration of the fused permute. Uncertain (third-party HybridEPBuffer): assumed not to size buffers",
  f"{DISP}:1155")
N(M, "moe_hybridep_num_blocks_unpermute", "as moe_hybridep_num_blocks_permute (uncertain)", f"{DISP}:1156")
N(M, "moe_hybridep_num_sms_preprocessing", "SMs of HybridEP's metadata scan kernel (uncertain, as above)", f"{DISP}:1160")
U(M, "moe_ncclep_static_shape", "NCCL-EP with static (capacity-padded) shapes instead of dropless exact ones", f"{DISP}:1531")
U(M, "moe_ncclep_zero_copy", "NCCL-EP zero-copy dispatch into registered buffers", f"{DISP}:1532")
U(M, "moe_mlp_glu_interleave_size",
  "interleaved GLU expert weights: the non-fused path de-interleaves fc1's output with a copy before the activation "
  "(experts.py:812-822)", f"{EXPERTS}:294")
U(M, "moe_expert_rank_capacity_factor", "expert ranks drop rows above a per-rank capacity (HybridEP/paged stash)",
  f"{DISP}:1095; {EXPERTS}:659")
U(M, "cp_comm_type",
  "CP attention communication per layer: p2p (ring, TE's default when null), all_gather (full-sequence K/V gathered on "
  "every CP rank), a2a (heads exchanged for sequence), a2a+p2p; each keeps different K/V buffers in attention",
  f"{TE}:2107")
U(M, "cuda_graph_use_single_mempool",
  "full_iteration CUDA graphs: train/eval and optimizer captures share one memory pool (True) or get separate pools",
  "bridge:src/megatron/bridge/training/train.py:319; mcore:megatron/core/full_cuda_graph.py:50")
U(M, "cuda_graph_retain_backward_graph", "captured backward graphs keep their graph (retain_graph) and its buffers",
  "mcore:megatron/core/transformer/cuda_graphs.py:964")
N(M, "inference_cuda_graph_scope", INF, "mcore:megatron/core/inference/engines/dynamic_engine.py:298")
U(M, "clone_scatter_output_in_embedding",
  "false: the SP scatter of the embedding output returns a view that keeps the full [s,b,h] embedding output alive "
  "instead of a 1/TP clone", "mcore:megatron/core/models/common/embeddings/language_model_embedding.py:151")
U(M, "disable_parameter_transpose_cache",
  "FP8: TE re-quantises weights every micro-batch instead of caching the FP8 weight (and transpose) from the first one "
  "(is_first_microbatch=None)", f"{TE}:1306")
N(M, "config_logger_dir", "logging directory", f"{TC}:1106")
N(M, "flash_decode", INF, "mcore:megatron/core/models/gpt/gpt_model.py:380")
U(M, "batch_invariant_mode",
  "batch-invariant kernels: TE attention forced to num_splits=1 (transformer_engine.py:2031) and batch-invariant "
  "matmul/reduction ops replace the defaults, with their own workspaces. Uncertain: mostly an inference setting",
  f"{TE}:2031")
N(M, "inference_rng_tracker", INF, f"{TE}:3308")
N(M, "inference_sampling_seed", INF, "mcore:megatron/core/inference/text_generation_controllers/text_generation_controller.py:252")
U(M, "symmetric_ar_type",
  "TE row-parallel all-reduce through symmetric memory (TE >= 2.3): a symmetric-memory pool for the all-reduce",
  f"{TE}:1461")
N(M, "nccl_all_reduce_for_prefill", INF, "mcore:megatron/core/inference/text_generation_controllers/text_generation_controller.py:773")
N(M, "use_inference_optimized_layers", INF + " (transformer_impl='inference_optimized' is refused by peakcast)", f"{TC}:1139")
N(M, "inference_fuse_tp_communication", INF, "mcore:megatron/core/transformer/transformer_layer.py:643")
N(M, "inference_disable_triton_nvls_kernels", INF, "mcore:megatron/core/tensor_parallel/inference_layers.py:179")
N(M, "inference_grouped_gemm_backend", INF, "mcore:megatron/core/inference/contexts/dynamic_context.py:824")
N(M, "inference_moe_disable_fused_quant_kernels", INF, f"{EXPERTS}:1183")
N(M, "inference_moe_token_dispatcher_type", INF, f"{EXPERTS}:1029")
U(M, "mrope_section", "multimodal RoPE: 3-axis rotary frequencies ([3, s, ...] freqs) for VL models", "mcore:megatron/core/models/gpt/gpt_model.py:218")
N(M, "is_hybrid_model", "set by the hybrid provider; read by inference contexts", "mcore:megatron/core/inference/contexts/dynamic_context.py:419")
U(M, "mamba_training_ssm_states_dtype",
  "dtype of the Mamba chunk states in the training scan (state_dtype kwarg, mamba_mixer.py:638/:700); null means "
  "params_dtype (mamba_mixer.py:229). peakcast counts them in fp32 (sim/src/module_graphs.cpp:523), which holds for "
  "the MCore default params_dtype fp32 but not for Bridge's bf16 presets (params_dtype bf16) with a mamba_ssm that "
  "accepts state_dtype", "mcore:megatron/core/ssm/mamba_mixer.py:229")
U(M, "use_mamba_mem_eff_path",
  "false: Mamba takes the unfused conv1d + chunk-scan path (mamba_mixer.py:309), which saves more intermediates than "
  "the fused split-conv1d-scan peakcast models", "mcore:megatron/core/ssm/mamba_mixer.py:227")
N(M, "mlp_chunks_for_prefill", INF, "mcore:megatron/core/transformer/transformer_layer.py:851")
U(M, "heterogeneous_block_specs", "per-layer heterogeneous specs (HeterogeneousTransformerConfig): layer shapes differ per layer",
  "mcore:megatron/core/transformer/transformer_block.py:335")
N(M, "hetereogenous_dist_checkpoint", "checkpoint layout", "mcore:megatron/core/transformer/transformer_block.py:733")
U(M, "quant_recipe", "ModelOpt/TE per-module quantisation config: quantised linears", f"{TE}:1241")
S(M, "offload_modules", "fine-grained activation offloading: the groups whose saves go to the host", f"{TC}:1878")
S(M, "min_offloaded_tensor_size", "fine-grained offloading: smaller tensors (in elements) stay on the GPU",
  "mcore:megatron/core/pipeline_parallel/fine_grained_activation_offload.py:993")
U(M, "delay_offload_until_cuda_graph", "fine-grained offloading: offloads start after the CUDA-graphed region (later free)",
  "mcore:megatron/core/transformer/transformer_layer.py:1219")
R(M, "delta_offload_bytes_across_pp_ranks", "fine-grained offloading: per-PP-rank change of the offloaded byte budget",
  "mcore:megatron/core/models/gpt/gpt_model.py:498", True)
R(M, "activation_offload_fraction", "fine-grained offloading: fraction of the eligible activations offloaded",
  "mcore:megatron/core/models/gpt/gpt_model.py:499", True)
R(M, "moe_paged_stash", "routed-expert activations live in a paged stash buffer (GPU pages sized by the factors below)",
  "mcore:megatron/core/models/gpt/gpt_model.py:557", True)
U(M, "moe_paged_stash_page_size", "page size of the paged stash", "mcore:megatron/core/transformer/moe/paged_stash.py:899")
U(M, "moe_paged_stash_buffer_size_factor_cuda", "GPU stash size factor (default 1.1)", "mcore:megatron/core/transformer/moe/paged_stash.py:910")
U(M, "moe_paged_stash_buffer_size_factor_cpu", "host stash size factor (host memory; moves pages off the GPU)",
  "mcore:megatron/core/transformer/moe/paged_stash.py:911")
R(M, "fine_grained_offloading_max_inflight_offloads", "full-iteration CUDA graphs: offloads in flight (their staging buffers)",
  "mcore:megatron/core/models/gpt/gpt_model.py:500", True)
N(M, "rope_type", "MLA RoPE variant (rope / yarn): frequency table only", f"{MLA}:181")
N(M, "rotary_base", "RoPE frequency base (numerics)", "mcore:megatron/core/models/gpt/gpt_model.py:183")
N(M, "rotary_scaling_factor", "YaRN scalar", f"{MLA}:193")
N(M, "original_max_position_embeddings", "YaRN scalar", f"{MLA}:194")
N(M, "beta_fast", "YaRN scalar", f"{MLA}:195")
N(M, "beta_slow", "YaRN scalar", f"{MLA}:196")
N(M, "mscale", "YaRN scalar", f"{MLA}:197")
N(M, "mscale_all_dim", "YaRN scalar", f"{MLA}:198")
U(M, "cache_mla_latents", "refuses to run in training: assert not (training and cache_mla_latents)", f"{MLA}:322")
U(M, "mla_down_proj_fusion",
  "MLA: fused q/kv down-projection with the input layernorm (one LayerNormLinear saves one input instead of two GEMMs')",
  "mcore:megatron/core/models/gpt/gpt_layer_specs.py:257")
N(M, "fp16_lm_cross_entropy",
  "stored by GPTModel (gpt_model.py:135) but not read by its loss at 24bad8e6 (no other reader in megatron/core)",
  "mcore:megatron/core/models/gpt/gpt_model.py:135")
U(M, "parallel_output", "false: the output layer gathers the full-vocabulary logits on every TP rank (gather_output)",
  "mcore:megatron/core/models/gpt/gpt_model.py:280; mcore:megatron/core/models/hybrid/hybrid_model.py:322")
N(M, "rope_scaling", "Llama-3.1 RoPE frequency scaling (numerics)", f"{GPTP}:304")
N(M, "rope_scaling_factor", "Llama-3.1 RoPE scaling factor", f"{GPTP}:305")
N(M, "seq_len_interpolation_factor", "RoPE position interpolation (numerics)", "mcore:megatron/core/models/common/embeddings/rotary_pos_embedding.py:135")
N(M, "yarn_rotary_scaling_factor", "YaRN scalar (GPT yarn position embedding)", "mcore:megatron/core/models/gpt/gpt_model.py:197")
N(M, "yarn_original_max_position_embeddings", "YaRN scalar (set by the gpt-oss bridge)", "bridge:src/megatron/bridge/models/gpt_oss/gpt_oss_bridge.py:95")
N(M, "yarn_beta_fast", "YaRN scalar", "mcore:megatron/core/models/gpt/gpt_model.py:201")
N(M, "yarn_beta_slow", "YaRN scalar", "mcore:megatron/core/models/gpt/gpt_model.py:202")
N(M, "yarn_mscale", "YaRN scalar", "mcore:megatron/core/models/gpt/gpt_model.py:203")
N(M, "yarn_mscale_all_dim", "YaRN scalar", "mcore:megatron/core/models/gpt/gpt_model.py:204")
N(M, "yarn_correction_range_round_to_int", "YaRN numerics (set by the gpt-oss bridge)", "bridge:src/megatron/bridge/models/gpt_oss/gpt_oss_bridge.py:98")
U(M, "scatter_embedding_sequence_parallel",
  "false: the embedding output is not scattered to the SP shard (full [s,b,h] per TP rank until a later scatter)",
  f"{GPTP}:309")
U(M, "use_transformer_engine_full_layer_spec",
  "the whole layer is TE's TransformerLayer (Bridge's full-TE autocast spec), whose saved tensors differ from the "
  "MCore layer peakcast models", f"{GPTP}:122")
U(M, "dense_grouped_gemm", "Bridge name of use_grouped_gemm_for_dense_mlp (only with the TE op fuser)", f"{GPTP}:59")
U(M, "transformer_layer_spec",
  "the layer spec builder (default TE spec, local, modelopt, full-TE...). Under Bridge this, not transformer_impl, picks "
  "the module implementations", f"{GPTP}:256")
N(M, "hf_model_id", "checkpoint / tokenizer lookup", "bridge:src/megatron/bridge/training/checkpointing.py:853")
N(M, "hf_model_revision", "checkpoint lookup", "bridge:src/megatron/bridge/training/checkpointing.py:853")
N(M, "mtp_enabled", "a flag some VL bridges set; no reader in the GPT/hybrid training path", "bridge:src/megatron/bridge/models/qwen_vl/qwen35_vl_bridge.py:406")
U(M, "restore_modelopt_state",
  "ModelOpt quantisation/sparsity/distillation state is restored onto the model before wrapping (quantizer modules, "
  "possibly teacher models)", "bridge:src/megatron/bridge/training/setup.py:373")
U(M, "use_arbitrary_attention_mask",
  "ModelOpt spec: arbitrary (materialised) attention mask instead of causal", f"{GPTP}:106")
U(M, "mamba_chunk_size",
  "chunk length of the Mamba scan: the chunk-state workspace is ceil(seq/chunk) x heads x headdim x dstate; peakcast "
  "hard-codes 128 (sim/src/module_graphs.cpp:520), Bridge's default DEFAULT_MAMBA_CHUNK_SIZE = 128", f"{HYBP}:274")
N(M, "hybrid_attention_ratio", "used by Bridge's FLOP estimate only (flop_utils.py:691); the layout comes from the pattern",
  "bridge:src/megatron/bridge/training/utils/flop_utils.py:691")
N(M, "hybrid_mlp_ratio", "used by Bridge's FLOP estimate only", "bridge:src/megatron/bridge/training/utils/flop_utils.py:692")
U(M, "hybrid_stack_spec", "the hybrid stack spec builder (module implementations of Mamba/attention/MLP layers)", f"{HYBP}:255")
U(M, "keep_mtp_spec_in_bf16", "Nemotron-H: MTP layers built without FP8 (kept in BF16)", "bridge:src/megatron/bridge/models/nemotronh/nemotron_h_bridge.py:328")
U(M, "mamba_stack_spec", "deprecated alias of hybrid_stack_spec", "bridge:src/megatron/bridge/models/mamba/mamba_provider.py:43")

# ============================================================================================
# model: keys the typed parser reads (class checked mechanically; source None = first use found
# by the script in megatron/core at 24bad8e6)
# ============================================================================================
for _k, _why in [
    ("num_layers", "transformer layers (per stage after the PP split)"),
    ("hidden_size", "hidden width: every activation and weight"),
    ("ffn_hidden_size", "dense MLP width"),
    ("num_attention_heads", "attention heads (QKV width, unfused score tensors)"),
    ("num_query_groups", "GQA groups (K/V width)"),
    ("kv_channels", "head dimension"),
    ("vocab_size", "embedding / output-layer rows and logits width"),
    ("make_vocab_size_divisible_by", "vocabulary padding"),
    ("should_pad_vocab", "whether the vocabulary is padded"),
    ("seq_length", "tokens per sample"),
    ("max_position_embeddings", "learned absolute position table rows (peakcast extension; Megatron-LM --max-position-embeddings)"),
    ("share_embeddings_and_output_weights", "tied embedding/output weight (one copy, plus the embedding-group grad all-reduce)"),
    ("normalization", "LayerNorm vs RMSNorm (bias, saved statistics)"),
    ("gated_linear_unit", "GLU MLP (fc1 twice as wide)"),
    ("activation_func", "activation saved tensors"),
    ("add_bias_linear", "linear biases"),
    ("add_qkv_bias", "QKV bias"),
    ("qk_layernorm", "norms on q and k heads"),
    ("attention_output_gate", "gated attention (extra gate projection and saved gate)"),
    ("position_embedding_type", "learned table vs RoPE / YaRN / none"),
    ("multi_latent_attention", "MLA projections and saved tensors"),
    ("q_lora_rank", "MLA query compression rank (None: no compression)"),
    ("kv_lora_rank", "MLA KV compression rank"),
    ("qk_head_dim", "MLA q/k head size"),
    ("qk_pos_emb_head_dim", "MLA rotary head size"),
    ("v_head_dim", "MLA value head size"),
    ("num_moe_experts", "routed experts"),
    ("moe_ffn_hidden_size", "expert MLP width"),
    ("moe_router_topk", "experts per token: dispatched rows"),
    ("moe_shared_expert_intermediate_size", "shared-expert MLP width"),
    ("moe_shared_expert_gate", "shared-expert gate"),
    ("moe_apply_probs_on_input", "router probabilities applied to the expert input (extra scaled copy)"),
    ("mlp_chunks_for_training", "MLP computed in sequence chunks in training"),
    ("moe_layer_freq", "which layers are MoE"),
    ("moe_grouped_gemm", "grouped-GEMM experts vs SequentialMLP"),
    ("moe_token_dispatcher_type", "allgather / alltoall / flex dispatcher buffers"),
    ("moe_router_dtype", "router logits dtype"),
    ("moe_shared_expert_overlap", "shared experts overlapped with dispatch (gathered input copy)"),
    ("moe_router_enable_expert_bias", "expert bias buffers"),
    ("moe_expert_capacity_factor", "token capacity per expert"),
    ("moe_pad_expert_input_to_capacity", "pad dispatched rows to capacity"),
    ("moe_permute_fusion", "fused permute (saved row-id map vs permuted copies)"),
    ("moe_input_jitter_eps", "router input jitter (an out-of-place multiply)"),
    ("moe_layer_recompute", "recompute the MoE layer"),
    ("overlap_moe_expert_parallel_comm", "EP all-to-all overlap: the combined 1F1B schedule (one more interleaved warm-up micro-batch; each steady step interleaves one micro-batch's forward layers with another's backward layers, sim/src/combined_step.hpp)"),
    ("delay_wgrad_compute", "wgrad delayed to overlap communication (inputs kept until the wgrad)"),
    ("moe_latent_size", "MoE latent projection width: two TP-duplicated linears around the routed experts, which "
                        "with their dispatch run that wide (sim/src/moe_graphs.cpp, param_count_layers.cpp)"),
    ("moe_routing_imbalance", "peakcast extension: load of the busiest rank relative to balanced routing"),
    ("moe_router_score_function", "softmax / sigmoid / sqrtsoftplus router scores"),
    ("moe_router_force_load_balancing", "random logits for balanced routing (benchmarks)"),
    ("use_te_activation_func", "TE activation modules in the MLP/experts"),
    ("hybrid_override_pattern", "hybrid layer pattern (old name)"),
    ("hybrid_layer_pattern", "hybrid layer pattern (Mamba/GDN/attention/MLP/MoE per layer)"),
    ("mamba_state_dim", "Mamba SSM state size"),
    ("mamba_head_dim", "Mamba head size"),
    ("mamba_num_groups", "Mamba B/C groups"),
    ("mamba_num_heads", "Mamba heads"),
    ("mamba_d_conv", "Mamba conv width (peakcast extension; MambaMixer d_conv)"),
    ("experimental_attention_variant", "gated_delta_net / dsa layers"),
    ("linear_key_head_dim", "GDN key head size"),
    ("linear_value_head_dim", "GDN value head size"),
    ("linear_num_key_heads", "GDN key heads"),
    ("linear_num_value_heads", "GDN value heads"),
    ("linear_attention_freq", "which layers are GDN"),
    ("linear_conv_kernel_dim", "GDN conv width"),
    ("mtp_num_layers", "multi-token-prediction depths"),
    ("mtp_use_repeated_layer", "one shared MTP layer run mtp_num_layers times"),
    ("pipeline_model_parallel_layout", "explicit per-stage layer layout"),
    ("num_layers_in_first_pipeline_stage", "uneven PP split"),
    ("num_layers_in_last_pipeline_stage", "uneven PP split"),
    ("account_for_embedding_in_pipeline_split", "embedding counted as a layer in the PP split"),
    ("account_for_loss_in_pipeline_split", "loss counted as a layer in the PP split"),
    ("microbatch_group_size_per_vp_stage", "interleaved schedule: micro-batches per VP group (in-flight depth)"),
    ("deallocate_pipeline_outputs", "PP stage outputs freed after send (pseudo-deallocate)"),
    ("recompute_granularity", "full / selective activation recompute"),
    ("recompute_modules", "selective recompute modules"),
    ("recompute_method", "uniform / block full recompute"),
    ("recompute_num_layers", "layers per recompute unit / recomputed layers"),
    ("distribute_saved_activations", "recompute checkpoints sharded over TP"),
    ("cpu_offloading", "layer-level activation/weight offload to the host"),
    ("cpu_offloading_num_layers", "layers offloaded"),
    ("cpu_offloading_activations", "offload activations"),
    ("cpu_offloading_weights", "offload weights"),
    ("fine_grained_activation_offloading", "per-module activation offload (sim/src/offload_lifetimes.cpp; warm-up iteration semantics, docs/research/fine-grained-offloading-memory-facts.md section 6)"),
    ("bf16", "bf16 parameters and activations"),
    ("fp16", "fp16 parameters and activations"),
    ("fp8", "FP8 GEMMs (e4m3 / hybrid)"),
    ("fp8_recipe", "FP8 scaling recipe (delayed / tensorwise / mxfp8 / blockwise)"),
    ("fp8_param", "parameters kept in FP8"),
    ("first_last_layers_bf16", "edge layers in BF16 under FP8"),
    ("num_layers_at_start_in_bf16", "BF16 layers at the start"),
    ("num_layers_at_end_in_bf16", "BF16 layers at the end"),
    ("transformer_impl", "transformer_engine vs local modules"),
    ("attention_backend", "flash / fused / unfused / local attention (saved scores)"),
    ("masked_softmax_fusion", "fused masked softmax (unfused attention)"),
    ("attention_softmax_in_fp32", "fp32 softmax copy (unfused attention)"),
    ("bias_dropout_fusion", "fused bias-dropout-add (saved mask)"),
    ("bias_activation_fusion", "fused bias-activation (saved input)"),
    ("activation_func_fp8_input_store", "activation input stored in FP8"),
    ("apply_rope_fusion", "fused RoPE"),
    ("rotary_percent", "fraction of head dims rotated"),
    ("cross_entropy_loss_fusion", "fused vocab-parallel cross entropy"),
    ("cross_entropy_fusion_impl", "native vs TE fused cross entropy"),
    ("attention_dropout", "attention dropout mask (unfused)"),
    ("hidden_dropout", "hidden dropout masks"),
    ("cuda_graph_impl", "CUDA graphs (graph pools, static buffers)"),
    ("enable_cuda_graph", "deprecated: cuda_graph_impl=local"),
    ("external_cuda_graph", "deprecated: cuda_graph_impl=transformer_engine"),
    ("cuda_graph_scope", "deprecated name of cuda_graph_modules"),
    ("cuda_graph_modules", "modules captured in CUDA graphs"),
    ("cuda_graph_warmup_steps", "eager steps before capture"),
    ("gradient_accumulation_fusion", "wgrad accumulated straight into main_grad"),
    ("tp_comm_overlap", "TE userbuffers for TP communication overlap"),
    ("tp_comm_overlap_cfg", "userbuffer methods / fp8_buf per GEMM"),
    ("defer_embedding_wgrad_compute", "output-layer wgrad deferred (kept inputs)"),
    ("wgrad_deferral_limit", "how many deferred wgrads are kept"),
]:
    S(M, _k, _why)
S(M, "preset", "peakcast extension: a shipped model the other model keys override", "peakcast:configs/models/")
S(M, "architecture", "peakcast extension: the model class (GPTModel / HybridModel; BertModel: token-type embedding, padding "
  "mask, LM head, pooler, binary head, output bias; T5Model: encoder, decoder with cross-attention)", "mcore:examples/bert/pretrain_bert.py:47-58")
S(M, "bert_binary_head", "BERT's pooler, binary head and two-row token-type embedding", "mcore:examples/bert/pretrain_bert.py:37")
S(M, "decoder_seq_length", "T5's decoder sequence length (decoder self-attention, cross-attention queries, the head)",
  "mcore:examples/t5/pretrain_t5.py:211")
S(M, "hf_config", "peakcast extension: a Hugging Face config.json mapped as AutoBridge maps it, under the other model keys",
  "peakcast:model/src/spec_hf_config.cpp")
for _k, _src in [("enable_cuda_graph", f"{TC}:2391-2400"), ("external_cuda_graph", f"{TC}:2391-2400"),
                 ("cuda_graph_scope", f"{TC}:2409-2416"), ("mamba_d_conv", "mcore:megatron/core/ssm/mamba_mixer.py:214"),
                 ("hybrid_override_pattern", f"{HYBP}:179-193"), ("hybrid_layer_pattern", f"{HYBP}:233-245"),
                 ("moe_routing_imbalance", "peakcast:configs/schema/peakcast_extensions.json (no Megatron field)"),
                 ("moe_latent_size", "mcore:megatron/core/transformer/moe/moe_layer.py:264-296 (fc1/fc2_latent_proj), :481-483, :583-585; "
                  "experts.py:216-251")]:
    TABLE[(M, _k)]["source"] = _src
TABLE[(M, "cuda_graph_warmup_steps")]["changes_memory"] = False
TABLE[(M, "cuda_graph_warmup_steps")]["why"] = "eager steps before capture; read for validation (steady-state memory unchanged)"

# ============================================================================================
# optimizer: OptimizerConfig
# ============================================================================================
OPT = "mcore:megatron/core/optimizer/__init__.py"
DOPT = "mcore:megatron/core/optimizer/distrib_optimizer.py"
OCFG = "mcore:megatron/core/optimizer/optimizer_config.py"
EOPT = "mcore:megatron/core/optimizer/emerging_optimizers.py"
N(O, "lr", "learning rate (param-group scalar)", f"{OPT}:199")
N(O, "min_lr", "scheduler scalar", f"{OPT}:200")
N(O, "decoupled_lr", "param-group lr for embedding/output layer", f"{OPT}:122")
N(O, "decoupled_min_lr", "param-group scalar", f"{OPT}:125")
N(O, "weight_decay", "optimizer scalar", f"{OPT}:522")
N(O, "apply_wd_to_qk_layernorm", "param-group assignment of q/k norm weights", f"{OPT}:107")
U(O, "fp8_recipe",
  "the optimizer's own copy: with use_precision_aware_optimizer it decides whether TE's FusedAdam keeps the master "
  "weights (None/'delayed') or MCore does (optimizer_config.py:404-411), and how quantised params are sharded "
  "(distrib_optimizer.py:406). peakcast uses model.fp8_recipe in its place (static_memory_optimizer.cpp:27); Bridge "
  "copies the mixed-precision fp8_recipe into both", f"{OCFG}:408; {DOPT}:406")
U(O, "fp16",
  "with bf16/fp16 false and no distributed optimizer, Megatron builds FP32Optimizer (no fp32 master copies) even when "
  "the model is fp16/bf16 (__init__.py:678-686); peakcast takes the model's fp16/bf16 instead. Also picks the dynamic "
  "loss scaler (scalars)", f"{OPT}:643; {OPT}:678", inert=False)
U(O, "bf16",
  "as fp16: with bf16/fp16 false and no distributed optimizer, Megatron builds FP32Optimizer (no fp32 master copies) "
  "even for a bf16 model (__init__.py:678-686); peakcast takes model.bf16", f"{OPT}:678", inert=False)
U(O, "reuse_grad_buf_for_mxfp8_param_ag",
  "MXFP8 with fp8_param_gather: the parameter all-gather goes through the grad buffer instead of a separate param "
  "buffer (distrib_optimizer.py:2880-2895; the MXFP8 path otherwise 'will use significant amount additional GPU "
  "memory', optimizer_config.py:413-421)", f"{DOPT}:2887; mcore:megatron/core/optimizer/optimizer.py:800")
N(O, "params_dtype", "no reader in megatron/core/optimizer at 24bad8e6 (Bridge copies the mixed-precision value in)", f"{OCFG}:184")
S(O, "loss_scale", "constant loss scale (a scalar); None under fp16 is dynamic scaling, whose skipped first steps create no "
  "optimizer state (optimizer.py:820-822): read only to warn (fp16_skipped_first_steps)", f"{OPT}:644")
N(O, "initial_loss_scale", "dynamic loss-scaler scalar", f"{OPT}:648")
N(O, "min_loss_scale", "dynamic loss-scaler scalar", f"{OPT}:649")
N(O, "loss_scale_window", "dynamic loss-scaler scalar", f"{OPT}:652")
N(O, "hysteresis", "dynamic loss-scaler scalar", f"{OPT}:653")
N(O, "adam_beta1", "optimizer scalar", f"{OPT}:523")
N(O, "adam_beta2", "optimizer scalar", f"{OPT}:523")
N(O, "adam_eps", "optimizer scalar", f"{OPT}:524")
N(O, "decoupled_weight_decay", "AdamW vs Adam (adam_w_mode); same state", f"{OPT}:561")
U(O, "sgd_momentum",
  "optimizer='sgd': the momentum buffer exists only when momentum != 0 (torch/Apex SGD); peakcast always counts an fp32 "
  "momentum buffer (static_memory_optimizer.cpp:66)", f"{OPT}:532")
_MUON = " (optimizer='muon'/'adaptive_muon', read as muon_<arg> by _kwargs_from_config, emerging_optimizers.py:419-432; peakcast treats non-adam/sgd optimizers as adam and warns optimizer_not_modelled)"
N(O, "muon_momentum", "Muon scalar" + _MUON, f"{EOPT}:436")
N(O, "muon_split_qkv", "Muon orthogonalises q/k/v blocks separately (views of the same update)" + _MUON, f"{EOPT}:436")
N(O, "muon_nesterov", "Muon numerics" + _MUON, f"{EOPT}:436")
N(O, "muon_scale_mode", "Muon numerics" + _MUON, f"{EOPT}:208")
N(O, "muon_fp32_matmul_prec", "Newton-Schulz matmul precision setting" + _MUON, f"{EOPT}:436")
N(O, "muon_coefficient_type", "Newton-Schulz coefficients" + _MUON, f"{EOPT}:436")
N(O, "muon_num_ns_steps", "Newton-Schulz iterations (in-place temporaries per matrix)" + _MUON, f"{EOPT}:436")
U(O, "muon_tp_mode",
  "how Muon orthogonalises TP-sharded matrices: blockwise (local) vs duplicated/distributed (gathers the full matrix "
  "for Newton-Schulz, a transient of the unsharded weight size)" + _MUON, f"{EOPT}:436")
N(O, "muon_extra_scale_factor", "Muon scalar" + _MUON, f"{EOPT}:436")
U(O, "muon_scalar_optimizer",
  "optimizer of Muon's non-matrix params (adam: two fp32 states, lion: one)" + _MUON, f"{OPT}:811; {DOPT}:814")
N(O, "lion_beta1", "Lion scalar", f"{OPT}:609")
N(O, "lion_beta2", "Lion scalar", f"{OPT}:609")
N(O, "soap_shampoo_beta", "SOAP scalar (emerging optimizer kwargs)", f"{EOPT}:419")
N(O, "soap_precondition_frequency", "how often SOAP refreshes its preconditioners (same buffers)", f"{EOPT}:419")
U(O, "soap_use_kl_shampoo", "SOAP preconditioner variant (KL-Shampoo); SOAP's per-matrix preconditioner state is not modelled",
  f"{EOPT}:419")
U(O, "adaptive_muon_moment2_method",
  "second-moment buffer of adaptive Muon (adamuon: elementwise, normuon: per row)" + _MUON, f"{EOPT}:447")
N(O, "adaptive_muon_beta2", "adaptive Muon scalar", f"{EOPT}:447")
N(O, "adaptive_muon_eps", "adaptive Muon scalar", f"{EOPT}:447")
U(O, "use_layer_wise_distributed_optimizer",
  "emerging optimizers: whole params assigned to DP ranks (layer-wise) instead of the contiguous bucket shards peakcast "
  "models", f"{OPT}:742")
N(O, "overlap_param_gather",
  "the optimizer's copy: read only on the MXFP8 reuse_grad_buf path, to decide when master params are staged into "
  "the param buffer (optimizer.py:805, distrib_optimizer.py:2887); the buffers follow ddp.overlap_param_gather",
  "mcore:megatron/core/optimizer/optimizer.py:805")
U(O, "optimizer_offload_fraction",
  "with optimizer_cpu_offload: the fraction of optimizer state on the host; peakcast treats offload as all state on the "
  "host (static_memory_optimizer.cpp:42)", f"{OPT}:536", inert=False)
U(O, "use_torch_optimizer_for_cpu_offload", "with optimizer_cpu_offload: torch's optimizer on the GPU part instead of the fused one",
  f"{OPT}:515")
U(O, "overlap_cpu_optimizer_d2h_h2d", "with optimizer_cpu_offload: overlapped copies need staging buffers on the device",
  "mcore:megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py:204")
N(O, "pin_cpu_grads", "host memory (pinned) for offloaded grads", "mcore:megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py:110")
N(O, "pin_cpu_params", "host memory (pinned) for offloaded params", "mcore:megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py:75")
S(O, "clip_grad", "grad-norm clipping: on torch's fallback (no TE / Apex) one fp32 temporary per main gradient "
  "(clip_grads.py:189-192 calls local_multi_tensor_scale, utils.py:1337-1340)", "mcore:megatron/core/optimizer/optimizer.py:830")
N(O, "grad_norm_skip_threshold", "skip steps above a grad norm (a scalar test)", "mcore:megatron/core/optimizer/optimizer.py:1923")
N(O, "log_num_zeros_in_grad", "counts zeros in the grads (a reduction)", "mcore:megatron/core/optimizer/optimizer.py:840")
N(O, "barrier_with_L1_time", "a barrier before timers", "mcore:megatron/core/optimizer/optimizer.py:748")
N(O, "timers", "timing hooks", "mcore:megatron/core/optimizer/optimizer.py:743")
N(O, "config_logger_dir", "logging directory", f"{OCFG}:389")
U(O, "optimizer_cuda_graph",
  "the optimizer step captured in a CUDA graph (capturable Adam, its own graph pool unless shared)",
  f"{OPT}:553; mcore:megatron/core/optimizer/optimizer_cuda_graph.py:41")
for _k, _why in [
    ("optimizer", "adam / sgd state (other names are treated as adam with a warning)"),
    ("use_distributed_optimizer", "optimizer state and master params sharded over DP"),
    ("use_precision_aware_optimizer", "TE FusedAdam state dtypes / master weights"),
    ("store_param_remainders", "int16 remainders instead of fp32 master copies (TE FusedAdam)"),
    ("implementation", "peakcast extension: which Adam kernel (temporaries of torch AdamW)"),
    ("overlap_param_gather_with_optimizer_step", "param all-gather overlapped with the optimizer step"),
    ("optimizer_cpu_offload", "optimizer state on the host"),
    ("main_grads_dtype", "precision-aware: main grad dtype"),
    ("main_params_dtype", "precision-aware: master param dtype"),
    ("exp_avg_dtype", "precision-aware: Adam m dtype"),
    ("exp_avg_sq_dtype", "precision-aware: Adam v dtype"),
]:
    S(O, _k, _why, "peakcast:configs/schema/peakcast_extensions.json" if _k == "implementation" else None)
TABLE[(O, "main_grads_dtype")]["source"] = (
    f"{OCFG}:471 (only checked in MCore; Megatron-LM maps it to accumulate_allreduce_grads_in_fp32, "
    "mcore:megatron/training/arguments.py:1180; see peakcast model/src/run_spec.cpp:61)")

# ============================================================================================
# ddp: DistributedDataParallelConfig
# ============================================================================================
PGB = "mcore:megatron/core/distributed/param_and_grad_buffer.py"
FSDPB = "mcore:megatron/core/distributed/fsdp/src/megatron_fsdp/param_and_grad_buffer.py"
FSDPA = "mcore:megatron/core/distributed/fsdp/mcore_fsdp_adapter.py"
_FSDP = " (Megatron-FSDP only, i.e. use_megatron_fsdp; not simulated: refused or warned)"
_FSDP_SIM = " (Megatron-FSDP only; simulated: docs/research/megatron-fsdp-memory-facts.md)"
for _k, _why in [
    ("grad_reduce_in_fp32", "fp32 grad buffers"),
    ("overlap_grad_reduce", "bucketed overlapped grad reduce-scatter/all-reduce"),
    ("overlap_param_gather", "overlapped param all-gather (distributed optimizer)"),
    ("use_distributed_optimizer", "grad buffer sharding / reduce-scatter"),
    ("bucket_size", "DDP bucket size (padding, in-flight buckets)"),
    ("num_distributed_optimizer_instances", "distributed-optimizer replicas over DP"),
    ("pad_buckets_for_high_nccl_busbw", "bucket padding"),
    ("fp8_param_gather", "FP8 params (same switch as model.fp8_param)"),
]:
    S(D, _k, _why)
N(D, "align_param_gather", "interleaved PP: dispatch all chunks' param all-gathers together; buffers are the same", "mcore:megatron/core/distributed/distributed_data_parallel.py:464")
N(D, "check_for_nan_in_grad", "a norm of each bucket's grads, checked for NaN/Inf (a scalar per bucket)", f"{PGB}:655")
N(D, "check_for_large_grads", "as check_for_nan_in_grad, for large values", f"{PGB}:658")
U(D, "num_buckets", "sets bucket_size = num_parameters // num_buckets when the DDP is built (Bridge/Megatron-LM wrap)",
  "mcore:megatron/training/models/dist_utils.py:304-308")
U(D, "reduce_scatter_with_fp32_accumulation",
  "the bucket reduce-scatter becomes an all-to-all into a scratch buffer the size of the bucket (empty_like, "
  "reduce_scatter_with_fp32_accumulation.py:82) plus an fp32 local sum", f"{PGB}:248; mcore:megatron/core/distributed/reduce_scatter_with_fp32_accumulation.py:82")
U(D, "param_name_patterns_for_fp32_local_accumulation",
  "params matching the patterns get an fp32 main_grad (local accumulation) while the rest stay in the param dtype",
  f"{PGB}:1372")
N(D, "average_in_collective", "averaging inside the NCCL collective (pre-scale vs AVG op)", f"{PGB}:671")
U(D, "fp4_param_gather", "FP4 parameters gathered in FP4 (fp4_param)", f"{DOPT}:2843")
U(D, "reuse_grad_buf_for_mxfp8_param_ag", "the DDP copy of the MXFP8 switch (see optimizer.reuse_grad_buf_for_mxfp8_param_ag)",
  f"{DOPT}:2887")
S(D, "use_megatron_fsdp", "Megatron-FSDP instead of DDP + distributed optimizer: params sharded, gathered per module",
  "mcore:megatron/core/optimizer/__init__.py:1091")
U(D, "megatron_fsdp_version", "Megatron-FSDP v1 vs v2 buffers" + _FSDP, f"{FSDPA}:725")
U(D, "use_custom_fsdp", "deprecated name of use_megatron_fsdp", "mcore:megatron/core/distributed/distributed_data_parallel_config.py:96")
S(D, "data_parallel_sharding_strategy", "FSDP sharding of optim/grads/params (no_shard ... optim_grads_params)" + _FSDP_SIM,
  f"{FSDPB}:285")
N(D, "gradient_reduce_div_fusion", "divide fused into the FSDP reduce" + _FSDP, f"{FSDPB}:4746")
S(D, "suggested_communication_unit_size", "FSDP all-gather / reduce-scatter unit (bucket) size" + _FSDP_SIM,
  "mcore:megatron/core/distributed/fsdp/src/megatron_fsdp/megatron_fsdp.py:420")
U(D, "keep_fp8_transpose_cache", "FSDP: FP8 weight transposes kept across micro-batches" + _FSDP,
  "mcore:megatron/core/distributed/fsdp/src/megatron_fsdp/megatron_fsdp.py:625")
U(D, "nccl_ub",
  "param/grad buffers allocated from an NCCL-registered torch MemPool (param_and_grad_buffer.py:1136), outside the "
  "caching allocator's normal pools (same bytes, different reserved/fragmentation; refused with expandable_segments)",
  f"{PGB}:1136")
U(D, "fsdp_double_buffer", "FSDP: double-buffered all-gather/reduce-scatter buffers" + _FSDP, f"{FSDPB}:2227")
U(D, "fsdp_db_use_persist_buf_on_alloc_fail", "FSDP double buffer falls back to a persistent buffer on allocation failure" + _FSDP,
  f"{FSDPB}:2530")
U(D, "fsdp_all_gather_in_start_param_sync", "FSDP: the first module's all-gather issued at param-sync start (earlier unshard)" + _FSDP,
  "mcore:megatron/core/distributed/fsdp/src/megatron_fsdp/megatron_fsdp.py:1278")
S(D, "outer_dp_sharding_strategy", "HSDP outer-DP sharding" + _FSDP_SIM, f"{FSDPB}:2493")
N(D, "disable_symmetric_registration", "with nccl_ub: NCCL window registration mode (symmetric or not); same buffers", f"{PGB}:1140")
N(D, "fsdp_manual_registration", "FSDP: NCCL buffer registration done manually" + _FSDP, f"{FSDPB}:2173")
N(D, "delay_wgrad_compute",
  "where DDP registers the grad hook of params whose wgrad is delayed (module backward_dw instead of the param); the "
  "delayed-wgrad memory follows model.delay_wgrad_compute, which peakcast reads (peakcast extension of the ddp section)",
  "mcore:megatron/core/distributed/distributed_data_parallel.py:365")
U(D, "megatron_fsdp_main_params_dtype", "FSDP master param dtype" + _FSDP, f"{FSDPA}:145")
U(D, "megatron_fsdp_main_grads_dtype", "FSDP main grad dtype" + _FSDP, f"{FSDPA}:146")
U(D, "megatron_fsdp_grad_comm_dtype", "FSDP grad communication dtype (reduce buffers)" + _FSDP, f"{FSDPA}:147")
S(D, "megatron_fsdp_use_decoupled_grad", "FSDP decoupled grads (TE FusedAdam)" + _FSDP_SIM, f"{FSDPB}:2022")
S(D, "megatron_fsdp_cuda_graph_mode", "FSDP buffers kept static for CUDA graphs" + _FSDP_SIM, f"{FSDPB}:3198")
U(D, "megatron_fsdp_enable_fine_grained_param_gather", "FSDP per-parameter gather granularity" + _FSDP, f"{FSDPA}:225")
U(D, "megatron_fsdp_max_pool_double_buffer", "FSDP MaxPoolAllocator double buffer" + _FSDP, f"{FSDPB}:2523")

# ============================================================================================
# train: TrainingConfig (mcore:megatron/training/config/training_config.py, Bridge training/config.py)
# ============================================================================================
MLT = "mcore:megatron/training/training.py"
BT = "bridge:src/megatron/bridge/training/train.py"
for _k, _why in [("micro_batch_size", "samples per micro-batch: every activation"),
                 ("global_batch_size", "number of micro-batches (PP in-flight depth)")]:
    S(T, _k, _why)
S(T, "train_iters", "steps; read for the run-time estimate (no memory effect)")
TABLE[(T, "train_iters")]["changes_memory"] = False
N(T, "rampup_batch_size",
  "global batch ramps up to global_batch_size; the micro-batch is fixed and fewer micro-batches never raise the peak "
  "above the one at the final global batch", "bridge:src/megatron/bridge/training/initialize.py:117")
U(T, "step_batch_size_schedule",
  "Megatron-LM: the global batch follows the schedule (no global_batch_size allowed with it, yaml_arguments.py:116), "
  "so the number of micro-batches (PP in-flight depth) is not the one peakcast reads; not read by Bridge 600d069b",
  f"{MLT}:1535")
N(T, "decrease_batch_size_if_needed", "lowers the global batch to fit DP; fewer micro-batches never raise the peak", f"{MLT}:3992")
U(T, "empty_unused_memory_level",
  "allocated bytes unchanged, but torch.cuda.empty_cache() after the step (level >= 1) and after the backward (>= 2) "
  "returns cached blocks, so reserved memory / fragmentation (which peakcast predicts) differ",
  f"{BT}:938; {BT}:978")
N(T, "check_weight_hash_across_dp_replicas_interval", "periodic weight hash across DP replicas (reductions)", f"{BT}:261")
N(T, "gpu_sniff_test_interval",
  "Megatron-LM only (no reader in Bridge 600d069b): a GEMM/collective self-test between iterations, when activations "
  "are freed (training.py:3253-3257); its test buffers are transient. Uncertain for tiny models",
  f"{MLT}:3254")
N(T, "train_sync_interval", "a periodic device synchronize", f"{BT}:708")
N(T, "train_samples", "sample-based run length", f"{MLT}:1548")
N(T, "exit_interval", "exit condition", f"{MLT}:3357")
N(T, "exit_duration_in_mins", "exit condition (a one-element tensor)", f"{MLT}:3336")
N(T, "exit_signal_handler", "host signal handling", f"{MLT}:3285")
N(T, "exit_signal", "host signal handling", "mcore:megatron/training/global_vars.py:150")
N(T, "exit_signal_handler_for_dataloader", "host signal handling in data-loader workers", "bridge:src/megatron/bridge/data/loaders.py:302")
N(T, "exit_signal_handler_for_training", "host signal handling", "mcore:megatron/training/global_vars.py:152")
N(T, "manual_gc", "Python GC run manually (host objects; GPU tensors are freed by reference counting)", f"{MLT}:3260")
N(T, "manual_gc_interval", "Python GC interval", f"{MLT}:3261")
N(T, "manual_gc_eval", "Python GC around evaluation", f"{MLT}:4055")
S(T, "packed_sequence",
  "Bridge's packed datasets: a micro-batch is one row of packed_sequence_size tokens (micro-batch 1, training/config.py:"
  "1598-1615) carrying cu_seqlens, which TE's THD attention takes with the same saved Q, K, V, output and statistics as "
  "the [s, 1] layout peakcast simulates; DSA keeps shared top-k on the micro-batch's packed_seq_params and scores varlen "
  "rows on its global-rows path (docs/research/dsa-memory-facts.md sections 2, 5); Gemma 2's attention raises on packed batches",
  "bridge:src/megatron/bridge/training/gpt_step.py:109-117")
N(T, "iterations_to_skip", "listed iterations skip their step", f"{BT}:1571")
N(T, "num_epochs", "epoch-based run length", "bridge:src/megatron/bridge/training/config.py:470")
N(T, "check_optimizer_step_success", "a host check after the step", f"{BT}:958")
N(T, "skip_sync_grad_norm_across_mp", "skips a scalar all-reduce", f"{BT}:963")
N(T, "eval_iters",
  "evaluation steps: forward-only under no_grad, below the training peak (same micro-batch)", f"{MLT}:4274")
N(T, "eval_interval", "when evaluation runs (see eval_iters)", f"{MLT}:4047")
U(T, "skip_train", "the run does no training (evaluation only); the training-peak prediction does not apply", f"{MLT}:2056")

# ============================================================================================
# applies_when: for keys whose effect needs another setting, the condition under which a value away
# from the default matters. A warning keyed only on "differs from the default" would be noisy for these.
# The expressions are evaluated by model/src/unsimulated_keys.cpp: section.key (the value the run has,
# default included), 'string', numbers, null, true, false, [lists]; == != < <= > >=, in, not in
# (substring for strings, membership for lists), !, &&, ||, parentheses. Dtype names compare as dtypes.
# ============================================================================================
_MOE = "model.num_moe_experts != null"
_FLEX = _MOE + " && model.moe_token_dispatcher_type == 'flex'"
_FSDP_ON = "ddp.use_megatron_fsdp"
_FP8 = "model.fp8 != null"
_MAMBA = "'M' in model.hybrid_override_pattern"
_DSA_ON = "(model.experimental_attention_variant == 'dsa' || 'D' in model.hybrid_override_pattern)"
_MUON_ON = "optimizer.optimizer in ['muon', 'adaptive_muon']"
_OFFL = "model.fine_grained_activation_offloading"
_UB = "model.tp_comm_overlap && model.tensor_model_parallel_size > 1 && model.sequence_parallel"
APPLIES_WHEN = {
    (O, "bf16"): "optimizer.bf16 != model.bf16 && !(optimizer.use_distributed_optimizer || ddp.use_distributed_optimizer)",
    (O, "fp16"): "optimizer.fp16 != model.fp16 && !(optimizer.use_distributed_optimizer || ddp.use_distributed_optimizer)",
    (O, "fp8_recipe"): "optimizer.use_precision_aware_optimizer && ((optimizer.fp8_recipe == null && model.fp8_recipe != 'delayed') || (optimizer.fp8_recipe != null && optimizer.fp8_recipe != model.fp8_recipe))",
    (M, "pipeline_dtype"): "model.pipeline_model_parallel_size > 1 && model.pipeline_dtype != null && ((model.bf16 && model.pipeline_dtype != 'bf16') || (model.fp16 && model.pipeline_dtype != 'fp16') || (!model.bf16 && !model.fp16 && model.pipeline_dtype != 'fp32'))",
    (M, "params_dtype"): "(!model.bf16 && !model.fp16 && model.params_dtype != 'fp32') || (model.enable_autocast && model.autocast_dtype == null) || (" + _MAMBA + " && model.mamba_training_ssm_states_dtype == null && model.params_dtype != 'fp32')",
    (M, "autocast_dtype"): "model.enable_autocast",
    (M, "mamba_training_ssm_states_dtype"): _MAMBA,
    (M, "use_mamba_mem_eff_path"): _MAMBA,
    (M, "mamba_chunk_size"): _MAMBA + " && model.mamba_chunk_size != 128",
    (M, "deterministic_mode"): "(model.experimental_attention_variant == 'gated_delta_net' || 'G' in model.hybrid_override_pattern)",
    (M, "hierarchical_context_parallel_sizes"): "model.context_parallel_size > 1 && 'a2a+p2p' in model.cp_comm_type",
    # DSA's own allgather CP (the only one it takes) is simulated (sim/src/dsa_graphs.cpp).
    (M, "cp_comm_type"): "model.context_parallel_size > 1 && model.cp_comm_type not in [null, 'p2p'] && !" + _DSA_ON,
    (M, "max_seqlen_per_dp_cp_rank"): "model.hybrid_context_parallel",
    (M, "overlap_p2p_comm"): "model.pipeline_model_parallel_size > 1 && model.virtual_pipeline_model_parallel_size > 1",
    (M, "overlap_p2p_comm_warmup_flush"): "model.overlap_p2p_comm",
    (M, "tp_comm_bulk_wgrad"): _UB, (M, "tp_comm_bulk_dgrad"): _UB, (M, "tp_comm_overlap_ag"): _UB,
    (M, "tp_comm_overlap_rs"): _UB, (M, "tp_comm_overlap_rs_dgrad"): _UB,
    (M, "tp_comm_overlap_disable_qkv"): _UB, (M, "tp_comm_overlap_disable_fc1"): _UB,
    (M, "cpu_offloading_double_buffering"): "model.cpu_offloading",
    (M, "softmax_type"): "model.softmax_type != 'vanilla'",
    (M, "activation_func_clamp_value"): "model.gated_linear_unit && model.activation_func_clamp_value != null",
    (M, "memory_efficient_layer_norm"): "model.transformer_impl == 'local'",
    (M, "use_fused_weighted_squared_relu"): _MOE + " && model.activation_func == 'squared_relu'",
    (M, "fp8_wgrad"): _FP8 + " && model.fp8_recipe in ['delayed', 'tensorwise']",
    (M, "fp8_output_proj"): _FP8 + " && model.fp8_recipe == 'mxfp8'",
    (M, "fp8_dot_product_attention"): _FP8, (M, "fp8_multi_head_attention"): _FP8,
    (M, "disable_parameter_transpose_cache"): _FP8,
    (M, "keep_mtp_spec_in_bf16"): "model.mtp_num_layers > 0 && model.fp8 != null",
    (M, "mtp_hybrid_override_pattern"): "model.mtp_num_layers > 0 && model.hybrid_override_pattern != null && !('/' in model.hybrid_override_pattern)",
    (M, "fp4_recipe"): "model.fp4 != null", (M, "fp4_param"): "model.fp4 != null", (M, "fp4_quantizer_factory"): "model.fp4_recipe == 'custom'",
    (M, "kitchen_attention_backend"): "model.use_kitchen_attention",
    (M, "use_grouped_gemm_for_dense_mlp"): "model.use_transformer_engine_op_fuser",
    (M, "dense_grouped_gemm"): "model.use_transformer_engine_op_fuser",
    (M, "moe_shared_expert_glu_interleave_size"): "model.use_grouped_gemm_for_shared_expert",
    (M, "moe_router_padding_for_quantization"): _MOE,
    (M, "moe_router_padding_for_fp8"): _MOE, (M, "moe_mlp_glu_interleave_size"): _MOE + " && model.gated_linear_unit",
    (M, "moe_expert_rank_capacity_factor"): _MOE,
    (M, "moe_enable_deepep"): _FLEX, (M, "moe_flex_dispatcher_backend"): _FLEX,
    (M, "moe_flex_dispatcher_num_sms"): _FLEX, (M, "moe_deepep_num_sms"): _FLEX + " && model.moe_flex_dispatcher_backend == 'deepep'",
    (M, "moe_hybridep_num_sms"): _FLEX + " && model.moe_flex_dispatcher_backend == 'hybridep'",
    (M, "moe_permute_fusion_into_hybridep"): _FLEX + " && model.moe_flex_dispatcher_backend == 'hybridep'",
    (M, "moe_hybridep_pad_uneven_dispatch_inputs"): _FLEX + " && model.moe_flex_dispatcher_backend == 'hybridep'",
    (M, "moe_ncclep_static_shape"): _FLEX + " && model.moe_flex_dispatcher_backend == 'ncclep'",
    (M, "moe_ncclep_zero_copy"): _FLEX + " && model.moe_flex_dispatcher_backend == 'ncclep'",
    (M, "moe_paged_stash_page_size"): "model.moe_paged_stash",
    (M, "moe_paged_stash_buffer_size_factor_cuda"): "model.moe_paged_stash",
    (M, "moe_paged_stash_buffer_size_factor_cpu"): "model.moe_paged_stash",
    (M, "offload_modules"): _OFFL, (M, "min_offloaded_tensor_size"): _OFFL, (M, "delay_offload_until_cuda_graph"): _OFFL,
    (M, "delta_offload_bytes_across_pp_ranks"): _OFFL, (M, "activation_offload_fraction"): _OFFL,
    (M, "fine_grained_offloading_max_inflight_offloads"): _OFFL + " && model.cuda_graph_impl == 'full_iteration'",
    (M, "cuda_graph_use_single_mempool"): "model.cuda_graph_impl == 'full_iteration' || optimizer.optimizer_cuda_graph",
    (M, "cuda_graph_retain_backward_graph"): "model.cuda_graph_impl != 'none'",
    (M, "clone_scatter_output_in_embedding"): "model.sequence_parallel",
    (M, "scatter_embedding_sequence_parallel"): "model.sequence_parallel",
    (M, "apply_residual_connection_post_layernorm"): "model.use_transformer_engine_full_layer_spec",
    (M, "kitchen_attention_backend"): "model.use_kitchen_attention",
    (M, "expert_gtp_weight_remat_size"): _MOE, (M, "expert_tensor_parallel_num_weight_shards"): _MOE,
    (O, "reuse_grad_buf_for_mxfp8_param_ag"): "model.fp8_recipe == 'mxfp8' && (ddp.fp8_param_gather || model.fp8_param)",
    (D, "reuse_grad_buf_for_mxfp8_param_ag"): "model.fp8_recipe == 'mxfp8' && (ddp.fp8_param_gather || model.fp8_param)",
    (O, "sgd_momentum"): "optimizer.optimizer == 'sgd' && optimizer.sgd_momentum == 0",
    (O, "muon_tp_mode"): _MUON_ON + " && model.tensor_model_parallel_size > 1",
    (O, "muon_scalar_optimizer"): _MUON_ON, (O, "adaptive_muon_moment2_method"): "optimizer.optimizer == 'adaptive_muon'",
    (O, "soap_use_kl_shampoo"): "optimizer.optimizer == 'soap'",
    (O, "use_layer_wise_distributed_optimizer"): "optimizer.optimizer not in ['adam', 'sgd']",
    (O, "optimizer_offload_fraction"): "optimizer.optimizer_cpu_offload && optimizer.optimizer_offload_fraction < 1",
    (O, "use_torch_optimizer_for_cpu_offload"): "optimizer.optimizer_cpu_offload",
    (O, "overlap_cpu_optimizer_d2h_h2d"): "optimizer.optimizer_cpu_offload",
    (D, "param_name_patterns_for_fp32_local_accumulation"): "!ddp.grad_reduce_in_fp32",
    (D, "fp4_param_gather"): "model.fp4 != null",
    (D, "nccl_ub"): "ddp.nccl_ub",
}
for _k in ["megatron_fsdp_version", "data_parallel_sharding_strategy", "suggested_communication_unit_size",
           "keep_fp8_transpose_cache", "fsdp_double_buffer", "fsdp_db_use_persist_buf_on_alloc_fail",
           "fsdp_all_gather_in_start_param_sync", "outer_dp_sharding_strategy", "megatron_fsdp_main_params_dtype",
           "megatron_fsdp_main_grads_dtype", "megatron_fsdp_grad_comm_dtype", "megatron_fsdp_use_decoupled_grad",
           "megatron_fsdp_cuda_graph_mode", "megatron_fsdp_enable_fine_grained_param_gather",
           "megatron_fsdp_max_pool_double_buffer"]:
    APPLIES_WHEN[(D, _k)] = _FSDP_ON
for _k in [k for (s, k) in TABLE if s == M and k.startswith("dsa_")]:
    APPLIES_WHEN[(M, _k)] = _DSA_ON
for (_s, _k), _cond in APPLIES_WHEN.items():
    assert (_s, _k) in TABLE, (_s, _k)
    TABLE[(_s, _k)]["applies_when"] = _cond

# ============================================================================================
# peakcast-only sections of peakcast_extensions.json (no Megatron field)
# ============================================================================================
C, TOP = "cluster", "top"
S(C, "num_gpus", "world size (DP = num_gpus / (TP*PP*CP)): DP sharding of the distributed optimizer", "peakcast:configs/schema/peakcast_extensions.json")
S(C, "gpu", "GPU preset or object: usable memory (the limit) and speeds", "peakcast:configs/gpus/")
S(C, "expandable_segments", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: caching-allocator segments (reserved memory)",
  "peakcast:model/src/caching_allocator.cpp")
S(C, "pytorch_cuda_alloc_conf", "PYTORCH_CUDA_ALLOC_CONF: the caching-allocator replay's expandable_segments, max_split_size_mb, "
  "max_non_split_rounding_mb and roundup_power2_divisions (reserved memory, fragmentation out-of-memory errors)",
  "peakcast:model/src/alloc_conf.cpp")
S(C, "cublas_workspace_config", "CUBLAS_WORKSPACE_CONFIG: the size and count of PyTorch's cuBLAS workspaces per handle and "
  "stream (parseChosenWorkspaceSize), a fixed cost per rank", "peakcast:sim/src/framework_fixed.cpp:24")
S(C, "transformer_engine_version", "the TE release: from 2.18 TE's fused cross entropy saves an fp32 gradient of the logits",
  "peakcast:sim/src/module_graphs.cpp:258")
N(TOP, "description", "free text", "peakcast:configs/schema/peakcast_extensions.json")
_put(TOP, "bridge_model_class", **{"class": "simulated", "why": "the Bridge model provider class whose defaults fill left-out "
     "model keys under the bridge profile (set by the Bridge run_config.yaml reader); read by spec_parser.cpp, not by the typed parser",
     "source": "peakcast:model/src/spec_parser.cpp", "default_is_inert": True, "changes_memory": True})
_put(TOP, "defaults", **{"class": "simulated", "why": "which defaults left-out keys take (megatron-core dataclasses or "
     "Bridge's providers); read by spec_parser.cpp:53, not by the typed parser", "source": "peakcast:model/src/spec_parser.cpp:53",
     "default_is_inert": True, "changes_memory": True})

# ============================================================================================
# Keys typed for the validation rules only (model/src/spec_fill_checks.cpp, whose fields no later stage
# reads; docs/megatron-refusals/README.md): their class becomes rule_only, and changes_memory keeps the
# classification above (not_simulated: it changes memory, so unsimulated_keys.cpp still warns for it;
# no_memory_effect: it does not). why/source/default_is_inert stay as written above.
# ============================================================================================
RULE_ONLY_TYPED = {
    M: [
        "tensor_parallel_num_weight_shards", "hierarchical_context_parallel_sizes", "hybrid_context_parallel",
        "expert_gtp_weight_remat_size", "params_dtype", "deterministic_mode", "use_te_rng_tracker", "pipeline_dtype",
        "overlap_p2p_comm", "batch_p2p_comm", "mtp_hybrid_override_pattern", "flash_attention_version",
        "fp32_residual_connection", "layernorm_zero_centered_gamma", "glu_linear_offset", "rotary_interleaved",
        "qk_l2_norm", "qk_clip", "qk_clip_alpha", "qk_clip_threshold", "calculate_per_token_loss", "no_rope_freq",
        "dsa_indexer_scoring_relu",
        "use_mup", "mup_base_hidden_size", "apply_query_key_layer_scaling", "persist_layer_norm",
        "memory_efficient_layer_norm", "use_fused_weighted_squared_relu", "fused_residual_rmsnorm", "fp8_interval",
        "use_kitchen", "fp4_recipe", "fp4_param", "fp4_quantizer_factory", "use_grouped_gemm_for_shared_expert",
        "moe_shared_expert_glu_interleave_size", "use_grouped_gemm_for_dense_mlp", "moe_single_grouped_weight",
        "moe_single_grouped_bias", "moe_flex_dispatcher_num_sms", "moe_deepep_num_sms", "moe_hybridep_num_sms",
        "moe_ncclep_static_shape", "moe_ncclep_zero_copy", "moe_mlp_glu_interleave_size",
        "moe_expert_rank_capacity_factor", "cp_comm_type", "batch_invariant_mode", "inference_fuse_tp_communication",
        "inference_disable_triton_nvls_kernels", "rope_type", "cache_mla_latents", "mla_down_proj_fusion",
        "fp16_lm_cross_entropy", "dense_grouped_gemm", "restore_modelopt_state", "mamba_chunk_size",
        "hybrid_attention_ratio", "hybrid_mlp_ratio", "window_size", "interleaved_attn_pattern", "is_vision_language",
    ],
    O: [
        "fp8_recipe", "fp16", "bf16", "reuse_grad_buf_for_mxfp8_param_ag", "initial_loss_scale",
        "min_loss_scale", "loss_scale_window", "hysteresis", "decoupled_weight_decay", "overlap_param_gather",
        "use_layer_wise_distributed_optimizer",
    ],
    D: [
        "num_buckets", "reduce_scatter_with_fp32_accumulation", "param_name_patterns_for_fp32_local_accumulation",
        "average_in_collective", "reuse_grad_buf_for_mxfp8_param_ag", "megatron_fsdp_version",
        "nccl_ub", "fsdp_double_buffer", "fsdp_manual_registration",
    ],
    T: [
        "rampup_batch_size", "step_batch_size_schedule", "decrease_batch_size_if_needed", "train_samples",
        "manual_gc", "manual_gc_interval", "num_epochs",
    ],
}
for _s, _keys in RULE_ONLY_TYPED.items():
    for _k in _keys:
        _e = TABLE[(_s, _k)]
        assert _e["class"] in ("not_simulated", "no_memory_effect"), (_s, _k, _e["class"])
        _e["changes_memory"] = _e["class"] == "not_simulated"
        _e["class"] = "rule_only"
R(C, "transformer_engine_available",
  "Transformer Engine importable where the run trains (default true, as in NeMo / Bridge containers); declared false, the "
  "CheckpointWithoutOutput users, cpu_offloading, fine-grained offloading and the TE layer spec are refused (validate_environment.cpp)",
  "mcore:megatron/core/tensor_parallel/random.py:84-91; mcore:megatron/core/transformer/transformer_block.py:298", False)
R(C, "calibration_harness",
  "the run used peakcast's calibration harness, whose patches let the local spec run what stock Megatron refuses there (MLA "
  "attention, torch norms under SP, deferred wgrad, CheckpointWithoutOutput stand-ins); the rules for those do not refuse it",
  "peakcast:calibration/harness/megatron_env.py", False)

