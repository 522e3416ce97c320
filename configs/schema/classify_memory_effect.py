#!/usr/bin/env python3
"""Builds configs/schema/memory_effect.json: for every key the run-spec schema accepts, whether it
changes what a GPU holds in training, and whether peakcast simulates it.

The mechanical part (this file, top): the accepted keys (run_spec_schema.json, peakcast_extensions.json),
the keys the typed parser reads (model/src/spec_fill.cpp, spec_fill_model.cpp), the keys typed for the
validation rules only (model/src/spec_fill_checks.cpp) and how many Bridge recipes set each key (configs/recipes/*.json "config.<section>"). The hand-written part (memory_effect_table.py):
for each key that is not simulated, its memory effect with the Megatron Core 24bad8e6 / Bridge 600d069b
line that uses it.

Class:
  simulated         read by the typed parser for the simulation (spec_fill.cpp, spec_fill_model.cpp)
  rule_only         read only for the validation rules: typed in spec_fill_checks.cpp (whose fields no later
                    stage may read; checked here); the entry's changes_memory says whether the key also changes memory (then it is unsimulated too)
  not_simulated     changes training GPU memory (or refuses to run) and the typed parser does not read it
                    (model/src/unsimulated_keys.cpp warns for every not_simulated key and memory-changing rule_only key: warned=true)
  no_memory_effect  changing it does not change the bytes a GPU allocates in training

Usage: python3 configs/schema/classify_memory_effect.py [--check]   (from the repository root)
  --check: fail if memory_effect.json is not what this script writes (or the table misses a key).
"""
import glob
import json
import os
import re
import sys
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SECTIONS = ["model", "optimizer", "ddp", "train"]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def load(rel):
    with open(os.path.join(ROOT, rel)) as f:
        return json.load(f)


def read_text(rel):
    with open(os.path.join(ROOT, rel)) as f:
        return f.read()


# --- typed reads -------------------------------------------------------------------------------
READ_RE = re.compile(r'\br\.(?:read|name|find|has)\(\s*"([A-Za-z0-9_]+)"')
DTYPE_RE = re.compile(r'\bread_dtype\(\s*r\s*,\s*"([A-Za-z0-9_]+)"')
CHOICE_RE = re.compile(r'r\.has\("([A-Za-z0-9_]+)"\)\s*\?\s*"([A-Za-z0-9_]+)"\s*:\s*"([A-Za-z0-9_]+)"')
FUNC_RE = re.compile(r'^(?:void|std::\S+|bool)\s+([a-z_]+)\(', re.M)
# Which run-spec section each Reader-taking function of spec_fill.cpp reads (fill_run_spec passes
# Reader(doc, "<section>") to them); spec_fill_model.cpp reads only the model section.
FILL_SECTION = {"fill_train": "train", "fill_optimizer": "optimizer", "fill_ddp": "ddp", "fill_cluster": "cluster",
                "fill_alloc_conf": "cluster", "fill_cublas_workspace_config": "cluster", "fill_te_version": "cluster",
                "read_userbuffer_overrides": "model", "read_dtype": None}


def typed_reads():
    """{section: {key: 'file:line'}} for every key the typed parser reads."""
    out = {s: {} for s in SECTIONS + ["cluster"]}
    # spec_fill.cpp: attribute each read to the function it sits in.
    rel = "model/src/spec_fill.cpp"
    text = read_text(rel)
    funcs = [(m.start(), m.group(1)) for m in FUNC_RE.finditer(text)]
    calls = {}
    for fm in re.finditer(r'(fill_\w+|read_userbuffer_overrides)\(Reader\(doc, "(\w+)"', text):
        if not fm.group(1).endswith("_checks"):  # spec_fill_checks.cpp: check_reads()
            calls[fm.group(1)] = fm.group(2)
    assert calls == {"fill_model": "model", "fill_train": "train", "fill_optimizer": "optimizer", "fill_ddp": "ddp",
                     "fill_cluster": "cluster", "fill_peft": "peft"}, calls
    for rx in (READ_RE, DTYPE_RE):
        for m in rx.finditer(text):
            fn = [name for pos, name in funcs if pos < m.start()][-1]
            sec = FILL_SECTION.get(fn, calls.get(fn))
            if sec is None:  # inside read_dtype itself: r.name(key) with a variable key
                continue
            line = text.count("\n", 0, m.start()) + 1
            out[sec].setdefault(m.group(1), f"{rel}:{line}")
    rel = "model/src/spec_fill_model.cpp"
    text = read_text(rel)
    for m in READ_RE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        out["model"].setdefault(m.group(1), f"{rel}:{line}")
    # A key chosen by name and then read through a variable:
    #   const char* modules_key = r.has("cuda_graph_scope") ? "cuda_graph_scope" : "cuda_graph_modules";
    for m in CHOICE_RE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        for k in m.groups()[1:]:
            out["model"].setdefault(k, f"{rel}:{line}")
    return out


