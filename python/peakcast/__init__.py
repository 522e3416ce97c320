"""peakcast from Python: per-rank peak memory of Megatron Core training, before launch.

The same inputs, rules and answers as the command line (docs/interface.md):

    import peakcast
    r = peakcast.predict("configs/runs/moonlight-16b-8xh100.json", {"model.seq_length": 8192})
    r["fits"], r["max_peak_allocated_bytes"]
    peakcast.check("bridge:llama3_8b_pretrain_config")          # diagnostics, [] when all is well
    peakcast.fits({"model": {"preset": "llama3-8b"}, "cluster": {"num_gpus": 8, "gpu": "h100-sxm-80gb"}})

A spec is a path to a run spec (JSON) or Megatron-Bridge run_config.yaml, "bridge:<recipe>", a dict (a
run spec), or the text of either file. Overrides are `--set` strings ("model.seq_length=8192") or a dict
{"model.seq_length": 8192} (values are written as JSON). An invalid spec raises SpecError, whose
`diagnostics` are the same list `check` returns.
"""
import json
import os

from . import _peakcast

__all__ = ["SpecError", "check", "predict", "fits"]


class SpecError(ValueError):
    """The spec breaks a rule; str() lists each error as the command line prints it."""

    def __init__(self, message, diagnostics):
        super().__init__(message)
        self.diagnostics = diagnostics


def _input(spec):
    """(name, text) as the C++ reader takes them."""
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
        raise SpecError(str(e), [d for d in _peakcast.check(name, text, ov) if d["severity"] == "error"]) from None


def fits(spec, overrides=None):
    """Whether every rank fits its GPU: the verdict `predict` prints."""
    return bool(predict(spec, overrides)["fits"])
