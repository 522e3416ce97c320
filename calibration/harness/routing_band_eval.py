#!/usr/bin/env python3
"""The routing band (`predict`'s allocator_replay.routing_band) against every measured reservation of a MoE corpus
record with one pipeline stage: how often the measured reserved peak lies in the band, and the |error| of the
balanced point and of the band's median. Numbers quoted in docs/caching-allocator.md (session 26).

Usage (from the repository root, after building): python3 calibration/harness/routing_band_eval.py
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEAKCAST = os.path.join(ROOT, "build/cli/peakcast")


def main():
    val = json.loads(subprocess.run([PEAKCAST, "validate", "--json"], cwd=ROOT, capture_output=True, text=True).stdout)
    rows = []
    for r in val["records"]:
        if not r.get("measured_reserved_bytes"):
            continue
        path, line = r["source"].rsplit(":", 1)
        with open(os.path.join(ROOT, path)) as f:
            rec = json.loads(f.readlines()[int(line) - 1])
        m = rec["spec"].get("model", {})
        if not m.get("num_moe_experts") or m.get("pipeline_model_parallel_size", 1) != 1:
            continue
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(rec["spec"], f)
        p = subprocess.run([PEAKCAST, "predict", f.name, "--json"], capture_output=True, text=True)
        os.unlink(f.name)
        if p.returncode != 0:
            continue
        a = json.loads(p.stdout)["ranks"][0].get("allocator_replay") or {}
        b = a.get("routing_band")
        if b:
            rows.append((r["case"], r["source"], r["measured_reserved_bytes"], a["peak_reserved_bytes"],
                         b["min_reserved_bytes"], b["median_reserved_bytes"], b["max_reserved_bytes"]))
    if not rows:
        print("no MoE record with a routing band")
        return 1
    inside = sum(lo <= m <= hi for _, _, m, _, lo, _, hi in rows)
    near = sum(lo * 0.99 <= m <= hi * 1.01 for _, _, m, _, lo, _, hi in rows)
    above = sum(m > hi * 1.01 for _, _, m, _, lo, _, hi in rows)
    below = sum(m < lo * 0.99 for _, _, m, _, lo, _, hi in rows)
    ep = [abs(p / m - 1) for _, _, m, p, _, _, _ in rows]
    em = [abs(md / m - 1) for _, _, m, _, _, md, _ in rows]
    width = [((hi - lo) / p, c) for c, _, _, p, lo, _, hi in rows]
    print(f"records {len(rows)}; measured inside [min, max] {inside}; within 1 % of it {near}; "
          f"above max + 1 % {above}; below min - 1 % {below}")
    print(f"|error| of the balanced point: median {statistics.median(ep) * 100:.2f} %, worst {max(ep) * 100:.2f} %; "
          f"of the band's median: median {statistics.median(em) * 100:.2f} %, worst {max(em) * 100:.2f} %")
    widest = max(width)
    print(f"band width / balanced point: median {statistics.median(w for w, _ in width) * 100:.2f} %, "
          f"widest {widest[0] * 100:.2f} % ({widest[1]})")
    for c, s, m, _, lo, _, hi in rows:
        if m > hi * 1.01 or m < lo * 0.99:
            print(f"  outside: {c} ({s}) measured {m / 1e9:.3f} GB, band {lo / 1e9:.3f}-{hi / 1e9:.3f} GB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