# --- typed reads that only the validation rules use ---------------------------------------------
CHECKS_FILE = "model/src/spec_fill_checks.cpp"
CHECK_SECTION = {"fill_train_checks": "train", "fill_optimizer_checks": "optimizer", "fill_ddp_checks": "ddp",
                 "fill_cluster_checks": "cluster"}  # every other function there reads the model section
FIELD_RE = re.compile(r'\br\.read\(\s*"([A-Za-z0-9_]+)",\s*[a-z]\.([A-Za-z0-9_]+)\)|\b[a-z]\.([A-Za-z0-9_]+)\s*=')
# Where a field a rule-only read fills must not be used: the stages after validation.
SIM_DIRS = ("sim", "calibration/src", "cli", "model/src")
RULE_FILES = re.compile(r"model/src/(validate[a-z_]*\.cpp|validate_detail\.hpp|spec_fill_checks\.cpp)$")


# Fields filled here that one simulation stage reads for a side detail while the key's own memory effect stays
# unsimulated (so the key keeps its class and its warning): field -> the reading file and what it reads it for.
PARTIAL_READS = {
    "fp4": ("sim/src/moe_graphs.cpp", "an offloaded expert fc1 keeps its original input unless the recipe is NVFP4 "
            "(experts.py:277-283); FP4 GEMM storage itself is not simulated"),
    "fp4_recipe": ("sim/src/moe_graphs.cpp", "with fp4, as above"),
    "mla_down_proj_fusion": ("sim/src/module_graphs.cpp", "attn_norm offloading has no separate MLA TENorm to offload "
                             "(gpt_layer_specs.py:257-266); the fused LayerNormLinear's saves are not simulated"),
}


def check_reads():
    """({section: {key: 'file:line'}}, problems) for spec_fill_checks.cpp; the fields it fills must be read by
    no stage but validation (else the key is simulated and its read belongs in spec_fill_model.cpp)."""
    out = {s: {} for s in SECTIONS + ["cluster"]}
    text = read_text(CHECKS_FILE)
    funcs = [(m.start(), m.group(1)) for m in FUNC_RE.finditer(text)]
    for m in READ_RE.finditer(text):
        before = [name for pos, name in funcs if pos < m.start()]
        sec = CHECK_SECTION.get(before[-1], "model") if before else "model"
        out[sec].setdefault(m.group(1), f"{CHECKS_FILE}:{text.count(chr(10), 0, m.start()) + 1}")
    fields = set()
    for m in FIELD_RE.finditer(text):
        fields.add(m.group(2) or m.group(3))
    # A field name used by two structs of run_spec.hpp (optimizer.bf16 and model.bf16) cannot be told apart by name.
    header = read_text("model/include/peakcast/model/run_spec.hpp")
    problems = []
    for field in sorted(fields):
        declared = re.findall(r"^[ ]+[^/(\n]*\b" + field + r"\s*(?:=[^;\n]*)?;", header, re.M)
        if len(declared) != 1:
            continue
        pat = re.compile(r"\." + field + r"\b")
        for d in SIM_DIRS:
            for path in glob.glob(os.path.join(ROOT, d, "**", "*.[ch]pp"), recursive=True):
                rel = os.path.relpath(path, ROOT)
                if RULE_FILES.search(rel):
                    continue
                with open(path) as f:
                    code = re.sub(r"//[^\n]*", "", f.read())  # comments name keys as section.key
                    code = re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', code)  # so do messages
                    if pat.search(code) and PARTIAL_READS.get(field, ("",))[0] != rel:
                        problems.append(f"{rel} reads .{field}, which {CHECKS_FILE} fills for the rules only: "
                                        "read its key in spec_fill_model.cpp (class simulated) instead")
    return out, problems


