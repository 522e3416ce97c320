#!/usr/bin/env python3
"""Regenerate configs/bridge/defaults.json from the pinned Megatron-Bridge and Megatron-LM sources.

Everything is read with `git show` and `ast`: no Bridge or Megatron module is imported or executed.
Usage:

  extract_bridge_defaults.py BRIDGE_GIT_DIR MEGATRON_LM_GIT_DIR > configs/bridge/defaults.json

Classes are keyed by their fully qualified name, `<defining module>.<class qualname>`, which is exactly
the `_target_` string Bridge's serializer writes into run_config.yaml for an instance of that class.

Field resolution (what Python's dataclasses do, dataclasses.py `_process_class`): the fields of a
dataclass C are built by walking C.__mro__ from the far end (object) towards C and, for every base that
is a dataclass, copying ALL of that base's resolved fields (its own and inherited ones); then C's own
annotated class-body fields are applied. So a base that comes EARLIER in C's MRO wins over a later one
even for a field the later one (re)declared. Example: MLAModelProvider(MLATransformerConfig,
GPTModelProvider) has MRO [MLAModelProvider, bridge MLATransformerConfig, GPTModelProvider, bridge
TransformerConfig, mcore MLATransformerConfig, mcore TransformerConfig, ...]; bridge MLATransformerConfig's
resolved fields (which carry Megatron Core's defaults) are applied last, so every field GPTModelProvider
re-declares with a different default (deallocate_pipeline_outputs True, gradient_accumulation_fusion
factory, cross_entropy_loss_fusion True, ...) reverts to Megatron Core's default in MLAModelProvider.
Each class entry lists only the fields the class itself declares ("fields"); "shadowed" lists every
field where the naive rule "nearest declaring class in the MRO" gives a different default than the real
resolution, with both. "effective_default" = naive rule + shadowed exceptions.

Plain (unannotated) class-body assignments do not change a dataclass field's __init__ default; they are
listed under "unannotated_assignments" when a class has any for a field name.
"""
import ast
import json
import subprocess
import sys

BRIDGE_REV = "600d069b824dd5ce50367a311a5a3244478faf22"
MCORE_REV = "24bad8e677d22625d86ef2a54c9506b6e4992c93"

MCORE_TC = "megatron.core.transformer.transformer_config.TransformerConfig"
MCORE_MLA = "megatron.core.transformer.transformer_config.MLATransformerConfig"

