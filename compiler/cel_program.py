"""Compiles CEL expressions once per text and runs them without ever raising.

The runtime's thresholds and node health monitor share this, and validation probes threshold
expressions with it: a program is cached by its expression, and evaluation returns either a
boolean or the reason it could not give one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import celpy
from celpy import celtypes
from celpy.evaluation import CELEvalError

__all__ = ["CelOutcome", "compile_expression", "parse_expression", "run_bool", "run_threshold"]


@dataclass(frozen=True)
class CelOutcome:
    """A boolean result, or the error that prevented one."""

    value: bool | None
    error: str | None = None


@lru_cache(maxsize=1024)
def parse_expression(expression: str) -> Any:
    """The parse tree of ``expression`` (cached); raises cel-python's parse errors."""
    return celpy.Environment().compile(expression)


@lru_cache(maxsize=1024)
def compile_expression(expression: str) -> tuple[Any, str | None]:
    """(program, None), or (None, the compile error's first line)."""
    env = celpy.Environment()
    try:
        return env.program(parse_expression(expression)), None
    except Exception as exc:  # noqa: BLE001 - cel-python raises parse errors of several types
        return None, _parse_problem(exc)


def run_bool(expression: str, activation: dict[str, Any]) -> CelOutcome:
    """Evaluate ``expression`` over already-converted CEL values."""
    program, problem = compile_expression(expression)
    if program is None:
        return CelOutcome(None, f"compile: {problem}")
    try:
        result = program.evaluate(activation)
    except Exception as exc:  # noqa: BLE001 - an evaluation error of any kind is reported, not raised
        return CelOutcome(None, f"evaluate: {_first_line(exc)}")
    if isinstance(result, CELEvalError):
        return CelOutcome(None, f"evaluate: {_first_line(result)}")
    if not isinstance(result, celtypes.BoolType):
        return CelOutcome(None, f"expression must return bool, got {type(result).__name__.removesuffix('Type').lower()}")
    return CelOutcome(bool(result))


def run_threshold(expression: str, value: float) -> CelOutcome:
    """A threshold expression judged at one measured value (``value``, a double)."""
    return run_bool(expression, {"value": celtypes.DoubleType(float(value))})


def _first_line(value: Any) -> str:
    text = str(value.args[0] if isinstance(value, Exception) and value.args else value)
    return text.strip().splitlines()[0][:300] if text.strip() else type(value).__name__


def _parse_problem(exc: Exception) -> str:
    """cel-python reports a syntax error as the text with a caret under the bad column."""
    text = str(exc.args[0] if exc.args else exc)
    for line in text.splitlines():
        if line.strip() == "^":
            return f"syntax error at column {line.index('^') + 1}"
    return _first_line(exc)