# Fields spec_fill_model.cpp reads that no simulation stage uses yet (each class "simulated" by the mechanical
# rule, but a value changes no prediction). A new one is a problem: simulate the key, or read it for the rules
# only (spec_fill_checks.cpp, class rule_only). moe_latent_size was such a field until issue #19.
SIM_UNUSED_KNOWN = {"moe_permute_fusion", "delay_wgrad_compute", "cpu_offloading_weights"}
MODEL_READ_RE = re.compile(r'\br\.read\(\s*"([A-Za-z0-9_]+)",\s*[a-z]\.([A-Za-z0-9_]+)\)')


def unused_model_reads():
    """Problems for spec_fill_model.cpp reads whose field no stage after validation reads."""
    sources = []
    for d in SIM_DIRS:
        for path in glob.glob(os.path.join(ROOT, d, "**", "*.[ch]pp"), recursive=True):
            rel = os.path.relpath(path, ROOT)
            if RULE_FILES.search(rel) or re.search(r"model/src/spec_fill[a-z_]*\.cpp$", rel):
                continue
            with open(path) as f:
                sources.append(re.sub(r"//[^\n]*", "", f.read()))
    problems = []
    for key, field in MODEL_READ_RE.findall(read_text("model/src/spec_fill_model.cpp")):
        used = any(re.search(r"\." + field + r"\b", code) for code in sources)
        if not used and field not in SIM_UNUSED_KNOWN:
            problems.append(f"model.{key}: spec_fill_model.cpp reads it into .{field}, which no simulation stage reads "
                            "(simulate it, or read it in spec_fill_checks.cpp for the rules only)")
        elif used and field in SIM_UNUSED_KNOWN:
            problems.append(f"model.{key}: .{field} is read by a stage now; drop it from SIM_UNUSED_KNOWN")
    return problems


# --- recipe counts ------------------------------------------------------------------------------
def recipe_counts():
    c = Counter()
    files = sorted(glob.glob(os.path.join(ROOT, "configs/recipes/*.json")))
    for f in files:
        with open(f) as fh:
            r = json.load(fh)
        cfg = r.get("config", {})
        for s in SECTIONS:
            for k in (cfg.get(s) or {}):
                c[(s, k)] += 1
    return c, len(files)


# --- Megatron sources (optional: needs the pinned bare mirrors) ---------------------------------
MCORE_GIT = "/work/.mirror/NVIDIA+Megatron-LM/repo"
MCORE_REV = "24bad8e677d22625d86ef2a54c9506b6e4992c93"
BRIDGE_GIT = "/work/.mirror/NVIDIA-NeMo+Megatron-Bridge/repo"
BRIDGE_REV = "600d069b824dd5ce50367a311a5a3244478faf22"
DECL_FILES = ("model_parallel_config.py", "transformer_config.py", "optimizer_config.py",
              "distributed_data_parallel_config.py", "training_config.py")


def _git(repo, *args):
    import subprocess
    r = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True)
    return r.stdout if r.returncode in (0, 1) else None


def have_mirrors():
    return os.path.isdir(MCORE_GIT) and os.path.isdir(BRIDGE_GIT)


def first_use(section, key):
    """The first line of megatron/core (megatron/training for train keys) at the pinned revision that reads
    <something>.<key> outside the config dataclass declarations; Bridge's training/ as a fallback."""
    prefix = {"model": r"config", "optimizer": r"config", "ddp": r"ddp_config", "train": r"args"}[section]
    pattern = prefix + r"\." + key + r"\b"
    where = {"train": ["megatron/training"], "optimizer": ["megatron/core/optimizer"]}.get(section, ["megatron/core"])
    out = _git(MCORE_GIT, "grep", "-n", "-E", pattern, MCORE_REV, "--", *where)
    if out:
        hits = []
        for line in out.splitlines():
            _, path, num, text = line.split(":", 3)
            if path.endswith(DECL_FILES):
                continue  # declarations and __post_init__ checks: not a use that allocates
            if any(s in path for s in SKIP_DIRS):
                continue  # inference, export, other model families
            rank = next((i for i, d in enumerate(PREFERRED_DIRS) if d in path), len(PREFERRED_DIRS))
            if any(s in path for s in LATE_FILES):
                rank += len(PREFERRED_DIRS) + 1
            hits.append((rank, path, int(num)))
        if hits:
            _, path, num = min(hits)
            return f"mcore:{path}:{num}"
    out = _git(BRIDGE_GIT, "grep", "-n", "-E", pattern, BRIDGE_REV, "--", "src/megatron/bridge/training",
               "src/megatron/bridge/models/gpt_provider.py", "src/megatron/bridge/models/hybrid")
    if out:
        line = out.splitlines()[0]
        _, path, num, _ = line.split(":", 3)
        return f"bridge:{path}:{num}"
    return None


