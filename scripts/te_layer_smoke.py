#!/usr/bin/env python3
"""Train a tiny GPT with ONE Transformer Engine layer (Megatron Core 24bad8e6's
get_gpt_layer_with_transformer_engine_spec, Float16Module, Megatron DDP and optimizer) for a few
iterations on one GPU, and print/write the memory it took.

  python3 te_layer_smoke.py --out smoke.jsonl [--fp8 none|delayed|tensorwise] [--iters 3]

Run it with the environment of `source te_carry/build_te_on_device.sh env` (built TE, Megatron Core
and, where the image lacks pydantic, the stand-in on PYTHONPATH). One variant per process.
"""
import argparse
import json
import os
import sys
import time
import traceback


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--fp8", default="none", choices=["none", "delayed", "tensorwise"])
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--mbs", type=int, default=2)
    args = ap.parse_args()
    rec = {"test": "te_gpt_layer_smoke", "fp8": args.fp8, "ok": False}
    t0 = time.time()
    try:
        run(args, rec)
        rec["ok"] = True
    except Exception:
        rec["error"] = traceback.format_exc()[-4000:]
        print(rec["error"], file=sys.stderr, flush=True)
    rec["wall_s"] = round(time.time() - t0, 2)
    with open(args.out, "a") as f:
        f.write(json.dumps(rec) + "\n")
    print(f"[te_layer_smoke] fp8={args.fp8} ok={rec['ok']} "
          f"max_alloc={rec.get('max_allocated_bytes')} max_reserved={rec.get('max_reserved_bytes')} "
          f"wall={rec['wall_s']}s", flush=True)
    sys.stdout.flush()
    os._exit(0)


