"""Runs a threshold expression at one measured value, bounded twice.

First by its estimated cost (:func:`nvcre.compiler.cel_cost.threshold_cost_problem`): an expression
over the limit is refused without being run. Then by CPU time: one that passes the estimate still
runs within :data:`nvcre.compiler.cel_program.THRESHOLD_CPU_SECONDS` of the thread's CPU, so an
expression the estimate misjudges ends too. Validation and the Job tier both judge through here.
"""

from __future__ import annotations

from celpy import celtypes

from .cel_cost import threshold_cost_problem
from .cel_program import THRESHOLD_CPU_SECONDS, CelOutcome, run_bool

__all__ = ["run_threshold"]


def run_threshold(expression: str, value: float, *, cpu_budget: float = THRESHOLD_CPU_SECONDS) -> CelOutcome:
    """``expression`` judged at ``value`` (a double): refused unrun when its estimated cost is over
    the limit, else run within ``cpu_budget`` CPU seconds."""
    too_costly = threshold_cost_problem(expression)
    if too_costly is not None:
        return CelOutcome(None, too_costly, too_costly=True)
    return run_bool(expression, {"value": celtypes.DoubleType(float(value))}, cpu_budget=cpu_budget)
