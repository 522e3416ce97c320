"""The caching allocator's own event stream of one measured case (run_case.py, PEAKCAST_ALLOC_TRACE=DIR).

torch.cuda.memory._record_memory_history(context=None) keeps every alloc / free / segment event of the
device's allocator; at the end of the case this writes DIR/<case>_r<rank>.json.gz with
  events: [[code, size, id, stream]] in order; code a alloc, f free_completed, s segment_alloc, S segment_free,
          m segment_map, M segment_unmap, o oom; id: fresh per alloc (its free has the same), segments apart
  marks:  the phase boundaries as the allocator's cumulative counters then (allocation.all.allocated,
          segment.all.allocated, num_alloc_retries): event k of `events` whose alloc count reaches a mark's
          `allocations` is the first of that phase
  end:    memory_snapshot()'s segments (count, sizes, expandable or not) and memory_stats()'s peaks.
compare_alloc_trace.py sets these against peakcast's simulated stream.
"""
import gzip
import json
import os

CODES = {"alloc": "a", "free_completed": "f", "segment_alloc": "s", "segment_free": "S",
         "segment_map": "m", "segment_unmap": "M", "oom": "o"}


def mark(torch, phase, iteration):
    st = torch.cuda.memory_stats()
    return {"phase": phase, "iteration": iteration, "allocations": st.get("allocation.all.allocated", 0),
            "segments": st.get("segment.all.allocated", 0), "retries": st.get("num_alloc_retries", 0),
            "allocated_bytes": st.get("allocated_bytes.all.current", 0),
            "reserved_bytes": st.get("reserved_bytes.all.current", 0)}


def compact(events):
    """[code, size, id, stream]: an alloc takes a fresh id and its free the same one (blocks and
    segments are numbered apart: a segment and its first block share an address). Until session 16 the
    id was len(ids), which repeats once an address is reused, so the frees of the traces written before
    cannot be told apart (compare_alloc_trace.py reads only their alloc sizes)."""
    ids, out, fresh = {}, [], [0, 0]
    for e in events:
        c = CODES.get(e.get("action"))
        if c is None:
            continue
        kind = 0 if c in "afo" else 1
        key = (kind, e.get("addr", 0))
        if c in "asm" or key not in ids:
            ids[key] = fresh[kind]
            fresh[kind] += 1
        out.append([c, int(e.get("size", 0)), ids[key], int(e.get("stream", 0))])
    return out


def _sum_by(segs, key):
    out = {}
    for s in segs:
        k = str(tuple(s.get(key))) if isinstance(s.get(key), (list, tuple)) else str(s.get(key))
        out[k] = out.get(k, 0) + int(s["total_size"])
    return out


def write(torch, folder, rec, marks):
    try:
        dev = torch.cuda.current_device()
        snap = torch.cuda.memory._snapshot()
        traces = snap.get("device_traces") or [[]]
        events = traces[dev] if len(traces) > dev else []
        segs = [s for s in snap.get("segments", []) if s.get("device", dev) == dev]
        st = torch.cuda.memory_stats()
        end = {"segments": len(segs), "segment_sizes": sorted(int(s["total_size"]) for s in segs),
               "segment_peak": st.get("segment.all.peak"), "num_alloc_retries": st.get("num_alloc_retries"),
               "num_ooms": st.get("num_ooms"), "reserved_peak": st.get("reserved_bytes.all.peak"),
               "allocated_peak": st.get("allocated_bytes.all.peak"),
               "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
               # reserved bytes per memory pool at the end: (0, 0) the default pools, others a CUDA
               # graph's private pool (segment_pool_id), and per stream
               "reserved_by_pool": _sum_by(segs, "segment_pool_id"), "reserved_by_stream": _sum_by(segs, "stream")}
        doc = {"case": rec.get("case"), "rank": rec.get("rank"), "marks": marks + [mark(torch, "end", None)],
               "events": compact(events), "raw_events": len(events), "end": end}
        os.makedirs(folder, exist_ok=True)
        rank = (rec.get("rank") or {}).get("pp_rank", 0)
        with gzip.open(os.path.join(folder, f"{rec.get('case')}_r{rank}.json.gz"), "wt") as f:
            json.dump(doc, f)
    except Exception as e:  # the record matters more than its trace
        rec["alloc_trace_error"] = repr(e)[:300]