def run(args, rec):
    import torch
    import torch.nn.functional as F
    import torch.distributed as dist

    t_imp = time.time()
    import transformer_engine
    import transformer_engine.pytorch as te
    rec["te_version"] = str(transformer_engine.__version__)
    rec["te_import_s"] = round(time.time() - t_imp, 2)
    rec["te_file"] = transformer_engine.__file__
    rec["cudnn_version"] = te.get_cudnn_version() if hasattr(te, "get_cudnn_version") else None
    rec["torch"] = torch.__version__
    rec["cuda"] = torch.version.cuda
    rec["gpu"] = torch.cuda.get_device_name(0)
    try:
        import pydantic
        rec["pydantic"] = getattr(pydantic, "__version__", "?")
    except Exception:
        rec["pydantic"] = None

    torch.cuda.set_device(0)
    dist.init_process_group("nccl", init_method=f"file:///tmp/te_smoke_pg_{os.getpid()}",
                            rank=0, world_size=1, device_id=torch.device("cuda", 0))
    from megatron.core import parallel_state, tensor_parallel
    from megatron.core.distributed import (DistributedDataParallel, DistributedDataParallelConfig,
                                           finalize_model_grads)
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_with_transformer_engine_spec
    from megatron.core.optimizer import OptimizerConfig, get_megatron_optimizer
    from megatron.core.transformer.module import Float16Module
    from megatron.core.transformer.transformer_config import TransformerConfig
    from megatron.core.utils import get_te_version, is_te_min_version
    from megatron.core.extensions import transformer_engine as mte

    rec["megatron_te_version"] = str(get_te_version())
    rec["megatron_is_te_min_2_14"] = bool(is_te_min_version("2.14.0"))
    rec["megatron_HAVE_TE"] = bool(getattr(mte, "HAVE_TE", True))

    parallel_state.initialize_model_parallel(1, 1, create_gloo_process_groups=False)
    tensor_parallel.model_parallel_cuda_manual_seed(1234)

    fp8 = {} if args.fp8 == "none" else {"fp8": "hybrid", "fp8_recipe": args.fp8}
    cfg = TransformerConfig(
        num_layers=1, hidden_size=args.hidden, num_attention_heads=args.heads,
        ffn_hidden_size=4 * args.hidden, normalization="RMSNorm", gated_linear_unit=True,
        activation_func=F.silu, add_bias_linear=False, attention_dropout=0.0, hidden_dropout=0.0,
        bf16=True, params_dtype=torch.bfloat16, pipeline_dtype=torch.bfloat16,
        transformer_impl="transformer_engine", **fp8)
    vocab = 32768

    def mem():
        torch.cuda.synchronize()
        return torch.cuda.memory_allocated()

    torch.cuda.reset_peak_memory_stats()
    spec = get_gpt_layer_with_transformer_engine_spec()
    rec["layer_modules"] = {k: str(getattr(v, "module", v)) for k, v in vars(spec.submodules).items()
                            if not k.startswith("_")}
    model = GPTModel(config=cfg, transformer_layer_spec=spec, vocab_size=vocab,
                     max_sequence_length=args.seq, position_embedding_type="rope")
    model.cuda(0)
    model = Float16Module(cfg, model)
    rec["allocated_after_model_bytes"] = mem()
    rec["parameters"] = sum(p.numel() for p in model.parameters())
    ddp = DistributedDataParallel(config=cfg, ddp_config=DistributedDataParallelConfig(
        grad_reduce_in_fp32=True, use_distributed_optimizer=False), module=model)
    rec["allocated_after_ddp_bytes"] = mem()
    opt = get_megatron_optimizer(OptimizerConfig(optimizer="adam", lr=1e-4, bf16=True,
                                                 use_distributed_optimizer=False),
                                 [ddp], use_gloo_process_groups=False)
    inner = getattr(opt, "optimizer", None)
    rec["optimizer_class"] = f"{type(opt).__name__}({type(inner).__module__}.{type(inner).__name__})"
    rec["allocated_after_optimizer_bytes"] = mem()

    b, s = args.mbs, args.seq
    g = torch.Generator(device="cuda").manual_seed(0)
    tokens = torch.randint(0, vocab, (b, s), device="cuda", generator=g)
    labels = torch.randint(0, vocab, (b, s), device="cuda", generator=g)
    pos = torch.arange(s, device="cuda").unsqueeze(0).expand(b, s)
    its = []
    for it in range(args.iters):
        r = {"iteration": it + 1}
        ddp.zero_grad_buffer()
        opt.zero_grad()
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        t = time.time()
        loss = ddp(tokens, pos, None, labels=labels)
        r["allocated_at_loss_bytes"] = mem()
        lv = loss.float().mean()
        lv.backward()
        finalize_model_grads([ddp])
        r["fwd_bwd_peak_bytes"] = (torch.cuda.synchronize(), torch.cuda.max_memory_allocated())[1]
        torch.cuda.reset_peak_memory_stats()
        ok, gnorm, _ = opt.step()
        torch.cuda.synchronize()
        r["step_peak_bytes"] = torch.cuda.max_memory_allocated()
        r["max_reserved_bytes"] = torch.cuda.max_memory_reserved()
        r["allocated_after_step_bytes"] = mem()
        r["loss"] = float(lv.item())
        r["grad_norm"] = float(gnorm) if gnorm is not None else None
        r["step_ok"] = bool(ok)
        r["time_s"] = round(time.time() - t, 3)
        its.append(r)
        print(json.dumps(r), flush=True)
    rec["iterations"] = its
    rec["max_allocated_bytes"] = max(max(r["fwd_bwd_peak_bytes"], r["step_peak_bytes"]) for r in its)
    rec["max_reserved_bytes"] = torch.cuda.max_memory_reserved()
    rec["config"] = {"hidden": args.hidden, "heads": args.heads, "ffn": 4 * args.hidden,
                     "seq": s, "mbs": b, "vocab": vocab, "num_layers": 1, "norm": "RMSNorm",
                     "swiglu": True, "bf16": True}


if __name__ == "__main__":
    main()
