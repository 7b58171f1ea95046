"""Compiles CEL expressions once per text and runs them without ever raising.

The runtime's thresholds and node health monitor share this, and validation probes threshold
expressions with it: a program is cached by its expression, and evaluation returns either a
boolean or the reason it could not give one.

cel-python has no cost limit of its own, so evaluation can be given a budget of CPU seconds
(``cpu_budget``): while the program runs, a trace hook on this thread only looks at the thread's
CPU clock every few hundred Python calls and stops the evaluation once the budget is spent. The
stop is raised only in cel-python's own function frames: raised anywhere else (a finaliser the
garbage collector happens to run on this thread, say) the interpreter would print and drop it and
take the hook away, and the evaluation would run on unbounded. Should the stop be swallowed all the
same, a spent budget is still reported as a stop, never as the value the evaluation came back with.
Thresholds run under :data:`THRESHOLD_CPU_SECONDS` (through ``cel_threshold.run_threshold``, which
first refuses them by their estimated cost), so an expression the estimate misjudges still ends.
"""

from __future__ import annotations

import inspect
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from types import FrameType
from typing import Any

import celpy
from celpy import celtypes
from celpy.evaluation import CELEvalError

__all__ = ["THRESHOLD_CPU_SECONDS", "CelOutcome", "compile_expression", "parse_expression", "run_bool"]

#: CPU seconds one threshold evaluation may take. An expression under the step limit takes well
#: under half a second; the budget is there for what the estimate misjudges.
THRESHOLD_CPU_SECONDS = 2.0
#: The CPU clock is read once per this many Python calls of the evaluation (a power of two).
_CHECK_EVERY = 256
#: Where cel-python's code lives: the budget's stop is raised only in frames of these files.
_CEL_SOURCE = os.path.dirname(celpy.__file__) + os.sep
_RESUMABLE = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


class _OverBudget(BaseException):
    """Raised inside an evaluation that spent its budget. A BaseException, so that cel-python's own
    ``except Exception`` handlers cannot turn it into a CEL value and carry on."""


@dataclass(frozen=True)
class CelOutcome:
    """A boolean result, or the error that prevented one."""

    value: bool | None
    error: str | None = None
    #: True when the expression was refused unrun, its estimated cost over the limit
    too_costly: bool = False


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


class _Budget:
    """The state of one budgeted evaluation: its deadline, and whether it was found spent."""

    def __init__(self, seconds: float) -> None:
        self.deadline = time.thread_time() + seconds
        self.spent = False


@contextmanager
def _cpu_budget(seconds: float | None) -> Iterator[_Budget | None]:
    """Stop the code run inside with :class:`_OverBudget` once this thread spent ``seconds`` of CPU;
    the yielded budget says afterwards whether it was spent, in case the stop was swallowed."""
    if seconds is None:
        yield None
        return
    previous: Any = sys.gettrace()  # another tracer (a debugger, coverage) keeps seeing every call
    budget = _Budget(seconds)
    calls = 0

    def hook(frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        nonlocal calls
        calls += 1
        if not budget.spent and not calls & (_CHECK_EVERY - 1) and time.thread_time() > budget.deadline:
            budget.spent = True
        if budget.spent and _stoppable(frame):
            raise _OverBudget()
        return previous(frame, event, arg) if previous is not None else None

    sys.settrace(hook)
    try:
        yield budget
    finally:
        sys.settrace(previous)


def _stoppable(frame: FrameType) -> bool:
    """True for a plain function frame of cel-python's, where a raise reaches the evaluation's caller
    (not a generator's, which the collector may be finalising, and not code of anyone else's)."""
    code = frame.f_code
    return code.co_filename.startswith(_CEL_SOURCE) and not code.co_flags & _RESUMABLE


def run_bool(expression: str, activation: dict[str, Any], *, cpu_budget: float | None = None) -> CelOutcome:
    """Evaluate ``expression`` over already-converted CEL values, within ``cpu_budget`` CPU seconds
    when one is given."""
    program, problem = compile_expression(expression)
    if program is None:
        return CelOutcome(None, f"compile: {problem}")
    try:
        with _cpu_budget(cpu_budget) as budget:
            result = program.evaluate(activation)
    except _OverBudget:
        return _stopped(cpu_budget)
    except Exception as exc:  # noqa: BLE001 - an evaluation error of any kind is reported, not raised
        return CelOutcome(None, f"evaluate: {_first_line(exc)}")
    if budget is not None and budget.spent:
        return _stopped(cpu_budget)  # the stop was swallowed on the way out; the budget still holds
    if isinstance(result, CELEvalError):
        return CelOutcome(None, f"evaluate: {_first_line(result)}")
    if not isinstance(result, celtypes.BoolType):
        return CelOutcome(None, f"expression must return bool, got {type(result).__name__.removesuffix('Type').lower()}")
    return CelOutcome(bool(result))


def _stopped(cpu_budget: float | None) -> CelOutcome:
    return CelOutcome(None, f"evaluate: stopped after {cpu_budget:g} s of CPU, the most one evaluation may take")


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