# Top-level ConfigContainer sections (training/config.py:961-1009): key -> (class, memory relevant, why).
SECTIONS = {
    "model": (None, True, "the model provider / model config: architecture, parallelism, precision, "
                          "recompute, fusions; see providers"),
    "train": ("megatron.bridge.training.config.TrainingConfig", True,
              "micro_batch_size sets activation size; global_batch_size with DP sets the number of "
              "micro-batches (pipeline in-flight activations); empty_unused_memory_level; manual_gc"),
    "optimizer": ("megatron.bridge.training.config.OptimizerConfig", True,
                  "optimizer state dtypes and sharding (use_distributed_optimizer, precision-aware "
                  "optimizer dtypes), CPU offload"),
    "ddp": ("megatron.bridge.training.config.DistributedDataParallelConfig", True,
            "grad buffer dtype (grad_reduce_in_fp32), bucket_size, overlap, distributed optimizer, "
            "FSDP sharding, fp8_param_gather. Recipes built on recipes/common.py construct Megatron Core's "
            "class megatron.core.distributed.distributed_data_parallel_config.DistributedDataParallelConfig "
            "(recipes/common.py:17,80); the container's default_factory is Bridge's subclass"),
    "mixed_precision": ("megatron.bridge.training.mixed_precision.MixedPrecisionConfig", True,
                        "copied onto model/optimizer/ddp by MixedPrecisionConfig.setup() "
                        "(training/mixed_precision.py:113-157) in runtime_config_update (training/config.py:2010-2014)"),
    "comm_overlap": ("megatron.bridge.training.comm_overlap.CommOverlapConfig", True,
                     "CommOverlapConfig.setup() (training/comm_overlap.py:604-643) overwrites model TP/PP overlap "
                     "fields and ddp/optimizer bucket_size/overlap fields; records data_parallel_size"),
    "dist": ("megatron.bridge.training.config.DistributedInitConfig", True,
             "use_megatron_fsdp / use_torch_fsdp2 switch the data-parallel wrapper (setup.py:593-604); "
             "use_gloo_process_groups; lazy_mpu_init forces model.use_cpu_initialization (config.py:1546)"),
    "peft": ("megatron.bridge.peft.base.PEFT", True,
             "null or a PEFT dataclass (LoRA, DoRA, ...): adapters change trainable parameters, gradients and "
             "optimizer state"),
    "env_vars": (None, True, "dict applied with os.environ.setdefault before finalization (training/config.py:"
                             "1982-1987): PYTORCH_CUDA_ALLOC_CONF (expandable_segments) changes reserved memory, "
                             "CUDA_DEVICE_MAX_CONNECTIONS, NVTE_* settings"),
    "rng": ("megatron.training.config.common_config.RNGConfig", False,
            "te_rng_tracker (synced with model.use_te_rng_tracker, config.py:1413-1414) only selects the RNG "
            "tracker"),
    "rerun_state_machine": ("megatron.bridge.training.config.RerunStateMachineConfig", False, ""),
    "validation": ("megatron.training.config.training_config.ValidationConfig", False,
                   "eval_micro_batch_size (defaults to train.micro_batch_size, config.py:1436-1440) sizes "
                   "evaluation forwards only"),
    "scheduler": ("megatron.bridge.training.config.SchedulerConfig", False, ""),
    "dataset": (None, False, "seq_length must equal model.seq_length (config.py:1640-1646); the model "
                             "section is what sizes memory"),
    "logger": ("megatron.bridge.training.config.LoggerConfig", False, ""),
    "tokenizer": ("megatron.bridge.training.tokenizers.config.TokenizerConfig", False,
                  "its vocab size reaches the model only through setup() (setup.py:321-327), which writes "
                  "model.vocab_size / model.should_pad_vocab before any checkpoint is saved"),
    "checkpoint": ("megatron.bridge.training.config.CheckpointConfig", False,
                   "save/load paths and formats; async_save workers live in host memory"),
    "ft": ("megatron.bridge.training.config.FaultToleranceConfig", False, ""),
    "straggler": ("megatron.bridge.training.config.StragglerDetectionConfig", False, ""),
    "nvrx_straggler": ("megatron.bridge.training.config.NVRxStragglerDetectionConfig", False, ""),
    "profiling": ("megatron.bridge.training.config.ProfilingConfig", False,
                  "record_memory_history keeps allocator history in host memory"),
    "tensor_inspect": ("megatron.bridge.training.config.TensorInspectConfig", False, ""),
    "inprocess_restart": ("megatron.bridge.training.config.InProcessRestartConfig", False, ""),
    "optimizer_config_override_provider": (
        "megatron.bridge.training.config.OptimizerConfigOverrideProvider", False, "no dataclass fields"),
}

# Provider / model-config roots: every Bridge dataclass below one of these (transitively) is listed.
PROVIDER_ROOTS = {
    "megatron.bridge.models.transformer_config.TransformerConfig",
    "megatron.bridge.models.model_provider.ModelProviderMixin",
    "megatron.training.models.base.ModelConfig",
}
# Megatron Core / Megatron-LM classes listed in full (all fields) so inheritance can be resolved.
BASE_CLASSES = [
    "megatron.core.model_parallel_config.ModelParallelConfig",
    MCORE_TC,
    MCORE_MLA,
    "megatron.core.transformer.heterogeneous.heterogeneous_config.HeterogeneousTransformerConfig",
    "megatron.training.models.base.ModelConfig",
    "megatron.training.models.gpt.GPTModelConfig",
    "megatron.training.models.hybrid.HybridModelConfig",
]


class Repo:
    def __init__(self, name, git_dir, rev, roots):
        self.name, self.git_dir, self.rev = name, git_dir, rev
        out = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", rev, *roots],
                             check=True, capture_output=True, text=True).stdout.split()
        self.files = [p for p in out if p.endswith(".py")]

    def show(self, path):
        return subprocess.run(["git", "--git-dir", self.git_dir, "show", f"{self.rev}:{path}"], check=True,
                              capture_output=True, text=True).stdout


