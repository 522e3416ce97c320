"""The training phases of run_case.run() after the model build: DDP, the optimizer, the phase
tracking, the batches and the loss, the MoE routing and per-module hooks, and the measured
iterations. Split out of run_case.py (issue #25), statements unchanged. run_case passes its PHASE and
STATE dicts in (run_case.py may run as __main__, so this module never imports it).
"""
import math
import time

from run_case_memory import alive_blocks_by_source, optimizer_tensor_bytes, peak_blocks_by_source


def _build_ddp(PHASE, torch, config, ddp_config, chunks, m, take_peak, reset, DistributedDataParallel):
    """Phase ddp_build: one DistributedDataParallel per model chunk."""
    PHASE["name"] = "ddp_build"
    reset()
    # Megatron-LM's get_model builds DDP on the full-iteration capture stream for those graphs and on a
    # fresh side stream otherwise (training.py:1891-1900), so its AccumulateGrad nodes reference no
    # stream a capture cannot wait on. The harness follows it for the two graph kinds whose backward is
    # captured (TE's fails on the legacy stream) and keeps the default stream elsewhere, as every
    # earlier record was measured.
    import contextlib
    ddp_stream_ctx = contextlib.nullcontext()
    if config.cuda_graph_impl == "full_iteration":
        from megatron.core.full_cuda_graph import get_shared_capture_stream
        ddp_stream = get_shared_capture_stream()
    elif config.cuda_graph_impl == "transformer_engine":
        ddp_stream = torch.cuda.Stream()
    if config.cuda_graph_impl in ("full_iteration", "transformer_engine"):
        ddp_stream.wait_stream(torch.cuda.current_stream())
        ddp_stream_ctx = torch.cuda.stream(ddp_stream)
    with ddp_stream_ctx:
        ddp_chunks = [DistributedDataParallel(config=config, ddp_config=ddp_config, module=c,
                                              disable_bucketing=(i > 0))
                      for i, c in enumerate(chunks)]
    m["ddp_build_peak_bytes"] = take_peak()
    m["allocated_after_ddp_bytes"] = torch.cuda.memory_allocated()
    return ddp_chunks


def _build_optimizer(PHASE, torch, opt_config, ddp_chunks, rec, m, take_peak, reset, get_megatron_optimizer):
    """Phase optimizer_build: get_megatron_optimizer, and the optimizer classes into the provenance."""
    PHASE["name"] = "optimizer_build"
    reset()
    optimizer = get_megatron_optimizer(opt_config, ddp_chunks, use_gloo_process_groups=False)
    m["optimizer_build_peak_bytes"] = take_peak()
    m["allocated_after_optimizer_build_bytes"] = torch.cuda.memory_allocated()
    inner = []
    for o in getattr(optimizer, "chained_optimizers", [optimizer]):
        try:
            io = o.optimizer
        except Exception:
            io = None
        inner.append(f"{type(o).__name__}({type(io).__module__}.{type(io).__name__})")
    rec["provenance"]["optimizer_class"] = inner
    return optimizer


def _prepare_iterations(PHASE, STATE, torch, config, optimizer, ddp_chunks, rank, vocab, mbs, seq, vpp, history, m,
                        schedules, get_forward_backward_func):
    """Everything the iterations need: the optimizer's loss scaling in the config, the phase tracking,
    the batches and the loss, the MoE routing and per-module hooks, the forward-backward function."""
    config.grad_scale_func = optimizer.scale_loss
    config.finalize_model_grads_func = None
    if config.pipeline_dtype is None:
        config.pipeline_dtype = config.params_dtype

    _track_phases(PHASE, schedules)
    batches, forward_step = _batches_and_loss(PHASE, STATE, torch, rank, vocab, mbs, seq, history, m)
    routing = _routing_hooks(PHASE, ddp_chunks)
    # TE's make_graphed_callables refuses a layer with hooks (TE graph.py:334-343): no layer marks then.
    module_marks = _module_mark_hooks(PHASE, torch, ddp_chunks, config.cuda_graph_impl != "transformer_engine")

    data_iter = [batches() for _ in ddp_chunks] if vpp else batches()
    fwd_bwd = get_forward_backward_func()
    if config.cuda_graph_impl == "full_iteration":
        # As Megatron-LM's train() does (training.py:3657-3662): eager for
        # cuda_graph_warmup_steps calls, then one graph of the whole forward-backward.
        from megatron.core.full_cuda_graph import FullCudaGraphWrapper
        fwd_bwd = FullCudaGraphWrapper(fwd_bwd, cuda_graph_warmup_steps=config.cuda_graph_warmup_steps,
                                       use_single_mempool=config.cuda_graph_use_single_mempool)
    return fwd_bwd, forward_step, data_iter, routing, module_marks


