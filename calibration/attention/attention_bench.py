#!/usr/bin/env python3
"""Fused attention timing on the GPU, for the time model's fused-attention efficiency.

Transformer Engine's fused attention (DotProductAttention with the FusedAttention backend) runs
cuDNN's fused scaled-dot-product attention; PyTorch's scaled_dot_product_attention has the same
cuDNN kernels behind SDPBackend.CUDNN_ATTENTION, and FlashAttention-2 behind FLASH_ATTENTION. This
times both, causal, forward and forward+backward, at the per-rank shapes of the shipped presets and
of our measured runs: CUDA events, warm-up, fresh random inputs (rotating sets, never zeros),
median of the repetitions. Writes one JSON object (calibration/data/attention_h200.json).

usage: attention_bench.py OUT.json [--reps N]
"""
import json
import statistics
import subprocess
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

# (name, heads per rank, sequence, qk head dim, v head dim); batch 1 (micro-batch 1), causal.
CASES = [
    ("llama3-8b tp1 s2048", 32, 2048, 128, 128),
    ("llama3-8b tp1 s4096", 32, 4096, 128, 128),
    ("llama3-8b tp1 s8192", 32, 8192, 128, 128),
    ("llama3-8b tp2 s8192", 16, 8192, 128, 128),
    ("llama3-8b tp1 s16384", 32, 16384, 128, 128),
    ("llama3-70b tp4 s4096", 16, 4096, 128, 128),
    ("llama3-70b tp8 s8192", 8, 8192, 128, 128),
    ("nemotron-3-nano tp1 s8192", 32, 8192, 128, 128),
    ("gqa2b tp1 s2048", 16, 2048, 128, 128),
    ("moonlight mla tp2 s4096", 8, 4096, 192, 128),
    ("deepseek-v3 mla tp2 s4096", 64, 4096, 192, 128),
    ("small heads d64 s4096", 32, 4096, 64, 64),
]
BACKENDS = [("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)]
WARMUP = 5
INPUT_SETS = 3


def causal_flops(h, s, dqk, dv):
    # Q K^T and P V, half of the s x s scores under the causal mask; batch 1.
    return (2.0 * h * s * s * dqk + 2.0 * h * s * s * dv) * 0.5


def time_case(backend, h, s, dqk, dv, reps):
    dev = torch.device("cuda")
    sets = []
    for _ in range(INPUT_SETS):
        q = torch.randn(1, h, s, dqk, device=dev, dtype=torch.bfloat16, requires_grad=True)
        k = torch.randn(1, h, s, dqk, device=dev, dtype=torch.bfloat16, requires_grad=True)
        v = torch.randn(1, h, s, dv, device=dev, dtype=torch.bfloat16, requires_grad=True)
        g = torch.randn(1, h, s, dv, device=dev, dtype=torch.bfloat16)
        sets.append((q, k, v, g))
    fwd, total = [], []
    with sdpa_kernel([backend]):
        for i in range(WARMUP + reps):
            q, k, v, g = sets[i % INPUT_SETS]
            e0, e1, e2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
            e0.record()
            o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            e1.record()
            o.backward(g)
            e2.record()
            torch.cuda.synchronize()
            q.grad = k.grad = v.grad = None
            if i >= WARMUP:
                fwd.append(e0.elapsed_time(e1) / 1e3)
                total.append(e0.elapsed_time(e2) / 1e3)
    f = statistics.median(fwd)
    t = statistics.median(total)
    return {"fwd_s": f, "bwd_s": t - f, "fwd_p10_s": sorted(fwd)[len(fwd) // 10], "fwd_p90_s": sorted(fwd)[(9 * len(fwd)) // 10]}


def main():
    out = sys.argv[1]
    reps = int(sys.argv[sys.argv.index("--reps") + 1]) if "--reps" in sys.argv else 30
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True).stdout.strip()
    except OSError:
        driver = ""
    result = {
        "device": torch.cuda.get_device_name(0),
        "driver": driver,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "reps": reps, "warmup": WARMUP, "input_sets": INPUT_SETS, "causal": True, "batch": 1, "dtype": "bf16",
        "cases": [],
    }
    for name, h, s, dqk, dv in CASES:
        for bname, backend in BACKENDS:
            row = {"case": name, "backend": bname, "heads": h, "seq": s, "qk_head_dim": dqk, "v_head_dim": dv,
                   "fwd_flops": causal_flops(h, s, dqk, dv)}
            try:
                row.update(time_case(backend, h, s, dqk, dv, reps))
                row["fwd_tflops"] = row["fwd_flops"] / row["fwd_s"] / 1e12
                row["bwd_over_fwd"] = row["bwd_s"] / row["fwd_s"]
            except Exception as ex:  # a backend that refuses the shape (e.g. qk and v head dims differ)
                row["error"] = str(ex).splitlines()[0][:200]
            torch.cuda.empty_cache()
            print(json.dumps(row), flush=True)
            result["cases"].append(row)
    with open(out, "w") as fh:
        json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
