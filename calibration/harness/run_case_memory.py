"""Allocator and optimizer readings of run_case.py: the blocks alive at the traced peak or now, by
allocating source line (PEAKCAST_MEMORY_HISTORY=1), and the CUDA bytes the optimizer holds.
Split out of run_case.py (issue #25); run_case imports every name here.
"""


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
    """Allocated blocks now alive, summed by the innermost Megatron / Transformer Engine / harness frame
    that allocated them (torch.cuda.memory._snapshot() with recorded history); the largest `top` sources."""
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
                if "megatron" in fn or "harness" in fn or "transformer_engine" in fn:
                    key = fn.split("/megatron/")[-1].split("/TransformerEngine/")[-1] + ":" + str(f.get("line")) + " " + f.get("name", "")
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