class Index:
    """Module name -> (repo, path, ast); lazy."""

    def __init__(self, repos):
        self.mods = {}
        for repo, strip in repos:
            for p in repo.files:
                mod = p[len(strip):] if p.startswith(strip) else p
                mod = mod[:-3].replace("/", ".")
                if mod.endswith(".__init__"):
                    mod = mod[: -len(".__init__")]
                self.mods[mod] = (repo, p)
        self.trees = {}

    def tree(self, mod):
        if mod not in self.trees:
            repo, path = self.mods[mod]
            self.trees[mod] = ast.parse(repo.show(path))
        return self.trees[mod]

    def where(self, mod):
        repo, path = self.mods[mod]
        return f"{repo.name}:{path}"

    def top_classes(self, mod):
        return {n.name: n for n in self.tree(mod).body if isinstance(n, ast.ClassDef)}

    def imports(self, mod):
        """local name -> fully qualified name (module attribute), from top-level and try: imports."""
        out = {}
        pkg = mod if self.mods[mod][1].endswith("__init__.py") else mod.rsplit(".", 1)[0]

        def visit(body):
            for n in body:
                if isinstance(n, ast.ImportFrom):
                    base = n.module or ""
                    if n.level:
                        parts = pkg.split(".")
                        base = ".".join(parts[: len(parts) - (n.level - 1)] + ([base] if base else []))
                    for a in n.names:
                        out[a.asname or a.name] = f"{base}.{a.name}"
                elif isinstance(n, ast.Import):
                    for a in n.names:
                        out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
                elif isinstance(n, (ast.Try, ast.If)):
                    visit(n.body)
                    for h in getattr(n, "handlers", []):
                        visit(h.body)
        visit(self.tree(mod).body)
        return out

    def resolve(self, qname, depth=0):
        """Follow re-exports: 'pkg.Name' -> 'defining.module.Name' (None if outside the index)."""
        if depth > 20:
            return None
        mod, _, name = qname.rpartition(".")
        if mod not in self.mods:
            # maybe qname is a module attribute path a.b.C where a.b is a module
            return None
        if name in self.top_classes(mod):
            return qname
        imp = self.imports(mod)
        if name in imp:
            return self.resolve(imp[name], depth + 1)
        return None


def base_name(node):
    if isinstance(node, ast.Subscript):
        node = node.value
    return ast.unparse(node)


class Classes:
    def __init__(self, index):
        self.ix = index
        self.info = {}

    def get(self, q):
        if q in self.info:
            return self.info[q]
        mod, _, name = q.rpartition(".")
        node = self.ix.top_classes(mod)[name]
        imp = self.ix.imports(mod)
        local = self.ix.top_classes(mod)
        bases = []
        for b in node.bases:
            text = base_name(b)
            head, _, rest = text.partition(".")
            if text in local:
                r = f"{mod}.{text}"
            elif head in imp:
                cand = imp[head] + ("." + rest if rest else "")
                r = self.ix.resolve(cand) or cand
            else:
                r = text
            bases.append(r)
        is_dc = any(ast.unparse(d).split("(")[0] in ("dataclass", "dataclasses.dataclass") for d in node.decorator_list)
        own, unannotated = {}, {}
        for st in node.body:
            if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
                ann = ast.unparse(st.annotation)
                if ann.startswith(("ClassVar", "typing.ClassVar")):
                    continue
                own[st.target.id] = (st, ann)
            elif isinstance(st, ast.Assign):
                for t in st.targets:
                    if isinstance(t, ast.Name):
                        unannotated[t.id] = st
        info = {"q": q, "node": node, "bases": bases, "dataclass": is_dc, "own": own,
                "unannotated": unannotated, "where": self.ix.where(mod)}
        self.info[q] = info
        return info

    def known(self, q):
        mod, _, name = q.rpartition(".")
        return mod in self.ix.mods and name in self.ix.top_classes(mod)

    def mro(self, q):
        if not self.known(q):
            return [q]
        seqs = [self.mro(b) for b in self.get(q)["bases"]] + [list(self.get(q)["bases"])]
        out = [q]
        seqs = [list(s) for s in seqs if s]
        while seqs:
            for s in seqs:
                head = s[0]
                if not any(head in t[1:] for t in seqs):
                    break
            else:
                raise SystemExit(f"inconsistent MRO for {q}")
            out.append(head)
            seqs = [[x for x in s if x != head] for s in seqs]
            seqs = [s for s in seqs if s]
        return out

    def is_dataclass(self, q):
        return self.known(q) and self.get(q)["dataclass"]

    def fields(self, q):
        """name -> (declaring class, AnnAssign node, annotation) as dataclasses resolves them."""
        if not self.known(q):
            return {}
        info = self.get(q)
        if not info["dataclass"]:
            for b in self.mro(q)[1:]:
                if self.is_dataclass(b):
                    return self.fields(b)
            return {}
        out = {}
        for b in reversed(self.mro(q)[1:]):
            if self.is_dataclass(b):
                out.update(self.fields(b))
        for name, (st, ann) in info["own"].items():
            out[name] = (q, st, ann)
        return out

    def naive_owner(self, q, name):
        for c in self.mro(q):
            if self.known(c) and name in self.get(c)["own"]:
                return c
        return None


