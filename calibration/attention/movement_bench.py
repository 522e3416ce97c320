#!/usr/bin/env python3
"""Data-movement op timing on the GPU (PyTorch kernels): row gathers (MoE permute / unpermute /
sort_chunks: index_select with a random permutation of rows), transposes made contiguous (Mamba's
in_proj output, attention's context), concatenation and plain copies, at MoE and Mamba shapes.
CUDA events, warm-up, rotating random inputs, median. Writes one JSON object.

usage: movement_bench.py OUT.json [--reps N]
"""
import json
import statistics
import sys

import torch

WARMUP = 5
# (kind, rows, cols): bf16 rows x cols; gathers read rows and write them permuted.
CASES = [
    ("gather", 49152, 2688), ("gather", 12288, 2048), ("gather", 32768, 4096), ("gather", 8192, 7168),
    ("transpose", 8192, 10304), ("transpose", 4096, 8192), ("transpose", 8192, 4096),
    ("copy", 49152, 2688), ("copy", 8192, 8192),
    ("cat", 49152, 2688),
]


def run(kind, rows, cols, reps):
    dev = torch.device("cuda")
    xs = [torch.randn(rows, cols, device=dev, dtype=torch.bfloat16) for _ in range(3)]
    idx = torch.randperm(rows, device=dev)
    times = []
    for i in range(WARMUP + reps):
        x = xs[i % 3]
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        if kind == "gather":
            y = x.index_select(0, idx)
        elif kind == "transpose":
            y = x.t().contiguous()
        elif kind == "copy":
            y = x.clone()
        else:  # cat of four row blocks (SequentialMLP's per-expert outputs)
            y = torch.cat(torch.chunk(x, 4, dim=0), dim=0)
        e1.record()
        torch.cuda.synchronize()
        del y
        if i >= WARMUP:
            times.append(e0.elapsed_time(e1) / 1e3)
    t = statistics.median(times)
    moved = 2.0 * rows * cols * 2  # bytes read + written
    return {"kind": kind, "rows": rows, "cols": cols, "bytes": moved, "median_s": t, "gbps": moved / t / 1e9}


def main():
    reps = int(sys.argv[sys.argv.index("--reps") + 1]) if "--reps" in sys.argv else 30
    out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
           "reps": reps, "warmup": WARMUP, "cases": []}
    for c in CASES:
        r = run(*c, reps)
        print(json.dumps(r), flush=True)
        out["cases"].append(r)
    with open(sys.argv[1], "w") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
