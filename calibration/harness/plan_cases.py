#!/usr/bin/env python3
"""Issue #24: `peakcast plan` on one H200 for a small model, its predicted step times written BEFORE they are
measured, and the comparison afterwards. Pure Python (no torch).

  PEAKCAST=build/cli/peakcast python3 calibration/harness/plan_cases.py predict [ROUND]   # writes the round's two files
  python3 calibration/harness/plan_cases.py compare RECORDS.jsonl [ROUND]                   # measured vs predicted

ROUND s13 (the default; session 13): 4 layers on the `h200-141gb` preset (149.56 GB). ROUND s15 (session 15):
8 layers on the capacity the harness process gives the allocator on the H200, 140,579,176,448 bytes (the
process holds 9.52 GB outside PyTorch: the s13 MBS8 run's out-of-memory message, 130.92 GiB reserved + free of
139.80 GiB, and session 12's edge runs agree), given as the GPU object a user in that position would give.

The model is timing_corpus.json's "gqa8b" (Llama 3 8B width: hidden 4096, FFN 14336, 32 heads, 8 query groups,
vocab 128256, seq 4096) with 4 layers, on the local (no Transformer Engine) stack the harness measures, global
batch 8 on one GPU. A single H200 runs only TP1 PP1 CP1 DP1, so the layouts the plan can rank there differ in
micro-batch size (1, 2, 4, 8: a layout axis of the plan) and recompute policy; the distributed optimizer at
DP 1 changes nothing. The cases: the plan's top entry, the best entry of every other micro-batch size
(CPU offloading entries skipped) and the best full-recompute entry.

Writes calibration/harness/plan_corpus.json (the cases, in run_corpus.py's format) and
calibration/data/predictions/plan_h200_predicted_before.jsonl (one line per case: the plan entry, its step-time
split, and `peakcast predict` of the case's own spec, which must give the same step time).
"""
import copy
import datetime
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from corpus_lib import expand  # noqa: E402

HARNESS_CAPACITY = 140_579_176_448
ROUNDS = {
    "s13": {"layers": 4, "gpu": "h200-141gb", "corpus": "plan_corpus.json",
            "predicted": "plan_h200_predicted_before.jsonl", "prefix": "plan"},
    "s15": {"layers": 8, "gpu": {"name": "h200-141gb", "memory_bytes": HARNESS_CAPACITY},
            "corpus": "plan_corpus_s15.json", "predicted": "plan_h200_s15_predicted_before.jsonl", "prefix": "plan8"},
}
PREDICTIONS = os.path.join(REPO, "calibration", "data", "predictions")
ITERATIONS = 8      # iterations 3..8 are the steady state compared
GBS = 8
TOP = 40


def base_spec(rnd="s13"):
    t = json.load(open(os.path.join(HERE, "timing_corpus.json")))
    spec = copy.deepcopy(t["defaults"])
    for sec, vals in t["models"]["gqa8b"].items():
        spec.setdefault(sec, {}).update(copy.deepcopy(vals))
    spec["train"]["global_batch_size"] = GBS
    if rnd != "s13":  # round s13's spec as it was written (its layers and GPU from timing_corpus.json)
        spec["model"]["num_layers"] = ROUNDS[rnd]["layers"]
        spec.setdefault("cluster", {})["gpu"] = ROUNDS[rnd]["gpu"]
    return spec


def case_set(e):
    """The keys a one-GPU plan entry varies, as a corpus case's "set"."""
    lay, rc = e["layout"], e["recompute"]
    s = {"train.micro_batch_size": lay["micro_batch_size"],
         "optimizer.use_distributed_optimizer": lay["use_distributed_optimizer"],
         "ddp.overlap_grad_reduce": lay["overlap_grad_reduce"],
         "model.recompute_granularity": rc["recompute_granularity"],
         "model.recompute_method": rc["recompute_method"],
         "model.recompute_num_layers": rc["recompute_num_layers"]}
    if rc["recompute_granularity"] == "selective":
        if rc["recompute_modules"]:
            s["model.recompute_modules"] = rc["recompute_modules"]
        else:  # selective without tags recomputes nothing: the run without recompute (as the launch lines say)
            s["model.recompute_granularity"] = None
    return s


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr[-3000:]}")
    return p.stdout


