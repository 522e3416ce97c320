#!/usr/bin/env python3
"""Replays a recorded allocator stream under re-drawn per-expert routings, through peakcast's own
caching-allocator model (`peakcast allocator-replay`).

Question it answers: how much of a MoE run's reserved peak is set by which tokens the router happened to
send where? The measured stream (alloc_trace.py's JSON) is kept request for request, except that every
per-expert request (a row count times one of the experts' row widths, with the row count in the band a
local expert receives) gets a fresh row count: one draw per local expert and layer instance, normal
around the balanced count with the given relative spread. A layer instance starts at each request of the
dispatcher's received rows (its own size band). Every replay is the C++ model's, not a copy of it.

Usage (from the repository root, after building):
  python3 calibration/harness/reroute_trace.py \
      calibration/data/diagnostics/alloc_traces_s16/layout_fake_ep8_moonlight4_moe_r0_r0.json.gz \
      --expert-row-bytes 5632,2816,4096 --expert-rows 3072 --received-row-bytes 4096 --received-rows 24576 \
      --exclude-rows 4096 --spread 0.12 --samples 20
  (Moonlight-4 on fake EP8: SequentialMLP experts, fc1 out [r, 2 x 1408] bf16 = 5632 B a row, the SwiGLU
  pieces [r, 1408] = 2816 B, fc2 out [r, 2048] = 4096 B; 8 local experts share 4096 x 6 = 24576 rows.)
"""
import argparse
import gzip
import json
import os
import random
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load(path, rank=None):
    """alloc_trace.py's document, or with `rank` one pp rank of `peakcast predict --allocator-trace`'s (requests in
    bytes, a free as -(n+1) of the n-th request) in the same form."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    if rank is None:
        return doc
    sizes, events = [], []
    for x in doc["ranks"][rank]["events"]:
        if x > 0:
            events.append(["a", x, len(sizes), 0])
            sizes.append(x)
        else:
            events.append(["f", sizes[-x - 1], -x - 1, 0])
    alloc_conf = "expandable_segments:True" if doc.get("expandable_segments") else "expandable_segments:False"
    return {"case": f"{os.path.basename(path)} (simulated, pp rank {rank})", "events": events,
            "end": {"alloc_conf": alloc_conf, "reserved_peak": doc["ranks"][rank]["peak_reserved_bytes"], "segments": 0}}


def per_expert_rows(n, widths, lo, hi, exclude):
    """The row count of a per-expert request of n bytes, or None. Rows in `exclude` (the rank's token
    count: hidden states and shared experts are [T, width] too) never count as an expert's."""
    for w in widths:
        if n % w == 0 and lo <= n // w <= hi and n // w not in exclude:
            return n // w
    return None


def reroute(doc, a):
    """A copy of the trace with every per-expert request's rows re-drawn; the segment events ('s') are
    dropped, the model makes its own."""
    rnd = random.Random(a.seed)
    lo, hi = int(a.expert_rows * (1 - a.band)), int(a.expert_rows * (1 + a.band))
    rlo, rhi = int(a.received_rows * (1 - a.band)), int(a.received_rows * (1 + a.band))
    drawn, events, changed = {}, [], 0
    for e in doc["events"]:
        if e[0] == "s":
            continue
        if e[0] == "a":
            n = e[1]
            if n % a.received_row_bytes == 0 and rlo <= n // a.received_row_bytes <= rhi:
                drawn = {}  # the next MoE layer instance
            r = per_expert_rows(n, a.widths, lo, hi, a.exclude)
            if r is not None:
                if r not in drawn:
                    drawn[r] = max(1, round(rnd.gauss(a.expert_rows, a.spread * a.expert_rows)))
                n = n // r * drawn[r]
                changed += 1
            events.append(["a", n, e[2], e[3]])
        else:
            events.append(e)  # a free names its block; its size is not read
    out = dict(doc)
    out["events"] = events
    return out, changed


def replay(peakcast, doc):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(doc, f)
        path = f.name
    try:
        res = subprocess.run([peakcast, "allocator-replay", path, "--json"], check=True, capture_output=True, text=True)
        return json.loads(res.stdout)
    finally:
        os.unlink(path)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("trace")
    p.add_argument("--expert-row-bytes", required=True, help="comma-separated bytes per row of each per-expert tensor")
    p.add_argument("--expert-rows", type=int, required=True, help="balanced rows of one local expert")
    p.add_argument("--received-row-bytes", type=int, required=True)
    p.add_argument("--received-rows", type=int, required=True, help="balanced rows the rank receives per layer")
    p.add_argument("--exclude-rows", default="", help="comma-separated row counts that are never an expert's (the tokens T)")
    p.add_argument("--band", type=float, default=0.25, help="relative band that marks a request as per-expert / received")
    p.add_argument("--spread", type=float, default=0.12, help="relative standard deviation of an expert's rows")
    p.add_argument("--samples", type=int, default=20)
    p.add_argument("--predicted-rank", type=int, help="TRACE is `peakcast predict --allocator-trace` output: use this pp rank")
    p.add_argument("--peakcast", default=os.path.join(ROOT, "build/cli/peakcast"))
    a = p.parse_args()
    a.widths = [int(x) for x in a.expert_row_bytes.split(",")]
    a.exclude = {int(x) for x in a.exclude_rows.split(",") if x}
    doc = load(a.trace, a.predicted_rank)
    base = replay(a.peakcast, {**doc, "events": [e for e in doc["events"] if e[0] != "s"]})
    print(f"{doc.get('case')}: recorded reserved {base['recorded_reserved_peak_bytes'] / 1e9:.3f} GB, "
          f"model on the recorded stream {base['reserved_peak_bytes'] / 1e9:.3f} GB")
    peaks = []
    for s in range(a.samples):
        a.seed = s
        d, changed = reroute(doc, a)
        r = replay(a.peakcast, d)
        peaks.append(r["reserved_peak_bytes"])
        print(f"  routing {s:2d}: {changed} per-expert requests re-drawn, reserved {r['reserved_peak_bytes'] / 1e9:.3f} GB, "
              f"allocated peak {r['allocated_peak_bytes'] / 1e9:.3f} GB")
    peaks.sort()
    med = peaks[len(peaks) // 2]
    print(f"reserved over {a.samples} routings: min {peaks[0] / 1e9:.3f}, median {med / 1e9:.3f}, max {peaks[-1] / 1e9:.3f} GB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
