#!/usr/bin/env python3
"""Measure one peakcast case on a GPU with the pinned Megatron Core (local spec, no TE).

One case per process (MoE layers keep global state). Writes one JSON line (record_version 1,
docs/measurement-format.md) per measured rank to --out.

  python3 run_case.py --case CASE.json --out records.jsonl            # single GPU or fake-PG rank
  torchrun --nproc_per_node 2 run_case.py --case CASE.json --out o.jsonl  # real multi-GPU
  python3 run_case.py --stdin --out o.jsonl   # import first, then read the case path from stdin

CASE.json is one expanded case: {"name","group","spec":{model,train,optimizer,ddp,cluster},
"fake_rank": int|null, "iterations": int, "expect": "measure"|"validation_error"}.
"""
import argparse
import datetime
import fcntl
import json
import math
import os
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import megatron_env  # noqa: E402  (puts .megatron on sys.path)

PHASE = {"name": None, "iteration": None}
STATE = {"allocated_at_loss": None, "loss_value": None}


def _write_record(path, rec):
    line = (json.dumps(rec, sort_keys=False) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, line)
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _driver():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout.strip()
        return out.splitlines()[0] if out else None
    except Exception:
        return None


def provenance(torch):
    return {
        "gpu": torch.cuda.get_device_name(torch.cuda.current_device()),
        "driver": _driver(),
        "cuda": torch.version.cuda,
        "torch": torch.__version__,
        "megatron_core_revision": megatron_env.MEGATRON_REVISION,
        "stack": "megatron-core local spec, no Transformer Engine, torch AdamW",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "share_storage": megatron_env.SHARE_STORAGE_MODE["mode"],
    }


def init_distributed(torch, case):
    import torch.distributed as dist
    spec = case["spec"]
    world = int(spec["cluster"]["num_gpus"])
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ and int(os.environ["WORLD_SIZE"]) > 1:
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        local = int(os.environ.get("LOCAL_RANK", rank))
        torch.cuda.set_device(local)
        dist.init_process_group("nccl", rank=rank, world_size=world,
                                device_id=torch.device("cuda", local))
        return rank, world, False
    torch.cuda.set_device(0)
    if world > 1:
        from torch.testing._internal.distributed.fake_pg import FakeStore
        rank = int(case.get("fake_rank") or 0)
        dist.init_process_group("fake", rank=rank, world_size=world, store=FakeStore())
        return rank, world, True
    dist.init_process_group("nccl", init_method=f"file:///tmp/peakcast_pg_{os.getpid()}",
                            rank=0, world_size=1, device_id=torch.device("cuda", 0))
    return 0, 1, False


