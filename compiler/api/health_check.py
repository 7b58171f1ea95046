"""Refuses node-health expressions too costly to run on every node of every poll.

A Job's ``nodeHealthMonitor.cel.expression`` runs against each of its nodes while the workload
runs, in the controller that serves every tenant. cel-python has no cost limit of its own, so an
expression of nested comprehensions over a node's labels could hold the controller for minutes.
Each one found in a document is estimated with ``cel_cost`` at a generous collection size and
refused at its field path when it is over the limit. The controller applies the same limit with
the real sizes of the node it is about to judge, for Workflows and Jobs written by hand.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..diagnostics import Diagnostic, PathPart, error
from .walk import values_under

__all__ = ["health_expression_problems"]

#: How deep a document is searched for ``nodeHealthMonitor`` (a Workflow holds it five levels down).
_MAX_DEPTH = 12


def health_expression_problems(data: Any) -> list[Diagnostic]:
    """One error per node-health expression over the cost limit."""
    from ..cel_cost import health_cost_problem

    found = []
    for path, expression in _expressions(data):
        problem = health_cost_problem(expression)
        if problem is not None:
            found.append(error("HealthExpressionTooCostly", path, f"node health expression {problem}"))
    return found


def _expressions(data: Any) -> Iterator[tuple[tuple[PathPart, ...], str]]:
    for path, monitor in values_under(data, "nodeHealthMonitor", _MAX_DEPTH):
        cel = monitor.get("cel") if isinstance(monitor, dict) else None
        if isinstance(cel, dict) and isinstance(cel.get("expression"), str) and cel["expression"]:
            yield (*path, "cel", "expression"), cel["expression"]
