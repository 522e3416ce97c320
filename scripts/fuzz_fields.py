#!/usr/bin/env python3
"""The extremes scan and the other input paths, in parallel, with a time and memory cap per case.

  scripts/fuzz_fields.py --peakcast build-asan/cli/peakcast [--jobs N] [--seed S] [--max-seconds 20] [--max-rss-gb 2]

Cases (deterministic for a seed):
- field scan: every key of configs/schema/run_spec_schema.json and peakcast_extensions.json set through --set
  on a small base spec to the extremes of its type (ints: -2^63, -1, 0, 2^31, 2^63-1; floats: -1e308, 0, 1e-308,
  1e308; strings: empty, 4 KiB, control characters; lists: empty, 10,000 items; a value of the wrong type);
- sweep: --vary over scanned keys (misspelt keys, huge grids, extreme values), with --csv and --html outputs;
- rank: a few extreme specs, extreme --budget-gb / --headroom-sigma;
- golden CSV rows and corpus records: mutated lines of calibration/data/*.jsonl through `validate --corpus`, and of
  the functional-test CSV (when ../shared/external-validation is there) through `import --golden-csv`;
- allocator traces: a small alloc_trace.py document, mutated (events cut, fields replaced, keys removed), through
  `allocator-replay` with and without --alloc-conf;
- outputs: --timeline / --html / --csv to a full device and a missing directory (exit 2, no file left).
Every case must exit 0 or 2 (3 is allowed for rank/predict --fail-if-oom; not used), print no sanitizer report,
finish within --max-seconds and stay under --max-rss-gb of resident memory (measured with wait4). Prints the
failing cases and a summary; exit 1 on any failure.
"""
import argparse
import concurrent.futures
import json
import os
import random
import sys
import tempfile
import time

from fuzz_run import run_capped

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRASH_MARKS = ["Sanitizer", "terminate called", "Segmentation", "Assertion", "Aborted", "runtime error:", "internal error"]
BASE = {
    "model": {"num_layers": 4, "hidden_size": 256, "num_attention_heads": 8, "vocab_size": 1024, "seq_length": 256,
              "max_position_embeddings": 256, "bf16": True, "transformer_impl": "local"},
    "train": {"micro_batch_size": 1, "global_batch_size": 8},
    "optimizer": {"bf16": True},
    "cluster": {"num_gpus": 8, "gpu": "h100-sxm-80gb"},
}
INTS = [-(2**63), -1, 0, 2**31, 2**63 - 1]
FLOATS = [-1e308, 0.0, 1e-308, 1e308]
STRINGS = ["", "x" * 4096, "\x1b[31m\x07\u009b2J"]


def schema_keys():
    keys = []
    for name in ("run_spec_schema.json", "peakcast_extensions.json"):
        doc = json.load(open(os.path.join(ROOT, "configs", "schema", name)))
        for section, fields in doc.items():
            if section.startswith("_") or not isinstance(fields, dict) or section == "top":
                continue
            for key, f in fields.items():
                if isinstance(f, dict):
                    keys.append((section, key, tuple(f.get("types", ["any"]))))
    return sorted(set(keys))


def extremes(types):
    vals = []
    for t in types:
        if t == "int":
            vals += INTS
        elif t == "float":
            vals += FLOATS
        elif t == "bool":
            vals += [True, False]
        elif t in ("str", "name", "enum"):
            vals += STRINGS
        elif t.startswith("list"):
            vals += [[], [1] * 10000, ["core_attn"] * 10000]
        elif t == "object":
            vals += [{}, {"x": {"y": 1}}]
    return vals + [{"wrong": "type"}]


def compact(v):
    return json.dumps(v, separators=(",", ":"))


def field_cases(rng, tmp):
    base = os.path.join(tmp, "base.json")
    json.dump(BASE, open(base, "w"))
    cases = []
    for section, key, types in schema_keys():
        for v in extremes(types):
            cmd = rng.choice(["predict", "predict", "rank"])
            args = [cmd, base, "--set", f"{section}.{key}={compact(v)}"]
            if cmd == "rank":
                args += ["--budget-gb", "80"]
            cases.append(("field " + section + "." + key, args))
    return base, cases


