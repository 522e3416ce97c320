"""Expand calibration/harness/corpus.json into fully specified cases (pure Python, no torch).

corpus.json:
  {"defaults": {<spec sections>},
   "models":   {"<model name>": {"model": {...}, "train": {...}, ...}},   # overrides on defaults
   "cases":    [{"name", "group", "base": "<model name>", "set": {"model.key": value, ...},
                 "fake_rank": int (optional), "iterations": int (optional, default 3),
                 "expect": "measure"|"validation_error" (optional), "gpus": 1|2 (optional,
                 2 = real multi-GPU run through torchrun, one process per GPU), "smoke": bool}]}

A key set to null in "set" is removed (takes the Megatron default).
"""
import copy
import json
import sys

SECTIONS = ("model", "train", "optimizer", "ddp", "cluster")


def _merge(dst, src):
    for sec, vals in src.items():
        if sec not in SECTIONS:
            raise KeyError(f"unknown spec section {sec!r}")
        dst.setdefault(sec, {})
        for k, v in vals.items():
            dst[sec][k] = copy.deepcopy(v)


def expand(corpus):
    out, names = [], set()
    for c in corpus["cases"]:
        spec = copy.deepcopy(corpus["defaults"])
        if c.get("base"):
            _merge(spec, corpus["models"][c["base"]])
        for dotted, v in (c.get("set") or {}).items():
            sec, key = dotted.split(".", 1)
            if sec not in SECTIONS:
                raise KeyError(f"{c['name']}: unknown section in {dotted!r}")
            if v is None:
                spec[sec].pop(key, None)
            else:
                spec[sec][key] = copy.deepcopy(v)
        # keep the two copies of use_distributed_optimizer consistent
        if "use_distributed_optimizer" in spec.get("optimizer", {}):
            spec["ddp"]["use_distributed_optimizer"] = spec["optimizer"]["use_distributed_optimizer"]
        if c["name"] in names:
            raise ValueError(f"duplicate case name {c['name']}")
        names.add(c["name"])
        out.append({
            "name": c["name"], "group": c["group"], "spec": spec,
            "fake_rank": c.get("fake_rank"), "iterations": c.get("iterations", 3),
            "expect": c.get("expect", "measure"), "gpus": c.get("gpus", 1),
            "smoke": bool(c.get("smoke", False)),
        })
    return out


def check(cases):
    """Light consistency checks that need no Megatron (run locally)."""
    problems = []
    for c in cases:
        m, t, cl = c["spec"]["model"], c["spec"]["train"], c["spec"]["cluster"]
        tp = m.get("tensor_model_parallel_size", 1)
        pp = m.get("pipeline_model_parallel_size", 1)
        cp = m.get("context_parallel_size", 1)
        ep = m.get("expert_model_parallel_size", 1)
        w = cl["num_gpus"]
        if w % (tp * pp * cp):
            problems.append(f"{c['name']}: world {w} not divisible by tp*pp*cp")
            continue
        dp = w // (tp * pp * cp)
        if (dp * tp * cp) % ep:
            problems.append(f"{c['name']}: ep {ep} does not divide dp*tp*cp")
        if t["global_batch_size"] % (t["micro_batch_size"] * dp):
            problems.append(f"{c['name']}: gbs not divisible by mbs*dp")
        if m["vocab_size"] % (m.get("make_vocab_size_divisible_by", 128) * tp):
            problems.append(f"{c['name']}: vocab_size not padded to divisible_by*tp")
        if c["gpus"] > 1 and c["gpus"] != w:
            problems.append(f"{c['name']}: real multi-GPU case needs cluster.num_gpus == gpus")
        if w > 1 and c["gpus"] == 1 and c["fake_rank"] is None:
            problems.append(f"{c['name']}: world > 1 on one GPU needs fake_rank")
        if m.get("sequence_parallel") and tp == 1:
            problems.append(f"{c['name']}: sequence_parallel needs tp > 1")
        if m.get("seq_length", 0) % (tp if m.get("sequence_parallel") else 1):
            problems.append(f"{c['name']}: seq not divisible by tp under SP")
    return problems


if __name__ == "__main__":
    path = sys.argv[1] if len(sys.argv) > 1 else "calibration/harness/corpus.json"
    with open(path) as f:
        cases = expand(json.load(f))
    probs = check(cases)
    from collections import Counter
    print(len(cases), "cases;", dict(Counter(c["group"] for c in cases)))
    print("real multi-GPU:", sum(c["gpus"] > 1 for c in cases),
          "smoke:", sum(c["smoke"] for c in cases))
    for p in probs:
        print("PROBLEM", p)
    sys.exit(1 if probs else 0)
