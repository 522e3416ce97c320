#!/usr/bin/env python3
"""Mutation fuzzing of run specs: every mutated spec must give exit 0 (a prediction) or exit 2 (a
clear error naming a key), never a crash, a sanitizer report or another status.

  scripts/fuzz_specs.py --peakcast build-asan/cli/peakcast --cases 500 --seed 1

Seeds are the shipped run specs and examples. Each case applies one to three mutations: a value
replaced by another type or an extreme number, a key deleted, an unknown key added, or a list
emptied. Deterministic for a given seed; prints each failing case's spec path and stderr.
"""
import argparse
import copy
import glob
import json
import os
import random
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BAD_VALUES = [-1, 0, 1, 3, 7, 1.5, -0.0, 1e30, -1e30, 2**63, 2**31, 10**18, "", "abc", "bf16", [], [1, 2],
              ["core_attn"], {}, {"x": 1}, None, True, False, "1e999", 1e-300, "Et|tL", "E(t)*99999999999|L",
              "M*-E*", "(t)*3"]
ODD_NUMBERS = [1, 2, 3, 5, 6, 8, 12, 13, 16, 24, 64, 100, 128, 4096, 0.5, 0.001]
CRASH_MARKS = ["Sanitizer", "terminate called", "Segmentation", "Assertion", "Aborted", "runtime error:"]


def paths(node, prefix=()):
    if isinstance(node, dict):
        for k, v in node.items():
            yield prefix + (k,)
            yield from paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield prefix + (i,)
            yield from paths(v, prefix + (i,))


def parent_of(doc, path):
    node = doc
    for p in path[:-1]:
        node = node[p]
    return node


# Keys the seeds do not carry but whose values reach deep code paths (layouts, patterns, uneven PP).
INSERT_KEYS = [("model", "pipeline_model_parallel_layout"), ("model", "hybrid_override_pattern"),
               ("model", "num_layers_in_first_pipeline_stage"), ("model", "num_layers_in_last_pipeline_stage"),
               ("model", "virtual_pipeline_model_parallel_size"), ("model", "mtp_num_layers"),
               ("model", "context_parallel_size"), ("model", "recompute_num_layers"),
               ("model", "moe_routing_imbalance"), ("model", "cpu_offloading_num_layers")]


def valid_layout(doc, rng):
    """A well-formed pipeline layout for the doc's layer count, with a VPP size that may disagree with it
    (a mismatch once crashed the simulator instead of failing validation)."""
    model = doc.get("model")
    if not isinstance(model, dict):
        return
    layers = model.get("num_layers")
    if not isinstance(layers, int) or isinstance(layers, bool) or not 1 <= layers <= 256:
        layers = rng.choice([4, 8, 12])
        model["num_layers"] = layers
    pp = rng.choice([2, 4])
    stages = pp * rng.choice([1, 2, 3])
    counts = [layers // stages + (1 if i < layers % stages else 0) for i in range(stages)]
    parts = ["t" * c for c in counts]
    parts[0] = "E" + parts[0]
    if rng.random() < 0.3:  # an MTP depth on the last stage, declared or not
        parts[-1] = parts[-1] + "m"
        model["mtp_num_layers"] = rng.choice([1, 1, 2])
    parts[-1] = parts[-1] + "L"
    model["pipeline_model_parallel_size"] = pp
    model["pipeline_model_parallel_layout"] = "|".join(parts)
    for key in ("num_layers_in_first_pipeline_stage", "num_layers_in_last_pipeline_stage"):
        model.pop(key, None)
    vpp = rng.choice([None, 1, 2, 3, 4])
    if vpp is None:
        model.pop("virtual_pipeline_model_parallel_size", None)
    else:
        model["virtual_pipeline_model_parallel_size"] = vpp


def valid_graphs(doc, rng):
    """Well-formed per-layer CUDA-graph settings (impl, scopes, warm-up iterations): they reach the
    simulator's eager / replaying passes and the graph pool."""
    model = doc.setdefault("model", {})
    if not isinstance(model, dict):
        return
    model["cuda_graph_impl"] = rng.choice(["local", "transformer_engine", "none"])
    model.pop("cuda_graph_scope", None)
    model["cuda_graph_modules"] = rng.sample(["attn", "mlp", "moe", "mamba"], rng.randint(0, 2))
    model["cuda_graph_warmup_steps"] = rng.choice([0, 1, 2, 3, 5])


def mutate(doc, rng):
    if rng.random() < 0.08:
        valid_layout(doc, rng)
        return
    if rng.random() < 0.08:
        valid_graphs(doc, rng)
        return
    if rng.random() < 0.2:
        section, key = rng.choice(INSERT_KEYS)
        if isinstance(doc.get(section, {}), dict):  # an earlier mutation may have replaced the section
            doc.setdefault(section, {})[key] = copy.deepcopy(rng.choice(BAD_VALUES + ODD_NUMBERS))
        return
    all_paths = list(paths(doc))
    if not all_paths:
        return
    path = rng.choice(all_paths)
    parent = parent_of(doc, path)
    key = path[-1]
    op = rng.random()
    old = parent[key]
    if op < 0.35 and isinstance(old, (int, float)) and not isinstance(old, bool):
        # plausible but odd sizes: these pass the type checks and reach the simulator
        parent[key] = rng.choice(ODD_NUMBERS)
    elif op < 0.7:
        parent[key] = copy.deepcopy(rng.choice(BAD_VALUES))
    elif op < 0.85 and isinstance(parent, dict):
        del parent[key]
    elif isinstance(parent, dict):
        parent["unknown_key_" + str(rng.randrange(100))] = 1
    elif isinstance(parent, list):
        parent.clear()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--peakcast", default=os.path.join(ROOT, "build", "cli", "peakcast"))
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--commands", default="predict", help="comma list of predict, rank")
    args = ap.parse_args()
    seeds = sorted(glob.glob(os.path.join(ROOT, "configs", "runs", "*.json")) +
                   glob.glob(os.path.join(ROOT, "examples", "*.json")))
    docs = [json.load(open(p)) for p in seeds]
    rng = random.Random(args.seed)
    commands = args.commands.split(",")
    failures = 0
    counts = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.cases):
            doc = copy.deepcopy(rng.choice(docs))
            for _ in range(rng.randint(1, 3)):
                mutate(doc, rng)
            spec = os.path.join(tmp, f"case{i}.json")
            with open(spec, "w") as f:
                json.dump(doc, f)
            cmd = [args.peakcast, rng.choice(commands), spec]
            if cmd[1] == "rank":
                cmd += ["--budget-gb", "80"]
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            counts[p.returncode] = counts.get(p.returncode, 0) + 1
            crashed = any(m in p.stderr for m in CRASH_MARKS)
            clear_error = p.returncode != 2 or "error" in p.stderr
            if p.returncode not in (0, 2) or crashed or not clear_error:
                failures += 1
                keep = os.path.join(ROOT, "build", f"fuzz_fail_{args.seed}_{i}.json")
                os.makedirs(os.path.dirname(keep), exist_ok=True)
                with open(keep, "w") as f:
                    json.dump(doc, f, indent=1)
                print(f"FAIL case {i}: {' '.join(cmd[1:2])} exit {p.returncode}; spec kept in {keep}")
                print("  " + p.stderr.strip()[-1500:].replace("\n", "\n  "))
    print(f"{args.cases} cases, exit statuses {dict(sorted(counts.items()))}, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
