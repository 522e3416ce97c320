#!/usr/bin/env python3
"""Mutation fuzzing of run specs: every mutated spec must give exit 0 (a prediction) or exit 2 (a
clear error naming a key), never a crash, a sanitizer report or another status.

  scripts/fuzz_specs.py --peakcast build-asan/cli/peakcast --cases 500 --seed 1

Seeds are the shipped run specs and examples (--inputs json), the Bridge run_config.yaml fixtures
(yaml: the same structural mutations, dumped as yaml.safe_dump does, plus text-level ones: truncation,
a duplicated line, anchors and aliases, tags, stray bytes), and catalogue recipe names with mutated
--set overrides (recipe). Each case applies one to three mutations: a value replaced by another type or
an extreme number, a key deleted, an unknown key added, or a list emptied. Deterministic for a given
seed; prints each failing case's spec path and stderr.

--inputs mlm mutates Megatron-LM launch lines (predict --from-megatron-args, or the line as a file, or on
stdin): seeds are full torchrun / python lines and the golden CSV's functional-test rows (when
/work/shared/external-validation is present); mutations misspell a defined option, drop or duplicate a
token, give a value of the wrong type, give a flag a value, add an undefined option or a $VARIABLE. A
misspelt defined option must never exit 0 (Megatron-LM's own parser refuses it).

--inputs hf mutates Hugging Face config.json files (configs/hf/) given with --hf-config to a small run spec
that leaves the architecture out: values of other types, deleted keys, unknown keys.
"""
import argparse
import copy
import glob
import json
import os
import random
import sys
import tempfile

from fuzz_run import run_capped

try:
    import yaml
except ImportError:  # Debian: python3-yaml (scripts/install_deps.sh installs it)
    yaml = None

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


TEXT_NOISE = ["&a [1, 2]", "*a", "!!python/object:os.system {}", "\t", "{", "]]", "- - -", "? x", "\x00", "\xff\xfe",
              "key: key: key", "'unterminated", "<<: *a", "%YAML 1.1", "---", "..."]


def mutate_text(text, rng):
    lines = text.split("\n")
    op = rng.random()
    i = rng.randrange(len(lines))
    if op < 0.25:
        return "\n".join(lines[: rng.randrange(len(lines))])          # truncated file
    if op < 0.5:
        lines.insert(i, lines[rng.randrange(len(lines))])             # a duplicated line (often a duplicate key)
    elif op < 0.8:
        lines[i] = lines[i] + " " + rng.choice(TEXT_NOISE)
    else:
        lines.insert(i, rng.choice(TEXT_NOISE))
    return "\n".join(lines)


MLM_SEEDS = [
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True torchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py "
    "--num-layers 8 --hidden-size 1024 --num-attention-heads 16 --group-query-attention --num-query-groups 4 "
    "--seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 16 --bf16 "
    "--tensor-model-parallel-size 2 --sequence-parallel --pipeline-model-parallel-size 2 --use-distributed-optimizer "
    "--swiglu --position-embedding-type rope --untie-embeddings-and-output-weights --normalization RMSNorm "
    "--recompute-granularity selective --recompute-modules core_attn mlp --tokenizer-type HuggingFaceTokenizer "
    "--tokenizer-model meta-llama/Meta-Llama-3-8B --log-interval 1",
    "python -m torch.distributed.run --nproc_per_node 8 pretrain_gpt.py --num-layers 4 --hidden-size 512 "
    "--num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 2 --bf16 "
    "--num-experts 8 --moe-router-topk 2 --expert-model-parallel-size 4 --moe-grouped-gemm --moe-layer-freq '([0]*1+[1]*3)' "
    "--moe-token-dispatcher-type alltoall --disable-bias-linear --use-distributed-optimizer --overlap-grad-reduce",
    "torchrun --nproc-per-node 4 pretrain_hybrid.py --hybrid-layer-pattern 'M*M-|M*M-' --hidden-size 512 "
    "--num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 1 "
    "--pipeline-model-parallel-size 2 --position-embedding-type rope --bf16 --mamba-num-heads 8",
]
MLM_BAD_VALUES = ["abc", "-1", "0", "1e999", "nan", "", "2.5", "1_0", "[1,0]", "([0]*3+[1]*", "true", "4096", "local",
                  "'unterminated", "$X", "--", "-", "9" * 30]


