#!/usr/bin/env python3
"""Regenerate configs/schema/megatron_args.json: every command-line argument of the pinned Megatron-LM.

Reads megatron/training/arguments.py and the files it pulls arguments from with `ast` (read by
`git show` from the bare mirror; nothing is imported or executed) and emulates the two ways the pinned
parser gets its arguments:

  1. explicit `group.add_argument(...)` calls in the `_add_*_args` functions that
     `add_megatron_arguments` (arguments.py:45) calls, in that order;
  2. `ArgumentGroupFactory(Cls, exclude=[...]).build_group(parser, title)` (argument_utils.py:45-231),
     which turns every init field of a dataclass (parents first, as dataclasses.fields() orders them)
     into an argument: `--field-name`, dest = field name, default = field default (or
     default_factory()), type from the annotation (Optional[X] -> X, list[X] -> nargs '+',
     Literal[...] -> type of the first choice + choices, Enum -> name lookup + choices, bool ->
     store_true when the default == False, else store_false named --no-X and --disable-X), and
     finally `field(metadata={"argparse_meta": {...}})` overriding any of these.

Also the `extra_args_provider` of pretrain_gpt.py / pretrain_hybrid.py (add_modelopt_args, only when
nvidia-modelopt is importable) and the kitchen arguments (only when Kitchen is importable); both are
marked with "conditional".

Usage:
  extract_megatron_args.py MEGATRON_LM_GIT_DIR > configs/schema/megatron_args.json
  extract_megatron_args.py MEGATRON_LM_GIT_DIR --write-doc docs/megatron-args-mapping.md
      (also rewrites the generated part of that document, between its GENERATED markers)
"""
import ast
import itertools
import json
import re
import subprocess
import sys

MCORE_REV = "24bad8e677d22625d86ef2a54c9506b6e4992c93"
ARGS_PY = "megatron/training/arguments.py"
ARG_UTILS_PY = "megatron/training/argument_utils.py"

BUILTIN_TYPES = {"int", "float", "str", "bool", "list", "dict", "tuple", "set", "bytes", "complex"}
# Enums outside the repository that a dataclass annotation names (argparse builds choices from them).
EXTERNAL_ENUMS = {"signal.Signals": "platform signal names (SIGTERM, SIGINT, ...): list(signal.Signals)"}


class TypeInferenceError(Exception):
    pass


class Repo:
    def __init__(self, git_dir, rev):
        self.git_dir, self.rev = git_dir, rev
        self._text, self._tree = {}, {}
        out = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", rev],
                             check=True, capture_output=True, text=True).stdout
        self.files = set(out.split("\n"))

    def text(self, path):
        if path not in self._text:
            self._text[path] = subprocess.run(["git", "--git-dir", self.git_dir, "show", f"{self.rev}:{path}"],
                                              check=True, capture_output=True, text=True).stdout
        return self._text[path]

    def tree(self, path):
        if path not in self._tree:
            self._tree[path] = ast.parse(self.text(path))
        return self._tree[path]

    def module_path(self, module):
        base = module.replace(".", "/")
        for p in (base + ".py", base + "/__init__.py"):
            if p in self.files:
                return p
        return None

    @staticmethod
    def package_of(path):
        parts = path[:-3].split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        else:
            parts = parts[:-1]
        return ".".join(parts)

    def resolve(self, path, name, depth=0):
        """(kind, path, node) for a top-level name of a module; kind in class/function/assign/external."""
        if depth > 20 or path is None:
            return ("external", None, name)
        tree = self.tree(path)
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                return ("class", path, node)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                return ("function", path, node)
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                return ("assign", path, node)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                for a in node.names:
                    if (a.asname or a.name) == name:
                        mod = self.absolute_module(path, node)
                        target = self.module_path(mod)
                        if target is None:
                            sub = self.module_path(mod + "." + a.name)
                            if sub is not None:
                                return ("module", sub, None)
                            return ("external", None, mod + "." + a.name)
                        return self.resolve(target, a.name, depth + 1)
            if isinstance(node, ast.Import):
                for a in node.names:
                    if (a.asname or a.name.split(".")[0]) == name:
                        return ("external", None, a.name)
        return ("external", None, name)

    def absolute_module(self, path, node):
        if node.level == 0:
            return node.module
        pkg = self.package_of(path).split(".")
        if node.level > 1:
            pkg = pkg[: len(pkg) - (node.level - 1)]
        return ".".join(pkg + ([node.module] if node.module else []))


def src(repo_path, line):
    return f"mcore:{repo_path}:{line}"


def literal(node):
    """(value, is_literal)."""
    try:
        return ast.literal_eval(node), True
    except Exception:
        pass
    # 2**32 and other constant arithmetic
    try:
        if isinstance(node, ast.BinOp) and all(isinstance(n, ast.Constant) for n in (node.left, node.right)):
            return eval(compile(ast.Expression(node), "<c>", "eval"), {"__builtins__": {}}), True
    except Exception:
        pass
    return ast.unparse(node), False


# ---------------------------------------------------------------------------------------------
# Annotation model: what typing.get_origin / get_args would say about a dataclass annotation.
class T:
    def __init__(self, kind, name=None, args=(), values=None, members=None, note=None):
        self.kind, self.name, self.args, self.values, self.members, self.note = kind, name, list(args), values, members, note

    def __repr__(self):
        return f"T({self.kind},{self.name},{self.args})"


NONE = T("none")


class Annotations:
    def __init__(self, repo):
        self.repo = repo

    def enum_members(self, path, cls):
        out = []
        for s in cls.body:
            if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
                n = s.targets[0].id
                if not n.startswith("_"):
                    out.append(n)
        return out

    def is_enum_class(self, path, cls, depth=0):
        for b in cls.bases:
            t = ast.unparse(b)
            if t.split(".")[-1] in ("Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"):
                return True
            if depth < 5 and isinstance(b, ast.Name):
                kind, p, node = self.repo.resolve(path, b.id)
                if kind == "class" and self.is_enum_class(p, node, depth + 1):
                    return True
        return False

    def name_type(self, path, text):
        """A bare (non-subscripted) name in an annotation."""
        if text in BUILTIN_TYPES:
            return T("prim", text)
        if text in ("None", "NoneType"):
            return NONE
        head = text.split(".")[-1]
        if text.startswith("typing.") or head in ("Any", "Callable", "List", "Dict", "Tuple", "Optional", "Union",
                                                   "ContextManager", "Sequence", "Literal"):
            if head == "Any":
                return T("prim", "Any")
            if head == "List":
                return T("generic", "list", [])
            if head == "Dict":
                return T("generic", "dict", [])
            if head == "Tuple":
                return T("generic", "tuple", [])
            return T("generic", head, [])  # bare Callable, ContextManager, ...: origin not None
        if text in EXTERNAL_ENUMS:
            return T("enum", text, members=None, note=EXTERNAL_ENUMS[text])
        first = text.split(".")[0]
        kind, p, node = self.repo.resolve(path, first)
        if "." in text and kind == "module":
            kind, p, node = self.repo.resolve(p, text.split(".")[-1])
        if kind == "class":
            if self.is_enum_class(p, node):
                return T("enum", node.name, members=self.enum_members(p, node), note=f"{p}:{node.lineno}")
            return T("prim", node.name, note=f"class at {p}:{node.lineno}")
        return T("prim", text, note="external")

    def convert(self, path, node):
        if isinstance(node, ast.Constant):
            if node.value is None:
                return NONE
            if isinstance(node.value, str):
                return T("forward_ref", node.value)
        if isinstance(node, (ast.Name, ast.Attribute)):
            return self.name_type(path, ast.unparse(node))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return self.union([self.convert(path, node.left), self.convert(path, node.right)])
        if isinstance(node, ast.Subscript):
            head = ast.unparse(node.value).split(".")[-1]
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if head == "Optional":
                return self.union([self.convert(path, node.slice), NONE])
            if head == "Union":
                return self.union([self.convert(path, e) for e in elts])
            if head == "Literal":
                return T("literal", values=[literal(e)[0] for e in elts])
            if head in ("list", "List"):
                return T("generic", "list", [self.convert(path, e) for e in elts])
            if head in ("tuple", "Tuple"):
                return T("generic", "tuple", [])
            if head in ("dict", "Dict"):
                return T("generic", "dict", [])
            return T("generic", head, [])
        return T("prim", ast.unparse(node), note="unrecognised annotation")

    @staticmethod
    def key(t):
        return (t.kind, t.name, tuple(map(Annotations.key, t.args)), repr(t.values))

    def union(self, parts):
        flat = []
        for p in parts:
            flat += p.args if p.kind == "union" else [p]
        out, seen = [], set()
        for p in flat:  # typing de-duplicates union members, keeping first occurrences
            k = self.key(p)
            if k not in seen:
                seen.add(k)
                out.append(p)
        if len(out) == 1:
            return out[0]
        return T("union", args=out)


def extract_type(t):
    """Emulates ArgumentGroupFactory._extract_type (argument_utils.py:120-157)."""
    if t.kind == "enum":
        return {"type": f"enum:{t.name}", "choices": t.members if t.members is not None else t.note}
    if t.kind in ("prim", "forward_ref"):
        if t.kind == "forward_ref":
            return {"type": f"'{t.name}' (a string annotation: argparse rejects it as not callable)"}
        return {"type": t.name}
    if t.kind == "none":
        return {"type": "NoneType"}
    if t.kind == "union":
        if t.args[1].kind == "none":
            return extract_type(t.args[0])
        raise TypeInferenceError("Unions not supported by argparse")
    if t.kind == "generic" and t.name == "list":
        if len(t.args) == 1:
            k = extract_type(t.args[0])
            k["nargs"] = "+"
            return k
        raise TypeInferenceError("Multi-type lists not supported by argparse")
    if t.kind == "literal":
        types = {type(v).__name__ for v in t.values}
        assert len(types) == 1, t.values
        return {"type": types.pop(), "choices": list(t.values)}
    raise TypeInferenceError(f"Unsupported type: {t.name}")


# ---------------------------------------------------------------------------------------------
def dest_of(options):
    """argparse's dest for optional arguments: first long option, dashes to underscores."""
    longs = [o for o in options if o.startswith("--")]
    o = (longs or options)[0]
    return o.lstrip("-").replace("-", "_")


ACTION_DEFAULTS = {"store_true": False, "store_false": True}


def is_deprecated_text(text):
    return bool(text) and re.search(r"deprecat|old .* do not use|no longer valid", text, re.I) is not None


def short(text, n=160):
    if not text:
        return None
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 3] + "..."


