"""The Python package gives the command line's answers (run by ctest with PYTHONPATH at the build tree)."""
import json
import os
import re
import subprocess
import sys
import unittest

import peakcast

ROOT = os.environ.get("PEAKCAST_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BINARY = os.environ.get("PEAKCAST_BINARY", "")
SPEC = os.path.join(ROOT, "configs", "runs", "moonlight-16b-8xh100.json")


def cli_json(*args):
    out = subprocess.run([BINARY, "predict", "--json", *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


class PeakcastModule(unittest.TestCase):
    def test_predict_equals_the_command_line(self):
        if not BINARY:
            self.skipTest("PEAKCAST_BINARY not set")
        for overrides in ([], ["model.seq_length=8192"]):
            with self.subTest(overrides=overrides):
                sets = [a for o in overrides for a in ("--set", o)]
                self.assertEqual(peakcast.predict(SPEC, overrides), cli_json(SPEC, *sets))

    def test_inputs_as_dict_text_and_overrides_dict(self):
        with open(SPEC) as f:
            doc = json.load(f)
        from_path = peakcast.predict(SPEC, {"model.seq_length": 2048})
        self.assertEqual(peakcast.predict(doc, {"model.seq_length": 2048}), from_path)
        self.assertEqual(peakcast.predict(json.dumps(doc), ["model.seq_length=2048"]), from_path)
        self.assertEqual(peakcast.fits(SPEC, {"model.seq_length": 2048}), from_path["fits"])

    def test_a_bad_key_is_a_spec_error_naming_it(self):
        with self.assertRaises(peakcast.SpecError) as e:
            peakcast.predict(SPEC, {"model.seq_lenght": 8192})
        self.assertIn("model.seq_lenght", str(e.exception))
        self.assertTrue(any(d["rule"] == "unknown_key" and d["path"] == "model.seq_lenght" for d in e.exception.diagnostics))
        self.assertEqual([d["severity"] for d in peakcast.check(SPEC, ["model.seq_lenght=1"]) if d["path"] == "model.seq_lenght"],
                         ["error"])

    def test_a_broken_rule_and_a_recipe(self):
        errors = [d for d in peakcast.check(SPEC, {"model.tensor_model_parallel_size": 3}) if d["severity"] == "error"]
        self.assertTrue(errors)
        self.assertTrue(all(d["text"].startswith("error: ") for d in errors))
        # A recipe the README's table predicts; predict's answer is the command line's.
        recipe = "bridge:moonlight_16b_pretrain_8gpu_h100_bf16_config"
        r = peakcast.predict(recipe)
        self.assertIn("fits", r)
        if BINARY:
            self.assertEqual(r, cli_json(recipe))

    def test_missing_file_and_wrong_type(self):
        with self.assertRaises(FileNotFoundError):
            peakcast.predict("no/such/spec.json")
        with self.assertRaises(TypeError):
            peakcast.predict(42)
        with self.assertRaises(ValueError):
            peakcast.predict("")


if __name__ == "__main__":
    sys.exit(unittest.main())


def cli(command, *args):
    out = subprocess.run([BINARY, command, "--json", *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


class RankAndSweep(unittest.TestCase):
    def test_rank_equals_the_command_line(self):
        if not BINARY:
            self.skipTest("PEAKCAST_BINARY not set")
        self.assertEqual(peakcast.rank(SPEC, budget_gb=36), cli("rank", SPEC, "--budget-gb", "36"))
        self.assertEqual(peakcast.rank(SPEC, budget_gb=36, moe_balanced=True, order="replay-time"),
                         cli("rank", SPEC, "--budget-gb", "36", "--moe-balanced", "--order", "replay-time"))

    def test_sweep_equals_the_command_line(self):
        if not BINARY:
            self.skipTest("PEAKCAST_BINARY not set")
        vary = {"model.seq_length": [2048, 4096], "model.recompute_modules": [[], ["moe_act"]]}
        expected = cli("sweep", SPEC, "--vary", "model.seq_length=2048,4096", "--vary", 'model.recompute_modules=[];["moe_act"]')
        self.assertEqual(peakcast.sweep(SPEC, vary), expected)
        self.assertEqual(peakcast.sweep(SPEC, ["model.seq_length=2048,4096", 'model.recompute_modules=[];["moe_act"]']), expected)

    def test_bad_arguments_and_a_misspelt_axis(self):
        with self.assertRaises(peakcast.SpecError) as e:
            peakcast.sweep(SPEC, {"model.seq_lenght": [2048]})
        self.assertIn("model.seq_lenght", str(e.exception))
        self.assertEqual([d["path"] for d in e.exception.diagnostics], ["model.seq_lenght"])
        with self.assertRaises(ValueError):
            peakcast.rank(SPEC, order="widest")
        with self.assertRaises(ValueError):
            peakcast.rank(SPEC, budget_gb=-1)


# Stand-ins for what a Megatron-Bridge ConfigContainer holds, named as Bridge's classes are, built
# from a run_config.yaml fixture: the walk must give back what the file gives.
def _named(obj, target):
    module, _, qualname = target.rpartition(".")
    obj.__module__, obj.__qualname__ = module, qualname
    return obj


class _TorchDtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return self.name


_TorchDtype.__name__ = "dtype"
_TorchDtype.__module__ = "torch"


def _function(target):
    def f():
        pass
    return _named(f, target)


def _object_from_yaml(v):
    import dataclasses
    import enum
    import functools
    if isinstance(v, list):
        return [_object_from_yaml(e) for e in v]
    if isinstance(v, str) and re.fullmatch(r"[-+]?\d+(\.\d*)?[eE][-+]?\d+", v):
        return float(v)  # PyYAML (YAML 1.1) reads 1e-05 as a string; the object Bridge wrote it from held a float
    if not isinstance(v, dict):
        return v
    if "_target_" not in v:
        return {k: _object_from_yaml(e) for k, e in v.items()}
    target = v["_target_"]
    if v.get("_partial_"):
        kwargs = {k: _object_from_yaml(e) for k, e in v.items() if k not in ("_target_", "_partial_", "_args_")}
        return functools.partial(_function(target), *[_object_from_yaml(a) for a in v.get("_args_", [])], **kwargs)
    if "_name_" in v:
        cls = _named(enum.Enum(target.rpartition(".")[2], {v["_name_"]: v["_args_"][0]}), target)
        return cls[v["_name_"]]
    if v.get("_call_") is False:
        return _TorchDtype(target) if target.startswith("torch.") and target.split(".")[1] in (
            "float32", "float16", "bfloat16", "float8_e4m3fn") else _function(target)
    if v.get("_call_") is True:
        return _named(type(target.rpartition(".")[2], (), {}), target)()
    fields = [k for k in v if k != "_target_"]
    cls = _named(dataclasses.make_dataclass(target.rpartition(".")[2], fields), target)
    return cls(**{k: _object_from_yaml(v[k]) for k in fields})


class BridgeConfigContainer(unittest.TestCase):
    def test_a_container_object_predicts_as_its_run_config_yaml(self):
        import yaml
        for fixture in ("moonlight-16b-8xh100", "llama3-70b-fp8-32xh100"):
            with self.subTest(fixture=fixture):
                path = os.path.join(ROOT, "tests", "data", "bridge", fixture + ".run_config.yaml")
                with open(path) as f:
                    cfg = _object_from_yaml(yaml.safe_load(f))
                self.assertEqual(type(cfg).__qualname__, "ConfigContainer")
                # run_config.yaml does not record the GPU; the fixture's name does, which the object lacks.
                gpu = {"cluster.gpu": "h100-sxm-80gb"}
                self.assertEqual(peakcast.predict(cfg, gpu), peakcast.predict(path, gpu))
                self.assertEqual(peakcast.fits(cfg, gpu), peakcast.predict(path, gpu)["fits"])

    def test_a_wrong_field_in_the_object_is_an_error_naming_it(self):
        import yaml
        path = os.path.join(ROOT, "tests", "data", "bridge", "moonlight-16b-8xh100.run_config.yaml")
        with open(path) as f:
            doc = yaml.safe_load(f)
        doc["model"]["seq_lenght"] = 4096
        with self.assertRaises(peakcast.SpecError) as e:
            peakcast.predict(_object_from_yaml(doc), {"cluster.gpu": "h100-sxm-80gb"})
        self.assertIn("model.seq_lenght", str(e.exception))
        self.assertTrue(any(d["path"] == "model.seq_lenght" for d in e.exception.diagnostics))