def mlm_seeds():
    """Full lines plus the golden CSV's rows, converted as the test harness converts MODEL_ARGS."""
    seeds = list(MLM_SEEDS)
    path = "/work/shared/external-validation/megatron_functional_golden_memory.csv"
    if os.path.exists(path):
        import csv
        with open(path) as f:
            rows = list(csv.DictReader(f))
        cols = list(rows[0].keys()) if rows else []
        first = cols.index("num-layers") if "num-layers" in cols else len(cols)
        for r in rows:
            if r["model"] not in ("gpt", "moe"):
                continue
            words = []
            for c in cols[first:]:
                v = r[c]
                if not v:
                    continue
                words.append("--" + c)
                if v == "True":
                    continue
                if v.startswith("[") and v.endswith("]"):
                    words += v[1:-1].split()
                else:
                    words.append("'" + v + "'")
            if "--seq-length" in words:
                words += ["--max-position-embeddings", words[words.index("--seq-length") + 1]]
            seeds.append("torchrun --nproc-per-node 8 pretrain_gpt.py " + " ".join(words))
    return seeds


def mlm_case(seeds, options, rng):
    """One mutated line and whether it misspells a defined option (then exit 0 is a failure)."""
    words = rng.choice(seeds).split(" ")
    script = next((i for i, w in enumerate(words) if w.endswith(".py")), -1)
    misspelt = None
    for _ in range(rng.randint(1, 3)):
        opts = [i for i, w in enumerate(words) if w.startswith("--") and w in options and i > script]
        op = rng.random()
        if op < 0.3 and opts:
            i = rng.choice(opts)
            w = words[i]
            k = rng.randrange(2, len(w))
            kind = rng.random()
            typo = w[:k] + w[k + 1:] if kind < 0.4 else (w[:k] + rng.choice("abcdefghijklmnopqrstuvwxyz-_") + w[k:] if kind < 0.8
                                                      else w[:k - 1] + w[k] + w[k - 1] + w[k + 1:])
            if typo not in options and typo != w and len(typo) > 2:
                words[i] = typo
                misspelt = typo
        elif op < 0.45 and len(words) > script + 2:
            del words[rng.randrange(script + 1, len(words))]
        elif op < 0.6 and opts:
            i = rng.choice(opts)
            words += words[i:i + 2]
        elif op < 0.8 and len(words) > script + 2:
            words[rng.randrange(script + 1, len(words))] = rng.choice(MLM_BAD_VALUES)
        elif op < 0.9:
            words.insert(rng.randrange(script + 1, len(words) + 1), rng.choice(["--bf16 true", "--undefined-option 3",
                                                                              "--data-path $DATA_PATH", "--sequence-parallel=1"]))
        else:
            i = rng.randrange(script + 1, len(words))
            j = rng.randrange(script + 1, len(words))
            words[i], words[j] = words[j], words[i]
    if misspelt and misspelt not in words:
        misspelt = None  # a later mutation removed it
    return " ".join(words), misspelt


def yaml_case(docs, rng):
    doc = copy.deepcopy(rng.choice(docs))
    for _ in range(rng.randint(1, 3)):
        mutate(doc, rng)
    text = yaml.safe_dump(doc, default_flow_style=False)
    if rng.random() < 0.3:
        text = mutate_text(text, rng)
    return text