class Extractor:
    def __init__(self, repo):
        self.repo = repo
        self.ann = Annotations(repo)
        self.args = []
        self.problems = []

    # ---- dataclasses ------------------------------------------------------------------------
    def class_fields(self, path, cls, depth=0):
        """Ordered dataclass fields (parents first; an override keeps the parent's position)."""
        fields = {}
        for b in cls.bases:
            if isinstance(b, ast.Name):
                kind, p, node = self.repo.resolve(path, b.id)
                if kind == "class" and depth < 10:
                    for name, f in self.class_fields(p, node, depth + 1).items():
                        fields[name] = f
        body = cls.body
        for i, s in enumerate(body):
            if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name):
                ann_text = ast.unparse(s.annotation)
                if ann_text.startswith(("ClassVar", "typing.ClassVar", "InitVar", "dataclasses.InitVar")):
                    continue
                doc = None
                if i + 1 < len(body) and isinstance(body[i + 1], ast.Expr) and isinstance(body[i + 1].value, ast.Constant) \
                        and isinstance(body[i + 1].value.value, str):
                    doc = body[i + 1].value.value
                fields[s.target.id] = {"name": s.target.id, "path": path, "cls": cls.name, "node": s, "doc": doc}
        return fields

    def field_default(self, f):
        """(argparse default value, is_literal, init, metadata argparse_meta node)."""
        v = f["node"].value
        init, meta = True, None
        if v is None:
            return None, True, init, meta, "required (no default)"
        if isinstance(v, ast.Call) and ast.unparse(v.func) in ("field", "dataclasses.field"):
            kws = {k.arg: k.value for k in v.keywords}
            if "init" in kws and isinstance(kws["init"], ast.Constant) and kws["init"].value is False:
                init = False
            if "metadata" in kws and isinstance(kws["metadata"], ast.Dict):
                for k, val in zip(kws["metadata"].keys, kws["metadata"].values):
                    if isinstance(k, ast.Constant) and k.value == "argparse_meta":
                        meta = val
            if "default" in kws:
                d, lit = literal(kws["default"])
                return d, lit, init, meta, None
            if "default_factory" in kws:
                fac = kws["default_factory"]
                ftxt = ast.unparse(fac)
                if ftxt in ("list", "tuple", "set"):
                    return [], True, init, meta, None
                if ftxt == "dict":
                    return {}, True, init, meta, None
                if isinstance(fac, ast.Lambda):
                    d, lit = literal(fac.body)
                    return d, lit, init, meta, None
                return ftxt + "()", False, init, meta, None
            return None, True, init, meta, "required (no default)"
        d, lit = literal(v)
        return d, lit, init, meta, None

    def eval_meta(self, node, path):
        out = {}
        for k, v in zip(node.keys, node.values):
            key = k.value
            if key in ("type",):
                out[key] = ast.unparse(v)
            else:
                val, lit = literal(v)
                out[key] = val if lit else ast.unparse(v)
        return out

    def dataclass_args(self, cls_path, cls_node, exclude, group, call_site, conditional=None):
        fields = self.class_fields(cls_path, cls_node)
        for name, f in fields.items():
            default, lit, init, meta_node, req = self.field_default(f)
            if name in exclude or not init:
                continue
            node = f["node"]
            t = self.ann.convert(f["path"], node.annotation)
            rec = {"options": ["--" + name.replace("_", "-")], "dest": name, "action": "store", "type": None,
                   "nargs": None, "default": default, "choices": None, "const": None}
            if not lit:
                rec["default_is_expr"] = True
            if req:
                rec["default_note"] = req
            meta = self.eval_meta(meta_node, f["path"]) if meta_node is not None else None
            try:
                k = extract_type(t)
                rec.update(k)
                if rec["type"] == "bool":
                    # argument_utils.py:190-196: `attribute.default == False` -> store_true, else store_false
                    store_true = (default is False or default == 0) and lit and not isinstance(default, str)
                    rec["action"] = "store_true" if store_true else "store_false"
                    rec["type"] = None
                    if not store_true:
                        rec["options"] = ["--no-" + name.replace("_", "-"), "--disable-" + name.replace("_", "-")]
            except TypeInferenceError as e:
                if meta is None:
                    self.problems.append(f"{f['cls']}.{name} ({ast.unparse(node.annotation)}): {e} and no argparse_meta "
                                         f"(the pinned build_group would raise here)")
                rec["type_inference_failed"] = str(e)
            if meta is not None:
                m = dict(meta)
                if "arg_names" in m:
                    rec["options"] = list(m.pop("arg_names"))
                for kk, vv in m.items():
                    if kk == "help":
                        continue
                    rec[kk] = vv
                rec["argparse_meta"] = meta
            rec["group"] = group
            rec["source"] = src(f["path"], node.lineno)
            rec["added_at"] = src(ARGS_PY, call_site)
            rec["from_dataclass"] = f"{f['cls']}.{name}"
            rec["_doc"] = f["doc"]
            if conditional:
                rec["conditional"] = conditional
            self.args.append(rec)

    # ---- explicit add_argument ---------------------------------------------------------------
    def explicit_arg(self, call, path, group, conditional=None, mutex=None):
        options = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        kw = {k.arg: k.value for k in call.keywords}
        action = "store"
        if "action" in kw:
            a, lit = literal(kw["action"])
            action = a if lit else ast.unparse(kw["action"]).replace("argparse.", "")
        rec = {"options": list(options), "dest": None, "action": action, "type": None, "nargs": None,
               "default": None, "choices": None, "const": None}
        if action == "BooleanOptionalAction":
            rec["options"] = options + ["--no-" + o[2:] for o in options if o.startswith("--")]
        if "dest" in kw:
            rec["dest"] = literal(kw["dest"])[0]
        else:
            rec["dest"] = dest_of(options)
        if "type" in kw:
            rec["type"] = ast.unparse(kw["type"])
        for k in ("nargs", "choices", "const", "required", "metavar"):
            if k in kw:
                v, lit = literal(kw[k])
                rec[k] = v if lit else ast.unparse(kw[k])
                if not lit:
                    rec[k + "_is_expr"] = True
        if "default" in kw:
            v, lit = literal(kw["default"])
            rec["default"] = v
            if not lit:
                rec["default_is_expr"] = True
        else:
            rec["default"] = ACTION_DEFAULTS.get(action)
            rec["default_note"] = "argparse default for the action"
        help_node = kw.get("help")
        help_text = None
        if help_node is not None:
            if ast.unparse(help_node) == "argparse.SUPPRESS":
                rec["hidden"] = True
                help_text = None
            else:
                hv, hl = literal(help_node)
                help_text = hv if hl else ast.unparse(help_node)
        rec["group"] = group
        rec["source"] = src(path, call.lineno)
        rec["_doc"] = help_text
        if conditional:
            rec["conditional"] = conditional
        if mutex:
            rec["mutually_exclusive_group"] = mutex
        self.args.append(rec)

    # ---- walking the _add_* functions ---------------------------------------------------------
    def walk_function(self, path, fn, conditional=None):
        groups = {}          # variable -> title
        factories = {}       # variable -> (cls_path, cls_node, exclude)
        mutex = {}           # variable -> (group title, line)
        local_imports = {}
        local_values = {}    # variable -> literal value (e.g. the exclude list of _add_network_size_args)

        def visit(stmts, cond):
            for s in stmts:
                if isinstance(s, ast.ImportFrom):
                    for a in s.names:
                        local_imports[a.asname or a.name] = (self.repo.absolute_module(path, s), a.name)
                if isinstance(s, ast.If):
                    test = ast.unparse(s.test)
                    c = cond
                    if "HAVE_KITCHEN" in test:
                        c = "only when Megatron Core's Kitchen extension is importable (arguments.py _add_kitchen_quantization_arguments)"
                    elif "has_nvidia_modelopt" in test:
                        c = "only when nvidia-modelopt is importable"
                    elif "parser._actions" in test:
                        c = f"only when not already registered ({src(path, s.lineno)})"
                    visit(s.body, c)
                    visit(s.orelse, cond)
                    continue
                if isinstance(s, ast.Try):
                    visit(s.body, cond)
                    continue
                for node in ast.walk(s) if not isinstance(s, (ast.If, ast.Try)) else []:
                    pass
                handle(s, cond)

        def get_exclude(kw):
            if "exclude" not in kw:
                return []
            n = kw["exclude"]
            if isinstance(n, ast.Name):
                if n.id not in local_values:
                    raise SystemExit(f"exclude={n.id}: no literal assignment found in {fn.name}")
                return local_values[n.id]
            v, lit = literal(n)
            if not lit:
                raise SystemExit(f"exclude not a literal in {fn.name}: {ast.unparse(n)}")
            return v or []

        def resolve_class(name):
            if name in local_imports:
                mod, real = local_imports[name]
                return self.repo.resolve(self.repo.module_path(mod), real)
            return self.repo.resolve(path, name)

        def handle(s, cond):
            # assignments: group = parser.add_argument_group(...), factory = ArgumentGroupFactory(...)
            if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) \
                    and not isinstance(s.value, ast.Call):
                v, lit = literal(s.value)
                if lit:
                    local_values[s.targets[0].id] = v
                return
            if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) \
                    and isinstance(s.value, ast.Call):
                var, call = s.targets[0].id, s.value
                fname = ast.unparse(call.func)
                if fname.endswith("add_argument_group"):
                    kw = {k.arg: k.value for k in call.keywords}
                    title = literal(kw["title"])[0] if "title" in kw else (literal(call.args[0])[0] if call.args else None)
                    groups[var] = title
                    return
                if fname.endswith("add_mutually_exclusive_group"):
                    owner = fname.split(".")[0]
                    mutex[var] = (groups.get(owner), s.lineno)
                    return
                if isinstance(call.func, ast.Name) and fname not in ("ArgumentGroupFactory",) and call.args \
                        and ast.unparse(call.args[0]) == "parser":
                    # parser = helper(parser): follow it
                    kind, p, node = resolve_class(fname)
                    if kind == "function" and node is not fn:
                        self.walk_function(p, node, cond)
                    return
                if fname == "ArgumentGroupFactory":
                    kw = {k.arg: k.value for k in call.keywords}
                    exclude = get_exclude(kw)
                    if isinstance(call.args[0], ast.Name):
                        kind, p, node = resolve_class(call.args[0].id)
                        factories[var] = (p, node, exclude)
                    return
                if fname.endswith(".build_group"):
                    owner = fname.rsplit(".", 1)[0]
                    title = self.build_group_title(call)
                    groups[var] = title
                    p, node, exclude = factories[owner]
                    self.dataclass_args(p, node, set(exclude), title, call.lineno, cond)
                    return
            # bare expression statements
            if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
                call = s.value
                fname = ast.unparse(call.func)
                if fname.endswith(".add_argument"):
                    owner = fname.rsplit(".", 1)[0]
                    if owner in mutex:
                        title, line = mutex[owner]
                        self.explicit_arg(call, path, title, cond, mutex=f"{owner} ({src(path, line)})")
                    else:
                        self.explicit_arg(call, path, groups.get(owner, "(parser: no group)"), cond)
                    return
                if fname.endswith(".build_group"):
                    # ArgumentGroupFactory(Cls).build_group(parser, title) in one expression
                    inner = call.func.value
                    if isinstance(inner, ast.Call) and ast.unparse(inner.func) == "ArgumentGroupFactory":
                        kind, p, node = resolve_class(inner.args[0].id)
                        kw = {k.arg: k.value for k in inner.keywords}
                        exclude = get_exclude(kw)
                        self.dataclass_args(p, node, set(exclude), self.build_group_title(call), call.lineno, cond)
                    return
            if isinstance(s, (ast.For, ast.While, ast.With)):
                visit(s.body, cond)

        visit(fn.body, conditional)

    @staticmethod
    def build_group_title(call):
        kw = {k.arg: k.value for k in call.keywords}
        if "title" in kw:
            return literal(kw["title"])[0]
        if len(call.args) > 1:
            return literal(call.args[1])[0]
        return None

    def run(self):
        tree = self.repo.tree(ARGS_PY)
        fns = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        order = []
        for s in fns["add_megatron_arguments"].body:
            if isinstance(s, ast.Assign) and isinstance(s.value, ast.Call):
                order.append((ast.unparse(s.value.func), s.lineno))
        self.order = order
        for name, line in order:
            self.walk_function(ARGS_PY, fns[name])
        # extra_args_provider of pretrain_gpt.py / pretrain_hybrid.py
        mo_path = "megatron/post_training/arguments.py"
        mo = {n.name: n for n in self.repo.tree(mo_path).body if isinstance(n, ast.FunctionDef)}
        self.walk_function(mo_path, mo["add_modelopt_args"],
                           "only when nvidia-modelopt is importable: pretrain_gpt.py / pretrain_hybrid.py pass "
                           "add_modelopt_args as extra_args_provider")


# Other training scripts the functional tests run, and the extra_args_provider each passes.
OTHER_SCRIPTS = ["pretrain_vlm.py", "train_rl.py", "examples/mimo/train.py", "examples/bert/pretrain_bert.py",
                 "examples/t5/pretrain_t5.py", "megatron/elastification/pretrain_hybrid_flex.py"]


def script_providers(repo):
    """{script: {"provider": name, "source": ..., "arguments": [...]}} for OTHER_SCRIPTS."""
    out = {}
    for script in OTHER_SCRIPTS:
        if script not in repo.files:
            out[script] = {"missing_at_revision": True}
            continue
        tree = repo.tree(script)
        provider, line = None, None
        for n in ast.walk(tree):
            if isinstance(n, ast.Call) and ast.unparse(n.func).endswith("parse_and_validate_args"):
                for k in n.keywords:
                    if k.arg == "extra_args_provider":
                        provider, line = ast.unparse(k.value), n.lineno
                if line is None:
                    line = n.lineno
        entry = {"parse_and_validate_args": src(script, line) if line else None, "provider": provider, "arguments": []}
        if provider:
            fn, fpath = None, script
            for n in ast.walk(tree):
                if isinstance(n, ast.FunctionDef) and n.name == provider:
                    fn = n
            if fn is None:  # imported, possibly inside a function
                for n in ast.walk(tree):
                    if isinstance(n, ast.ImportFrom) and any((a.asname or a.name) == provider for a in n.names):
                        fpath = repo.module_path(repo.absolute_module(script, n))
                        fn = next(m for m in repo.tree(fpath).body if isinstance(m, ast.FunctionDef) and m.name == provider)
            sub = Extractor(repo)
            sub.walk_function(fpath, fn)
            for r in sub.args:
                r.pop("_doc", None)
            entry["arguments"] = sub.args
            entry["provider_source"] = src(fpath, fn.lineno)
        out[script] = entry
    return out