def run(case, rec):
    import torch
    from functools import partial

    from spec_convert import (build_ddp_config, build_optimizer_config,
                              build_transformer_config)

    spec = case["spec"]
    model_spec, train = spec["model"], spec["train"]

    # Validation happens at config construction: do it before touching the GPU.
    try:
        config, gpt = build_transformer_config(model_spec)
        ddp_config = build_ddp_config(spec.get("ddp", {}))
        opt_config = build_optimizer_config(spec.get("optimizer", {}))
    except (ValueError, AssertionError, TypeError) as e:
        rec["validation_error"] = {"type": type(e).__name__, "message": str(e)}
        rec["measured"] = None
        return
    if case.get("expect") == "validation_error":
        rec["validation_error"] = None
        rec["error"] = "expected a validation error, config was accepted"

    rank, world, fake = init_distributed(torch, case)
    megatron_env.apply_all(fake_process_group=fake,
                           gradient_accumulation_fusion=bool(model_spec.get("gradient_accumulation_fusion")))

    from megatron.core import parallel_state, tensor_parallel
    from megatron.core.distributed import DistributedDataParallel, finalize_model_grads
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_decoder_block_spec
    from megatron.core.optimizer import get_megatron_optimizer
    from megatron.core.pipeline_parallel import get_forward_backward_func
    from megatron.core.pipeline_parallel import schedules
    from megatron.core.transformer.module import Float16Module

    tp = config.tensor_model_parallel_size
    pp = config.pipeline_model_parallel_size
    vpp = config.virtual_pipeline_model_parallel_size
    parallel_state.initialize_model_parallel(
        tensor_model_parallel_size=tp, pipeline_model_parallel_size=pp,
        virtual_pipeline_model_parallel_size=vpp,
        context_parallel_size=config.context_parallel_size,
        expert_model_parallel_size=config.expert_model_parallel_size,
        expert_tensor_parallel_size=config.expert_tensor_parallel_size,
        create_gloo_process_groups=False)
    # Megatron's local CUDA graphs need a graph-safe RNG tracker (CudaGraphManager asserts it).
    tensor_parallel.model_parallel_cuda_manual_seed(
        1234, use_cudagraphable_rng=(config.cuda_graph_impl in ("local", "full_iteration")))
    if any(t in (config.recompute_modules or []) for t in ("layernorm", "moe_act", "mla_up_proj")) \
            and config.recompute_granularity == "selective":
        megatron_env.ensure_share_storage()

    rec["rank"] = {
        "pp_rank": parallel_state.get_pipeline_model_parallel_rank(),
        "tp_rank": parallel_state.get_tensor_model_parallel_rank(),
        "ep_rank": parallel_state.get_expert_model_parallel_rank(),
        "dp_rank": parallel_state.get_data_parallel_rank(),
        "world_size": world,
        "fake_process_group": fake,
    }
    rec["provenance"] = provenance(torch)
    dp = parallel_state.get_data_parallel_world_size()
    mbs, gbs = int(train["micro_batch_size"]), int(train["global_batch_size"])
    assert gbs % (mbs * dp) == 0, f"global_batch_size {gbs} not divisible by mbs*dp {mbs * dp}"
    num_mb = gbs // (mbs * dp)
    seq = int(gpt["seq_length"])
    vocab = int(gpt["vocab_size"])
    rec["derived"] = {"data_parallel_size": dp, "num_microbatches": num_mb}

    m = {"oom": False, "oom_phase": None, "oom_iteration": None, "iterations": []}
    rec["measured"] = m
    peaks, rpeaks = [], []
    # PEAKCAST_MEMORY_HISTORY=1: record every allocation's Python stack and summarise the blocks alive
    # at two moments (loss of iteration 1, after its optimizer step) by the allocating source line.
    history = os.environ.get("PEAKCAST_MEMORY_HISTORY") == "1"
    if history:
        torch.cuda.memory._record_memory_history(max_entries=1_000_000)

    def sync():
        torch.cuda.synchronize()

    def take_peak():
        sync()
        a, r = torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()
        peaks.append(a)
        rpeaks.append(r)
        return a

    def reset():
        sync()
        torch.cuda.reset_peak_memory_stats()

    def finish():
        try:
            take_peak()
        except Exception:
            pass
        m["max_allocated_bytes"] = max(peaks) if peaks else None
        m["max_reserved_bytes"] = max(rpeaks) if rpeaks else None

    try:
        # ---- model build -------------------------------------------------------------------
        PHASE["name"] = "model_build"
        reset()
        chunks = []
        for v in range(vpp or 1):
            vp_stage = v if vpp else None
            pre = parallel_state.is_pipeline_first_stage(ignore_virtual=False, vp_stage=vp_stage)
            post = parallel_state.is_pipeline_last_stage(ignore_virtual=False, vp_stage=vp_stage)
            block_spec = get_gpt_decoder_block_spec(config, use_transformer_engine=False,
                                                    normalization=config.normalization,
                                                    vp_stage=vp_stage)
            mtp_spec = None
            if getattr(config, "mtp_num_layers", None):
                from megatron.core.models.gpt.gpt_layer_specs import get_gpt_mtp_block_spec
                mtp_spec = get_gpt_mtp_block_spec(config, block_spec, use_transformer_engine=False,
                                                  vp_stage=vp_stage)
            mdl = GPTModel(
                config=config, transformer_layer_spec=block_spec, vocab_size=vocab,
                max_sequence_length=seq, pre_process=pre, post_process=post,
                share_embeddings_and_output_weights=gpt.get(
                    "share_embeddings_and_output_weights", False),
                position_embedding_type=gpt.get("position_embedding_type", "rope"),
                rotary_base=int(gpt.get("rotary_base", 10000)),
                rotary_percent=float(gpt.get("rotary_percent", 1.0)),
                mtp_block_spec=mtp_spec,
                vp_stage=vp_stage)
            # as Megatron-LM's get_model: move to the GPU (torch norms are built on the CPU),
            # then wrap in Float16Module for bf16/fp16
            mdl.cuda(torch.cuda.current_device())
            if config.bf16 or config.fp16:
                mdl = Float16Module(config, mdl)
            chunks.append(mdl)
        if getattr(config, "defer_embedding_wgrad_compute", False):
            megatron_env.emulate_te_spec_wgrad_deferral(chunks)
        m["model_build_peak_bytes"] = take_peak()
        m["allocated_after_model_build_bytes"] = torch.cuda.memory_allocated()
        m["parameters_on_rank"] = sum(p.numel() for c in chunks for p in c.parameters())

        PHASE["name"] = "ddp_build"
        reset()
        # Full-iteration graphs: DDP is built on the capture stream, as Megatron-LM's get_model does
        # (training.py:1891-1900), so its AccumulateGrad nodes reference no other stream.
        import contextlib
        ddp_stream_ctx = contextlib.nullcontext()
        if config.cuda_graph_impl == "full_iteration":
            from megatron.core.full_cuda_graph import get_shared_capture_stream
            ddp_stream = get_shared_capture_stream()
            ddp_stream.wait_stream(torch.cuda.current_stream())
            ddp_stream_ctx = torch.cuda.stream(ddp_stream)
        with ddp_stream_ctx:
            ddp_chunks = [DistributedDataParallel(config=config, ddp_config=ddp_config, module=c,
                                                  disable_bucketing=(i > 0))
                          for i, c in enumerate(chunks)]
        m["ddp_build_peak_bytes"] = take_peak()
        m["allocated_after_ddp_bytes"] = torch.cuda.memory_allocated()

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

        config.grad_scale_func = optimizer.scale_loss
        config.finalize_model_grads_func = None
        if config.pipeline_dtype is None:
            config.pipeline_dtype = config.params_dtype

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
                for layer in getattr(dec, "layers", []):
                    layer.register_forward_hook(_mark(f"chunk{ci}.layer{layer.layer_number - 1}"))
                fln = getattr(dec, "final_layernorm", None)
                if fln is not None:
                    fln.register_forward_hook(_mark(f"chunk{ci}.final_layernorm"))

        data_iter = [batches() for _ in ddp_chunks] if vpp else batches()
        fwd_bwd = get_forward_backward_func()
        if config.cuda_graph_impl == "full_iteration":
            # As Megatron-LM's train() does (training.py:3657-3662): eager for
            # cuda_graph_warmup_steps calls, then one graph of the whole forward-backward.
            from megatron.core.full_cuda_graph import FullCudaGraphWrapper
            fwd_bwd = FullCudaGraphWrapper(fwd_bwd, cuda_graph_warmup_steps=config.cuda_graph_warmup_steps,
                                           use_single_mempool=config.cuda_graph_use_single_mempool)
        iterations = int(case.get("iterations", 3))

        for it in range(1, iterations + 1):
            PHASE["iteration"] = it
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
    except torch.OutOfMemoryError as e:
        m["oom"] = True
        m["oom_phase"] = PHASE["name"]
        m["oom_iteration"] = PHASE["iteration"]
        m["oom_message"] = str(e).splitlines()[0][:500]
        if m.get("allocated_at_loss_bytes") is None:
            m["allocated_at_loss_bytes"] = STATE["allocated_at_loss"]
    finally:
        finish()
        m.setdefault("allocated_at_loss_bytes", STATE["allocated_at_loss"])


