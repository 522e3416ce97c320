#!/usr/bin/env python3
"""Run harness cases (calibration/harness/run_case.py) on the Transformer Engine stack.

The harness builds layers from the local spec (use_transformer_engine=False). This wrapper, without
changing the harness, re-runs chosen corpus cases with:
  - the case's model keys transformer_impl="transformer_engine", attention_backend="fused" (TE's
    cuDNN fused attention), so the record's spec says what ran ("_te" is appended to its name);
  - get_gpt_decoder_block_spec / get_gpt_mtp_block_spec called with use_transformer_engine=True;
  - provenance "stack" naming TE and its version.
The optimizer is whatever get_megatron_optimizer picks: TE's FusedAdam when TE is importable, so an
Adam case's optimizer.implementation is set to "te_fused_adam".

  python3 run_case_te.py --names dense_gqa8b_none,moe_moonlight4_none --out records.jsonl
  python3 run_case_te.py --names 'moe_moonlight4_none@moe_grouped_gemm=true' --out records.jsonl
  python3 run_case_te.py --case CASE.json --out records.jsonl      # one expanded case (internal)

A name may carry overrides, `NAME@key=value@key=value` (value as JSON, else a string): a model key, a
`section.key` of another section (`train.global_batch_size=2`), or `iterations`. The record's case name is
NAME, then each override as `_key-value`, then `_te`; `LABEL:NAME@...` names it LABEL_te instead.
`--specs-only --out DIR` writes the expanded run specs and runs nothing, to predict them before measuring.

Needs the environment of `source te_carry/build_te_on_device.sh env`, run from the repo root.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

REPO = os.getcwd()
HARNESS = os.path.join(REPO, "calibration", "harness")
TE_MODEL_KEYS = {"transformer_impl": "transformer_engine", "attention_backend": "fused"}


def run_one(case_path, out):
    sys.path.insert(0, HARNESS)
    sys.argv = [os.path.join(HARNESS, "run_case.py"), "--case", case_path, "--out", out]
    import megatron_env  # noqa: F401  (puts PEAKCAST_MEGATRON_DIR on sys.path)
    from megatron.core.models.gpt import gpt_layer_specs as gls
    orig_block, orig_mtp = gls.get_gpt_decoder_block_spec, gls.get_gpt_mtp_block_spec

    def block(config, use_transformer_engine=False, **kw):
        return orig_block(config, use_transformer_engine=True, **kw)

    def mtp(config, spec, use_transformer_engine=False, **kw):
        return orig_mtp(config, spec, use_transformer_engine=True, **kw)

    gls.get_gpt_decoder_block_spec, gls.get_gpt_mtp_block_spec = block, mtp
    import run_case
    orig_prov = run_case.provenance

    def prov(torch):
        p = orig_prov(torch)
        import transformer_engine
        p["stack"] = (f"megatron-core TE spec, Transformer Engine {transformer_engine.__version__} "
                      "built from source (sm_90), get_megatron_optimizer")
        return p

    run_case.provenance = prov
    return run_case.main()


def expand_names(names):
    """The corpus cases NAME@key=value@... names, as run on the TE stack (see the module docstring)."""
    sys.path.insert(0, HARNESS)
    from corpus_lib import expand
    with open(os.path.join(HARNESS, "corpus.json")) as f:
        cases = {c["name"]: c for c in expand(json.load(f))}
    out = []
    for item in names.split(","):
        label, sep, rest = item.partition(":")
        if not sep or "@" in label:
            label, rest = None, item
        name, *sets = rest.split("@")
        case = json.loads(json.dumps(cases[name]))
        case["spec"]["model"].update(TE_MODEL_KEYS)
        case["spec"].setdefault("cluster", {})["transformer_engine_available"] = True  # what ran
        for kv in sets:
            key, _, text = kv.partition("=")
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                value = text
            if key == "iterations":
                case["iterations"] = value
            elif "." in key:  # section.key: another section of the run spec (train.global_batch_size)
                section, _, field = key.partition(".")
                case["spec"].setdefault(section, {})[field] = value
            else:
                case["spec"]["model"][key] = value
            name += "_" + key.rpartition(".")[2] + "-" + "".join(ch for ch in text if ch.isalnum() or ch in "_.")
        case["name"] = (label or name) + "_te"
        if case["spec"].get("optimizer", {}).get("optimizer", "adam") == "adam":
            case["spec"]["optimizer"]["implementation"] = "te_fused_adam"
        out.append(case)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--case")
    ap.add_argument("--names")
    ap.add_argument("--out", required=True)
    ap.add_argument("--timeout-s", type=int, default=180)
    ap.add_argument("--specs-only", action="store_true",
                    help="write each expanded case's run spec to OUT/NAME.json and run nothing "
                         "(to predict before measuring)")
    args = ap.parse_args()
    if args.case:
        return run_one(args.case, args.out)
    for case in expand_names(args.names):
        if args.specs_only:
            os.makedirs(args.out, exist_ok=True)
            with open(os.path.join(args.out, case["name"] + ".json"), "w") as f:
                json.dump(case["spec"], f, indent=1)
            continue
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as tf:
            json.dump(case, tf)
        try:
            subprocess.run([sys.executable, os.path.abspath(__file__), "--case", tf.name,
                            "--out", args.out], timeout=args.timeout_s)
        except subprocess.TimeoutExpired:
            print(f"[run_case_te] {case['name']}: timeout {args.timeout_s}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
