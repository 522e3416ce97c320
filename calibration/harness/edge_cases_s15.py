#!/usr/bin/env python3
"""Issue #22, session 15: runs at the edge of what the H200 harness process can reserve, where the caching
allocator's fragmentation decides. plan_cases.py round s15's model (gqa8b width, 8 layers, micro-batch 4, global
batch 8, the local stack) on the capacity the process gives the allocator (140,579,176,448 bytes), with the
sequence lengthened in steps of 64 from 4160 to 4352, each with the default allocator and with expandable
segments. What peakcast predicts for each (verdict, cause, replayed reservation, first failing request) is
written BEFORE the run.

  PEAKCAST=build/cli/peakcast python3 calibration/harness/edge_cases_s15.py predict
      -> calibration/harness/alloc_edge_s15.json (the cases, run_corpus.py's format)
         calibration/data/predictions/alloc_edge_s15_predicted_before.jsonl
  python3 calibration/harness/edge_cases_s15.py compare RECORDS.jsonl
"""
import datetime
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import plan_cases  # noqa: E402
from corpus_lib import expand  # noqa: E402

CORPUS = os.path.join(HERE, "alloc_edge_s15.json")
PREDICTED = os.path.join(REPO, "calibration", "data", "predictions", "alloc_edge_s15_predicted_before.jsonl")
SEQS = (4160, 4224, 4288, 4352)
ITERATIONS = 3  # the steady state's first step (iteration 2) is where the edge runs failed before


def cases():
    out = []
    for seq in SEQS:
        for expandable in (False, True):
            out.append({"name": f"edge8_gqa8b_mbs4_seq{seq}" + ("_expandable" if expandable else ""),
                        "group": "alloc_edge_s15", "iterations": ITERATIONS,
                        "set": {"model.seq_length": seq,
                                "train.micro_batch_size": 4, "cluster.expandable_segments": expandable}})
    return out


def predict():
    pc = os.environ.get("PEAKCAST", os.path.join(REPO, "build", "cli", "peakcast"))
    base = plan_cases.base_spec("s15")
    corpus = {"defaults": base, "models": {}, "cases": cases()}
    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    mtime = datetime.datetime.fromtimestamp(os.stat(pc).st_mtime, datetime.timezone.utc).isoformat(timespec="seconds")
    os.makedirs("/tmp/edge_s15", exist_ok=True)
    lines = []
    for c in expand(corpus):
        path = f"/tmp/edge_s15/{c['name']}.json"
        json.dump(c["spec"], open(path, "w"), indent=1)
        d = json.loads(plan_cases.run([pc, "predict", path, "--json"]))
        r = d["ranks"][0]
        lines.append({"case": c["name"], "verdict": d["verdict"], "max_peak_allocated_bytes": d["max_peak_allocated_bytes"],
                      "allocator_replay": r.get("allocator_replay"), "peakcast_commit": commit,
                      "peakcast_binary_mtime": mtime})
    json.dump(corpus, open(CORPUS, "w"), indent=1)
    with open(PREDICTED, "w") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")
    for line in lines:
        v = line["verdict"]
        print(f"{line['case']:40s} peak {line['max_peak_allocated_bytes'] / 1e9:7.2f} GB  {v['kind']:32s} {v['cause']:12s}"
              f" reservation {v['reservation_bytes'] / 1e9:7.2f} GB  margin {v['margin_bytes'] / 1e9:+6.2f} GB")


def compare(records_path):
    pred = {json.loads(x)["case"]: json.loads(x) for x in open(PREDICTED)}
    for x in open(records_path):
        r = json.loads(x)
        if r["case"] not in pred:
            continue
        p, m = pred[r["case"]], r.get("measured") or {}
        ran = "ERROR" if r.get("error") else ("out of memory" if m.get("oom") else "ran")
        fits = p["verdict"]["kind"] == "fits"
        agree = (ran == "ran") == fits if p["verdict"]["kind"] != "fits_without_reservation_margin" else None
        print(f"{r['case']:40s} predicted {p['verdict']['kind']:32s} measured {ran:14s} agree {agree}  "
              f"reserved measured {(m.get('max_reserved_bytes') or 0) / 1e9:.2f} GB predicted "
              f"{p['verdict']['reservation_bytes'] / 1e9:.2f} GB  capacity {(m.get('allocator_capacity_bytes') or 0) / 1e9:.2f} GB")


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] == "predict":
        predict()
    elif len(sys.argv) == 3 and sys.argv[1] == "compare":
        compare(sys.argv[2])
    else:
        sys.exit(__doc__)
