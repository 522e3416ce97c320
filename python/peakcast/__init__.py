"""peakcast from Python: per-rank peak memory of Megatron Core training, before launch.

The same inputs, rules and answers as the command line (docs/interface.md):

    import peakcast
    r = peakcast.predict("configs/runs/moonlight-16b-8xh100.json", {"model.seq_length": 8192})
    r["fits"], r["max_peak_allocated_bytes"]
    peakcast.check("bridge:llama3_8b_pretrain_config")          # diagnostics, [] when all is well
    peakcast.fits({"model": {"preset": "llama3-8b"}, "cluster": {"num_gpus": 8, "gpu": "h100-sxm-80gb"}})
    peakcast.rank(SPEC, budget_gb=36)["narrowest_viable"]                # `peakcast rank --json`
    peakcast.sweep(SPEC, {"model.seq_length": [4096, 8192]})["points"]  # `peakcast sweep --json`

    cfg = llama3_8b_pretrain_config()   # a Megatron-Bridge ConfigContainer, built as the recipe builds it
    if not peakcast.fits(cfg):          # walked as Bridge writes run_config.yaml; Bridge is not imported
        raise SystemExit("a rank would run out of memory")

A spec is a path to a run spec (JSON) or Megatron-Bridge run_config.yaml, "bridge:<recipe>", a dict (a
run spec), the text of either file, or a Megatron-Bridge ConfigContainer (any dataclass object laid out
as one), encoded the way Bridge serializes it into run_config.yaml (docs/bridge/run-config-yaml.md,
section 4) and read by the same reader. Overrides are `--set` strings ("model.seq_length=8192") or a dict
{"model.seq_length": 8192} (values are written as JSON). An invalid spec raises SpecError, whose
`diagnostics` are the same list `check` returns.
"""
import dataclasses
import enum
import functools
import json
import math
import os
import re

from . import _peakcast

__all__ = ["SpecError", "check", "predict", "fits", "rank", "sweep"]


class SpecError(ValueError):
    """The spec breaks a rule; str() lists each error as the command line prints it."""

    def __init__(self, message, diagnostics):
        super().__init__(message)
        self.diagnostics = diagnostics


# A float while the document is JSON text, written afterwards as YAML reads it (PyYAML's float
# representer: .inf, .nan, and a mantissa with a dot, since YAML 1.1 takes 1e-05 for a string).
_FLOAT = "\x00peakcast-float:"


def _yaml_float(value):
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value)
    mantissa, e, exponent = text.partition("e")
    if e and "." not in mantissa:
        text = mantissa + ".0e" + exponent
    return text


def _target(obj):
    return f"{obj.__module__}.{obj.__qualname__}"


def _encode(value):
    """A value as Bridge's YAML representers write it (mcore:megatron/training/config/yaml_utils.py:17-170,
    container.py:135-178): dataclasses with `_target_` and their fields, torch dtypes, functions and
    classes by name, partials, enums with their value and name, other objects by their class."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return _FLOAT + _yaml_float(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {"_target_": _target(type(value))}
        for f in dataclasses.fields(value):
            out[f.name] = _encode(getattr(value, f.name))
        return out
    if isinstance(value, enum.Enum):
        return {"_args_": [_encode(value.value)], "_call_": True, "_name_": value.name, "_target_": _target(type(value))}
    if type(value).__name__ == "dtype" and type(value).__module__ == "torch":
        return {"_call_": False, "_target_": str(value)}
    if isinstance(value, functools.partial):
        out = {"_args_": [_encode(a) for a in value.args], "_partial_": True, "_target_": _encode(value.func)["_target_"]}
        out.update({k: _encode(v) for k, v in value.keywords.items()})
        return out
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _encode(v) for k, v in value.items()}
    module = getattr(value, "__module__", None) or getattr(type(value), "__module__", "builtins")
    if hasattr(value, "__qualname__") and getattr(value, "__module__", None):
        return {"_call_": False, "_target_": f"{module}.{value.__qualname__}"}
    return {"_call_": True, "_target_": _target(type(value))}


def _container_text(obj):
    """A ConfigContainer as run_config.yaml text: JSON (which YAML reads) with YAML's floats."""
    return re.sub(r'"\\u0000peakcast-float:([^"]*)"', r"\1", json.dumps(_encode(obj)))


