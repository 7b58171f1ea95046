"""Performance thresholds: CEL expressions over one double ``value`` per known metric key.

Keys (``busBandwidthGBps``, ``algBandwidthGBps``, ``goodputRatio``, ``avgTFLOPsPerGPU``,
``avgStepTimeSec``) map to an expression such as ``value >= 900``; ints and doubles compare
across types. ``evaluate`` gives NVCRE's reasons and messages: ``UnknownThresholdKey`` first,
then missing measurements (``MeasurementPending`` until the caller says the measurement
timeout passed, then ``MeasurementTimeout``), then the first failing key in sorted order
(``ThresholdViolated`` or ``InvalidThresholdExpression``), else ``ThresholdsMet``. Without
thresholds nothing is enforced (``NoThresholds``): pass and fail stay informational.
``measured_values`` turns measurement objects into the values the keys read.

An expression is bounded in what it may cost: one whose estimated cost is over the limit is not
run, and any other runs within a CPU budget (``nvcre.compiler.cel_threshold.run_threshold``); both
give ``InvalidThresholdExpression``, a configuration error that blames no node.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nvcre.compiler.cel_threshold import run_threshold

from ..measure.nccl import max_alg_bandwidth, max_bus_bandwidth, results_from_status

__all__ = [
    "THRESHOLD_KEYS",
    "ThresholdOutcome",
    "bandwidth_is_final",
    "CONFIGURATION_ERRORS",
    "evaluate",
    "evaluate_one",
    "measured_values",
]

THRESHOLD_KEYS = ("busBandwidthGBps", "algBandwidthGBps", "goodputRatio", "avgTFLOPsPerGPU", "avgStepTimeSec")

MET = "ThresholdsMet"
VIOLATED = "ThresholdViolated"
UNKNOWN = "UnknownThresholdKey"
INVALID = "InvalidThresholdExpression"
TIMEOUT = "MeasurementTimeout"
PENDING = "MeasurementPending"
NONE = "NoThresholds"
#: Outcomes that say the threshold itself is wrong (a hand-written Workflow that skipped
#: validation): the Job fails with the reason, and no node is blamed for it.
CONFIGURATION_ERRORS = frozenset({UNKNOWN, INVALID})


@dataclass(frozen=True)
class ThresholdOutcome:
    """The verdict over a threshold map."""

    reason: str
    message: str
    #: True when the Job's ValidationFailed condition is to be True
    failed: bool
    #: True while measurements are still expected (nothing to write yet)
    pending: bool = False
    key: str | None = None
    measured: float | None = None
    missing: tuple[str, ...] = field(default=())

    @property
    def enforced(self) -> bool:
        return self.reason != NONE


def _go_quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def evaluate_one(expression: str, value: float) -> tuple[bool | None, str | None]:
    """(passed, None) or (None, error) for one expression at one value."""
    outcome = run_threshold(expression, value)
    if outcome.too_costly:
        return None, f"threshold expression {_go_quote(expression)} {outcome.error}"
    if outcome.value is None:
        return None, f"threshold expression {_go_quote(expression)} failed: {outcome.error}"
    return outcome.value, None


def evaluate(
    thresholds: Mapping[str, str] | None,
    values: Mapping[str, float],
    *,
    measurement_timed_out: bool = False,
    measurement_timeout: str = "5m0s",
) -> ThresholdOutcome:
    """Judge ``values`` against ``thresholds`` the way the Job tier does after the workload succeeds."""
    if not thresholds:
        return ThresholdOutcome(NONE, "No performance thresholds set", failed=False)
    unknown = sorted(key for key in thresholds if key not in THRESHOLD_KEYS)
    if unknown:
        message = f"unknown threshold key(s) [{', '.join(unknown)}]; valid keys: [{', '.join(THRESHOLD_KEYS)}]"
        return ThresholdOutcome(UNKNOWN, message, failed=True, key=unknown[0])
    missing = tuple(sorted(key for key in thresholds if key not in values or not math.isfinite(values[key])))
    if missing:
        if measurement_timed_out:
            message = f"Measurement data not available within {measurement_timeout} for keys: [{' '.join(missing)}]"
            return ThresholdOutcome(TIMEOUT, message, failed=True, missing=missing)
        return ThresholdOutcome(
            PENDING, f"Waiting for measurement data for keys: [{' '.join(missing)}]", failed=False, pending=True, missing=missing
        )
    for key in sorted(thresholds):
        expression = thresholds[key]
        value = float(values[key])
        passed, problem = evaluate_one(expression, value)
        if problem is not None:
            return ThresholdOutcome(INVALID, f"Threshold {_go_quote(key)}: {problem}", failed=True, key=key, measured=value)
        if not passed:
            message = f"Threshold {_go_quote(key)} violated: measured {value:.4f}, expression: {expression}"
            return ThresholdOutcome(VIOLATED, message, failed=True, key=key, measured=value)
    return ThresholdOutcome(MET, "All performance thresholds satisfied", failed=False)


def _condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    status = obj.get("status") if isinstance(obj, Mapping) else None
    for cond in (status or {}).get("conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") == kind:
            return cond
    return None


def bandwidth_is_final(measurement: Mapping[str, Any]) -> bool:
    """Only ``Complete`` with reason ``JobSucceeded``, at least one result and no recorded failure is
    final for thresholds: a corrupted, failed or unfinished run gives no value to compare."""
    cond = _condition(measurement, "Complete")
    status = measurement.get("status") or {}
    results = status.get("results") or []
    if status.get("failure"):
        return False
    return bool(cond and cond.get("status") == "True" and cond.get("reason") == "JobSucceeded" and results)


def _positive(text: Any) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) and value > 0 else None


def measured_values(bandwidth: Mapping[str, Any] | None = None, goodput: Mapping[str, Any] | None = None) -> dict[str, float]:
    """Threshold values from a BandwidthMeasurement (when final) and a GoodputMeasurement (when Complete)."""
    values: dict[str, float] = {}
    if bandwidth is not None and bandwidth_is_final(bandwidth):
        rows = results_from_status((bandwidth.get("status") or {}).get("results"))
        bus, alg = max_bus_bandwidth(rows), max_alg_bandwidth(rows)
        if bus is not None:
            values["busBandwidthGBps"] = bus
        if alg is not None:
            values["algBandwidthGBps"] = alg
    if goodput is not None:
        cond = _condition(goodput, "Complete")
        if cond is not None and cond.get("status") == "True":
            status = goodput.get("status") or {}
            for key, field_name in (
                ("goodputRatio", "result"),
                ("avgTFLOPsPerGPU", "avgTFLOPSPerGPU"),
                ("avgStepTimeSec", "avgStepTimeSec"),
            ):
                value = _positive(status.get(field_name))
                if value is not None:
                    values[key] = value
    return values