def predict(rnd="s13"):
    pc = os.environ.get("PEAKCAST", os.path.join(REPO, "build", "cli", "peakcast"))
    cfg = ROUNDS[rnd]
    os.makedirs("/tmp/plan_cases", exist_ok=True)
    base = base_spec(rnd)
    sp = f"/tmp/plan_cases/base_{rnd}.json"
    json.dump(base, open(sp, "w"), indent=1)
    gpu = ["--gpu", cfg["gpu"]] if isinstance(cfg["gpu"], str) else []  # an object: the spec's
    plan_cmd = [pc, "plan", sp, "--gpus", "1"] + gpu + ["--top", str(TOP), "--json"]
    plan = json.loads(run(plan_cmd))
    chosen, seen_mbs = [], set()
    for e in plan["entries"]:
        mbs = e["layout"]["micro_batch_size"]
        if e["recompute"]["cpu_offloading"] or mbs in seen_mbs:
            continue
        seen_mbs.add(mbs)
        chosen.append(e)
    full = [e for e in plan["entries"] if e["recompute"]["recompute_granularity"] == "full"]
    if full:
        chosen.append(full[0])  # the best full-recompute entry: a replaying policy on the same layouts
    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    mtime = datetime.datetime.fromtimestamp(os.stat(pc).st_mtime, datetime.timezone.utc).isoformat(timespec="seconds")
    corpus = {"defaults": base, "models": {}, "cases": []}
    lines = []
    for e in chosen:
        lay = e["layout"]
        name = f"{cfg['prefix']}_gqa8b_mbs{lay['micro_batch_size']}_" + (e["policy"].replace(" ", "_").replace(",", "")
                                                                 .replace("[", "").replace("]", "").replace("=", "") or "none")
        case = {"name": name, "group": "plan_h200", "set": case_set(e), "iterations": ITERATIONS}
        corpus["cases"].append(case)
        spec = [c for c in expand({"defaults": base, "models": {}, "cases": [case]})][0]["spec"]
        cp = f"/tmp/plan_cases/{name}.json"
        json.dump(spec, open(cp, "w"), indent=1)
        pred = json.loads(run([pc, "predict", cp, "--json"]))
        lines.append({"case": name, "plan_position": e["position"], "layout": lay["label"], "policy": e["policy"],
                      "plan_step_time": e["step_time"], "fits": e["verdict"],
                      "max_peak_allocated_bytes": e["max_peak_allocated_bytes"],
                      "max_reservation_bytes": e.get("max_reservation_bytes"),
                      "predict_step_time_s": pred["step_time_s"],
                      "plan_command": " ".join(plan_cmd[:2] + ["BASE"] + plan_cmd[3:]),
                      "peakcast_commit": commit, "peakcast_binary_mtime": mtime,
                      "plan_stats": plan["stats"]})
    json.dump(corpus, open(os.path.join(HERE, cfg["corpus"]), "w"), indent=1)
    with open(os.path.join(PREDICTIONS, cfg["predicted"]), "w") as f:
        for l in lines:
            f.write(json.dumps(l) + "\n")
    for l in lines:
        print(f"{l['case']:50s} #{l['plan_position']:<3d} plan {l['plan_step_time']['step_s']:.4f} s  "
              f"predict {l['predict_step_time_s']:.4f} s  peak {l['max_peak_allocated_bytes'] / 1e9:.2f} GB")


def compare(records_path, rnd="s13"):
    pred = {json.loads(l)["case"]: json.loads(l) for l in open(os.path.join(PREDICTIONS, ROUNDS[rnd]["predicted"]))}
    rows = []
    for line in open(records_path):
        r = json.loads(line)
        if r["case"] not in pred:
            continue
        m = r.get("measured") or {}
        its = [i for i in m.get("iterations", []) if i["iteration"] >= 3]
        if r.get("error") or m.get("oom") or not its:
            rows.append((r["case"], None, None, r.get("error") or "oom" if m.get("oom") else "no steady iterations"))
            continue
        steps = [i["fwd_bwd_time_s"] + i["grad_sync_time_s"] + i["optimizer_time_s"] for i in its]
        p = pred[r["case"]]["plan_step_time"]["step_s"]
        rows.append((r["case"], statistics.median(steps), p, f"spread {min(steps):.4f}-{max(steps):.4f}",
                     m.get("max_allocated_bytes"), pred[r["case"]]["max_peak_allocated_bytes"],
                     m.get("max_reserved_bytes"), pred[r["case"]].get("max_reservation_bytes")))
    for row in rows:
        if row[1] is None:
            print(f"{row[0]:50s} not measured: {row[3]}")
            continue
        err = (row[2] - row[1]) / row[1] * 100
        print(f"{row[0]:50s} measured {row[1]:.4f} s ({row[3]})  predicted {row[2]:.4f} s  {err:+.1f} %  "
              f"peak measured {row[4] / 1e9:.2f} GB predicted {row[5] / 1e9:.2f} GB"
              + (f", reserved measured {row[6] / 1e9:.2f} GB predicted {row[7] / 1e9:.2f} GB" if row[6] and row[7] else ""))


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "predict":
        predict(*sys.argv[2:3])
    elif len(sys.argv) >= 3 and sys.argv[1] == "compare":
        compare(sys.argv[2], *sys.argv[3:4])
    else:
        sys.exit(__doc__)
