#!/usr/bin/env python3
"""Regenerate configs/schema/run_spec_schema.json from the pinned Megatron sources.

Reads the dataclass fields (name, annotation, default) of the pinned Megatron Core and
Megatron-Bridge config classes with `ast` (nothing is imported or executed) and writes, per run-spec
section, every accepted key with its JSON-level type. Usage:

  extract_schema.py MEGATRON_LM_GIT_DIR BRIDGE_GIT_DIR > run_spec_schema.json
"""
import ast
import json
import subprocess
import sys

MCORE_REV = "24bad8e677d22625d86ef2a54c9506b6e4992c93"
BRIDGE_REV = "600d069b824dd5ce50367a311a5a3244478faf22"

# (repo, path, class) per section; later classes add fields, the first declaration's default wins
# except where a later class overrides it (then it is recorded as bridge_default).
SECTIONS = {
    "model": [
        ("mcore", "megatron/core/model_parallel_config.py", "ModelParallelConfig"),
        ("mcore", "megatron/core/transformer/transformer_config.py", "TransformerConfig"),
        ("mcore", "megatron/core/transformer/transformer_config.py", "MLATransformerConfig"),
        ("bridge", "src/megatron/bridge/models/transformer_config.py", "TransformerConfig"),
        ("bridge", "src/megatron/bridge/models/transformer_config.py", "MLATransformerConfig"),
        ("bridge", "src/megatron/bridge/models/gpt_provider.py", "GPTModelProvider"),
        ("bridge", "src/megatron/bridge/models/hybrid/hybrid_provider.py", "HybridModelProvider"),
        ("bridge", "src/megatron/bridge/models/mamba/mamba_provider.py", "MambaModelProvider"),
    ],
    "optimizer": [
        ("mcore", "megatron/core/optimizer/optimizer_config.py", "OptimizerConfig"),
        ("bridge", "src/megatron/bridge/training/config.py", "OptimizerConfig"),
    ],
    "ddp": [
        ("mcore", "megatron/core/distributed/distributed_data_parallel_config.py", "DistributedDataParallelConfig"),
        ("bridge", "src/megatron/bridge/training/config.py", "DistributedDataParallelConfig"),
    ],
    "train": [
        ("mcore", "megatron/training/config/training_config.py", "TrainingConfig"),
        ("bridge", "src/megatron/bridge/training/config.py", "TrainingConfig"),
    ],
}

SCALARS = {"bool": "bool", "int": "int", "float": "float", "str": "str"}
# Python objects written as names in the spec, with the names accepted.
NAMED_OBJECTS = {
    "activation_func": ["gelu", "silu", "squared_relu", "relu", "quick_gelu", "fast_gelu", "openai_gelu", "erf_gelu"],
    "params_dtype": ["fp32", "bf16", "fp16", "float32", "bfloat16", "float16"],
    "pipeline_dtype": ["fp32", "bf16", "fp16", "float32", "bfloat16", "float16"],
    "autocast_dtype": ["fp32", "bf16", "fp16", "float32", "bfloat16", "float16"],
    "main_grads_dtype": ["fp32", "bf16", "float32", "bfloat16"],
    "main_params_dtype": ["fp32", "fp16", "float32", "float16"],
    "exp_avg_dtype": ["fp32", "fp16", "bf16", "fp8", "float32", "float16", "bfloat16", "uint8"],
    "exp_avg_sq_dtype": ["fp32", "fp16", "bf16", "fp8", "float32", "float16", "bfloat16", "uint8"],
    "attention_backend": ["auto", "flash", "fused", "unfused", "local"],
}


DTYPE_NAMES = ["fp32", "bf16", "fp16", "fp64", "float32", "bfloat16", "float16", "float64"]
# CudaGraphModule members plus "full" (the whole layer) and the deprecated CudaGraphScope names.
CUDA_GRAPH_MODULES = ["full", "attn", "mlp", "moe", "moe_router", "moe_preprocess", "mamba",
                      "full_iteration", "full_iteration_inference"]


def git_show(git_dir, rev, path):
    return subprocess.run(["git", "--git-dir", git_dir, "show", f"{rev}:{path}"], check=True,
                          capture_output=True, text=True).stdout