def sweep_cases(rng, base, tmp, keys):
    cases = []
    for i in range(60):
        section, key, types = rng.choice(keys)
        # One argument must stay under Linux's MAX_ARG_STRLEN (128 KiB): the 10,000-item lists are the field scan's.
        small = [v for v in extremes(types) if len(compact(v)) <= 8192]
        vals = ",".join(compact(v) if not isinstance(v, str) else v for v in rng.sample(small, min(2, len(small))))
        name = f"{section}.{key}" if rng.random() > 0.2 else f"{section}.{key}x"
        args = ["sweep", base, "--vary", f"{name}={vals}", "--vary", "train.micro_batch_size=1,2",
                "--csv", os.path.join(tmp, f"s{i}.csv"), "--html", os.path.join(tmp, f"s{i}.html")]
        cases.append(("sweep " + name, args))
    cases.append(("sweep 16x16 grid", ["sweep", base] + ["--vary", "train.micro_batch_size=" + ",".join(map(str, range(1, 17)))] * 16))
    for b in ["0", "-1", "9.3e9", "1e308", "nan", "inf", "abc"]:
        cases.append(("rank budget " + b, ["rank", base, "--budget-gb", b]))
    for s in ["-1", "1e17", "nan", "inf"]:
        cases.append(("rank sigma " + s, ["rank", base, "--budget-gb", "80", "--headroom-sigma", s]))
    return cases


def output_cases(base, tmp):
    missing = os.path.join(tmp, "no", "such", "file")
    cases = []
    for path in (["/dev/full"] if os.path.exists("/dev/full") else []) + [missing, tmp]:
        cases += [("output timeline " + path, ["predict", base, "--timeline", path]),
                  ("output html " + path, ["predict", base, "--html", path]),
                  ("output csv " + path, ["sweep", base, "--vary", "train.micro_batch_size=1", "--csv", path])]
    return cases


def mutate_line(line, rng):
    op = rng.random()
    if op < 0.3 and len(line) > 2:
        cut = rng.randrange(len(line))
        return line[:cut]
    if op < 0.6:
        try:
            doc = json.loads(line)
        except ValueError:
            return line + "}"
        node, path = doc, []
        while isinstance(node, dict) and node:
            k = rng.choice(list(node))
            path.append(k)
            if not isinstance(node[k], (dict, list)) or rng.random() < 0.3:
                node[k] = rng.choice(INTS + FLOATS + STRINGS + [None, [], {}])
                break
            node = node[k]
        return json.dumps(doc)
    pos = rng.randrange(len(line) + 1)
    return line[:pos] + rng.choice(["\x00", "\x1b", ",", "\"", "]", "{", "9" * 40, "\n"]) + line[pos:]


def corpus_cases(rng, tmp):
    cases = []
    files = sorted(f for f in os.listdir(os.path.join(ROOT, "calibration", "data")) if f.startswith("h200_") and f.endswith(".jsonl"))
    for i in range(80):
        lines = open(os.path.join(ROOT, "calibration", "data", rng.choice(files))).read().splitlines()
        pick = [mutate_line(l, rng) for l in rng.sample(lines, min(3, len(lines)))]
        path = os.path.join(tmp, f"corpus{i}.jsonl")
        open(path, "w", errors="surrogateescape").write("\n".join(pick) + "\n")
        cases.append(("corpus " + path, ["validate", "--corpus", path]))
    csv = os.path.join(ROOT, "..", "shared", "external-validation", "megatron_functional_golden_memory.csv")
    if os.path.exists(csv):
        rows = open(csv).read().splitlines()
        for i in range(60):
            body = [rows[0]] + [mutate_line(r, rng) if rng.random() < 0.5 else r for r in rng.sample(rows[1:], 5)]
            path = os.path.join(tmp, f"golden{i}.csv")
            open(path, "w", errors="surrogateescape").write("\n".join(body) + "\n")
            cases.append(("golden " + path, ["import", "--golden-csv", path, "--out", os.path.join(tmp, f"golden{i}.jsonl")]))
    return cases