TORCH_DTYPE_ALIASES = {"torch.half": "torch.float16", "torch.float": "torch.float32", "torch.double": "torch.float64",
                       "torch.long": "torch.int64", "torch.int": "torch.int32", "torch.short": "torch.int16"}


def expr(node):
    """{"expr": source}; torch dtype aliases written as str(dtype) writes them (torch.half -> torch.float16)."""
    text = ast.unparse(node)
    return {"expr": TORCH_DTYPE_ALIASES.get(text, text)}


def default_of(st):
    """(json default or {"expr": ...}, extra flags) for one AnnAssign."""
    v = st.value
    if v is None:
        return {"required": True}, {}
    if isinstance(v, ast.Call) and ast.unparse(v.func) in ("field", "dataclasses.field"):
        kw = {k.arg: k.value for k in v.keywords}
        flags = {}
        if "init" in kw and isinstance(kw["init"], ast.Constant) and kw["init"].value is False:
            flags["init"] = False
        if "default" in kw:
            d, _ = default_of(ast.AnnAssign(target=st.target, annotation=st.annotation, value=kw["default"], simple=1))
            return d, flags
        if "default_factory" in kw:
            f = kw["default_factory"]
            text = ast.unparse(f)
            flags["default_factory"] = text
            if text in ("list", "tuple"):
                return [], flags
            if text == "dict":
                return {}, flags
            if isinstance(f, ast.Lambda):
                try:
                    return ast.literal_eval(f.body), flags
                except Exception:
                    return expr(f.body), flags
            return {"expr": text + "()"}, flags
        return {"required": True}, flags
    try:
        val = ast.literal_eval(v)
        if isinstance(val, tuple):
            val = list(val)
        if isinstance(val, float) and val != val:
            return {"expr": "nan"}, {}
        if isinstance(val, float) and val in (float("inf"), float("-inf")):
            return expr(v), {}
        json.dumps(val)
        return val, {}
    except Exception:
        return expr(v), {}


def field_entry(classes, q, st, ann, declaring):
    d, flags = default_of(st)
    repo_path = classes.get(declaring)["where"]
    e = {"default": d, "source": f"{repo_path}:{st.lineno}", "annotation": ann}
    e.update(flags)
    if st.target.id.startswith("_"):
        e["serialized"] = False  # ConfigContainer.to_dict skips '_' names (megatron/training/config/container.py:138, :182)
    return e


