#!/usr/bin/env python3
"""Writes every output a behaviour-preserving change must keep byte-identical into one folder.

For each shipped run spec (configs/runs, examples) and the spec of every calibration record
(calibration/data/*.jsonl), `predict --json`; plus `validate --json`, `validate --json --cross-validate 5`,
`rank --json` and a small `sweep --json` on the shipped specs. Compare two snapshots with `diff -r`.

  scripts/snapshot_outputs.py PEAKCAST_BINARY OUT_DIR
"""
import glob
import json
import os
import subprocess
import sys


def run(binary, args, out_path, stdin=None):
    r = subprocess.run([binary] + args, input=stdin, capture_output=True, text=True)
    with open(out_path, "w") as f:
        f.write(f"exit {r.returncode}\n{r.stdout}\n--- stderr\n{r.stderr}")


def main():
    binary, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    specs = sorted(glob.glob("configs/runs/*.json") + glob.glob("examples/*.json"))
    for s in specs:
        name = s.replace("/", "_")
        run(binary, ["predict", s, "--json"], f"{out}/predict_{name}")
        run(binary, ["predict", s], f"{out}/text_{name}")
        run(binary, ["rank", s, "--json"], f"{out}/rank_{name}")
        run(binary, ["sweep", s, "--json", "--vary", "train.micro_batch_size=1,2"], f"{out}/sweep_{name}")
    tmp = os.path.join(out, "_spec.json")
    for path in sorted(glob.glob("calibration/data/*.jsonl")):
        for i, line in enumerate(open(path)):
            line = line.strip()
            if not line:
                continue
            rec = json.loads(line)
            if "spec" not in rec:
                continue
            with open(tmp, "w") as f:
                json.dump(rec["spec"], f)
            run(binary, ["predict", tmp, "--json"], f"{out}/record_{os.path.basename(path)}_{i + 1}")
    os.remove(tmp)
    run(binary, ["validate", "--json"], f"{out}/validate")
    run(binary, ["validate", "--json", "--cross-validate", "5"], f"{out}/validate_cv5")
    run(binary, ["validate", "--time"], f"{out}/validate_time")


if __name__ == "__main__":
    main()
