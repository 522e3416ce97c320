"""`pydantic.dataclasses.dataclass` stand-in: the standard library dataclass (see __init__.py).

Like a pydantic dataclass with its default config (extra='ignore'), the generated __init__ drops
keyword arguments that are not fields. Megatron Core 24bad8e6 relies on that: TEDelayedScaling
(megatron/core/extensions/transformer_engine.py:3285-3292) passes override_linear_precision, which
TE's DelayedScaling no longer declares.
"""
import dataclasses as _dc
import functools as _ft

_PYDANTIC_ONLY = ("config", "validate_on_init")


def dataclass(_cls=None, **kwargs):
    for k in _PYDANTIC_ONLY:
        kwargs.pop(k, None)

    def wrap(cls):
        dc = _dc.dataclass(cls, **kwargs)
        names = {f.name for f in _dc.fields(dc) if f.init}
        init = dc.__init__

        @_ft.wraps(init)
        def __init__(self, *args, **kw):
            init(self, *args, **{k: v for k, v in kw.items() if k in names})

        dc.__init__ = __init__
        return dc

    return wrap if _cls is None else wrap(_cls)