def strip_optional(node):
    """(inner annotation nodes, nullable) for X | None, Optional[X], Union[..., None]."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left, ln = strip_optional(node.left)
        right, rn = strip_optional(node.right)
        return left + right, ln or rn
    if isinstance(node, ast.Constant) and node.value is None:
        return [], True
    if isinstance(node, ast.Subscript):
        head = ast.unparse(node.value)
        if head in ("Optional", "typing.Optional"):
            inner, _ = strip_optional(node.slice)
            return inner, True
        if head in ("Union", "typing.Union"):
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            out, nullable = [], False
            for e in elts:
                i, n = strip_optional(e)
                out += i
                nullable = nullable or n
            return out, nullable
    return [node], False


def json_type(node):
    """A schema type string for one non-None annotation node."""
    text = ast.unparse(node)
    if text in SCALARS:
        return SCALARS[text]
    if isinstance(node, ast.Subscript):
        head = ast.unparse(node.value).split(".")[-1]
        if head == "Literal":
            return "enum"
        if head in ("list", "List", "tuple", "Tuple", "Sequence", "set", "Set"):
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            elts = [e for e in elts if not (isinstance(e, ast.Constant) and e.value is Ellipsis)]
            inner = {json_type(e) for e in elts}
            return "list<%s>" % (inner.pop() if len(inner) == 1 else "any")
        if head in ("dict", "Dict", "Mapping"):
            return "object"
    if text in ("list", "List", "tuple"):
        return "list<any>"
    if text in ("dict", "Dict"):
        return "object"
    if text == "Any":
        return "any"
    if text.endswith("Enum") or text in ("AttnBackend", "AttnMaskType", "CudaGraphScope"):
        return "name"
    return "name"  # a Python object (callable, torch.dtype, class): written as a name


def literal_choices(nodes):
    out = []
    for n in nodes:
        if isinstance(n, ast.Subscript) and ast.unparse(n.value).split(".")[-1] == "Literal":
            elts = n.slice.elts if isinstance(n.slice, ast.Tuple) else [n.slice]
            out += [e.value for e in elts if isinstance(e, ast.Constant)]
    return out


def default_of(value):
    """JSON default, or a string describing a non-literal default."""
    if value is None:
        return {"required": True}
    if isinstance(value, ast.Call) and ast.unparse(value.func) in ("field", "dataclasses.field"):
        kws = {k.arg: k.value for k in value.keywords}
        if "init" in kws and isinstance(kws["init"], ast.Constant) and kws["init"].value is False:
            return None  # not a constructor argument
        if "default" in kws:
            return default_of(kws["default"])
        if "default_factory" in kws:
            f = ast.unparse(kws["default_factory"])
            if f in ("list", "tuple"):
                return {"default": []}
            if f == "dict":
                return {"default": {}}
            return {"default_expr": f + "()"}
        return {"required": True}
    try:
        return {"default": ast.literal_eval(value)}
    except Exception:
        return {"default_expr": ast.unparse(value)}


def class_fields(source, cls_name):
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls_name:
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    name = stmt.target.id
                    if name.startswith("_") or ast.unparse(stmt.annotation).startswith("ClassVar"):
                        continue
                    yield name, stmt.annotation, stmt.value, stmt.lineno
            return
    raise SystemExit(f"class {cls_name} not found")


def main():
    mcore_dir, bridge_dir = sys.argv[1], sys.argv[2]
    repos = {"mcore": (mcore_dir, MCORE_REV), "bridge": (bridge_dir, BRIDGE_REV)}
    out = {"_comment": "Generated by configs/schema/extract_schema.py from Megatron-LM %s and Megatron-Bridge %s. "
                       "Per section: key -> {types, nullable, choices, default, source}." % (MCORE_REV[:8], BRIDGE_REV[:8])}
    for section, classes in SECTIONS.items():
        table = {}
        for repo, path, cls in classes:
            git_dir, rev = repos[repo]
            src = git_show(git_dir, rev, path)
            for name, ann, value, line in class_fields(src, cls):
                d = default_of(value)
                if d is None:
                    continue
                nodes, nullable = strip_optional(ann)
                types = sorted({json_type(n) for n in nodes}) or ["any"]
                entry = {"types": types, "nullable": nullable or d.get("default", 0) is None,
                         "source": f"{repo}:{path}:{line}", "annotation": ast.unparse(ann)}
                choices = literal_choices(nodes)
                if choices:
                    entry["choices"] = choices
                names = NAMED_OBJECTS.get(name)
                if names is None and "torch.dtype" in entry["annotation"]:
                    names = DTYPE_NAMES
                if names is None and "CudaGraphModule" in entry["annotation"]:
                    names = CUDA_GRAPH_MODULES
                if names is not None:
                    entry["types"] = sorted(set(t for t in types if t != "name") | {"name"})
                    entry["names"] = names
                entry.update(d)
                if name in table:
                    # Redeclared by a subclass: keep the base default, note the subclass's own.
                    prev = table[name]
                    if "default" in d and prev.get("default") != d["default"]:
                        prev.setdefault("class_defaults", {})[cls if repo == "mcore" else "bridge." + cls] = d["default"]
                    prev["nullable"] = prev["nullable"] or entry["nullable"]
                    if "choices" in prev and "choices" in entry:
                        prev["choices"] += [c for c in entry["choices"] if c not in prev["choices"]]
                    prev.setdefault("also", []).append(f"{repo}:{path}:{line}")
                else:
                    table[name] = entry
        out[section] = table
    json.dump(out, sys.stdout, indent=1, sort_keys=False)
    print()


if __name__ == "__main__":
    main()