def te_cuda_graph_helper(config, ddp_chunks, optimizer, rank, seq, mbs, gbs, dp):
    """Transformer Engine's per-layer graphs, as Megatron-LM's train() builds them
    (training.py:3754-3761): a TECudaGraphHelper over the model chunks and the optimizer. Its capture
    reads get_num_microbatches() (cuda_graphs.py:2520-2526), so the micro-batch calculator is set up
    first, as initialize_megatron() does (global batch, micro batch, data-parallel size)."""
    from megatron.core.num_microbatches_calculator import init_num_microbatches_calculator
    from megatron.core.transformer.cuda_graphs import TECudaGraphHelper
    init_num_microbatches_calculator(rank, None, gbs, mbs, dp)
    return TECudaGraphHelper(model=ddp_chunks, config=config, seq_length=seq, micro_batch_size=mbs,
                             optimizers=[optimizer])


def _capture_te_graphs(PHASE, torch, helper, it, m, take_peak, reset):
    """As train() does before the iteration whose count of finished iterations equals
    cuda_graph_warmup_steps (training.py:3825-3835): capture every layer's graphs, one phase."""
    PHASE["name"] = "cuda_graph_capture"
    reset()
    t0 = time.perf_counter()
    helper.create_cudagraphs()
    m["cuda_graph_capture"] = {
        "before_iteration": it, "peak_bytes": take_peak(),
        "peak_reserved_bytes": torch.cuda.max_memory_reserved(),
        "allocated_after_bytes": torch.cuda.memory_allocated(),
        "reserved_after_bytes": torch.cuda.memory_reserved(),
        "microbatches_captured": helper.num_microbatches,
        "layers_captured": len(helper.flattened_callables), "time_s": time.perf_counter() - t0}


def _track_phases(PHASE, schedules):
    """Name the phase (forward / backward) the schedules are in, for OOM attribution."""
    # ---- phase tracking for OOM attribution ----------------------------------------------
    orig_fwd, orig_bwd = schedules.forward_step, schedules.backward_step

    def fwd_wrapper(*a, **k):
        PHASE["name"] = "forward"
        return orig_fwd(*a, **k)

    def bwd_wrapper(*a, **k):
        PHASE["name"] = "backward"
        return orig_bwd(*a, **k)

    schedules.forward_step = fwd_wrapper
    schedules.backward_step = bwd_wrapper


def _batches_and_loss(PHASE, STATE, torch, rank, vocab, mbs, seq, history, m):
    """The random token batches (seeded per rank) and the forward step with its loss function."""
    gen = torch.Generator(device="cuda")
    gen.manual_seed(4321 + rank)

    def batches():
        while True:
            tokens = torch.randint(0, vocab, (mbs, seq), device="cuda", generator=gen)
            labels = torch.randint(0, vocab, (mbs, seq), device="cuda", generator=gen)
            pos = torch.arange(seq, device="cuda").unsqueeze(0).expand(mbs, -1)
            yield {"tokens": tokens, "labels": labels, "position_ids": pos}

    def loss_func(output_tensor):
        losses = output_tensor.float()
        loss = losses.sum()
        # A fill on the device, not a host-to-device copy: capturable by a full-iteration CUDA graph.
        ntok = torch.full((), losses.numel(), dtype=torch.int, device=losses.device)
        STATE["last_loss"] = loss.detach()
        if PHASE["iteration"] == 1 and STATE["allocated_at_loss"] is None:
            STATE["allocated_at_loss"] = torch.cuda.memory_allocated()
            if history:
                m["alive_at_loss_by_source"] = alive_blocks_by_source(torch)
            STATE["loss_value"] = float(loss.detach() / losses.numel())
        return loss, ntok, {"lm loss": torch.stack([loss.detach(), ntok.float()])}

    def forward_step(data_iterator, model):
        b = next(data_iterator)
        out = model(b["tokens"], b["position_ids"], None, labels=b["labels"])
        return out, loss_func

    return batches, forward_step


