"""Stand-in for pydantic, used ONLY when the device image has no pydantic (it has no package index).

Transformer Engine imports exactly one name from pydantic: `pydantic.dataclasses.dataclass`, used to
declare its FP8 recipe classes (transformer_engine/common/recipe/__init__.py). This stand-in maps it
to the standard library's dataclass: no field validation, same fields and defaults. Memory and
numerics are unaffected; an invalid recipe argument is not rejected as pydantic would.
"""
__version__ = "0.0.0+peakcast-standin"