def class_entry(classes, q, own_only, mcore_fields=None):
    info = classes.get(q)
    mro = classes.mro(q)
    entry = {"source": f"{info['where']}:{info['node'].lineno}", "dataclass": info["dataclass"],
             "bases": info["bases"], "mro": mro}
    resolved = classes.fields(q)
    if own_only:
        fields = {}
        for name, (st, ann) in info["own"].items():
            e = field_entry(classes, q, st, ann, q)
            if mcore_fields is not None:
                mf = mcore_fields(mro).get(name)
                if mf is not None:
                    e["mcore_default"] = default_of(mf[1])[0]
            fields[name] = e
        entry["fields"] = fields
        shadowed = {}
        for name, (decl, st, ann) in resolved.items():
            naive = classes.naive_owner(q, name)
            if naive is not None and naive != decl:
                nd = default_of(classes.get(naive)["own"][name][0])[0]
                ed = default_of(st)[0]
                if nd != ed:
                    shadowed[name] = {"naive_owner": naive, "naive_default": nd, "effective_owner": decl,
                                      "effective_default": ed,
                                      "effective_source": f"{classes.get(decl)['where']}:{st.lineno}"}
        if shadowed:
            entry["shadowed"] = shadowed
    else:
        entry["fields"] = {name: dict(field_entry(classes, q, st, ann, decl), declared_in=decl)
                           for name, (decl, st, ann) in resolved.items()}
    ua = {n: st for n, st in info["unannotated"].items() if n in resolved}
    if ua:
        entry["unannotated_assignments"] = {
            n: {"value": ast.unparse(st.value), "source": f"{info['where']}:{st.lineno}",
                "note": "plain class attribute: does not change the dataclass __init__ default"}
            for n, st in ua.items()}
    return entry


# ----------------------------------------------------------------------------- mixed precision presets
def presets(classes, ix):
    mod = "megatron.bridge.training.mixed_precision"
    tree = ix.tree(mod)
    mpc = classes.fields(f"{mod}.MixedPrecisionConfig")
    base = {n: default_of(st)[0] for n, (_, st, _) in mpc.items()}
    order = list(mpc)  # declaration order == dataclass __init__ assignment order
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    registered = [n for n, f in funcs.items() if any(ast.unparse(d) == "register" for d in f.decorator_list)]

    def setattr_sync(cfg, name, value):
        # MixedPrecisionConfig.__setattr__ (mixed_precision.py:77-95): fp8_param <-> fp8_param_gather and
        # fp4_param <-> fp4_param_gather are kept equal on every assignment.
        cfg[name] = value
        pairs = {"fp8_param_gather": "fp8_param", "fp8_param": "fp8_param_gather",
                 "fp4_param_gather": "fp4_param", "fp4_param": "fp4_param_gather"}
        other = pairs.get(name)
        if other in cfg and cfg[other] != value:
            cfg[other] = value

    def construct(kwargs):
        cfg = {}
        for n in order:  # generated __init__ assigns fields in order, each through __setattr__
            setattr_sync(cfg, n, kwargs.get(n, base[n]))
        return cfg

    def value(node):
        try:
            return ast.literal_eval(node)
        except Exception:
            return expr(node)

    def run(fname):
        f = funcs[fname]
        env, lines = {}, []
        for st in f.body:
            if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant):
                continue
            if isinstance(st, ast.Return):
                v = st.value
                if isinstance(v, ast.Call) and ast.unparse(v.func) == "MixedPrecisionConfig":
                    return construct({k.arg: value(k.value) for k in v.keywords}), [st.lineno]
                if isinstance(v, ast.Name):
                    return env[v.id], lines
                raise SystemExit(f"preset {fname}: unsupported return")
            if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name) and isinstance(st.value, ast.Call):
                cfg, ln = run(ast.unparse(st.value.func))
                env[st.targets[0].id] = dict(cfg)
                lines += ln + [st.lineno]
                continue
            if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Attribute):
                tgt = st.targets[0]
                setattr_sync(env[tgt.value.id], tgt.attr, value(st.value))
                lines.append(st.lineno)
                continue
            raise SystemExit(f"preset {fname}: unsupported statement at line {st.lineno}")
        raise SystemExit(f"preset {fname}: no return")

    where = ix.where(mod)
    out = {}
    for name in registered:
        cfg, _ = run(name)
        fields = {k: cfg[k] for k in order}
        # finalize() (mixed_precision.py:97-104) is a no-op on these: fp8_param/fp4_param are never None
        # after construction because of the __setattr__ sync.
        out[name] = {"source": f"{where}:{funcs[name].lineno}",
                     "registered_names": [name] + ([name.replace("_", "-")] if "_" in name else []),
                     "fields": fields,
                     "differs_from_MixedPrecisionConfig_defaults": {k: v for k, v in fields.items() if v != base[k]}}
    return out