def _routing_hooks(PHASE, ddp_chunks):
    """Hooks on every MoE layer's router and experts; returns the list they fill per forward pass."""
    # Routed rows per MoE layer in each forward (not recompute) pass: the rows this rank's
    # router sends (tokens x top-k), the rows its local experts receive after the dispatch, and
    # the per-expert counts of its own routing. Dropless routing makes activation memory
    # follow the received rows, so a record carries the routing its peak came from.
    routing = []

    def _router_hook(module, inputs, output):
        if PHASE["name"] != "forward":
            return
        routing_map = output[1]
        counts = routing_map.sum(dim=0)
        routing.append({"routed_rows": int(counts.sum().item()),
                        "expert_counts": [int(x) for x in counts.tolist()]})

    def _experts_hook(module, inputs):
        if PHASE["name"] != "forward" or not routing:
            return
        if "received_rows" not in routing[-1]:
            routing[-1]["received_rows"] = int(inputs[0].shape[0])

    try:
        from megatron.core.transformer.moe.moe_layer import MoELayer
        for c in ddp_chunks:
            for mod in c.modules():
                if isinstance(mod, MoELayer):
                    mod.router.register_forward_hook(_router_hook)
                    mod.experts.register_forward_pre_hook(_experts_hook)
    except ImportError:
        pass
    return routing


def _module_mark_hooks(PHASE, torch, ddp_chunks, mark_layers):
    """Hooks after the embedding, each decoder layer and the final norm; returns their marks."""
    # memory_allocated() after each module of the first forward pass: the embedding, every
    # decoder layer, the final norm. Compared with the simulator's per-module timeline it
    # shows which module's saved tensors differ.
    module_marks = []

    def _mark(label):
        def hook(module, inputs, output):
            if PHASE["name"] == "forward" and PHASE["iteration"] == 1 and torch.is_grad_enabled():
                torch.cuda.synchronize()
                module_marks.append({"module": label, "allocated_bytes": torch.cuda.memory_allocated()})
        return hook

    for ci, c in enumerate(ddp_chunks):
        core = c
        while not hasattr(core, "decoder") and hasattr(core, "module"):
            core = core.module
        emb = getattr(core, "embedding", None)
        if emb is not None:
            emb.register_forward_hook(_mark(f"chunk{ci}.embedding"))
        dec = getattr(core, "decoder", None)
        if dec is not None:
            for layer in getattr(dec, "layers", []) if mark_layers else []:
                layer.register_forward_hook(_mark(f"chunk{ci}.layer{layer.layer_number - 1}"))
            fln = getattr(dec, "final_layernorm", None)
            if fln is not None:
                fln.register_forward_hook(_mark(f"chunk{ci}.final_layernorm"))
    return module_marks


