"""`pydantic.dataclasses.dataclass` stand-in: the standard library dataclass (see __init__.py)."""
import dataclasses as _dc

_PYDANTIC_ONLY = ("config", "validate_on_init")


def dataclass(_cls=None, **kwargs):
    for k in _PYDANTIC_ONLY:
        kwargs.pop(k, None)

    def wrap(cls):
        return _dc.dataclass(cls, **kwargs)

    return wrap if _cls is None else wrap(_cls)
