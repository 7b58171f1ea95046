"""Refuses threshold expressions that could never give a verdict.

A threshold is a CEL expression over the measured ``value`` (a double) that must answer true or
false. One that does not parse, that fails when evaluated (``1/0 == 0``) or that answers
something other than a boolean (``value``, ``value + 1.0``) used to validate and then, at run
time, fail the Job as if its nodes had missed the threshold: every healthy node of the group
was blamed. Each expression is run here at a few probe values, as the Job tier would run it,
and refused at its field path when any probe cannot give a boolean.

An expression can also be too costly to run at all: cel-python has no cost limit, and a threshold
of six nested comprehensions held two controller workers for minutes. Its cost is estimated first
(``cel_cost.threshold_cost_problem``, the estimate node-health expressions get) and an expression
over the limit is refused without being run (``ThresholdExpressionTooCostly``); the probes then
run under the CPU budget the Job tier uses (``cel_program.THRESHOLD_CPU_SECONDS``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ..diagnostics import Diagnostic, PathPart, error
from .cel_rules import THRESHOLD_KEYS
from .walk import values_under

__all__ = ["PROBE_VALUES", "threshold_problems"]

#: Measured values every threshold expression must judge: none, small, typical, huge.
PROBE_VALUES = (0.0, 1.0, 100.0, 1.0e6)
#: How deep a document is searched for ``thresholds`` maps (they sit at most six levels down).
_MAX_DEPTH = 12


def threshold_problems(data: Any) -> list[Diagnostic]:
    """One error per threshold expression that cannot judge a measured value."""
    found = []
    for path, key, expression in _expressions(data):
        problem = _problem(expression)
        if problem is not None:
            code, text = problem
            found.append(error(code, (*path, key), f"threshold expression {json.dumps(expression)} {text}"))
    return found


def _problem(expression: str) -> tuple[str, str] | None:
    """(code, what is wrong) for an expression that cannot judge a measured value, else None."""
    # cel-python is loaded only for a document that has a threshold (a render without one never loads it)
    from ..cel_threshold import run_threshold

    for probe in PROBE_VALUES:
        outcome = run_threshold(expression, probe)
        if outcome.too_costly:
            return "ThresholdExpressionTooCostly", str(outcome.error)
        if outcome.value is None:
            return "InvalidThresholdExpression", f"cannot judge a measured value of {probe:g}: {outcome.error}"
    return None


def _expressions(data: Any) -> Iterator[tuple[tuple[PathPart, ...], str, str]]:
    for path, thresholds in values_under(data, "thresholds", _MAX_DEPTH):
        if isinstance(thresholds, dict):
            for metric, expression in thresholds.items():
                if metric in THRESHOLD_KEYS and isinstance(expression, str) and expression:
                    yield path, metric, expression