PREFERRED_DIRS = ("megatron/core/transformer/", "megatron/core/extensions/", "megatron/core/models/gpt/",
                  "megatron/core/models/common/", "megatron/core/ssm/", "megatron/core/models/hybrid/",
                  "megatron/core/distributed/", "megatron/core/optimizer/", "megatron/core/pipeline_parallel/",
                  "megatron/core/tensor_parallel/", "megatron/core/fusions/", "megatron/core/")
LATE_FILES = ("experimental_attention_variant/", "cuda_graphs.py", "fsdp_dtensor_checkpoint.py", "multi_token_prediction.py",
              "mla_qk_norm_config.py", "arguments.py", "yaml_arguments.py", "/tokenizers/")
SKIP_DIRS = ("/inference/", "/export/", "/post_training/", "/models/bert/", "/models/T5/", "/models/multimodal/",
             "/models/vision/", "/models/audio/", "/models/retro/", "/models/mimo/", "/distributed/fsdp/")

CITE_RE = re.compile(r"(mcore|bridge):([A-Za-z0-9_./-]+\.py)(?::(\d+)(?:-(\d+))?)?")


def check_citations(doc):
    """Every mcore:/bridge: path must exist at the pinned revision and every cited line be within the file;
    a cited line that does not mention the key (or a word of it) is reported as a warning only."""
    warnings = []
    cache = {}
    for sec in SECTIONS:
        for key, rec in doc[sec].items():
            for m in CITE_RE.finditer(rec["source"]):
                repo, path, line = m.group(1), m.group(2), m.group(3)
                git, rev = (MCORE_GIT, MCORE_REV) if repo == "mcore" else (BRIDGE_GIT, BRIDGE_REV)
                if (repo, path) not in cache:
                    cache[(repo, path)] = _git(git, "show", f"{rev}:{path}")
                text = cache[(repo, path)]
                if not text:
                    warnings.append(f"{sec}.{key}: {repo}:{path} not found at {rev[:8]}")
                    continue
                if line is None:
                    continue
                lines = text.splitlines()
                lo = int(line)
                hi = int(m.group(4) or line)
                if hi > len(lines):
                    warnings.append(f"{sec}.{key}: {repo}:{path}:{line} past the end ({len(lines)} lines)")
                    continue
                window = "\n".join(lines[max(0, lo - 3):hi + 2])
                words = [w for w in key.split("_") if len(w) > 3]
                if key not in window and not any(w in window for w in words):
                    warnings.append(f"{sec}.{key}: {repo}:{path}:{line} does not mention the key nearby")
    return warnings


def default_of(entry):
    if "default" in entry:
        return entry["default"]
    if "default_expr" in entry:
        return {"expr": entry["default_expr"]}
    return {"expr": "<required / no default>"}


