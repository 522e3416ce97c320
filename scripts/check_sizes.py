#!/usr/bin/env python3
"""Issue #25's house rules, checked in CI: no source file over 500 lines and no function over 120 in
model/, sim/ and calibration/ (tests aside), C++ and Python alike.

  python3 scripts/check_sizes.py        # prints each breach; exit 1 if any

C++ functions are found by their braces: a `{` that ends a line whose text closes a parameter list
(`) {`, `) const {`, `) -> T {`, ...) at namespace or class level, up to its matching `}` (comments and
string literals stripped first). Lambdas and control statements are not functions. Python functions are
the `def`s of the ast, nested ones included.
"""
import ast
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_FILE, MAX_FUNCTION = 500, 120
DIRS = ("model", "sim", "calibration")
SIGNATURE = re.compile(r"\)\s*(const)?\s*(noexcept)?\s*(->\s*[\w:<>, ]+)?\s*(override)?\s*\{")
CONTROL = re.compile(r"\s*(if|for|while|switch|else|do|namespace|struct|class|enum)\b")
LAMBDA = re.compile(r"\[[^\]]*\]\s*\(")


def strip(line):
    line = re.sub(r"//.*", "", line)
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    return re.sub(r"'(\\.|[^'\\])*'", "''", line)


def cpp_functions(path):
    """(first line, length, text) of every C++ function body in the file."""
    depth, start, start_depth, name = 0, None, None, ""
    for i, raw in enumerate(open(path, encoding="utf-8").read().split("\n")):
        code = strip(raw)
        for ch in code:
            if ch == "{":
                if start is None and SIGNATURE.search(code) and not CONTROL.match(code) and not LAMBDA.search(code):
                    start, start_depth, name = i, depth, code.strip()[:80]
                depth += 1
            elif ch == "}":
                depth -= 1
                if start is not None and depth == start_depth:
                    yield start + 1, i - start + 1, name
                    start = None


def python_functions(path):
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.lineno, node.end_lineno - node.lineno + 1, "def " + node.name


def main():
    breaches = []
    for d in DIRS:
        for path in sorted(glob.glob(os.path.join(ROOT, d, "**", "*"), recursive=True)):
            ext = os.path.splitext(path)[1]
            if ext not in (".cpp", ".hpp", ".py") or not os.path.isfile(path):
                continue
            rel = os.path.relpath(path, ROOT)
            lines = open(path, encoding="utf-8").read().count("\n")
            if lines > MAX_FILE:
                breaches.append(f"{rel}: {lines} lines (at most {MAX_FILE})")
            functions = python_functions(path) if ext == ".py" else cpp_functions(path)
            for first, length, name in functions:
                if length > MAX_FUNCTION:
                    breaches.append(f"{rel}:{first}: {name} is {length} lines (at most {MAX_FUNCTION})")
    for b in breaches:
        print(b)
    print(f"{len(breaches)} over the limits (files {MAX_FILE} lines, functions {MAX_FUNCTION})")
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
