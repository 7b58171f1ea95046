"""CEL evaluation for overlay conditions (the same cel-python engine the API validation uses).

Programs are compiled once per expression text and evaluated against plain Python data.
A CEL error is raised as ``CELError`` with the expression in the message.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Mapping

import celpy
from celpy import celtypes

__all__ = ["CELError", "evaluate_bool", "to_cel"]


class CELError(ValueError):
    """A CEL expression that does not parse, or that evaluates to something other than a boolean."""


@lru_cache(maxsize=256)
def _program(expression: str) -> Any:
    env = celpy.Environment()
    try:
        return env.program(env.compile(expression))
    except celpy.CELParseError as exc:
        raise CELError(f"cannot parse CEL expression {expression!r}: {exc}") from None


def to_cel(value: Any) -> Any:
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, int):
        return celtypes.IntType(value)
    if isinstance(value, float):
        return celtypes.DoubleType(value)
    if isinstance(value, str):
        return celtypes.StringType(value)
    if isinstance(value, Mapping):
        return celtypes.MapType({celtypes.StringType(k): to_cel(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return celtypes.ListType([to_cel(v) for v in value])
    if value is None:
        return None
    raise CELError(f"cannot pass a {type(value).__name__} to CEL")


def evaluate_bool(expression: str, activation: Mapping[str, Any]) -> bool:
    result = _program(expression).evaluate({name: to_cel(value) for name, value in activation.items()})
    if isinstance(result, celpy.CELEvalError) or not isinstance(result, celtypes.BoolType):
        raise CELError(f"CEL expression {expression!r} did not give a boolean: {result!r}")
    return bool(result)
