"""The Python package gives the command line's answers (run by ctest with PYTHONPATH at the build tree)."""
import json
import os
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