def source_of(frames):
    """The innermost Megatron / harness frame of an allocation's stack, as 'file:line function'."""
    for f in frames or []:
        fn = f.get("filename", "")
        if "megatron" in fn or "harness" in fn:
            return fn.split("/megatron/")[-1] + ":" + str(f.get("line")) + " " + f.get("name", "")
    return "?"


def peak_blocks_by_source(torch, top=60):
    """Replay the allocator's recorded alloc / free events from the start of the run, find the
    moment the allocated total was largest, and sum the blocks alive then by allocating source.
    Valid while the trace has not wrapped (fewer events than max_entries)."""
    snap = torch.cuda.memory._snapshot()
    traces = snap.get("device_traces") or [[]]
    events = traces[torch.cuda.current_device()] if len(traces) > torch.cuda.current_device() else []
    live, cur, best, best_at = {}, 0, -1, -1
    for i, e in enumerate(events):
        a = e.get("action")
        if a == "alloc":
            live[e["addr"]] = e
            cur += e["size"]
        elif a == "free_completed" and e["addr"] in live:
            cur -= live.pop(e["addr"])["size"]
        if cur > best:
            best, best_at = cur, i
    live = {}
    for e in events[:best_at + 1]:
        a = e.get("action")
        if a == "alloc":
            live[e["addr"]] = e
        elif a == "free_completed":
            live.pop(e["addr"], None)
    by = {}
    for e in live.values():
        k = source_of(e.get("frames"))
        v = by.setdefault(k, [0, 0, set()])
        v[0] += e["size"]
        v[1] += 1
        v[2].add(e["size"])
    items = sorted(by.items(), key=lambda kv: -kv[1][0])[:top]
    at = source_of(events[best_at].get("frames")) if best_at >= 0 else None
    return {"traced_peak_bytes": best, "events": len(events), "peak_event_source": at,
            "sources": [{"source": k, "bytes": v[0], "blocks": v[1], "sizes": sorted(v[2])[:6]}
                        for k, v in items]}