def main():
    bridge_git, mcore_git = sys.argv[1], sys.argv[2]
    bridge = Repo("bridge", bridge_git, BRIDGE_REV, ["src/megatron/bridge"])
    mcore = Repo("mcore", mcore_git, MCORE_REV, ["megatron/core", "megatron/training"])
    ix = Index([(bridge, "src/"), (mcore, "")])
    classes = Classes(ix)

    def mcore_fields(mro):
        return classes.fields(MCORE_MLA if MCORE_MLA in mro else MCORE_TC)

    # all Bridge dataclasses under the provider roots
    providers = {}
    for mod in sorted(m for m in ix.mods if m.startswith("megatron.bridge.models")):
        try:
            tops = ix.top_classes(mod)
        except SyntaxError:
            continue
        for name in tops:
            q = f"{mod}.{name}"
            try:
                mro = classes.mro(q)
            except (KeyError, SystemExit):
                continue
            if q in PROVIDER_ROOTS or not (set(mro[1:]) & PROVIDER_ROOTS):
                continue
            if not classes.is_dataclass(q) and not classes.fields(q):
                continue
            providers[q] = class_entry(classes, q, own_only=True, mcore_fields=mcore_fields)
    for q in sorted(PROVIDER_ROOTS) + ["megatron.bridge.models.transformer_config.MLATransformerConfig",
                                        "megatron.bridge.models.transformer_config.HeterogeneousTransformerConfig"]:
        if classes.is_dataclass(q):
            providers.setdefault(q, class_entry(classes, q, own_only=True, mcore_fields=mcore_fields))
    base_classes = {q: class_entry(classes, q, own_only=False) for q in BASE_CLASSES}
    # any other dataclass in a listed provider's MRO (e.g. FalconH1Config), so every MRO can be resolved
    for q in list(providers):
        for c in providers[q]["mro"]:
            if c not in providers and c not in base_classes and classes.is_dataclass(c):
                providers[c] = class_entry(classes, c, own_only=True, mcore_fields=mcore_fields)

    sections = {}
    for key, (q, mem, why) in SECTIONS.items():
        s = {"memory_relevant": mem}
        if why:
            s["note"] = why
        if q is not None:
            s["class"] = q
            if mem and key not in ("peft",):
                s.update(class_entry(classes, q, own_only=False))
            else:
                info = classes.get(q)
                s["source"] = f"{info['where']}:{info['node'].lineno}"
        sections[key] = s
    sections["ddp"]["also_used_by_recipes"] = class_entry(
        classes, "megatron.core.distributed.distributed_data_parallel_config.DistributedDataParallelConfig",
        own_only=False)["source"]
    sections["optimizer"]["note"] += ("; recipes/utils/optimizer_utils.py builds Bridge's OptimizerConfig")

    out = {
        "_comment": ("Megatron-Bridge defaults, generated by configs/bridge/extract_bridge_defaults.py from Bridge "
                     f"{BRIDGE_REV[:8]} / Megatron-LM {MCORE_REV[:8]} (ast only, nothing imported). Class keys are "
                     "'<module>.<ClassName>', the _target_ string run_config.yaml carries. Defaults are JSON values, "
                     "{\"expr\": python source} for non-literals (torch dtypes, callables, enums), or "
                     "{\"required\": true}; default_factory fields carry \"default_factory\". providers: only fields "
                     "the class itself declares, with bases and the full MRO; 'shadowed' lists the fields where "
                     "dataclass resolution (bases earlier in the MRO re-apply all their fields, see the script's "
                     "docstring) differs from 'nearest declaring class'. base_classes and sections: all resolved "
                     "fields. Runtime changes Bridge applies on top of these defaults: configs/bridge/runtime_rules.json."),
        "providers": providers,
        "base_classes": base_classes,
        "sections": sections,
        "mixed_precision_presets": presets(classes, ix),
    }
    json.dump(out, sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