def build():
    from memory_effect_table import TABLE  # hand-written: {(section, key): dict}

    previous = {}
    prev_path = os.path.join(ROOT, "configs/schema/memory_effect.json")
    if os.path.exists(prev_path):
        with open(prev_path) as f:
            previous = json.load(f)
    mirrors = have_mirrors()

    schema = load("configs/schema/run_spec_schema.json")
    ext = load("configs/schema/peakcast_extensions.json")
    typed = typed_reads()
    checks, check_problems = check_reads()
    counts, nrecipes = recipe_counts()
    problems = list(check_problems) + unused_model_reads()
    doc = {
        "_comment": (
            "Generated by configs/schema/classify_memory_effect.py (mechanical part) from memory_effect_table.py "
            "(hand-written). For every key of the run-spec schema's model/optimizer/ddp/train sections and the "
            "peakcast extensions: does it change what a GPU allocates in training, and does peakcast read it. "
            "class: simulated (typed parser spec_fill.cpp / spec_fill_model.cpp reads it) | rule_only (only the validation rules read it: "
            "spec_fill_checks.cpp; "
            "changes_memory tells whether it is also an unsimulated memory key) | not_simulated (changes training GPU "
            "memory or refuses to run; not read) | no_memory_effect. source: where Megatron Core 24bad8e6 (mcore:) or "
            "Bridge 600d069b (bridge:) uses the field. default_is_inert: the schema default leaves memory as peakcast "
            "assumes (a warning is needed only when the value differs). applies_when: for keys whose effect needs another setting, the condition under which a non-default value matters. read_at: peakcast's reading line. warned: "
            "model/src/unsimulated_keys.cpp warns when the run sets it away from its default where applies_when holds. recipes: how many of "
            f"the {nrecipes} Bridge recipes under configs/recipes set it in config.<section>. See docs/memory-effect.md."
        )
    }
    for sec in SECTIONS + ["cluster", "top"]:
        keys = list(schema.get(sec, {}))
        for k in ext.get(sec, {}):
            if k not in keys:
                keys.append(k)
        out = {}
        for k in keys:
            entry = schema.get(sec, {}).get(k) or ext[sec][k]
            origin = "schema" if k in schema.get(sec, {}) else "peakcast_extensions"
            hand = TABLE.get((sec, k))
            rec = {}
            if sec == "top":
                cls = (hand or {}).get("class")
            elif k in typed[sec]:
                cls = "simulated"
            elif k in checks.get(sec, {}):
                cls = "rule_only"
            else:
                cls = None
            if hand is None:
                problems.append(f"{sec}.{k}: no hand-written entry")
                hand = {}
            hcls = hand.get("class")
            if cls is None:
                cls = hcls
                if cls not in ("no_memory_effect", "not_simulated"):
                    problems.append(f"{sec}.{k}: unread key needs class no_memory_effect/not_simulated, table says {hcls}")
            elif hcls is not None and hcls != cls:
                problems.append(f"{sec}.{k}: table class {hcls} but mechanically {cls}")
            rec["class"] = cls
            rec["why"] = hand.get("why", "")
            rec["source"] = hand.get("source") or ""
            if not rec["source"] and cls == "simulated":
                found = first_use(sec, k) if mirrors else None
                if found is None:  # no mirror here: keep what the last run found
                    found = (previous.get(sec, {}).get(k, {}).get("source") or "").removesuffix(" (first use, found by script)")
                    found = found or None
                if found:
                    rec["source"] = found + " (first use, found by script)"
            changes = hand.get("changes_memory")
            if changes is None:
                changes = {"not_simulated": True, "no_memory_effect": False}.get(cls)
            if cls in ("rule_only", "simulated") and changes is None:
                problems.append(f"{sec}.{k}: {cls} needs changes_memory in the table")
            rec["changes_memory"] = changes
            inert = hand.get("default_is_inert")
            if inert is None:
                inert = True if cls in ("no_memory_effect", "simulated") else None
            if inert is None:
                problems.append(f"{sec}.{k}: default_is_inert missing")
            rec["default_is_inert"] = inert
            rec["default"] = default_of(entry)
            if hand.get("applies_when"):
                rec["applies_when"] = hand["applies_when"]
            if k in typed.get(sec, {}):
                rec["read_at"] = typed[sec][k]
            elif k in checks.get(sec, {}):
                rec["read_at"] = checks[sec][k]
            if cls in ("not_simulated",) or (cls == "rule_only" and changes):
                # model/src/unsimulated_keys.cpp warns for these (sections model/optimizer/ddp/train).
                rec["warned"] = sec in SECTIONS
            if sec in SECTIONS:
                rec["recipes"] = counts.get((sec, k), 0)
            if origin != "schema":
                rec["origin"] = origin
            for field in ("why", "source"):
                if not rec[field]:
                    problems.append(f"{sec}.{k}: empty {field}")
            out[k] = rec
        doc[sec] = out
    extra = sorted(set(TABLE) - {(s, k) for s in SECTIONS + ["cluster", "top"] for k in doc[s]})
    for s, k in extra:
        problems.append(f"{s}.{k}: in the table but not an accepted key")
    return doc, problems


def main():
    doc, problems = build()
    path = os.path.join(ROOT, "configs/schema/memory_effect.json")
    text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    for p in problems:
        print("problem:", p, file=sys.stderr)
    if have_mirrors() and "--no-cite-check" not in sys.argv:
        for w in check_citations(doc):
            print("citation:", w, file=sys.stderr)
    if "--check" in sys.argv:
        with open(path) as f:
            same = f.read() == text
        if not same:
            print("memory_effect.json is stale: rerun configs/schema/classify_memory_effect.py", file=sys.stderr)
        sys.exit(0 if same and not problems else 1)
    with open(path, "w") as f:
        f.write(text)
    c = Counter((s, r["class"]) for s in SECTIONS for r in doc[s].values())
    for s in SECTIONS:
        print(s, {cls: c[(s, cls)] for cls in ("simulated", "rule_only", "not_simulated", "no_memory_effect")})
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
