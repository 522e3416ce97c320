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
import os
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import alloc_trace  # noqa: E402
import megatron_env  # noqa: E402  (puts .megatron on sys.path)
from run_case_memory import (alive_blocks_by_source, optimizer_tensor_bytes,  # noqa: E402,F401
                             peak_blocks_by_source, source_of)
from run_case_steps import _build_ddp, _build_optimizer, _iterate, _prepare_iterations, te_cuda_graph_helper  # noqa: E402

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
    """Measure one case into rec. The model build stays inline: a partly built model stays alive
    after an out-of-memory error until finish() has read the allocator, as before the split."""
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

    vpp = _init_model_parallel(config, parallel_state, tensor_parallel, model_spec.get("transformer_impl", "local"))

    rec["rank"] = _rank_record(parallel_state, world, fake)
    rec["provenance"] = provenance(torch)  # late-bound: scripts/run_case_te.py replaces run_case.provenance
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
    history, trace_dir, marks = _start_recording(torch)
    take_peak, reset, finish = _meters(torch, rec, m, peaks, rpeaks, trace_dir, marks)

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

        ddp_chunks = _build_ddp(PHASE, torch, config, ddp_config, chunks, m, take_peak, reset,
                                DistributedDataParallel)
        optimizer = _build_optimizer(PHASE, torch, opt_config, ddp_chunks, rec, m, take_peak, reset,
                                     get_megatron_optimizer)

        if config.cuda_graph_impl == "transformer_engine":  # read by _iterate
            STATE["te_cuda_graph_helper"] = te_cuda_graph_helper(config, ddp_chunks, optimizer, rank, seq, mbs, gbs, dp)
        fwd_bwd, forward_step, data_iter, routing, module_marks = _prepare_iterations(
            PHASE, STATE, torch, config, optimizer, ddp_chunks, rank, vocab, mbs, seq, vpp, history, m,
            schedules, get_forward_backward_func)
        iterations = int(case.get("iterations", 3))

        _iterate(PHASE, STATE, torch, config, iterations, ddp_chunks, optimizer, m, take_peak, reset,
                 fwd_bwd, forward_step, data_iter, num_mb, seq, mbs, history, routing, module_marks,
                 parallel_state, schedules, finalize_model_grads)
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


def _init_model_parallel(config, parallel_state, tensor_parallel, transformer_impl):
    """Megatron's process groups and RNG for the config's layout; returns the virtual pipeline size."""
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
    # Megatron's local CUDA graphs need a graph-safe RNG tracker (CudaGraphManager asserts it), and
    # Megatron-LM turns the TE RNG tracker on for any CUDA graph with the TE layer spec or TE's graphs
    # (arguments.py:1867-1873); run_case_te.py sets transformer_impl to say the TE spec ran.
    te_rng_tracker = config.cuda_graph_impl != "none" and "transformer_engine" in (
        transformer_impl, config.cuda_graph_impl)
    tensor_parallel.model_parallel_cuda_manual_seed(
        1234, te_rng_tracker=te_rng_tracker,
        use_cudagraphable_rng=(config.cuda_graph_impl in ("local", "full_iteration")))
    if any(t in (config.recompute_modules or []) for t in ("layernorm", "moe_act", "mla_up_proj")) \
            and config.recompute_granularity == "selective":
        megatron_env.ensure_share_storage()
    return vpp


def _rank_record(parallel_state, world, fake):
    """The record's "rank": this process's coordinates in Megatron's process groups."""
    return {
        "pp_rank": parallel_state.get_pipeline_model_parallel_rank(),
        "tp_rank": parallel_state.get_tensor_model_parallel_rank(),
        "ep_rank": parallel_state.get_expert_model_parallel_rank(),
        "dp_rank": parallel_state.get_data_parallel_rank(),
        "world_size": world,
        "fake_process_group": fake,
    }


def _start_recording(torch):
    """The allocator recordings the environment asks for; returns (history, trace_dir, marks)."""
    # PEAKCAST_MEMORY_HISTORY=1: record every allocation's Python stack and summarise the blocks alive
    # at two moments (loss of iteration 1, after its optimizer step) by the allocating source line.
    history = os.environ.get("PEAKCAST_MEMORY_HISTORY") == "1"
    # PEAKCAST_ALLOC_TRACE=DIR: record the allocator's own event stream (no stacks) and write it,
    # with the phase marks, to DIR/<case>_r<rank>.json.gz at the end (alloc_trace.py).
    trace_dir = os.environ.get("PEAKCAST_ALLOC_TRACE")
    marks = []
    if history:
        torch.cuda.memory._record_memory_history(max_entries=1_000_000)
    elif trace_dir:
        torch.cuda.memory._record_memory_history(context=None, stacks="python", max_entries=4_000_000)
    if trace_dir:
        marks.append(alloc_trace.mark(torch, "start", None))
    return history, trace_dir, marks


def _meters(torch, rec, m, peaks, rpeaks, trace_dir, marks):
    """The phase meters: take_peak() reads (and keeps) the peaks since the last reset(); finish()
    writes the allocator trace (PEAKCAST_ALLOC_TRACE) and the run's overall peaks into m."""

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
        if trace_dir:
            marks.append(alloc_trace.mark(torch, PHASE["name"], PHASE["iteration"]))

    def finish():
        try:
            take_peak()
        except Exception:
            pass
        if trace_dir:
            alloc_trace.write(torch, trace_dir, rec, marks)
        m["max_allocated_bytes"] = max(peaks) if peaks else None
        m["max_reserved_bytes"] = max(rpeaks) if rpeaks else None
        # What the allocator could have reserved: the device's free bytes plus what it holds now (after an
        # out-of-memory error its cache is still held). The rest of the device is held outside PyTorch
        # (CUDA context, lazily loaded kernels, NCCL): a run's capacity as peakcast's GPU memory_bytes.
        try:
            free, total = torch.cuda.mem_get_info()
            m["device_total_bytes"] = total
            m["device_free_at_end_bytes"] = free
            m["reserved_at_end_bytes"] = torch.cuda.memory_reserved()
            m["allocator_capacity_bytes"] = free + m["reserved_at_end_bytes"]
        except Exception:
            pass

    return take_peak, reset, finish


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