TRACE = {"case": "fuzz", "events": [["a", 31457280, 0, 7], ["a", 512, 1, 7], ["f", 31457280, 0, 7], ["a", 52428800, 2, 9],
                                    ["f", 512, 1, 7], ["f", 52428800, 2, 9]],
         "end": {"reserved_peak": 115343360, "segments": 3, "alloc_conf": None}}


def trace_cases(rng, tmp):
    """allocator-replay on mutated traces: a missing or wrong-typed key, event or field must exit 2, not abort."""
    cases = []
    for i in range(60):
        doc = json.loads(json.dumps(TRACE))
        op = rng.random()
        if op < 0.25:
            del doc[rng.choice(list(doc))]
        elif op < 0.5:
            e = rng.choice(doc["events"])
            e[rng.randrange(len(e))] = rng.choice(INTS + FLOATS + STRINGS + [None, [], {}])
        elif op < 0.7:
            k = rng.choice(list(doc["end"]))
            doc["end"][k] = rng.choice(INTS + STRINGS + [None, [], {}])
        elif op < 0.85:
            doc["events"].insert(rng.randrange(len(doc["events"]) + 1), rng.choice([[], ["a"], ["a", 8, 1, 7], ["f", 8, 99, 7], ["x", 8, 3, 7]]))
        text = json.dumps(doc)
        if rng.random() < 0.2:
            text = mutate_line(text, rng)
        path = os.path.join(tmp, f"trace{i}.json")
        open(path, "w", errors="surrogateescape").write(text)
        conf = rng.choice([[], ["--alloc-conf", "expandable_segments:True"], ["--alloc-conf", "max_split_size_mb:" + str(rng.choice(INTS))]])
        cases.append(("trace " + path, ["allocator-replay", path, "--json"] + conf))
    return cases


def run_case(peakcast, name, args, max_s, max_rss_kb):
    """One case: None when it passed, else (name, args, why, stderr tail). The child's peak resident
    memory comes from wait4; a child over the time cap is killed with its process group (fuzz_run.py)."""
    rc, err, _, rss_gb = run_capped([peakcast] + args, None, max_s)
    if rc is None:
        return name, args, f"over the {max_s:.0f} s cap", ""
    if rss_gb * 1e6 > max_rss_kb:
        return name, args, f"peak RSS {rss_gb:.2f} GB over the cap", ""
    if rc not in (0, 2):
        return name, args, f"exit {rc}", err[-1200:]
    if any(m in err for m in CRASH_MARKS):
        return name, args, "crash marker", err[-1200:]
    if rc == 2 and "error" not in err:
        return name, args, "exit 2 without an error message", err[-1200:]
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--peakcast", default=os.path.join(ROOT, "build", "cli", "peakcast"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-seconds", type=float, default=20)
    ap.add_argument("--max-rss-gb", type=float, default=2)
    ap.add_argument("--limit", type=int, default=0, help="run only the first N cases (for a quick look)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        base, cases = field_cases(rng, tmp)
        cases += sweep_cases(rng, base, tmp, schema_keys())
        cases += output_cases(base, tmp)
        cases += corpus_cases(rng, tmp)
        cases += trace_cases(rng, tmp)
        if args.limit:
            cases = cases[: args.limit]
        failures = []
        started = time.time()
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futs = [pool.submit(run_case, args.peakcast, n, a, args.max_seconds, args.max_rss_gb * 1e6) for n, a in cases]
            for f in concurrent.futures.as_completed(futs):
                r = f.result()
                if r:
                    failures.append(r)
        for name, a, why, err in failures:
            print(f"FAIL {name}: {why}\n  peakcast {' '.join(a)[:400]}\n  " + err.replace("\n", "\n  "))
        leftovers = [f for f in os.listdir(tmp) if ".peakcast-" in f]
        if leftovers:
            print("FAIL temporary output files left behind:", leftovers[:5])
            failures.append(("leftovers", [], "", ""))
        print(f"{len(cases)} cases in {time.time() - started:.0f} s, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