# ---------------------------------------------------------------------------------------------
# Deprecated arguments: how the pinned code handles each one. Keyed by dest; `find` is a regex whose
# first match inside validate_args / parse_args (arguments.py) gives the cited line.
DEPRECATIONS = {
    "batch_size": ("--micro-batch-size", r"assert args\.batch_size is None", "validate_args asserts it is unset (error if given)"),
    "warmup": ("--lr-warmup-fraction / --lr-warmup-iters / --lr-warmup-samples", r"assert args\.warmup is None", "validate_args asserts it is unset (error if given)"),
    "model_parallel_size": ("--tensor-model-parallel-size", r"assert args\.model_parallel_size is None", "validate_args asserts it is unset (error if given)"),
    "checkpoint_activations": ("--recompute-activations or --recompute-granularity/--recompute-method", r"if args\.checkpoint_activations:", "validate_args prints a message and calls exit() if given"),
    "enable_cuda_graph": ("--cuda-graph-impl local", r"args\.cuda_graph_impl = \"local\"", "validate_args sets cuda_graph_impl='local' (asserts --cuda-graph-impl is none)"),
    "external_cuda_graph": ("--cuda-graph-impl transformer_engine", r"args\.cuda_graph_impl = \"transformer_engine\"", "validate_args sets cuda_graph_impl='transformer_engine' (asserts --cuda-graph-impl is none)"),
    "cuda_graph_scope_deprecated": ("--cuda-graph-modules", r"args\.cuda_graph_modules = args\.cuda_graph_scope_deprecated", "hidden (help=SUPPRESS); validate_args copies it to cuda_graph_modules (error if both given)"),
    "hybrid_override_pattern": ("--hybrid-layer-pattern", r"args\.hybrid_layer_pattern = args\.hybrid_override_pattern", "validate_args copies it to hybrid_layer_pattern (error if both given)"),
    "mtp_hybrid_override_pattern": ("--hybrid-layer-pattern with '/'-separated MTP patterns", r"if args\.mtp_hybrid_override_pattern is not None:", "validate_args warns; with --mtp-num-layers > 0 and no '/' in the pattern it appends '/'+pattern x mtp_num_layers to hybrid_layer_pattern; ignored for GPT models"),
    "use_rotary_position_embeddings": ("--position-embedding-type rope", r"args\.position_embedding_type = 'rope'", "validate_args sets position_embedding_type='rope'"),
    "add_position_embedding": ("--position-embedding-type", r"raise RuntimeError\('--no-position-embedding is deprecated", "--no-position-embedding: validate_args raises RuntimeError unless position_embedding_type is rope (then it has no effect)"),
    "no_weight_decay_cond_type": ("--apply-wd-to-qk-layernorm", r"args\.apply_wd_to_qk_layernorm = True", "validate_args warns and sets apply_wd_to_qk_layernorm=True"),
    "deprecated_use_mcore_models": (None, r"dest='deprecated_use_mcore_models'", "--use-mcore-models: stored under deprecated_use_mcore_models and never read (mcore models are the default)"),
    "use_dist_ckpt_deprecated": ("--ckpt-format", r"if args\.use_dist_ckpt_deprecated", "validate_args prints that it has no effect"),
    "dist_ckpt_format_deprecated": ("--ckpt-format", r"if args\.dist_ckpt_format_deprecated", "validate_args prints that it has no effect"),
    "ckpt_fully_parallel_save_deprecated": ("--no-ckpt-fully-parallel-save (to disable)", r"if args\.ckpt_fully_parallel_save_deprecated", "validate_args prints that it has no effect"),
    "disable_msc_deprecated": ("--enable-msc (MSC is off by default)", r"if args\.disable_msc_deprecated", "parse_args warns and forces enable_msc=False"),
    "rampup_batch_size": ("--step-batch-size-schedule", None, "docstring says deprecated; still honoured"),
    # (replacement, (file, regex), how): handled outside arguments.py
    "moe_deepep_num_sms": ("--moe-flex-dispatcher-num-sms", ("megatron/core/transformer/transformer_config.py", r"moe_deepep_num_sms / moe_hybridep_num_sms are deprecated"),
                           "TransformerConfig.__post_init__ warns and copies it to moe_flex_dispatcher_num_sms when that is None"),
    "moe_hybridep_num_sms": ("--moe-flex-dispatcher-num-sms", ("megatron/core/transformer/transformer_config.py", r"moe_deepep_num_sms / moe_hybridep_num_sms are deprecated"),
                             "TransformerConfig.__post_init__ warns and copies it to moe_flex_dispatcher_num_sms when that is None"),
    "fp8_interval": (None, ("megatron/core/extensions/transformer_engine.py", r"fp8_interval is deprecated and ignored"),
                     "ignored from Transformer Engine 1.8 on (a warning when != 1)"),
    "tp_comm_split_ag": (None, ("megatron/core/model_parallel_config.py", r"tp_comm_split_ag: bool"), "docstring: deprecated from Transformer Engine 1.6; still passed to TE as ub_split_ag where TE takes it"),
    "tp_comm_split_rs": (None, ("megatron/core/model_parallel_config.py", r"tp_comm_split_rs: bool"), "docstring: deprecated from Transformer Engine 1.6; still passed to TE as ub_split_rs where TE takes it"),
    "moe_layer_recompute": ("--recompute-granularity selective --recompute-modules moe",
                            ("megatron/core/transformer/transformer_config.py", r"if self\.moe_layer_recompute:"),
                            "TransformerConfig.__post_init__ warns, sets recompute_granularity='selective' and appends 'moe' "
                            "to recompute_modules (error with full granularity); the warning text says 'moe_layer' but the "
                            "code appends 'moe'"),
    "moe_enable_deepep": ("--moe-flex-dispatcher-backend deepep",
                          ("megatron/core/transformer/transformer_config.py", r"if self\.moe_enable_deepep:"),
                          "TransformerConfig.__post_init__ sets moe_flex_dispatcher_backend='deepep' and warns (requires "
                          "--moe-token-dispatcher-type flex)"),
    "freeze_base_for_mtp": ("--qad-train-target mtp", ("megatron/post_training/model_builder.py", r"if args\.freeze_base_for_mtp:"),
                            "model_builder treats it as qad_train_target='mtp' (error if another target is given)"),
}
# Mentions 'deprecated' in its help without being deprecated itself.
NOT_DEPRECATED = {"moe_flex_dispatcher_num_sms", "cuda_graph_modules", "optimizer",
                  "ckpt_convert_update_legacy_dist_opt_format", "export_model_type"}
# Compatibility aliases that stay supported.
ALIASES = {"moe_router_padding_for_fp8": ("--moe-router-padding-for-quantization",
                                          ("megatron/core/transformer/transformer_config.py", r"if self\.moe_router_padding_for_fp8:"),
                                          "TransformerConfig.__post_init__ also enables moe_router_padding_for_quantization "
                                          "and warns that the flag 'is going to be deprecated'")}
# Argument values that are deprecated (the argument itself is not).
DEPRECATED_VALUES = {
    "optimizer": [("dist_muon", "--optimizer muon --use-distributed-optimizer", r"optimizer='dist_muon' is deprecated",
                   "validate_args sets optimizer='muon' and use_layer_wise_distributed_optimizer=True")],
    "export_model_type": [("MambaModel", "HybridModel", None, "help: accepted for backward compatibility but deprecated")],
    "cuda_graph_modules": [("full", "no value (empty list = whole layer)", r"full scope is deprecated",
                            "validate_args (_normalize_cuda_graph_modules_args) drops it"),
                           ("full_iteration / full_iteration_inference", "--cuda-graph-impl full_iteration / --inference-cuda-graph-scope",
                            r"is deprecated\. \"\n?", "validate_args migrates them via get_deprecated_cuda_graph_modules_migration")],
}


def find_line(text, pattern, start_line=1):
    if pattern is None:
        return None
    lines = text.split("\n")
    rx = re.compile(pattern)
    for i in range(start_line - 1, len(lines)):
        if rx.search(lines[i]):
            return i + 1
    return None


def mark_deprecations(ex):
    args_text = ex.repo.text(ARGS_PY)
    for r in ex.args:
        doc = r.pop("_doc", None)
        r["deprecated"] = False
        r["replacement"] = None
        d = DEPRECATIONS.get(r["dest"])
        if d is not None and not (r["dest"] == "add_position_embedding" and "--no-position-embedding" not in r["options"]):
            rep, pat, how = d
            if isinstance(pat, tuple):
                fpath, pat = pat
                line = find_line(ex.repo.text(fpath), pat)
            else:
                fpath, line = ARGS_PY, find_line(args_text, pat)
            r["deprecated"] = True
            r["replacement"] = rep
            r["deprecation"] = how + (f" ({src(fpath, line)})" if line else "")
        elif r["dest"] in ALIASES:
            rep, (fpath, pat), how = ALIASES[r["dest"]]
            r["alias_of"] = rep
            r["alias_handling"] = how + f" ({src(fpath, find_line(ex.repo.text(fpath), pat))})"
        elif r["dest"] in NOT_DEPRECATED:
            pass
        elif is_deprecated_text(doc) or "deprecated" in (r["dest"] or ""):
            r["deprecated"] = True
            r["deprecation"] = "help/docstring says: " + short(doc, 200)
        if r["dest"] in DEPRECATED_VALUES:
            r["deprecated_values"] = [
                {"value": v, "replacement": rep, "handling": how,
                 "source": src(ARGS_PY, find_line(args_text, pat)) if pat and find_line(args_text, pat) else r["source"]}
                for v, rep, pat, how in DEPRECATED_VALUES[r["dest"]]]


# ---------------------------------------------------------------------------------------------
# Config construction: which TransformerConfig / OptimizerConfig / DDP-config field each argument feeds.
def config_mapping(ex):
    repo = ex.repo
    dests = {}
    for r in ex.args:
        dests.setdefault(r["dest"], r)
    out = {}

    def overrides_in(path, fn_name, var):
        """kw-dict assignments `var['field'] = expr` inside a function, with line and enclosing condition."""
        tree = repo.tree(path)
        fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == fn_name)
        found = []

        def visit(stmts, conds):
            for s in stmts:
                if isinstance(s, ast.If):
                    visit(s.body, conds + [ast.unparse(s.test)])
                    visit(s.orelse, conds + ["not (" + ast.unparse(s.test) + ")"])
                    continue
                if isinstance(s, ast.Assign):
                    for t in s.targets:
                        if isinstance(t, ast.Subscript) and ast.unparse(t.value) == var \
                                and isinstance(t.slice, ast.Constant):
                            found.append({"field": t.slice.value, "value": ast.unparse(s.value),
                                          "condition": " and ".join(conds) or None, "source": src(path, s.lineno)})
                if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and ast.unparse(s.value.func) == var + ".pop":
                    found.append({"field": literal(s.value.args[0])[0], "value": "(removed: class default)",
                                  "condition": " and ".join(conds) or None, "source": src(path, s.lineno)})
                for attr in ("body", "orelse", "finalbody"):
                    if not isinstance(s, ast.If) and hasattr(s, attr) and isinstance(getattr(s, attr), list):
                        visit(getattr(s, attr), conds)
        visit(fn.body, [])
        return fn, found

    def fields_of(path, cls):
        kind, p, node = repo.resolve(path, cls)
        return [(n, f) for n, f in ex.class_fields(p, node).items() if ex.field_default(f)[2]]

    specs = [
        ("TransformerConfig", "megatron/core/transformer/transformer_config.py", "TransformerConfig",
         ARG_UTILS_PY, "core_transformer_config_from_args", "kw_args"),
        ("MLATransformerConfig", "megatron/core/transformer/transformer_config.py", "MLATransformerConfig",
         ARG_UTILS_PY, "core_transformer_config_from_args", "kw_args"),
        ("OptimizerConfig", "megatron/core/optimizer/optimizer_config.py", "OptimizerConfig",
         "megatron/training/training.py", "get_megatron_optimizer_config", "kwargs"),
        ("DistributedDataParallelConfig", "megatron/core/distributed/distributed_data_parallel_config.py",
         "DistributedDataParallelConfig", "megatron/training/training.py", "get_megatron_ddp_config", "kwargs"),
        ("GPTModelConfig", "megatron/training/models/gpt.py", "GPTModelConfig", ARG_UTILS_PY, "gpt_config_from_args", "kwargs"),
        ("HybridModelConfig", "megatron/training/models/hybrid.py", "HybridModelConfig", ARG_UTILS_PY,
         "hybrid_config_from_args", "kwargs"),
    ]
    set_attrs = validate_args_assignments(repo)
    for label, cpath, cls, fpath, fn_name, var in specs:
        fn, overrides = overrides_in(fpath, fn_name, var)
        ov = {}
        for o in overrides:
            ov.setdefault(o["field"], []).append(o)
        copy_line = None
        for n in ast.walk(fn):
            if isinstance(n, ast.For) and "dataclasses.fields" in ast.unparse(n.iter) or \
                    isinstance(n, ast.For) and ast.unparse(n.iter).startswith("fields("):
                copy_line = n.lineno
        rows = []
        field_list = fields_of(cpath, cls)
        if label == "MLATransformerConfig":
            base = {n for n, _ in fields_of("megatron/core/transformer/transformer_config.py", "TransformerConfig")}
            field_list = [(n, f) for n, f in field_list if f["cls"] == "MLATransformerConfig"]
        for name, f in field_list:
            row = {"field": name, "field_source": src(f["path"], f["node"].lineno)}
            if name in dests and copy_line is not None:
                a = dests[name]
                row["copied_from_arg"] = {"options": a["options"], "dest": a["dest"],
                                          "source": a["source"], "copy": src(fpath, copy_line)}
            if name in set_attrs and copy_line is not None:
                row["set_on_args_by"] = set_attrs[name]
            if name in ov:
                row["overridden"] = ov[name]
            if "copied_from_arg" not in row and "overridden" not in row and "set_on_args_by" not in row:
                row["not_set_from_args"] = True
            rows.append(row)
        # overrides of fields not declared in the class (dynamic attributes)
        names = {n for n, _ in field_list}
        if label == "MLATransformerConfig":
            names |= base
        extra = [o for o in overrides if o["field"] not in names]
        out[label] = {"built_by": src(fpath, fn.lineno), "copies_same_named_args": src(fpath, copy_line) if copy_line else None,
                      "fields": rows, "other_keys": extra}
    return out