def alive_blocks_by_source(torch, top=40):
    """Allocated blocks now alive, summed by the innermost Megatron / harness frame that allocated
    them (torch.cuda.memory._snapshot() with recorded history); the largest `top` sources."""
    snap = torch.cuda.memory._snapshot()
    by = {}
    for seg in snap.get("segments", []):
        for b in seg.get("blocks", []):
            if b.get("state") != "active_allocated":
                continue
            frames = b.get("frames") or []
            key = "?"
            for f in frames:
                fn = f.get("filename", "")
                if "megatron" in fn or "harness" in fn:
                    key = fn.split("/megatron/")[-1] + ":" + str(f.get("line")) + " " + f.get("name", "")
                    break
            e = by.setdefault(key, [0, 0])
            e[0] += int(b.get("size", 0))
            e[1] += 1
    items = sorted(by.items(), key=lambda kv: -kv[1][0])[:top]
    return [{"source": k, "bytes": v[0], "blocks": v[1]} for k, v in items]


def optimizer_tensor_bytes(optimizer):
    """CUDA bytes the optimizer holds after a step, by kind: Adam state per name (exp_avg, ...),
    the parameters it updates (master copies or the model's own), and their .grad tensors."""
    import torch
    out, seen = {}, set()

    def add(kind, t):
        if torch.is_tensor(t) and t.is_cuda:
            key = (t.untyped_storage().data_ptr(), t.data_ptr(), t.numel())
            if key in seen:
                return
            seen.add(key)
            out[kind] = out.get(kind, 0) + t.numel() * t.element_size()
            out[kind + ".tensors"] = out.get(kind + ".tensors", 0) + 1

    parts = getattr(optimizer, "chained_optimizers", [optimizer])
    for i, part in enumerate(parts):
        inner = getattr(part, "optimizer", None)
        if inner is None:
            continue
        for st in inner.state.values():
            for name, t in st.items():
                add(f"opt{i}.state.{name}", t)
        for g in inner.param_groups:
            for p in g["params"]:
                add(f"opt{i}.params.{str(p.dtype).replace('torch.', '')}", p)
                if p.grad is not None:
                    add(f"opt{i}.grads.{str(p.grad.dtype).replace('torch.', '')}", p.grad)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--case")
    ap.add_argument("--stdin", action="store_true",
                    help="import torch and Megatron first, then read the case path from stdin")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    import torch  # noqa: F401  heavy imports before the case arrives
    import megatron.core.models.gpt  # noqa: F401
    import megatron.core.optimizer  # noqa: F401
    import megatron.core.distributed  # noqa: F401

    case_path = sys.stdin.readline().strip() if args.stdin else args.case
    if not case_path:
        return 0
    with open(case_path) as f:
        case = json.load(f)
    rec = {"record_version": 1, "case": case["name"], "group": case.get("group"),
           "spec": case["spec"], "rank": None, "measured": None, "provenance": None}
    t0 = time.time()
    try:
        run(case, rec)
    except Exception:
        rec["error"] = traceback.format_exc()[-6000:]
    rec["wall_s"] = round(time.time() - t0, 2)
    if rec.get("provenance") is None:
        try:
            rec["provenance"] = provenance(torch)
        except Exception:
            pass
    _write_record(args.out, rec)
    status = "ERROR" if rec.get("error") else ("VALIDATION" if rec.get("validation_error") else "ok")
    meas = rec.get("measured") or {}
    print(f"[run_case] {case['name']} rank={rec.get('rank')} {status} "
          f"max_alloc={meas.get('max_allocated_bytes')} oom={meas.get('oom')} "
          f"wall={rec['wall_s']}s", flush=True)
    if rec.get("error"):
        print(rec["error"], file=sys.stderr, flush=True)
    # Skip process-group teardown (NCCL destroy costs seconds): the record is written.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
