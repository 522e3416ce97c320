"""Replays request streams through torch's own CUDA caching allocator and reports what it reserved.

Checks peakcast's caching-allocator model (model/src/caching_allocator*.cpp) against the real one on
the same requests, apart from whether the requests are the run's:

    python allocator_probe.py OUT.json TRACE_OR_SCENARIO.json...

Each input is either a trace written by `peakcast predict --allocator-replay --allocator-trace FILE`
(`ranks[].events`: a request as its bytes > 0, a free as -(n + 1) for the n-th request) or a
scenario file `{"scenarios": [{"name", "expandable_segments", "conf", "capacity", "events", "expect"}]}`
(0 in `events`: torch.cuda.empty_cache(); `conf`: PYTORCH_CUDA_ALLOC_CONF; `capacity`: bytes the
allocator may reserve, through set_per_process_memory_fraction).
Every stream runs in its own process (the allocator's settings are read at CUDA initialisation) as
torch.empty(bytes, dtype=uint8) tensors, and reports max_memory_reserved(), max_memory_allocated(),
memory_reserved() at the end, the OOM (if any) and the segments of memory_snapshot().
"""
import json
import os
import subprocess
import sys

CHILD = r'''
import json, sys, torch
doc = json.load(open(sys.argv[1]))
events, capacity = doc["events"], doc.get("capacity")
live, n, oom = {}, 0, None
torch.cuda.init()
if capacity:
    # allowed_memory_maximum: alloc_block refuses a segment beyond it, as a smaller device would.
    torch.cuda.set_per_process_memory_fraction(capacity / torch.cuda.get_device_properties(0).total_memory)
for k, x in enumerate(events):
    if x == 0:
        torch.cuda.empty_cache()
    elif x > 0:
        try:
            live[n] = torch.empty(x, dtype=torch.uint8, device="cuda")
        except torch.OutOfMemoryError as e:
            oom = {"event": k, "request": x, "allocated": torch.cuda.memory_allocated(),
                   "reserved": torch.cuda.memory_reserved(), "message": str(e).splitlines()[0][:300]}
            break
        n += 1
    else:
        live.pop(-x - 1, None)
torch.cuda.synchronize()
snap = torch.cuda.memory_snapshot()
print(json.dumps({"max_reserved": torch.cuda.max_memory_reserved(), "max_allocated": torch.cuda.max_memory_allocated(),
                  "reserved_end": torch.cuda.memory_reserved(), "allocated_end": torch.cuda.memory_allocated(),
                  "segments": len(snap), "largest_segment": max([s["total_size"] for s in snap] or [0]),
                  "num_alloc_retries": torch.cuda.memory_stats().get("num_alloc_retries"),
                  "oom": oom, "torch": torch.__version__}))
'''


def run_stream(events, expandable, tmp, conf=None, capacity=None):
    with open(tmp, "w") as f:
        json.dump({"events": events, "capacity": capacity}, f)
    env = dict(os.environ)
    env["PYTORCH_CUDA_ALLOC_CONF"] = conf or ("expandable_segments:True" if expandable else "expandable_segments:False")
    out = subprocess.run([sys.executable, "-c", CHILD, tmp], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        return {"error": out.stderr[-2000:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    out_path, inputs = sys.argv[1], sys.argv[2:]
    results = []
    tmp = os.path.join(os.path.dirname(os.path.abspath(out_path)), "stream.tmp.json")
    for path in inputs:
        doc = json.load(open(path))
        if "scenarios" in doc:
            for sc in doc["scenarios"]:
                r = run_stream(sc["events"], sc.get("expandable_segments", False), tmp, sc.get("conf"), sc.get("capacity"))
                results.append({"input": os.path.basename(path), "name": sc["name"], "expect": sc.get("expect"), "torch": r})
        else:
            for rank in doc["ranks"]:
                r = run_stream(rank["events"], doc.get("expandable_segments", False), tmp)
                results.append({"input": os.path.basename(path), "pp_rank": rank["pp_rank"],
                                "model_peak_reserved": rank.get("peak_reserved_bytes"),
                                "model_peak_allocated": rank.get("peak_allocated_bytes"),
                                "requests": sum(1 for x in rank["events"] if x > 0), "torch": r})
        print(json.dumps(results[-1])[:400], flush=True)
    if os.path.exists(tmp):
        os.remove(tmp)
    with open(out_path, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