def validate_args_assignments(repo):
    """`args.X = ...` in parse_args / validate_args and the helpers they call in arguments.py:
    attributes that exist on args without being CLI dests (or that validate_args rewrites)."""
    tree = repo.tree(ARGS_PY)
    fns = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    out = {}
    for fname in ("parse_args", "validate_args", "_normalize_cuda_graph_modules_args",
                  "_normalize_inference_cuda_graph_scope_arg"):
        fn = fns[fname]

        def visit(stmts, conds):
            for s in stmts:
                if isinstance(s, ast.If):
                    visit(s.body, conds + [ast.unparse(s.test)])
                    visit(s.orelse, conds + ["not (" + ast.unparse(s.test) + ")"])
                    continue
                if isinstance(s, (ast.Assign, ast.AugAssign)):
                    targets = s.targets if isinstance(s, ast.Assign) else [s.target]
                    flat = []
                    for t in targets:
                        flat += t.elts if isinstance(t, ast.Tuple) else [t]
                    for t in flat:
                        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "args":
                            out.setdefault(t.attr, []).append(
                                {"value": short(ast.unparse(s.value), 120), "condition": short(" and ".join(conds), 200) or None,
                                 "source": src(ARGS_PY, s.lineno), "function": fname})
                for attr in ("body", "orelse", "finalbody", "handlers"):
                    v = getattr(s, attr, None)
                    if isinstance(v, list) and not isinstance(s, ast.If):
                        visit([x for x in v if isinstance(x, ast.stmt)] +
                              [y for x in v if isinstance(x, ast.ExceptHandler) for y in x.body], conds)
        visit(fn.body, [])
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    repo = Repo(sys.argv[1], MCORE_REV)
    ex = Extractor(repo)
    ex.run()
    mark_deprecations(ex)

    # argparse sanity: option strings unique (conflict_handler='error' would raise otherwise)
    seen = {}
    for r in ex.args:
        for o in r["options"]:
            if o in seen and not (r.get("conditional") or seen[o].get("conditional")):
                ex.problems.append(f"option {o} defined twice: {seen[o]['source']} and {r['source']}")
            seen.setdefault(o, r)
    # dests shared by several arguments: argparse's namespace default is the first action's default
    by_dest = {}
    for r in ex.args:
        by_dest.setdefault(r["dest"], []).append(r)
    shared = {}
    for d, rs in by_dest.items():
        if len(rs) > 1:
            shared[d] = {"arguments": [r["options"] for r in rs], "namespace_default": rs[0]["default"],
                         "namespace_default_from": rs[0]["source"]}
            for r in rs[1:]:
                r["namespace_default"] = rs[0]["default"]

    args_text = repo.text(ARGS_PY)
    parser_line = find_line(args_text, r"argparse\.ArgumentParser\(description='Megatron-LM Arguments'")
    abbrev_line = find_line(args_text, r"allow_abbrev=False", parser_line or 1)
    parse_line = find_line(args_text, r"args = parser\.parse_args\(\)")
    known_line = find_line(args_text, r"args, _ = parser\.parse_known_args\(\)")
    out = {
        "_comment": (
            "Generated by configs/schema/extract_megatron_args.py from Megatron-LM " + MCORE_REV + " (ast only, "
            "nothing imported). Every argument the pinned parser defines: explicit add_argument calls in the "
            "_add_*_args functions of megatron/training/arguments.py (called from add_megatron_arguments, "
            "arguments.py:45) and the arguments ArgumentGroupFactory (megatron/training/argument_utils.py:45) "
            "builds from dataclass fields (from_dataclass names the field; added_at the build_group call). "
            "'source' is the add_argument call or the dataclass field. 'default' is the argparse default "
            "(a literal, or the expression text with default_is_expr). type null on a store action means a plain "
            "string (argparse's default); type 'enum:X' means argparse converts the "
            "member name with X[name]; choices are then the member names. Arguments with 'conditional' exist "
            "only when an optional package imports. deprecated/replacement/deprecation say how the pinned code "
            "handles each deprecated name. Regenerate: configs/schema/extract_megatron_args.py "
            "/work/.mirror/NVIDIA+Megatron-LM/repo > configs/schema/megatron_args.json"),
        "revision": MCORE_REV,
        "parser": {
            "allow_abbrev": False,
            "source": src(ARGS_PY, abbrev_line),
            "prefix_matching": "off: with allow_abbrev=False argparse does not accept unique prefixes of long "
                               "options, so --tensor-parallel 2 is an unrecognized argument (long options may "
                               "still be written --opt=value)",
            "unknown_arguments": "parse_args() (" + src(ARGS_PY, parse_line) + ") exits with 'error: unrecognized "
                                 "arguments: --tensor-parallel-size 2' (status 2) for an undefined option; the "
                                 "value token is reported with it. parse_known_args() is used only when "
                                 "ignore_unknown_args=True (" + src(ARGS_PY, known_line) + "), which pretrain_gpt.py "
                                 "and pretrain_hybrid.py do not pass.",
            "repeated_arguments": "the last occurrence wins (store actions overwrite; append actions accumulate)",
            "conflict_handler": "error (argparse default): an option string defined twice would raise at parser build",
            "python_version": repo.text(".python-version").strip() if ".python-version" in repo.files else None,
            "add_argument_order": [{"function": n, "source": src(ARGS_PY, l)} for n, l in ex.order],
            "extra_args_provider": {
                "pretrain_gpt.py": src("pretrain_gpt.py", find_line(repo.text("pretrain_gpt.py"), r"extra_args_provider=")),
                "pretrain_hybrid.py": src("pretrain_hybrid.py", find_line(repo.text("pretrain_hybrid.py"), r"extra_args_provider=")),
                "pretrain_mamba.py": "runs pretrain_hybrid.py (runpy) with a DeprecationWarning: " +
                                     src("pretrain_mamba.py", find_line(repo.text("pretrain_mamba.py"), r"runpy\.run_path")),
                "provider": "megatron.post_training.arguments.add_modelopt_args, only when nvidia-modelopt imports",
            },
            "args_defaults": {
                "pretrain_gpt.py": {"tokenizer_type": "GPT2BPETokenizer",
                                    "source": src("pretrain_gpt.py", find_line(repo.text("pretrain_gpt.py"), r"args_defaults="))},
                "applied_by": "validate_args sets each key whose parsed value is None (" +
                              src(ARGS_PY, find_line(args_text, r"# Set input defaults\.")) + ")",
            },
        },
        "counts": {},
        "arguments": ex.args,
        "shared_dests": shared,
        "config_mapping": config_mapping(ex),
        "validate_args_sets": validate_args_assignments(repo),
        "other_scripts": script_providers(repo),
        "problems": ex.problems,
    }
    n_opts = sum(len(r["options"]) for r in ex.args)
    out["counts"] = {"arguments": len(ex.args), "option_strings": n_opts,
                     "from_dataclasses": sum(1 for r in ex.args if "from_dataclass" in r),
                     "explicit": sum(1 for r in ex.args if "from_dataclass" not in r),
                     "conditional": sum(1 for r in ex.args if r.get("conditional")),
                     "deprecated": sum(1 for r in ex.args if r["deprecated"]),
                     "list_valued": sum(1 for r in ex.args if r["nargs"] not in (None, "?"))}
    if "--functional-tests" in sys.argv:
        i = sys.argv.index("--functional-tests")
        functional_tests(out, repo, sys.argv[i + 1], sys.argv[i + 2])
    if "--tokenizers" in sys.argv:
        i = sys.argv.index("--tokenizers")
        write_tokenizers(repo, sys.argv[i + 1], sys.argv[i + 2], sys.argv[i + 3])
    report = out.pop("_functional_args_report", None)
    if report is None and "--write-doc" in sys.argv:
        wpath = "configs/schema/functional_test_world_sizes.json"
        try:
            report = json.load(open(wpath)).get("model_args_check")
        except OSError:
            report = None
    if "--write-doc" in sys.argv:
        out["_functional_report_for_doc"] = report
        write_doc(out, sys.argv[sys.argv.index("--write-doc") + 1])
        out.pop("_functional_report_for_doc")
    json.dump(out, sys.stdout, indent=1, default=str)
    sys.stdout.write("\n")
    for p in ex.problems:
        print("problem:", p, file=sys.stderr)


# ---------------------------------------------------------------------------------------------
# Functional tests (Deliverable: functional_test_world_sizes.json): world size per CSV case, from the
# recipes at the CSV's extraction commit, and every MODEL_ARGS key checked against the pinned parser.
TESTS_REV = "d98e8a64ddf34856e74b24714e3bedb2f5a39553"


def yaml_with_lines(text):
    """(python object, {id-path tuple: line}) using yaml.compose for 1-based line numbers."""
    import yaml
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    lines = {}

    def build(n, path):
        lines[path] = n.start_mark.line + 1
        if isinstance(n, yaml.MappingNode):
            out = {}
            for k, v in n.value:
                key = loader.construct_object(k)
                lines[path + (key, "__key__")] = k.start_mark.line + 1
                out[key] = build(v, path + (key,))
            return out
        if isinstance(n, yaml.SequenceNode):
            return [build(v, path + (i,)) for i, v in enumerate(n.value)]
        return loader.construct_object(n, deep=True)
    loader = yaml.SafeLoader("")
    return build(node, ()), lines


_RECIPE_CACHE = {}


def recipe_file_rows(path, text):
    rows = []
    data, lines = yaml_with_lines(text)
    spec = data.get("spec", {})
    for pi, product in enumerate(data.get("products") or []):
        if "products" not in product:
            continue
        tc = product["test_case"][0]
        for qi, inner in enumerate(product["products"]):
            keys = [k for k in inner if k != "cadence"]
            for combo in itertools.product(*[inner[k] for k in keys]):
                flat = dict(zip(keys, combo))
                eff = {k: v for k, v in spec.items() if k not in flat}
                eff.update(flat)
                eff["test_case"] = tc

                def line_of(key):
                    if key in flat:
                        return lines.get(("products", pi, "products", qi, key, "__key__"))
                    return lines.get(("spec", key, "__key__"))
                rows.append({"recipe": path, "spec": eff,
                             "test_case_line": lines.get(("products", pi, "test_case", 0)),
                             "nodes_line": line_of("nodes"), "gpus_line": line_of("gpus")})
    return rows


def recipe_rows(trepo):
    """Flattened recipe rows (recipe_parser.flatten_products + flatten_workload semantics at TESTS_REV):
    product keys override spec keys; each inner products block is a cartesian product of its lists;
    only test_case[0] is used. Files are cached by blob id."""
    listing = subprocess.run(["git", "--git-dir", trepo.git_dir, "ls-tree", "-r", trepo.rev, "--",
                              "tests/test_utils/recipes"], check=True, capture_output=True, text=True).stdout
    rows = []
    for line in listing.split("\n"):
        if not line.strip():
            continue
        meta, path = line.split("\t", 1)
        blob = meta.split()[2]
        if not path.endswith(".yaml") or path.split("/")[-1].startswith("_"):
            continue
        if blob not in _RECIPE_CACHE:
            text = subprocess.run(["git", "--git-dir", trepo.git_dir, "cat-file", "blob", blob], check=True,
                                  capture_output=True, text=True).stdout
            try:
                _RECIPE_CACHE[blob] = recipe_file_rows(path, text)
            except Exception as e:  # older layouts that the current flattening does not read
                _RECIPE_CACHE[blob] = []
        rows += [dict(r, recipe=path) for r in _RECIPE_CACHE[blob]]
    return rows


PLATFORM_FAMILY = [("gb200", "dgx_gb200"), ("h100", "dgx_h100"), ("a100", "dgx_a100")]


def family(platform):
    p = (platform or "").replace("_", "")
    for tag, name in PLATFORM_FAMILY:
        if tag in p:
            return name
    return None


def resolve_world(rows, model, tc, envp):
    """World size for one CSV (model, test_case, env_platform) from flattened recipe rows."""
    env, _, plat = envp.partition("_")
    if env not in ("dev", "lts"):
        env, plat = None, envp
    second = plat.endswith("_2nd")
    if second:  # run_ci_test.sh writes <golden>_2nd.json for the second (resumed) run of the same row
        plat = plat[: -len("_2nd")]
    cand = [x for x in rows if x["spec"].get("model") == model and x["spec"]["test_case"] == tc]
    if not cand:
        return None
    fam = family(plat)
    fam_dir = {"dgx_gb200": "/gb200/", "dgx_h100": "/h100/", "dgx_a100": "/h100/"}.get(fam)
    steps = [
        ("exact: recipe row for this environment and platform",
         lambda x: x["spec"].get("environment") == env and x["spec"].get("platforms") == plat),
        (f"no row for platform '{plat or '(none)'}' (the golden file's name); rows of environment '{env}' on {fam}",
         lambda x: x["spec"].get("environment") == env and x["spec"].get("platforms") == fam),
        (f"no row for environment '{env}' / platform '{plat or '(none)'}'; rows of any environment on {fam}",
         lambda x: x["spec"].get("platforms") == fam),
        (f"no row on {fam}; rows of the same recipe directory ({fam_dir})",
         lambda x: fam_dir is not None and fam_dir in x["recipe"]),
        (f"no platform in the golden file name; all rows of environment '{env}'",
         lambda x: fam is None and x["spec"].get("environment") == env),
        ("no platform in the golden file name; all rows of this test case",
         lambda x: fam is None),
    ]
    for how, pred in steps:
        use = [x for x in cand if pred(x)]
        if not use:
            continue
        sizes = {(x["spec"].get("nodes"), x["spec"].get("gpus")) for x in use}
        srcs = sorted({f"{x['recipe']}:{x['test_case_line']}" for x in use})
        if len(sizes) > 1:
            worlds = {n * g for n, g in sizes}
            return {"nodes": None, "gpus_per_node": None, "world_size": worlds.pop() if len(worlds) == 1 else None,
                    "source": srcs,
                    "note": how + ": rows disagree (" + ", ".join(f"{n}x{g}" for n, g in sorted(sizes)) + ")",
                    "_recipe": use[0]["recipe"]}
        x = use[0]
        n, g = sizes.pop()
        return {"nodes": n, "gpus_per_node": g, "world_size": n * g,
                "source": f"{x['recipe']}:{x['test_case_line']} (nodes :{x['nodes_line']}, gpus :{x['gpus_line']})",
                "match": how + ("; golden file of the second (resumed) run, run_ci_test.sh:461" if second else ""), "recipe_platforms": sorted({str(y["spec"].get("platforms")) for y in use}),
                "recipe_environments": sorted({str(y["spec"].get("environment")) for y in use}),
                "_recipe": x["recipe"]}
    return None


def resolve_in_history(git_dir, keys):
    """{(model, tc, envp): (revision, result)}: for CSV cases whose test case no recipe at TESTS_REV lists,
    the newest ancestor revision whose recipes resolve them (same matching rules)."""
    revs = subprocess.run(["git", "--git-dir", git_dir, "rev-list", TESTS_REV, "--", "tests/test_utils/recipes"],
                          check=True, capture_output=True, text=True).stdout.split()
    todo, out = set(keys), {}
    for rev in revs[1:]:
        if not todo:
            break
        names = sorted({tc for _, tc, _ in todo})
        cmd = ["git", "--git-dir", git_dir, "grep", "-h", "-F"]
        for tc in names:
            cmd += ["-e", tc]
        cmd += [rev, "--", "tests/test_utils/recipes"]
        hits = subprocess.run(cmd, capture_output=True, text=True).stdout
        found = set()
        for line in hits.split("\n"):
            m = re.search(r"^\s*-\s*test_case:\s*\[([^\]]*)\]", line)
            if m:
                found |= {n.strip() for n in m.group(1).split(",")}
        if not found & set(names):
            continue
        rows = recipe_rows(Repo(git_dir, rev))
        for key in list(todo):
            if key[1] in found:
                r = resolve_world(rows, *key)
                if r is not None and r.get("world_size") is not None:
                    out[key] = (rev, r)
                    todo.discard(key)
    return out