def _input(spec):
    """(name, text) as the C++ reader takes them."""
    if dataclasses.is_dataclass(spec) and not isinstance(spec, type):
        return f"<{type(spec).__name__} object>.yaml", _container_text(spec)
    if isinstance(spec, dict):
        return "", json.dumps(spec)
    if isinstance(spec, os.PathLike):
        spec = os.fspath(spec)
    if not isinstance(spec, str):
        raise TypeError("spec must be a path, 'bridge:<recipe>', a dict or the text of a spec, not " + type(spec).__name__)
    if spec.startswith("bridge:"):
        return spec, ""
    if spec == "":
        raise ValueError("an empty spec; give a path, 'bridge:<recipe>', a dict or a spec's text")
    if "\n" not in spec and not spec.lstrip().startswith("{") and os.path.exists(spec):
        with open(spec, "rb") as f:
            text = f.read(16 * 1024 * 1024 + 1)
        if len(text) > 16 * 1024 * 1024:
            raise ValueError(spec + " is larger than 16 MiB, the limit for a run spec")
        return spec, text.decode("utf-8", errors="surrogateescape")
    if "\n" not in spec and spec.endswith((".json", ".yaml", ".yml")):
        raise FileNotFoundError(spec)
    return "", spec


def _overrides(overrides):
    if overrides is None:
        return []
    if isinstance(overrides, dict):
        return [k + "=" + json.dumps(v) for k, v in overrides.items()]
    if isinstance(overrides, str):
        return [overrides]
    return list(overrides)


def _errors(name, text, ov):
    return [d for d in _peakcast.check(name, text, ov) if d["severity"] == "error"]


def check(spec, overrides=None):
    """Every error and warning of the spec, as dicts (severity, path, rule, message, text)."""
    name, text = _input(spec)
    return _peakcast.check(name, text, _overrides(overrides))


def predict(spec, overrides=None):
    """The result object of `peakcast predict --json` (docs/interface.md), as a dict."""
    name, text = _input(spec)
    ov = _overrides(overrides)
    try:
        return json.loads(_peakcast.predict_json(name, text, ov))
    except ValueError as e:
        if isinstance(e, json.JSONDecodeError):
            raise
        raise SpecError(str(e), _errors(name, text, ov)) from None


def fits(spec, overrides=None):
    """Whether every rank fits its GPU: the verdict `predict` prints."""
    return bool(predict(spec, overrides)["fits"])


def _call(fn, name, text, ov, *args):
    try:
        return json.loads(fn(name, text, ov, *args))
    except ValueError as e:
        if isinstance(e, json.JSONDecodeError):
            raise
        diagnostics = _errors(name, text, ov)
        if not diagnostics:
            raise  # an argument of this call, not the spec
        raise SpecError(str(e), diagnostics) from None


def rank(spec, overrides=None, budget_gb=0, headroom_sigma=0, order="narrowest", moe_balanced=False):
    """The ranking object of `peakcast rank --json`: every recompute policy Megatron accepts, viable first.
    budget_gb 0 is the GPU's capacity; under expert parallelism every rank is checked at the busiest EP
    rank of an untrained router unless moe_balanced (or the spec sets model.moe_routing_imbalance)."""
    name, text = _input(spec)
    return _call(_peakcast.rank_json, name, text, _overrides(overrides), float(budget_gb), float(headroom_sigma), order,
                 bool(moe_balanced))


def sweep(spec, vary, overrides=None, budget_gb=0, threads=0):
    """The sweep object of `peakcast sweep --json` over the grid `vary`: {"model.seq_length": [4096, 8192]}
    (values written as JSON) or a list of "KEY=V1,V2" strings as --vary takes them."""
    name, text = _input(spec)
    if isinstance(vary, dict):
        axes = [k + "=" + ";".join(json.dumps(v) for v in values) for k, values in vary.items()]
    elif isinstance(vary, str):
        axes = [vary]
    else:
        axes = list(vary)
    ov = _overrides(overrides)
    key_errors = _peakcast.sweep_key_errors(name, text, ov, axes) if not _errors(name, text, ov) else []
    if key_errors:
        raise SpecError("\n".join(d["text"] for d in key_errors), key_errors)
    return _call(_peakcast.sweep_json, name, text, ov, axes, float(budget_gb), int(threads))
