#!/usr/bin/env python3
"""Set a measured allocator event stream (alloc_trace.py) against peakcast's simulated one.

  python3 calibration/harness/compare_alloc_trace.py OUT.json MEASURED.json.gz PEAKCAST_TRACE.json [...]
      (pairs: a measured trace, then `peakcast predict SPEC --allocator-trace FILE`'s output for that case)

Per pair and iteration (measured: from the phase marks, the first forward of each iteration to the next;
simulated: AllocatorReplay::pass_starts), for the whole run, and for the model state before the first forward:
  requests        allocations measured / simulated
  bytes           requested bytes measured / simulated
  large_matched   share of the simulated large-pool requests (> 1 MiB) whose exact size (512 B rounded) a
                  measured request of the same span also has (multiset), and the same share of their bytes
  order           difflib ratio of the two large-request size sequences (1: same sizes in the same order)
and the run's reserved peak, segment count at the end (memory_snapshot) and retries, measured and simulated.
"""
import difflib
import gzip
import json
import sys
from collections import Counter

LARGE = 1 << 20


def r512(x):
    return (x + 511) // 512 * 512


def measured_spans(doc):
    """Alloc sizes of the measured stream, cut at the first forward of each iteration."""
    allocs = [e[1] for e in doc["events"] if e[0] == "a"]
    start = doc["marks"][0]["allocations"]
    cuts = [m["allocations"] - start for m in doc["marks"] if m["phase"] == "forward"]
    spans = {"state": allocs[:cuts[0]] if cuts else allocs}
    for i, c in enumerate(cuts):
        spans[f"iteration_{i + 1}"] = allocs[c:cuts[i + 1] if i + 1 < len(cuts) else len(allocs)]
    return spans, allocs


def simulated_spans(rank):
    allocs = [x for x in rank["events"] if x > 0]
    cuts = rank.get("pass_starts") or []
    spans = {"state": allocs[:cuts[0]] if cuts else allocs}
    for i, c in enumerate(cuts):
        spans[f"iteration_{i + 1}"] = allocs[c:cuts[i + 1] if i + 1 < len(cuts) else len(allocs)]
    return spans, allocs


def compare(meas, sim):
    ml = [r512(x) for x in meas if x > LARGE]
    sl = [r512(x) for x in sim if x > LARGE]
    common = Counter(ml) & Counter(sl)
    matched = sum(common.values())
    out = {"requests": [len(meas), len(sim)], "bytes": [sum(meas), sum(sim)],
           "large_requests": [len(ml), len(sl)],
           "large_matched": round(matched / len(sl), 4) if sl else None,
           "large_matched_bytes": round(sum(k * v for k, v in common.items()) / sum(sl), 4) if sl else None}
    if len(ml) * len(sl) <= 4e7:
        out["order"] = round(difflib.SequenceMatcher(None, ml, sl, autojunk=False).ratio(), 4)
    return out


def main():
    out_path, args = sys.argv[1], sys.argv[2:]
    rows = []
    for mpath, spath in zip(args[0::2], args[1::2]):
        with gzip.open(mpath, "rt") as f:
            m = json.load(f)
        s = json.load(open(spath))
        pp = (m.get("rank") or {}).get("pp_rank", 0) or 0
        rank = next((x for x in s["ranks"] if x["pp_rank"] == pp), s["ranks"][0])
        ms, mall = measured_spans(m)
        ss, sall = simulated_spans(rank)
        row = {"case": m["case"], "measured_trace": mpath.split("/")[-1], "simulated_trace": spath.split("/")[-1],
               "whole": compare(mall, sall),
               "spans": {k: compare(ms[k], ss[k]) for k in ms if k in ss},
               "reserved_peak": [m["end"]["reserved_peak"], rank.get("peak_reserved_bytes")],
               "segments_end": [m["end"]["segments"], rank.get("segments")],
               "segment_peak_measured": m["end"]["segment_peak"],
               "retries_measured": m["end"]["num_alloc_retries"], "ooms_measured": m["end"]["num_ooms"],
               "measured_iterations": len(ms) - 1, "simulated_passes": len(ss) - 1}
        rows.append(row)
        print(json.dumps(row)[:600], flush=True)
    with open(out_path, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