def functional_tests(out, repo, csv_path, out_path):
    import csv
    trepo = Repo(repo.git_dir, TESTS_REV)
    rows = recipe_rows(trepo)
    cases = []
    seen = set()
    par = {}
    with open(csv_path) as f:
        for r in csv.DictReader(f):
            k = (r["model"], r["test_case"], r["env_platform"])
            if k not in seen:
                seen.add(k)
                cases.append(k)
                def num(c):
                    v = r.get(c) or ""
                    return int(float(v)) if v.strip() not in ("", "nan") else 1
                par[k] = {"tp": num("tensor-model-parallel-size"), "pp": num("pipeline-model-parallel-size"),
                          "cp": num("context-parallel-size")}
    result, not_found = {}, []
    missing = []
    for model, tc, envp in cases:
        key = f"{model}/{tc}/{envp}"
        r = resolve_world(rows, model, tc, envp)
        if r is None:
            missing.append((model, tc, envp))
            continue
        result[key] = r
        r["recipe_revision"] = TESTS_REV
        m = re.search(r"TRAINING_SCRIPT_PATH=([^\"\s]+)", trepo.text(r["_recipe"]))
        r["training_script"] = m.group(1) if m else None
    # Test cases absent from the recipes at TESTS_REV: the newest earlier revision whose recipes list them.
    older = resolve_in_history(repo.git_dir, missing)
    for model, tc, envp in missing:
        key = f"{model}/{tc}/{envp}"
        rev, r = older.get((model, tc, envp), (None, None))
        if r is None:
            not_found.append(key)
            result[key] = {"nodes": None, "gpus_per_node": None, "world_size": None, "source": None,
                           "note": f"test case in no recipe row at {TESTS_REV[:8]}, nor resolvable in any earlier revision "
                                   "of tests/test_utils/recipes (by the same matching rules)"}
            continue
        r["recipe_revision"] = rev
        r["note"] = (f"not in the recipes at {TESTS_REV[:8]}; taken from {rev[:10]}, the newest ancestor revision "
                     f"whose tests/test_utils/recipes resolve this case")
        m = re.search(r"TRAINING_SCRIPT_PATH=([^\"\s]+)", Repo(repo.git_dir, rev).text(r["_recipe"]))
        r["training_script"] = m.group(1) if m else None
        result[key] = r
    # Processes per node actually launched: _run_training.sh uses GPUS_PER_NODE (default 8); only recipes whose
    # script exports GPUS_PER_NODE pass their `gpus` through.
    rt = trepo.text("tests/functional_tests/shell_test_utils/_run_training.sh")
    default_line = find_line(rt, r"GPUS_PER_NODE=\$\{GPUS_PER_NODE:-8\}")
    nodes_line = find_line(rt, r"NUM_NODES=\$\{NUM_NODES:-\$\{SLURM_NNODES:-1\}\}")
    for key, r in result.items():
        if r.get("nodes") is None and r.get("world_size") is None:
            continue
        rev = r.get("recipe_revision", TESTS_REV)
        recipe = r["_recipe"]
        text = (trepo if rev == TESTS_REV else Repo(repo.git_dir, rev)).text(recipe)
        m = re.search(r"GPUS_PER_NODE=(\{gpus\}|\d+)", text)
        r["recipe_gpus"] = r["gpus_per_node"]
        if m and m.group(1) == "{gpus}":
            r["gpus_per_node_rule"] = f"recipe script exports GPUS_PER_NODE={{gpus}} ({recipe}:{find_line(text, r'GPUS_PER_NODE=')})"
        elif m:
            r["gpus_per_node"] = int(m.group(1))
            r["gpus_per_node_rule"] = f"recipe script sets GPUS_PER_NODE={m.group(1)} ({recipe}:{find_line(text, r'GPUS_PER_NODE=')})"
        else:
            r["gpus_per_node_rule"] = (f"recipe does not export GPUS_PER_NODE: _run_training.sh launches "
                                       f"${{GPUS_PER_NODE:-8}} processes per node (tests/functional_tests/shell_test_utils/"
                                       f"_run_training.sh:{default_line} at {TESTS_REV[:8]}); recipe gpus = {r['recipe_gpus']}")
            r["gpus_per_node"] = 8
        r["nodes_rule"] = (f"NUM_NODES=${{NUM_NODES:-${{SLURM_NNODES:-1}}}} (_run_training.sh:{nodes_line}); "
                           "the recipe's nodes is the allocation")
        if r["nodes"] is not None:
            r["world_size"] = r["nodes"] * r["gpus_per_node"]
            if r["gpus_per_node"] != r["recipe_gpus"]:
                r["warning_recipe_gpus"] = (f"recipe says gpus: {r['recipe_gpus']} but {r['gpus_per_node']} processes per "
                                            "node are launched (see gpus_per_node_rule)")
    for (model, tc, envp), pr in par.items():
        r = result[f"{model}/{tc}/{envp}"]
        ws = r.get("world_size")
        if ws:
            mp = pr["tp"] * pr["pp"] * pr["cp"]
            r["csv_tp_pp_cp"] = [pr["tp"], pr["pp"], pr["cp"]]
            r["data_parallel_size"] = ws // mp if ws % mp == 0 else None
            if ws % mp:
                r["warning"] = f"world size {ws} is not divisible by TP*PP*CP = {mp} from the CSV columns"
    for r in result.values():
        r.pop("_recipe", None)
    result = dict(sorted(result.items()))

    with open(csv_path) as f:
        header = next(csv.reader(f))
    first_arg = header.index("num-layers")
    csv_cols_bad = {}
    all_opts = {o: a for a in out["arguments"] for o in a["options"]}
    for col in header[first_arg:]:
        if "--" + col not in all_opts:
            dests = [a["options"] for a in out["arguments"] if a["dest"] == col.replace("-", "_")]
            csv_cols_bad[col] = ("no option --" + col + (f"; dest {col.replace('-', '_')} is set by {dests}" if dests else ""))
    # MODEL_ARGS of every case against the pinned parser
    options = {}
    for a in out["arguments"]:
        for o in a["options"]:
            options[o] = a
    script_opts = {}
    for script, e in out["other_scripts"].items():
        for a in e.get("arguments", []):
            for o in a["options"]:
                script_opts.setdefault(o, []).append(script)
    undefined, deprecated_used, conditional_used, false_flags, non_cli = {}, {}, {}, {}, {}
    choice_bad = {}
    flag_actions = ("store_true", "store_false", "store_const", "count")
    for model, tc in sorted({(m, t) for m, t, _ in cases}):
        cpath = f"tests/functional_tests/test_cases/{model}/{tc}/model_config.yaml"
        if cpath not in trepo.files:
            undefined.setdefault("(model_config.yaml missing)", []).append(f"{model}/{tc}")
            continue
        import yaml
        cfg = yaml.safe_load(trepo.text(cpath)) or {}
        script = next((v.get("training_script") for k, v in result.items()
                       if k.startswith(f"{model}/{tc}/") and v.get("training_script")), None)
        for section in [k for k in cfg if str(k).startswith("MODEL_ARGS")]:
            for key, val in (cfg[section] or {}).items():
                key = str(key)
                where = f"{model}/{tc}" + ("" if section == "MODEL_ARGS" else f" ({section})")
                if not key.startswith("--"):
                    non_cli.setdefault(key, []).append(where)
                    continue
                name = key.split("=", 1)[0]
                if name not in options:
                    extra = script_opts.get(name)
                    undefined.setdefault(name, []).append(where + (f" [defined by {', '.join(extra)}]" if extra else "")
                                                          + (f" [script {script}]" if script else ""))
                    continue
                a = options[name]
                if a["deprecated"]:
                    deprecated_used.setdefault(name, []).append(where)
                if a.get("conditional"):
                    conditional_used.setdefault(name, []).append(where)
                if val is False and a["action"] in flag_actions:
                    false_flags.setdefault(name, []).append(where)
                ch = a.get("choices")
                if isinstance(ch, list) and val is not True and val is not None and val != "":
                    vals = val if isinstance(val, list) else str(val).strip("[]").split() if a["nargs"] in ("+", "*") else [val]
                    bad = [v for v in vals if str(v) not in [str(c) for c in ch]]
                    if bad:
                        choice_bad.setdefault(name, []).append(f"{where}: {bad} not in {ch}")
    # Where an undefined name exists at the CSV's commit (added after the pinned revision).
    later = {}
    for name in undefined:
        field = name[2:].replace("-", "_")
        g = subprocess.run(["git", "--git-dir", repo.git_dir, "grep", "-n", "-E",
                            f"'{name}'|^    {field}: ", TESTS_REV, "--", "megatron/training", "megatron/core"],
                           capture_output=True, text=True).stdout.strip().split("\n")
        g = [x for x in g if x]
        if g:
            later[name] = "mcore:" + ":".join(g[0].split(":")[1:3])
    out["_functional_args_report"] = {"undefined": undefined, "defined_at_tests_rev": later, "deprecated_used": deprecated_used,
                                      "conditional_used": conditional_used, "false_valued_flags": false_flags,
                                      "non_cli_keys": non_cli, "n_cases": len(cases), "choice_violations": choice_bad,
                                      "csv_columns_not_options": csv_cols_bad,
                                      "n_model_configs": len({(m, t) for m, t, _ in cases})}
    world = {"_comment": (
        "World size (nodes x GPUs per node) of every distinct (model, test_case, env_platform) of "
        "/work/shared/external-validation/megatron_functional_golden_memory.csv, from the test recipes "
        f"tests/test_utils/recipes/**/*.yaml of NVIDIA/Megatron-LM at {TESTS_REV} (the CSV's extraction commit; "
        "present in the mirror). Keys are '<model>/<test_case>/<env_platform>' with env_platform exactly as the "
        "CSV column (the golden file name: environment + platform, e.g. dev_dgx_h100, lts, dev_dgx_h100_2nd). "
        "Recipe rows are flattened as tests/test_utils/python_scripts/recipe_parser.py does (product keys override "
        "spec keys). 'match' says whether the platform of the golden file has its own recipe row; golden files "
        "such as *_2nd, *dracooci*, *dgxc or a bare environment have none, and then the rows of the same "
        "environment are used (all agreeing, else nodes/gpus are null). gpus_per_node is the number of processes "
        "per node actually launched: _run_training.sh uses ${GPUS_PER_NODE:-8}, and only the recipes whose script "
        "exports GPUS_PER_NODE={gpus} (the gb200 ones) pass the recipe's gpus through; recipe_gpus keeps the "
        "recipe value (they differ only for the gpt-grpo/moe-grpo rows, gpus: 1). Cases absent from every recipe "
        "row at the CSV commit are resolved at the newest ancestor revision that has them (recipe_revision), else "
        "listed in not_found. source = recipe file:line of the test_case entry. Generated by "
        "configs/schema/extract_megatron_args.py --functional-tests."),
        "revision": TESTS_REV, "cases": result, "not_found": not_found,
        "model_args_check": dict(out["_functional_args_report"], _comment=(
            "Every MODEL_ARGS* key of the model_config.yaml (at " + TESTS_REV[:8] + ") of each CSV test case, checked "
            "against the arguments the pinned Megatron-LM " + MCORE_REV[:8] + " parser defines (megatron_args.json) "
            "and against the extra_args_provider of the case's training script (other_scripts there)."))}
    with open(out_path, "w") as f:
        json.dump(world, f, indent=1)
        f.write("\n")


# ---------------------------------------------------------------------------------------------
# Tokenizers (configs/tokenizers.json): how the pinned Megatron-LM gets padded_vocab_size, a table of
# sourced vocabulary sizes for common tokenizers, and the vocabulary of every CSV functional test case.
BT = "megatron/core/tokenizers/utils/build_tokenizer.py"
HF = "megatron/core/tokenizers/text/libraries/huggingface_tokenizer.py"
SP = "megatron/core/tokenizers/text/libraries/sentencepiece_tokenizer.py"
TT = "megatron/core/tokenizers/text/libraries/tiktoken_tokenizer.py"
NT = "megatron/core/tokenizers/text/libraries/null_tokenizer.py"
MH = "megatron/core/tokenizers/text/libraries/megatron_hf_tokenizer.py"
VU = "megatron/training/vocab_utils.py"
GM = "megatron/training/models/gpt.py"

