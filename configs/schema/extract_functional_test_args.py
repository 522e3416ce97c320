#!/usr/bin/env python3
"""Regenerate configs/functional_test_args.json: what each Megatron-LM functional test passes.

For every test case of the GPT, MoE, Mixtral, hybrid, Nemotron, BERT and T5 directories of
tests/functional_tests/test_cases at the external-validation CSV's commit (d98e8a64, read by
`git show` from the bare mirror; nothing is executed), the launch words the harness builds from the
case's model_config.yaml and the environment it exports:

  - tests/functional_tests/shell_test_utils/_run_training.sh at d98e8a64 first runs the file through
    `envsubst` with the recipe's ARGUMENTS exported (tests/test_utils/recipes/h100/gpt.yaml:50-62:
    DATA_PATH=/mnt/artifacts, DATA_CACHE_PATH=/workspace/data/cache, OUTPUT_PATH={assets_dir},
    TENSORBOARD_PATH={assets_dir}/tensorboard, CHECKPOINT_SAVE_PATH={artifacts_dir}/checkpoints,
    CHECKPOINT_LOAD_PATH=/mnt/artifacts; the launcher's {assets_dir} and {artifacts_dir} are written
    /assets_dir and /artifacts_dir); variables it does not export stay as written;
  - ENV_VARS become exported assignments (its yq '.ENV_VARS | to_entries' loop);
  - MODEL_ARGS become words by its yq loop (lines 127-160): a value `true` is the bare flag, an empty
    value drops the entry, a value wrapped in ( ) is one word, a value wrapped in [ ] loses the
    brackets and splits on white space, a value with a space, | ( or ) is one word, anything else is
    the key and its value (split on white space, as the unquoted eval does).

The scalar text is taken as written (yaml.compose), as yq prints it (`tostring` keeps 1.0e-5, .01,
949,50,1); YAML anchors are expanded and merge keys (<<) applied, as `explode(.)` does. MODEL_ARGS_2
(a checkpoint-resume test's second run, lines 121-125) is kept beside MODEL_ARGS when present.

Usage: extract_functional_test_args.py MEGATRON_LM_GIT_DIR > configs/functional_test_args.json
"""
import json
import re
import subprocess
import sys

import yaml

REV = "d98e8a64ddf34856e74b24714e3bedb2f5a39553"
ROOT = "tests/functional_tests/test_cases"
MODEL_DIRS = ("gpt", "moe", "mixtral", "hybrid", "nemotron", "bert", "t5")
RECIPE_VARS = {  # tests/test_utils/recipes/h100/gpt.yaml:50-62 at d98e8a64 (bert.yaml:50-56 and t5.yaml:50-55 export the same)
    "DATA_PATH": "/mnt/artifacts",
    "DATA_CACHE_PATH": "/workspace/data/cache",
    "OUTPUT_PATH": "/assets_dir",  # the recipe's {assets_dir}, a path the launcher fills in
    "TENSORBOARD_PATH": "/assets_dir/tensorboard",
    "CHECKPOINT_SAVE_PATH": "/artifacts_dir/checkpoints",  # {artifacts_dir}
    "CHECKPOINT_LOAD_PATH": "/mnt/artifacts",
}
TRUE = {"true", "True", "TRUE"}


def git(git_dir, *args):
    return subprocess.run(["git", "--git-dir", git_dir, *args], capture_output=True, text=True, check=True).stdout


def envsubst(text):
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: RECIPE_VARS.get(m.group(1) or m.group(2), m.group(0)), text)


def mapping_items(node):
    """(key text, value node) of a mapping node, merge keys applied (explicit keys win)."""
    merged, own = [], []
    for k, v in node.value:
        if k.tag == "tag:yaml.org,2002:merge":
            for m in (v.value if isinstance(v, yaml.SequenceNode) else [v]):
                merged.extend(mapping_items(m))
        else:
            own.append((k.value, v))
    keys = {k for k, _ in own}
    return [(k, v) for k, v in merged if k not in keys] + own


def words(section):
    out = []
    for key, v in mapping_items(section):
        if not isinstance(v, yaml.ScalarNode):
            raise ValueError(f"{key}: not a scalar")
        value = v.value.strip()
        if v.tag == "tag:yaml.org,2002:bool" and value in TRUE:
            out.append(key)
        elif value == "" or v.tag == "tag:yaml.org,2002:null" and value in ("", "~", "null"):
            continue
        elif re.fullmatch(r"\([^)]+\)", value):
            out += [key, value]
        elif re.fullmatch(r"\[[^\]]+\]", value):
            out += [key, *value[1:-1].split()]
        elif re.search(r"[ |()]", value):
            out += [key, value]
        else:
            out += [key, *value.split()]
    return out


def case_entry(path, text):
    root = yaml.compose(envsubst(text))
    entry = {"source": f"{path} at {REV[:8]}"}
    for key, node in mapping_items(root):
        if key == "ENV_VARS":
            entry["env_vars"] = {k: v.value for k, v in mapping_items(node)}
        elif key in ("MODEL_ARGS", "MODEL_ARGS_2"):
            entry[key.lower()] = words(node)
    return entry


def main():
    git_dir = sys.argv[1]
    paths = [p for p in git(git_dir, "ls-tree", "-r", "--name-only", REV, ROOT).split("\n")
             if p.endswith("/model_config.yaml") and p.split("/")[3] in MODEL_DIRS]
    cases, refused = {}, {}
    for p in sorted(paths):
        key = "/".join(p.split("/")[3:5])
        try:
            cases[key] = case_entry(p, git(git_dir, "show", f"{REV}:{p}"))
        except ValueError as e:
            refused[key] = str(e)
    doc = {"_comment": ("What each Megatron-LM functional test passes (MODEL_ARGS as launch words, ENV_VARS), "
                        f"from tests/functional_tests/test_cases/*/*/model_config.yaml at {REV} as "
                        "tests/functional_tests/shell_test_utils/_run_training.sh builds them. Generated by "
                        "configs/schema/extract_functional_test_args.py; read by peakcast import --golden-csv."),
           "revision": REV, "recipe_variables": RECIPE_VARS, "refused": refused, "cases": cases}
    text = json.dumps(doc, indent=None, separators=(",", ":"))
    # One case per line keeps diffs readable.
    text = text.replace(',"cases":{', ',\n"cases":{\n').replace('},"', '},\n"')
    sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