def _iterate(PHASE, STATE, torch, config, iterations, ddp_chunks, optimizer, m, take_peak, reset,
             fwd_bwd, forward_step, data_iter, num_mb, seq, mbs, history, routing, module_marks,
             parallel_state, schedules, finalize_model_grads):
    """The measured iterations: forward-backward, gradient sync and optimizer step, each a phase."""
    te_graphs = STATE.get("te_cuda_graph_helper")
    for it in range(1, iterations + 1):
        PHASE["iteration"] = it
        if te_graphs is not None and not te_graphs.capture_finished() and it - 1 == config.cuda_graph_warmup_steps:
            _capture_te_graphs(PHASE, torch, te_graphs, it, m, take_peak, reset)
        rec_it = {"iteration": it}
        m["iterations"].append(rec_it)
        for c in ddp_chunks:
            c.zero_grad_buffer()
        optimizer.zero_grad()
        rec_it["allocated_before_fwd_bwd_bytes"] = torch.cuda.memory_allocated()

        PHASE["name"] = "forward"
        reset()
        t0 = time.perf_counter()
        # The schedules clear and drain the deferred output-layer wgrad only when they finalize
        # the gradients themselves (schedules.py:2064-2068, :2217-2221); the harness times the
        # gradient sync apart, so it calls the same two functions around the schedule.
        defer_module = None
        if getattr(config, "defer_embedding_wgrad_compute", False):
            defer_module = schedules.clear_embedding_activation_buffer(
                config, ddp_chunks, parallel_state.is_pipeline_last_stage(ignore_virtual=True))
        fwd_bwd(forward_step_func=forward_step, data_iterator=data_iter, model=ddp_chunks,
                num_microbatches=num_mb, seq_length=seq, micro_batch_size=mbs,
                decoder_seq_length=seq, forward_only=False)
        if defer_module is not None:
            entries = (len(defer_module.embedding_activation_buffer), len(defer_module.grad_output_buffer))
            before = torch.cuda.memory_allocated()
            # no_grad: the fake process group's all-gather writes into the global buffer's view
            # with autograd's in-place check, which NCCL's does not (the flush has no autograd ops).
            with torch.no_grad():
                schedules.finish_embedding_wgrad_compute(
                    config, defer_module, True, parallel_state.get_tensor_model_parallel_group())
            rec_it["deferred_wgrad"] = {
                "entries": list(entries), "allocated_before_flush_bytes": before,
                "allocated_after_flush_bytes": torch.cuda.memory_allocated(),
                "left": [len(defer_module.embedding_activation_buffer), len(defer_module.grad_output_buffer)]}
        elif getattr(config, "defer_embedding_wgrad_compute", False):
            rec_it["deferred_wgrad"] = {"flush": "not the last stage"}
        rec_it["fwd_bwd_peak_bytes"] = take_peak()
        rec_it["fwd_bwd_peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
        rec_it["fwd_bwd_peak_requested_bytes"] = torch.cuda.memory_stats().get("requested_bytes.all.peak")
        if history and it == 1:
            m["alive_at_first_fwd_bwd_peak_by_source"] = peak_blocks_by_source(torch)
        if routing:
            rec_it["moe_routing"] = list(routing)
            routing.clear()
        if STATE.get("last_loss") is not None:
            # A diverged run (nan loss) routes every token to the first experts.
            v = float(STATE["last_loss"])
            rec_it["last_microbatch_loss_sum"] = v if math.isfinite(v) else None
        rec_it["fwd_bwd_time_s"] = time.perf_counter() - t0
        rec_it["allocated_after_fwd_bwd_bytes"] = torch.cuda.memory_allocated()
        if it == 1:
            m["allocated_at_loss_bytes"] = STATE["allocated_at_loss"]
            if module_marks:
                m["first_forward_module_allocated"] = list(module_marks)
            lv = STATE["loss_value"]
            m["loss_at_iteration_1"] = lv if lv is None or math.isfinite(lv) else None

        PHASE["name"] = "grad_sync"
        reset()
        t0 = time.perf_counter()
        finalize_model_grads(ddp_chunks)
        rec_it["grad_sync_peak_bytes"] = take_peak()
        rec_it["grad_sync_time_s"] = time.perf_counter() - t0

        PHASE["name"] = "optimizer"
        reset()
        t0 = time.perf_counter()
        step_ret = optimizer.step()
        rec_it["optimizer_peak_bytes"] = take_peak()
        if config.fp16:
            # fp16: whether the step ran (a found inf/nan skips it before Adam, optimizer.py:820-822,
            # so no moments are created) and the dynamic loss scale after it.
            ok = step_ret[0] if isinstance(step_ret, tuple) else step_ret
            rec_it["optimizer_update_successful"] = bool(ok)
            rec_it["loss_scale_after_step"] = float(optimizer.get_loss_scale().item())
        rec_it["optimizer_time_s"] = time.perf_counter() - t0
        rec_it["allocated_after_step_bytes"] = torch.cuda.memory_allocated()
        rec_it["optimizer_peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
        rec_it["reserved_after_step_bytes"] = torch.cuda.memory_reserved()
        # What the tensors asked for, before the allocator's rounding and unsplit remainders.
        stats = torch.cuda.memory_stats()
        rec_it["optimizer_peak_requested_bytes"] = stats.get("requested_bytes.all.peak")
        rec_it["requested_after_step_bytes"] = stats.get("requested_bytes.all.current")
        if it == 1:
            m["optimizer_tensors_after_first_step"] = optimizer_tensor_bytes(optimizer)
            if history:
                m["alive_after_first_step_by_source"] = alive_blocks_by_source(torch)