# Every number below has the source named beside it. "len" is what Megatron's HuggingFaceTokenizer reports
# (len(AutoTokenizer), huggingface_tokenizer.py vocab_size property). config_vocab_size, where given, is the
# HF config.json embedding size, which Megatron does NOT use unless passed as --padded-vocab-size.
TOKENIZER_TABLE = {
    "meta-llama/Meta-Llama-3-8B": {
        "vocab_size": 128256, "kind": "derived",
        "source": "Meta's Llama 3 tokenizer: special tokens start at num_base_tokens (github:meta-llama/llama3 "
                  "a0940f9c llama/tokenizer.py:58-76) and <|begin_of_text|> is id 128000 (llama/test_tokenizer.py:70), "
                  "so 128000 BPE tokens + 256 special tokens (num_reserved_special_tokens = 256, tokenizer.py:45) "
                  "= 128256; the HF tokenizer of the same model carries the same ids"},
    "meta-llama/Meta-Llama-3-70B": {"same_as": "meta-llama/Meta-Llama-3-8B",
                                    "source": "Llama 3 models share one tokenizer (github:meta-llama/llama3 MODEL_CARD.md:13)"},
    "meta-llama/Llama-3.1-8B": {
        "vocab_size": 128256, "kind": "derived",
        "source": "github:meta-llama/llama-models a9c89c47 models/llama3/tokenizer.py:53 keeps "
                  "num_reserved_special_tokens = 256 over the same 128000-token tiktoken model (the Llama 3.x code path); "
                  "not checked against the HF tokenizer.json of this repository"},
    "meta-llama/Llama-3.2-1B": {"same_as": "meta-llama/Llama-3.1-8B",
                                "source": "same models/llama3 tokenizer code in github:meta-llama/llama-models (derived, see Llama-3.1-8B)"},
    "Qwen/Qwen2-7B": {
        "vocab_size": 151646, "kind": "vendor documentation",
        "source": "github:QwenLM/Qwen3 7f90d4c (Aug 2024, the Qwen2 docs) docs/source/getting_started/concepts.md:151 ('3 control tokens ... "
                  "totaling 151,646'); 151,643 BPE tokens (same file); HF tokenizer_config of Qwen/Qwen2-0.5B lists "
                  "added tokens 151643-151645 (huggingface.co/Qwen/Qwen2-0.5B/blame/633cca26/tokenizer_config.json)",
        "config_vocab_size_note": "config.json vocab_size is larger (embedding padding); Megatron ignores it"},
    "Qwen/Qwen2.5-7B": {
        "vocab_size": 151665, "kind": "vendor documentation",
        "source": "github:QwenLM/Qwen3 f4d356cb docs/source/getting_started/concepts.md:184 ('22 control tokens in the "
                  "vocabulary of Qwen2.5, making the vocabulary size totaling 151,665'); applies to all Qwen2.5 sizes "
                  "(unified vocabulary, same file :183)"},
    "Qwen/Qwen3-8B": {
        "vocab_size": 151669, "kind": "derived",
        "source": "Qwen2.5's 151,665 (concepts.md:184 above) plus Qwen3's <tool_response>, </tool_response>, <think>, "
                  "</think>; </think> is id 151668 (github:QwenLM/Qwen3 7a2f61ff README.md:173-174), so ids 0..151668 = 151669; "
                  "Megatron-Bridge 600d069b tests/unit_tests/models/qwen_vl/modelling_qwen3_vl/test_model.py:442 uses "
                  "151669 as the tokenizer-derived size (padded 152064)"},
    "moonshotai/Moonlight-16B-A3B": {
        "vocab_size": 163842, "kind": "third-party code (NVIDIA)",
        "source": "Megatron-Bridge 600d069b src/megatron/bridge/recipes/moonlight/h100/moonlight_16b.py:31 "
                  "(_MOONLIGHT_16B_FINETUNING_UNPADDED_VOCAB_SIZE = 163842, 'finetuning-token rows', :52); trust_remote_code tokenizer",
        "caveat": "Bridge names it the unpadded finetuning vocabulary; not checked against len(AutoTokenizer)"},
    "gpt2": {
        "vocab_size": 50257, "kind": "model config (third-party copy)",
        "source": "GPT-2 BPE: 50257 entries (<|endoftext|> is the last id, 50256); HF GPT-2 configs carry vocab_size 50257 "
                  "(e.g. huggingface.co/robowaifudev/megatron-gpt2-345m/blame/main/config.json); this is the "
                  "GPT2BPETokenizer vocabulary (megatron_hf_tokenizer.py MEGATRON_CONFIG_MAP 'GPT2BPETokenizer' -> 'gpt2')"},
    "google-bert/bert-large-cased": {
        "vocab_size": 28996, "kind": "model config",
        "source": "huggingface.co/google-bert/bert-large-cased/blob/fc67c89b/config.json vocab_size 28996 (WordPiece "
                  "vocab.txt; special tokens are inside it)"},
    "google-bert/bert-base-uncased": {
        "vocab_size": 30522, "kind": "model config (third-party copy)",
        "source": "bert-(base|large)-uncased config.json vocab_size 30522 (copies at huggingface.co/CesarLeblanc/"
                  "bert-large-uncased/blob/main/config.json); third-party copy, not the google-bert page"},
    "google/gemma-7b": {
        "vocab_size": 256000, "kind": "vendor documentation",
        "source": "ai.google.dev Gemma get-started page: gemma_tokenizer (GemmaTokenizer) vocab 256,000 "
                  "(https://ai.google.dev/frame/gemma/docs/get_started_...frame)",
        "caveat": "Keras/KerasNLP tokenizer; the HF tokenizer of google/gemma-7b is the same SentencePiece model"},
}
# The note of nvidia/Nemotron-H-4B-Base-8K, nvidia/Nemotron-H-8B-Base-8K, nvidia/Nemotron-H-47B-Base-8K, nvidia/Nemotron-H-56B-Base-8K.
_NEMOTRON_H_NOTE = (
    "not sourced: no copy of the tokenizer or a statement of len(tokenizer) was found; Bridge's docs give "
    "no vocabulary for Nemotron-H (docs/models/nemotron/nemotronh.md at 600d069b). Its SFT/PEFT recipes "
    "build HybridModelProvider without a vocab_size (recipes/nemotronh/h100/nemotronh.py), so setup() "
    "takes len(tokenizer) and they stay refused (recipe_vocab_unknown); searched in session 'catalogue' "
    "too: exact-string searches of public GitHub files for len(tokenizer) assertions (131072 hits only "
    "Tekken-converted and Nemotron 3 / 3.5 tokenizers), the nnterp Nemotron-H family page (its "
    "131072-token statement is about the Nemotron 3 Nano 4B reference checkpoint), third-party Nemotron-H "
    "tokenizer wrappers and model-card copies; none states this repository's len(tokenizer)"
)
# The note of nvidia/NVIDIA-Nemotron-Nano-9B-v2-Base, nvidia/NVIDIA-Nemotron-Nano-12B-v2-Base.
_NEMOTRON_NANO_V2_NOTE = (
    "not sourced: Bridge's docs give the model vocabulary 131,072 (600d069b "
    "docs/models/nemotron/nemotronh.md:96, :109), which is the embedding's size, not len(tokenizer); no "
    "copy of the tokenizer or a statement of its length was found. The SFT/PEFT recipes take "
    "len(tokenizer) (setup.py:761-765) and stay refused (recipe_vocab_unknown); searched in session "
    "'catalogue' too: exact-string searches of public GitHub files for len(tokenizer) assertions (131072 "
    "hits only Tekken-converted and Nemotron 3 / 3.5 tokenizers), the nnterp Nemotron-H family page (its "
    "131072-token statement is about the Nemotron 3 Nano 4B reference checkpoint), third-party Nemotron-H "
    "tokenizer wrappers and model-card copies; none states this repository's len(tokenizer)"
)
# The note of LGAI-EXAONE/K-EXAONE-236B-A23B, LGAI-EXAONE/K-EXAONE-2.0-750B-A37B.
_K_EXAONE_NOTE = (
    "not sourced (session 'exaone-qwen35'); its pretrain recipe takes len(tokenizer)"
)
NOT_SOURCED = {
    "meta-llama/Llama-2-7b-hf": '32000 SentencePiece pieces is widely stated but no citable tokenizer file was found here',
    "mistralai/Mistral-7B-v0.1": 'not sourced (v0.1 and v0.3 tokenizers differ: 32000 vs 32768 are both quoted)',
    "mistralai/Mixtral-8x7B-v0.1": 'not sourced',
    "mistralai/Mixtral-8x22B-v0.1": 'not sourced (base and Instruct tokenizers are said to differ)',
    "deepseek-ai/DeepSeek-V3": ('not sourced: config.json vocab_size is 129280 (embedding rows), len(tokenizer) was not found; '
     "vllm-project/vllm#51727 shows DeepSeek-V4's token count equals its config 129280 (different model)"),
    "openai/gpt-oss-20b": ("not sourced; Megatron-LM's own gpt-oss configs bypass the tokenizer size with --padded-vocab-size 201088 "
     '(24bad8e6 examples/post_training/modelopt/conf/openai/gpt-oss-20b.sh:45, '
     'tests/functional_tests/test_cases/moe/gpt_dynamic_inference_tp2_pp2_ep2_gptoss_20b_swa/model_config.yaml:71)'),
    "google/gemma-3-4b-it": 'not sourced (Bridge gemma3.py:148 same remark as Gemma 2)',
    "nvidia/Nemotron-H-4B-Base-8K": _NEMOTRON_H_NOTE,
    "nvidia/Nemotron-H-8B-Base-8K": _NEMOTRON_H_NOTE,
    "nvidia/Nemotron-H-47B-Base-8K": _NEMOTRON_H_NOTE,
    "nvidia/Nemotron-H-56B-Base-8K": _NEMOTRON_H_NOTE,
    "nvidia/NVIDIA-Nemotron-Nano-9B-v2-Base": _NEMOTRON_NANO_V2_NOTE,
    "nvidia/NVIDIA-Nemotron-Nano-12B-v2-Base": _NEMOTRON_NANO_V2_NOTE,
    "allenai/OLMoE-1B-7B-0924": ("not sourced, and not needed by Bridge's recipes: OlMoEModelProvider has vocab_size 50304 "
     '(bridge:src/megatron/bridge/models/olmoe/olmoe_provider.py:61), which setup() keeps (should_pad_vocab '
     'False) unless the tokenizer is larger (setup.py:766-780); that check is not made here'),
    "nemotron_2_256k.model": ('nemotron_2_256k.model (the 15B release tests, gpt/gpt3_15b_8t_release*, and the Mixtral/DeepSeek proxy '
     "release tests) and Mixtral's tokenizer.model: looked for in session 'nemotron-hf' (third-party run scripts "
     "and Megatron-LM's own tests/unit_tests/test_tokenizer.py, which loads nemotron_2_256k.model without "
     'stating its size); no citable piece count found'),
    "LGAI-EXAONE/EXAONE-4.0-1.2B": ('not sourced: config.json vocab_size is 102400 (embedding rows); no copy of the tokenizer and no statement '
     "of len(tokenizer) was found (searched in session 'exaone-qwen35' by exact strings of its special tokens "
     'and by the repository name); its pretrain recipe takes len(tokenizer) (use_tokenizer_vocab_size) and stays '
     'refused (recipe_vocab_unknown)'),
    "LGAI-EXAONE/K-EXAONE-236B-A23B": _K_EXAONE_NOTE,
    "LGAI-EXAONE/K-EXAONE-2.0-750B-A37B": _K_EXAONE_NOTE,
}
# Entries curated after the table above was first written (later sessions' searches; each source says what
# was found), in the order configs/tokenizers.json has them. A same_as entry that carries its own vocab_size
# is kept as written (resolved_table).
TOKENIZER_TABLE.update({'google/gemma-2-2b': {'vocab_size': 256000,
                       'kind': 'third-party test assertion',
                       'source': 'a Gemma-2-2B-base preflight check (search index file id 68679834304, the index '
                                 "names no repository): it loads the checkpoint's tokenizer with AutoTokenizer and "
                                 "requires 'config_and_tokenizer_vocab_are_256000': int(config.vocab_size) == 256000 "
                                 "and len(tokenizer) == 256000, its report noting 'Config and tokenizer both report "
                                 "256000 entries'; len(tokenizer) is what Megatron's HuggingFaceTokenizer reports "
                                 "(rule.by_tokenizer_type). Consistent with google/gemma-7b's 256,000 above, the "
                                 'tokenizer Gemma 2 keeps (Gemma 2 technical report, arXiv 2408.00118, section 2: '
                                 'the same SentencePiece tokenizer as Gemma 1 and Gemini, a 256k vocabulary; '
                                 'summarized at emergentmind.com/topics/gemma-2-tokenizer), and with '
                                 'configs/hf/google--gemma-2-2b.json vocab_size 256000',
                       'caveat': 'a ModelScope snapshot of Gemma-2-2B base whose revision the check does not record; '
                                 'whether the check passed is not in the copy'},
 'google/gemma-2-9b': {'vocab_size': 256000,
                       'kind': 'derived',
                       'same_as': 'google/gemma-2-2b',
                       'source': 'the Gemma 2 models, 2B to 27B, share one tokenizer (Gemma 2 technical report, '
                                 'arXiv 2408.00118, section 2: the Gemma 1 / Gemini SentencePiece tokenizer, 256k '
                                 'entries; emergentmind.com/topics/gemma-2-tokenizer); '
                                 'configs/hf/google--gemma-2-9b.json gives the same vocab_size 256000; number from '
                                 'google/gemma-2-2b',
                       'caveat': "not checked against google/gemma-2-9b's own tokenizer.json"},
 'google/gemma-2-27b': {'vocab_size': 256000,
                        'kind': 'derived',
                        'same_as': 'google/gemma-2-2b',
                        'source': 'the Gemma 2 models, 2B to 27B, share one tokenizer (Gemma 2 technical report, '
                                  'arXiv 2408.00118, section 2: the Gemma 1 / Gemini SentencePiece tokenizer, 256k '
                                  'entries; emergentmind.com/topics/gemma-2-tokenizer); '
                                  'configs/hf/google--gemma-2-27b.json gives the same vocab_size 256000; number from '
                                  'google/gemma-2-2b',
                        'caveat': "not checked against google/gemma-2-27b's own tokenizer.json"},
 'google/gemma-3-1b-pt': {'vocab_size': 262145,
                          'kind': 'derived',
                          'source': 'the Gemma 3 tokenizer: a 262,144-piece SentencePiece vocabulary (config '
                                    'vocab_size 262144, configs/hf/google--gemma-3-1b-pt.json) plus the added '
                                    '<image_soft_token> at id 262144 (google/gemma-3-4b-it tokenizer.json and '
                                    'added_tokens.json, quoted in ggml-org/llama.cpp#12876); measured on the 1B '
                                    "sibling google/gemma-3-1b-it: 'Config: arch=gemma3_text, dim=1152, layers=26, "
                                    "heads=4, vocab=262144 ... Tokenizer: 262145 tokens (tokenizer.json)' (a rustml "
                                    'inference report, search index file id 10185029062, the index names no '
                                    'repository), and huggingface/transformers#37011 finds <image_soft_token> in '
                                    "gemma-3-1b-it's tokenizer beyond the 262144 embedding rows; "
                                    "unslothai/unsloth-zoo#121 shows gemma-3-12b-it's len(tokenizer) 262149 after "
                                    "adding 4 tokens, so 262145. Megatron-Bridge says the same of the 1B recipes' "
                                    "google/gemma-3-1b-pt: _adjust_gemma3_vocab_size ('model vocab < tokenizer "
                                    "vocab', bridge:src/megatron/bridge/recipes/gemma/h100/gemma3.py:147-158)",
                          'caveat': 'the tokenizer of google/gemma-3-1b-pt itself was not found; the number is the '
                                    "-it sibling's (same tokenizer files are assumed across the Gemma 3 pt / it "
                                    "releases, which Bridge's remark supports but does not state). One third-party "
                                    "model table calls 262144 the 'actual size from google/gemma-3-1b-pt tokenizer' "
                                    '(search index file id 7112631492), which is the SentencePiece vocab_size, not '
                                    'len(tokenizer)'},
 'nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16': {'vocab_size': 131072,
                                                'kind': 'from the model config',
                                                'source': 'configs/models/nemotron-3-nano-30b-a3b.json vocab_size '
                                                          '(HF config.json of the same repository, via the Bridge '
                                                          "recipe's HybridModelProvider; the run_config.yaml "
                                                          "fixture's setup() gives the same 131072); len(tokenizer) "
                                                          'assumed equal to it, not checked against tokenizer.json'},
 'Qwen/Qwen3-0.6B': {'vocab_size': 151669,
                     'kind': 'assumed same as Qwen/Qwen3-8B',
                     'same_as': 'Qwen/Qwen3-8B',
                     'source': 'ASSUMED: the Qwen3 releases ship one tokenizer (the same special tokens through '
                               '</think> = 151668); size taken from Qwen/Qwen3-8B, not checked against this '
                               "repository's tokenizer.json"},
 'Qwen/Qwen3-1.7B': {'vocab_size': 151669,
                     'kind': 'assumed same as Qwen/Qwen3-8B',
                     'same_as': 'Qwen/Qwen3-8B',
                     'source': 'ASSUMED: the Qwen3 releases ship one tokenizer (the same special tokens through '
                               '</think> = 151668); size taken from Qwen/Qwen3-8B, not checked against this '
                               "repository's tokenizer.json"},
 'Qwen/Qwen3-4B': {'vocab_size': 151669,
                   'kind': 'assumed same as Qwen/Qwen3-8B',
                   'same_as': 'Qwen/Qwen3-8B',
                   'source': 'ASSUMED: the Qwen3 releases ship one tokenizer (the same special tokens through '
                             '</think> = 151668); size taken from Qwen/Qwen3-8B, not checked against this '
                             "repository's tokenizer.json"},
 'Qwen/Qwen3-14B': {'vocab_size': 151669,
                    'kind': 'assumed same as Qwen/Qwen3-8B',
                    'same_as': 'Qwen/Qwen3-8B',
                    'source': 'ASSUMED: the Qwen3 releases ship one tokenizer (the same special tokens through '
                              '</think> = 151668); size taken from Qwen/Qwen3-8B, not checked against this '
                              "repository's tokenizer.json"},
 'Qwen/Qwen3-32B': {'vocab_size': 151669,
                    'kind': 'assumed same as Qwen/Qwen3-8B',
                    'same_as': 'Qwen/Qwen3-8B',
                    'source': 'ASSUMED: the Qwen3 releases ship one tokenizer (the same special tokens through '
                              '</think> = 151668); size taken from Qwen/Qwen3-8B, not checked against this '
                              "repository's tokenizer.json"},
 'Qwen/Qwen3-30B-A3B': {'vocab_size': 151669,
                        'kind': 'assumed same as Qwen/Qwen3-8B',
                        'same_as': 'Qwen/Qwen3-8B',
                        'source': 'ASSUMED: the Qwen3 releases ship one tokenizer (the same special tokens through '
                                  '</think> = 151668); size taken from Qwen/Qwen3-8B, not checked against this '
                                  "repository's tokenizer.json"},
 'Qwen/Qwen3-235B-A22B': {'vocab_size': 151669,
                          'kind': 'assumed same as Qwen/Qwen3-8B',
                          'same_as': 'Qwen/Qwen3-8B',
                          'source': 'ASSUMED: the Qwen3 releases ship one tokenizer (the same special tokens through '
                                    '</think> = 151668); size taken from Qwen/Qwen3-8B, not checked against this '
                                    "repository's tokenizer.json"},
 'Qwen/Qwen3-Next-80B-A3B-Instruct': {'vocab_size': 151669,
                                      'kind': 'assumed same as Qwen/Qwen3-8B',
                                      'same_as': 'Qwen/Qwen3-8B',
                                      'source': 'ASSUMED: the Qwen3 releases ship one tokenizer (the same special '
                                                'tokens through </think> = 151668); size taken from Qwen/Qwen3-8B, '
                                                "not checked against this repository's tokenizer.json"},
 'nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-BF16': {'vocab_size': 131072,
                                                       'kind': 'third-party test assertion',
                                                       'source': 'RavindraTarunokusumo/BPF-FT-Project@db22f27254fade0771e7770a9efe2330d87ba50e '
                                                                 'tests/test_model_profiles.py '
                                                                 '(test_nemotron_tokenizer_and_renderer: assert '
                                                                 'len(tokenizer) == 131072) on '
                                                                 "training/model_profiles.py's NEMOTRON_PROFILE "
                                                                 '(AutoTokenizer.from_pretrained("nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-BF16")); '
                                                                 "len(tokenizer) is what Megatron's "
                                                                 'HuggingFaceTokenizer reports '
                                                                 '(rule.by_tokenizer_type)',
                                                       'caveat': "loaded at the repository's default revision, not "
                                                                 "the recipes' pinned b3caaabe "
                                                                 '(bridge:src/megatron/bridge/recipes/nemotronh/h100/nemotron_3_nano.py:37); '
                                                                 'whether that test ran green is not recorded in the '
                                                                 'copy. The same ids as the Nemotron 3 Nano 30B '
                                                                 'config (vocab_size 131072, '
                                                                 'configs/hf/nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json)'},
 'nvidia/NVIDIA-Nemotron-3-Nano-4B-BF16': {'vocab_size': 131072,
                                           'kind': 'third-party documentation',
                                           'source': 'an nnterp family page for NemotronHForCausalLM whose reference '
                                                     "checkpoint is nvidia/NVIDIA-Nemotron-3-Nano-4B-BF16 ('The "
                                                     "vocabulary is a 131072-token byte-level BPE'; search index "
                                                     'file id 71120947898, the index names no repository; '
                                                     'ndif-team/nnterp keeps the module as '
                                                     "nnterp/families/nemotron_h.py). Consistent with Bridge's own "
                                                     'recipe, which gives this model vocab_size 131072 with '
                                                     'should_pad_vocab False '
                                                     '(bridge:src/megatron/bridge/recipes/nemotronh/h100/nemotron_3_nano_4b.py:51-52), '
                                                     'a value setup() accepts only when len(tokenizer) is not larger '
                                                     '(bridge:src/megatron/bridge/training/setup.py:766-771), and '
                                                     "Bridge's verification card lists that SFT as verified on H100 "
                                                     '(examples/model_verification_cards/nemotron-3-nano-4b/card.yaml:19-21)',
                                           'caveat': 'the page states the vocabulary, not len(AutoTokenizer) itself'},
 'Qwen/Qwen3.5-9B-Base': {'vocab_size': 248077,
                          'kind': 'third-party statement (Qwen3.5 / 3.6 family tokenizer)',
                          'source': 'third-party statements of len(tokenizer) for the Qwen3.5 / Qwen3.6 tokenizer: a '
                                    "Qwen3.6 text loader's notes (search index file id 59280268263: 248,044 base "
                                    'ids, the 26 tokenizer.json added tokens 248044-248069, and seven audio / TTS '
                                    'tokens that tokenizer_config.json adds under transformers from_pretrained, '
                                    "'making len(tokenizer) == 248077'), a run log (file id 61364761037: "
                                    "'<|audio_start|> is 248070, and len(tokenizer) == 248077') and a test (file id "
                                    "69070837594: 'len(tokenizer) == 248077 both sides, while the padded LM-head has "
                                    "248320 rows')",
                          'caveat': "the statements name the Qwen3.5 / 3.6 tokenizer, not this Base repository's "
                                    'files; ASSUMED the same (the Qwen3.5 releases share one vocabulary: config.json '
                                    'vocab_size 248320 and the same special-token ids in every copy found)'},
 'Qwen/Qwen3.5-35B-A3B-Base': {'vocab_size': 248077,
                               'kind': 'third-party statement (Qwen3.5 / 3.6 family tokenizer)',
                               'source': 'third-party statements of len(tokenizer) for the Qwen3.5 / Qwen3.6 '
                                         "tokenizer: a Qwen3.6 text loader's notes (search index file id "
                                         '59280268263: 248,044 base ids, the 26 tokenizer.json added tokens '
                                         '248044-248069, and seven audio / TTS tokens that tokenizer_config.json '
                                         "adds under transformers from_pretrained, 'making len(tokenizer) == "
                                         "248077'), a run log (file id 61364761037: '<|audio_start|> is 248070, and "
                                         "len(tokenizer) == 248077') and a test (file id 69070837594: "
                                         "'len(tokenizer) == 248077 both sides, while the padded LM-head has 248320 "
                                         "rows')",
                               'caveat': 'as Qwen/Qwen3.5-9B-Base: ASSUMED the same tokenizer'},
 'zai-org/GLM-5.2': {'vocab_size': 154880,
                     'kind': 'bound, exact after padding (not the exact length)',
                     'source': "len(tokenizer) itself was not found. It lies in [154830, 154880]: GLM-5.2's "
                               '<|endoftext|>, <|user|>, <|assistant|>, <|observation|> are ids 154820, 154827, '
                               '154828, 154829 (a third-party GLM-5.2 generator, search index file id 69237656402; '
                               'the same eos / pad ids in the config.json, configs/hf/zai-org--GLM-5.2.json), and '
                               "every id indexes the model's 154880 embedding rows (config.json vocab_size). setup() "
                               'pads len(tokenizer) to a multiple of make_vocab_size_divisible_by x TP = 1280 x TP '
                               "(GLM5Bridge's 1280, glm5_bridge.py:110; "
                               'bridge:src/megatron/bridge/training/setup.py:761-765): 153600 and 154880 are '
                               'consecutive multiples of 1280, so every length in the interval pads to exactly what '
                               '154880 pads to, at any TP. The pretraining recipes (use_tokenizer_vocab_size, '
                               'recipes/common.py:114) therefore get the embedding Megatron builds; the SFT / PEFT '
                               "recipes keep the model's 154880 (the recipe grows nothing)."}})