def recipe_case(names, docs, rng):
    """A recipe name with one to three --set overrides drawn from the JSON seeds' keys and the bad values."""
    sets = []
    for _ in range(rng.randint(1, 3)):
        doc = rng.choice(docs)
        section = rng.choice(["model", "train", "optimizer", "ddp", "mixed_precision", "comm_overlap", "cluster"])
        keys = list(doc.get(section, {}).keys()) if isinstance(doc.get(section), dict) else []
        key = rng.choice(keys) if keys and rng.random() < 0.8 else "unknown_" + str(rng.randrange(10))
        sets += ["--set", f"{section}.{key}={json.dumps(rng.choice(BAD_VALUES + ODD_NUMBERS))}"]
    return "bridge:" + rng.choice(names), sets


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--peakcast", default=os.path.join(ROOT, "build", "cli", "peakcast"))
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--commands", default="predict", help="comma list of predict, rank")
    ap.add_argument("--inputs", default="json", help="comma list of json, yaml, recipe, mlm, hf")
    ap.add_argument("--max-seconds", type=float, default=20, help="per-case wall-clock cap (issue #27: 20 s)")
    ap.add_argument("--max-rss-gb", type=float, default=2, help="per-case peak resident memory cap")
    args = ap.parse_args()
    inputs = args.inputs.split(",")
    if "yaml" in inputs and yaml is None:
        print("--inputs yaml needs PyYAML (python3-yaml)")
        return 1
    yaml_docs = [yaml.safe_load(open(p)) for p in sorted(glob.glob(os.path.join(ROOT, "tests", "data", "bridge", "*.yaml")))] if yaml else []
    recipes = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(ROOT, "configs", "recipes", "*.json")))
    seeds = sorted(glob.glob(os.path.join(ROOT, "configs", "runs", "*.json")) +
                   glob.glob(os.path.join(ROOT, "examples", "*.json")))
    docs = [json.load(open(p)) for p in seeds]
    mlm_lines = mlm_seeds() if "mlm" in inputs else []
    hf_docs = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(ROOT, "configs", "hf", "*.json")))
               if not p.endswith(("index.json", "architectures.json"))]
    with open(os.path.join(ROOT, "configs", "schema", "megatron_args.json")) as f:
        mlm_options = {o for a in json.load(f)["arguments"] for o in a["options"]}
    rng = random.Random(args.seed)
    commands = args.commands.split(",")
    failures = 0
    counts = {}
    slowest = (0.0, -1, "")
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.cases):
            kind = rng.choice(inputs)
            extra = []
            if kind == "yaml":
                spec = os.path.join(tmp, f"case{i}.yaml")
                text = yaml_case(yaml_docs, rng)
                with open(spec, "w", errors="surrogateescape") as f:
                    f.write(text)
                extra = ["--set", "cluster.gpu=h100-sxm-80gb"]
                doc = {"yaml": text}
            elif kind == "recipe":
                spec, extra = recipe_case(recipes, docs, rng)
                doc = {"recipe": spec, "set": extra}
            elif kind == "mlm":
                line, misspelt = mlm_case(mlm_lines, mlm_options, rng)
                doc = {"line": line, "misspelt": misspelt}
                extra = ["--set", "cluster.gpu=h100-sxm-80gb", "--set", "cluster.num_gpus=8"]
                how = rng.random()
                if how < 0.5:
                    spec = "--from-megatron-args=" + line
                elif how < 0.75:
                    spec = os.path.join(tmp, f"case{i}.sh")
                    with open(spec, "w") as f:
                        f.write(line.replace(" --", " \\\n  --", 3) + "\n")
                else:
                    spec = "-"
                    doc["stdin"] = True
            elif kind == "hf":
                doc = copy.deepcopy(rng.choice(hf_docs))
                for _ in range(rng.randint(0, 3)):
                    mutate(doc, rng)
                hf = os.path.join(tmp, f"case{i}.config.json")
                with open(hf, "w") as f:
                    json.dump(doc, f)
                spec = os.path.join(tmp, f"case{i}.json")
                with open(spec, "w") as f:
                    json.dump({"model": {"seq_length": rng.choice([1024, 4096]), "tensor_model_parallel_size": rng.choice([1, 2])},
                               "train": {"micro_batch_size": 1}, "cluster": {"num_gpus": 8, "gpu": "h100-sxm-80gb"}}, f)
                extra = ["--hf-config", hf]
            else:
                doc = copy.deepcopy(rng.choice(docs))
                for _ in range(rng.randint(1, 3)):
                    mutate(doc, rng)
                spec = os.path.join(tmp, f"case{i}.json")
                with open(spec, "w") as f:
                    json.dump(doc, f)
            cmd = [args.peakcast, rng.choice(commands), spec] + extra
            if cmd[1] == "rank":
                cmd += ["--budget-gb", "80"]
            rc, err, seconds, rss_gb = run_capped(cmd, doc["line"] if doc.get("stdin") else None, args.max_seconds)
            slowest = max(slowest, (seconds, i, cmd[1]))
            counts[rc] = counts.get(rc, 0) + 1
            crashed = any(m in err for m in CRASH_MARKS)
            clear_error = rc != 2 or "error" in err
            # A misspelt defined option is an error naming it, never a prediction.
            silent_typo = bool(doc.get("misspelt")) and rc == 0
            over = rc is None or rss_gb > args.max_rss_gb
            if over:
                err = (f"over the {args.max_seconds:.0f} s cap" if rc is None else f"peak RSS {rss_gb:.2f} GB over the cap") + "\n" + err
            if over or rc not in (0, 2) or crashed or not clear_error or silent_typo:
                failures += 1
                keep = os.path.join(ROOT, "build", f"fuzz_fail_{args.seed}_{i}.json")
                os.makedirs(os.path.dirname(keep), exist_ok=True)
                with open(keep, "w") as f:
                    json.dump(doc, f, indent=1)
                print(f"FAIL case {i}: {' '.join(cmd[1:2])} exit {rc}; spec kept in {keep}")
                print("  " + err.strip()[-1500:].replace("\n", "\n  "))
    print(f"{args.cases} cases, exit statuses {dict(sorted(counts.items(), key=str))}, {failures} failures; "
          f"slowest case {slowest[1]} ({slowest[2]}) {slowest[0]:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