def resolved_table():
    out = {}
    for name, e in TOKENIZER_TABLE.items():
        e = dict(e)
        if "same_as" in e and "vocab_size" not in e:
            base = TOKENIZER_TABLE[e["same_as"]]
            e = {"vocab_size": base["vocab_size"], "kind": base["kind"], "same_as": e["same_as"],
                 "source": e["source"] + "; number from " + e["same_as"]}
        out[name] = e
    return out


def functional_test_tokenizers(repo, csv_path, world):
    """Per CSV test case: the tokenizer arguments and the vocabulary Megatron pads (where determinable)."""
    import csv
    import yaml
    trepo = Repo(repo.git_dir, TESTS_REV)
    tp_of = {}
    with open(csv_path) as f:
        for r in csv.DictReader(f):
            v = r.get("tensor-model-parallel-size") or ""
            tp_of[f"{r['model']}/{r['test_case']}"] = int(float(v)) if v.strip() else 1
    scripts = {}
    for k, v in world["cases"].items():
        scripts.setdefault("/".join(k.split("/")[:2]), v.get("training_script"))
    defaults = {"pretrain_gpt.py": "GPT2BPETokenizer", "pretrain_hybrid.py": "GPT2BPETokenizer",
                "megatron/elastification/pretrain_hybrid_flex.py": "GPT2BPETokenizer",
                "examples/bert/pretrain_bert.py": "BertWordPieceLowerCase",
                "examples/t5/pretrain_t5.py": "BertWordPieceLowerCase", "pretrain_vlm.py": "GPT2BPETokenizer"}
    out = {}
    for mt in sorted(tp_of):
        cpath = f"tests/functional_tests/test_cases/{mt}/model_config.yaml"
        if cpath not in trepo.files:
            out[mt] = {"vocab_size": None, "note": "model_config.yaml missing"}
            continue
        ma = (yaml.safe_load(trepo.text(cpath)) or {}).get("MODEL_ARGS", {}) or {}
        script = (scripts.get(mt) or "").lstrip("./")
        inferred = False
        if not script:  # no recipe row: the script the model directory's recipes use
            script = {"gpt": "pretrain_gpt.py", "moe": "pretrain_gpt.py", "mixtral": "pretrain_gpt.py",
                      "bert": "examples/bert/pretrain_bert.py", "t5": "examples/t5/pretrain_t5.py"}.get(mt.split("/")[0], "")
            inferred = bool(script)
        ttype = ma.get("--tokenizer-type") or defaults.get(script)
        e = {"tokenizer_type": ttype, "tokenizer_type_from": "MODEL_ARGS" if ma.get("--tokenizer-type") else
             f"args_defaults of {script or '(unknown script)'}", "training_script": script or None}
        if inferred:
            e["training_script_inferred"] = "no recipe row for this case; script of its model directory's recipes"
        for k in ("--tokenizer-model", "--vocab-file", "--vocab-size", "--padded-vocab-size",
                  "--make-vocab-size-divisible-by", "--tiktoken-pattern", "--tokenizer-special-tokens"):
            if k in ma:
                e[k.lstrip("-")] = ma[k]
        vf = str(ma.get("--vocab-file") or "")
        unp, why = None, None
        if ma.get("--padded-vocab-size"):
            e["padded_vocab_size"] = ma["--padded-vocab-size"]
            why = "--padded-vocab-size given: used as is (should_pad_vocab False, argument_utils.py gpt_config_from_args)"
        elif ttype == "NullTokenizer":
            unp, why = ma.get("--vocab-size"), f"NullTokenizer: --vocab-size as is ({NT}:18)"
        elif ttype == "TikTokenizer":
            unp = ma.get("--vocab-size") or 131072
            why = (f"TikTokenizer: --vocab-size if given else DEFAULT_TIKTOKEN_MAX_VOCAB = 131072 ({TT}:24, :86, :127; "
                   f"{BT}:63-64)")
        elif ttype == "GPT2BPETokenizer" and vf.endswith("bpe/vocab.json"):
            unp = 50257
            why = ("GPT-2 BPE vocab.json: tools/common_pile_dataset/create_common_pile_ci_dataset.py (d98e8a64) :173 copies "
                   "it from the_pile/shard00/bpe or :207 downloads openai-community/gpt2 vocab.json; 50257 (see tokenizers.gpt2)")
        elif ttype == "BertWordPieceLowerCase" and vf.endswith("vocab.txt") and "cased" not in vf:
            unp = 30522
            why = ("bert-base-uncased vocab.txt (create_common_pile_ci_dataset.py:215 at d98e8a64): 30522 "
                   "(see tokenizers.google-bert/bert-base-uncased)")
        elif ttype == "BertWordPieceCase" and vf.endswith("bert-large-cased-vocab.txt"):
            unp = 28996 + 100
            why = (f"bert-large-cased vocab.txt 28996 + 100 <extra_id_i> tokens that BertWordPieceCase adds "
                   f"({BT}:41-44; added because not in the vocab, {HF}:141-157)")
        elif ttype == "HuggingFaceTokenizer" and "qwen3-8b" in str(ma.get("--tokenizer-model", "")):
            unp = 151669
            why = ("a Qwen3-8B tokenizer directory (by its path): 151669 (tokenizers.Qwen/Qwen3-8B, derived); "
                   f"--vocab-size is not read for HuggingFaceTokenizer ({BT}:67-76)")
        else:
            why = "tokenizer file not identifiable or its size not sourced"
        if unp is not None:
            div = int(ma.get("--make-vocab-size-divisible-by") or 128)
            tp = tp_of[mt]
            m = div * tp
            e.update({"unpadded_vocab_size": unp, "make_vocab_size_divisible_by": div, "tensor_model_parallel_size": tp,
                      "padded_vocab_size": -(-unp // m) * m})
        e["rule"] = why
        out[mt] = e
    return out


PVS_NONE = 'if getattr(args, "padded_vocab_size", None) is None'


def write_tokenizers(repo, csv_path, world_path, out_path):
    world = json.load(open(world_path))
    bt = repo.text(BT)
    doc = {
        "_comment": (
            "Vocabulary sizes as Megatron-LM " + MCORE_REV[:8] + " computes them. rule: how padded_vocab_size is derived "
            "(cite repo:path:line at the pinned revision). tokenizers: unpadded vocabulary sizes for tokenizer names, each "
            "with its source and the kind of source (vendor documentation, derived, model config, third-party); "
            "not_sourced: names looked for without a citable number (no value given on purpose). functional_tests: "
            "every test case of /work/shared/external-validation/megatron_functional_golden_memory.csv with its "
            "tokenizer arguments (model_config.yaml at " + TESTS_REV[:8] + ") and, where determinable, the unpadded and "
            "padded vocabulary at the case's TP. Generated by configs/schema/extract_megatron_args.py --tokenizers."),
        "revision": MCORE_REV,
        "rule": {
            "padded_vocab_size": "ceil(V / (make_vocab_size_divisible_by * tensor_model_parallel_size)) * "
                                 "(make_vocab_size_divisible_by * tensor_model_parallel_size)",
            "padding_source": f"mcore:{BT}:{find_line(bt, 'def vocab_size_with_padding')}-"
                              f"{find_line(bt, 'return after')} (same formula: mcore:{VU}:58-59)",
            "V": "tokenizer.vocab_size of the built tokenizer (" + f"mcore:{BT}:{find_line(bt, 'args.padded_vocab_size = vocab_size_with_padding')}"
                 + "), set only when --padded-vocab-size was not given and pad_vocab_size is True (TokenizerConfig "
                 "default; --no-pad-vocab-size turns it off): " + f"mcore:{BT}:{find_line(bt, re.escape(PVS_NONE))}, "
                 f":{find_line(bt, 'if args.pad_vocab_size:')}",
            "defaults": {"make_vocab_size_divisible_by": "128 (--make-vocab-size-divisible-by, arguments.py)",
                         "tokenizer_type": "GPT2BPETokenizer for pretrain_gpt.py / pretrain_hybrid.py (args_defaults); "
                                           "BertWordPieceLowerCase for examples/bert and examples/t5"},
            "when_padded_vocab_size_given": "used as the model vocabulary unchanged (should_pad_vocab False): "
                                            "mcore:megatron/training/argument_utils.py:473-475",
            "when_no_pad_vocab_size": "args.padded_vocab_size stays None, so the model takes --vocab-size (required, "
                                      "assert at argument_utils.py:477) and pads it in the builder: "
                                      f"mcore:{GM}:289-294 with mcore:{VU}:58-59",
            "by_tokenizer_type": {
                "HuggingFaceTokenizer": f"V = len(AutoTokenizer.from_pretrained(--tokenizer-model)) (mcore:{HF}:307-309), i.e. "
                                        "base vocabulary + added tokens, after add_special_tokens of --tokenizer-special-tokens "
                                        f"not already in the vocab ({HF}:141-181). NOT config.json vocab_size and NOT "
                                        f"tokenizer.vocab_size of transformers. --vocab-size is not read ({BT}:67-76).",
                "GPT2BPETokenizer": f"HF 'gpt2' tokenizer from --vocab-file/--merge-file (mcore:{MH}:42-46, :97-101), "
                                    f"V = len(tokenizer) as above; BertWordPieceLowerCase likewise with bert-large-uncased",
                "BertWordPieceCase": f"as BertWordPieceLowerCase with 100 <extra_id_i> additional special tokens "
                                     f"(mcore:{BT}:41-44), which grow V by 100 when absent from the vocab file",
                "SentencePieceTokenizer / GPTSentencePieceTokenizer / Llama2Tokenizer":
                    f"V = sentencepiece get_piece_size() (mcore:{SP}:65-66) + each --tokenizer-special-tokens entry not "
                    f"already a piece ({SP}:282-290)",
                "TikTokenizer": f"V = --vocab-size if given, else 131072 (DEFAULT_TIKTOKEN_MAX_VOCAB, mcore:{TT}:24, :86, "
                                f":127; {BT}:63-64); num_special_tokens --tiktoken-num-special-tokens (default 1000)",
                "NullTokenizer": f"V = --vocab-size exactly (mcore:{NT}:18; eod = V-1 at :19); without --vocab-size "
                                 "the tokenizer cannot be built",
            },
        },
        "tokenizers": resolved_table(),
        "not_sourced": NOT_SOURCED,
        "functional_tests": functional_test_tokenizers(repo, csv_path, world),
    }
    with open(out_path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def md_escape(s):
    return str(s).replace("|", "\\|").replace("\n", " ")


def write_doc(out, path):
    lines = ["<!-- BEGIN GENERATED by configs/schema/extract_megatron_args.py --write-doc; do not edit by hand -->", ""]
    lines.append("### Generated: deprecated arguments and how the pinned code handles them")
    lines.append("")
    lines.append("| options | dest | replacement | handling (source) | defined at |")
    lines.append("|---|---|---|---|---|")
    for r in out["arguments"]:
        if r["deprecated"]:
            lines.append(f"| {md_escape(' '.join(r['options']))} | {r['dest']} | {md_escape(r['replacement'] or '-')} | "
                         f"{md_escape(r.get('deprecation'))} | {r['source']} |")
    for r in out["arguments"]:
        for v in r.get("deprecated_values", []):
            lines.append(f"| {md_escape(' '.join(r['options']))} {md_escape(v['value'])} (a value) | {r['dest']} | "
                         f"{md_escape(v['replacement'])} | {md_escape(v['handling'])} ({v['source']}) | {r['source']} |")
        if r.get("alias_of"):
            lines.append(f"| {md_escape(' '.join(r['options']))} (alias, still supported) | {r['dest']} | "
                         f"{md_escape(r['alias_of'])} | {md_escape(r['alias_handling'])} | {r['source']} |")
    lines.append("")
    lines.append("### Generated: list-valued arguments (nargs) and how their values arrive")
    lines.append("")
    lines.append("| options | dest | nargs | type | default | arrives as | source |")
    lines.append("|---|---|---|---|---|---|---|")
    for r in out["arguments"]:
        if r["nargs"] is None:
            continue
        n = r["nargs"]
        t = r["type"] or "str"
        if n == "+":
            how = f"list of {t}, one or more tokens (`{r['options'][0]} a b` -> [a, b])"
        elif n == "*":
            how = f"list of {t}, zero or more tokens (a bare `{r['options'][0]}` -> [])"
        elif n == "?":
            how = "one optional token (bare flag -> const)"
        else:
            how = f"list of exactly {n} {t}"
        if r.get("default") is not None and not isinstance(r.get("default"), list) and n in ("+", "*"):
            how += f"; when absent the default {json.dumps(r['default'])} is NOT a list"
        lines.append(f"| {md_escape(' '.join(r['options']))} | {r['dest']} | {n} | {md_escape(t)} | "
                     f"{md_escape(json.dumps(r['default'], default=str))} | {md_escape(how)} | {r['source']} |")
    lines.append("")
    lines.append("### Generated: arguments whose dest differs from the option name")
    lines.append("")
    lines.append("| options | dest | action | source |")
    lines.append("|---|---|---|---|")
    for r in out["arguments"]:
        natural = [o.lstrip("-").replace("-", "_") for o in r["options"]]
        if r["dest"] not in natural:
            lines.append(f"| {md_escape(' '.join(r['options']))} | {r['dest']} | {r['action']} | {r['source']} |")
    lines.append("")
    for label, m in out["config_mapping"].items():
        lines.append(f"### Generated: {label} fields and the arguments that set them")
        lines.append("")
        if m["copies_same_named_args"]:
            lines.append(f"Built by {m['built_by']}; every field with a same-named attribute on the validated args is "
                         f"copied at {m['copies_same_named_args']}. Listed: fields the builder sets otherwise, fields "
                         "that exist on args only because parse_args/validate_args assign them, and fields nothing sets.")
        else:
            lines.append(f"Built by {m['built_by']}, which copies nothing generically: only the fields below are set "
                         "from args, every other field keeps its class default.")
        lines.append("")
        lines.append("| field | set from | condition | source |")
        lines.append("|---|---|---|---|")
        unset = []
        for row in m["fields"]:
            if "overridden" in row:
                for o in row["overridden"]:
                    lines.append(f"| {row['field']} | `{md_escape(o['value'])}` | {md_escape(o['condition'] or 'always')} | {o['source']} |")
            elif row.get("not_set_from_args"):
                unset.append(row["field"])
            if "set_on_args_by" in row and "copied_from_arg" not in row and "overridden" not in row:
                for o in row["set_on_args_by"]:
                    lines.append(f"| {row['field']} | `args.{row['field']} = {md_escape(o['value'])}` (no such option; "
                                 f"{o['function']}) | {md_escape(o['condition'] or 'always')} | {o['source']} |")
        for o in m["other_keys"]:
            lines.append(f"| {o['field']} (not a field of the class) | `{md_escape(o['value'])}` | {md_escape(o['condition'] or 'always')} | {o['source']} |")
        lines.append("")
        if unset:
            lines.append(f"Fields no argument sets (class default used): {', '.join(unset)}.")
            lines.append("")
    lines.append("### Generated: every args attribute that parse_args / validate_args assign")
    lines.append("")
    lines.append("These run after parsing and before the configs are built, so the value the config copies is the "
                 "rewritten one. Conditions are the enclosing if-tests (abridged).")
    lines.append("")
    lines.append("| attribute | value | condition | source |")
    lines.append("|---|---|---|---|")
    for attr, sets in sorted(out["validate_args_sets"].items()):
        for o in sets:
            lines.append(f"| {attr} | `{md_escape(o['value'])}` | {md_escape(o['condition'] or 'always')} | {o['source']} |")
    lines.append("")
    fa = out.get("_functional_report_for_doc")
    if fa:
        lines.append("## Functional-test arguments not defined at 24bad8e6")
        lines.append("")
        lines.append(f"Every MODEL_ARGS* key of the {fa['n_model_configs']} model_config.yaml files (at "
                     f"{TESTS_REV[:8]}) behind the {fa['n_cases']} CSV cases, checked against the pinned parser of "
                     "pretrain_gpt.py (this table, modelopt arguments included) and against the extra_args_provider "
                     "of the case's own training script.")
        lines.append("")
        lines.append("| argument | test cases | status |")
        lines.append("|---|---|---|")
        for name, where in sorted(fa["undefined"].items()):
            own = all("[defined by" in w and (w.split("[script ")[-1].rstrip("]").lstrip("./") in w.split("[defined by ")[1])
                      for w in where)
            status = ("defined only by the case's own training script (its extra_args_provider), not by the "
                      "pretrain_gpt.py parser" if own else "NOT DEFINED by the pinned parser nor the case's script: "
                      "argparse would exit with 'unrecognized arguments'")
            if not own and name in fa.get("defined_at_tests_rev", {}):
                status += f"; added after 24bad8e6 (exists at {TESTS_REV[:8]}: {fa['defined_at_tests_rev'][name]})"
            cases_txt = "; ".join(w.split(" [")[0] for w in where)
            lines.append(f"| {name} | {md_escape(cases_txt)} | {status} |")
        lines.append("")
        if fa.get("csv_columns_not_options"):
            lines.append("CSV columns that are not option strings: " + "; ".join(
                f"`{k}`: {md_escape(v)}" for k, v in fa["csv_columns_not_options"].items()) + " (both columns are empty in every row).")
            lines.append("")
        dep = fa.get("deprecated_used", {})
        if dep:
            lines.append("Deprecated arguments the functional tests still pass: " + "; ".join(
                f"`{k}` ({len(v)} configs)" for k, v in sorted(dep.items())) + ".")
            lines.append("")
        cond = fa.get("conditional_used", {})
        if cond:
            lines.append("Arguments that exist only when an optional package imports: " + "; ".join(
                f"`{k}` ({', '.join(v)})" for k, v in sorted(cond.items())) + ".")
            lines.append("")
        lines.append(f"No value outside an argument's choices: {not fa.get('choice_violations')}; no flag given the "
                     f"value false: {not fa.get('false_valued_flags')}; no non-option keys: {not fa.get('non_cli_keys')}.")
        lines.append("")
    lines.append("<!-- END GENERATED -->")
    text = open(path).read()
    a = text.index("<!-- BEGIN GENERATED")
    b = text.index("<!-- END GENERATED -->") + len("<!-- END GENERATED -->")
    open(path, "w").write(text[:a] + "\n".join(lines) + text[b:])


if __name__ == "__main__":
    main()
