"""Stall detection for training Jobs (pure): is the workload still making steps?

Needs the Job's ``stallMultiplier`` and its GoodputMeasurement. Before the first step the budget
is ``startupStallTimeoutSeconds`` (default 1200) plus two sample intervals, counted from the
latest of the application start (or the measurement's start), the workload start and the end of
the last unschedulable episode. After that, a step is overdue once
``stallMultiplier x avgStepTimeSec x max(logInterval, 1)`` plus two sample intervals have passed
since the latest of the last step and the end of the last unschedulable episode.

The clock these budgets run on is the measurement's, not the wall's: once the GoodputMeasurement
has sampled the current attempt's log, time counts only up to the moment its reads got to
(:func:`.log_read.read_through`). A sample still under way, or reads that fall behind a fast
growing log, therefore never let the clock run past what was actually looked at, and a slow read
is never taken for a hung workload (the measurement reports the lag itself). Before the first
sample of the attempt, the wall clock counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ..clock import parse_time
from .log_read import read_through

__all__ = ["DEFAULT_STARTUP_STALL_SECONDS", "STARTUP_STALL", "STEP_STALL", "stall_message"]

DEFAULT_STARTUP_STALL_SECONDS = 1200
STARTUP_STALL = "Workload stalled: no training step observed within startup timeout"
STEP_STALL = "Workload stalled: no training step within the configured threshold"


def _latest(*moments: datetime | None) -> datetime | None:
    known = [m for m in moments if m is not None]
    return max(known) if known else None


def _float(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def _observed(goodput_status: Mapping[str, Any], job_status: Mapping[str, Any], now: datetime) -> datetime:
    """The moment the evidence covers: how far the measurement read this attempt's log, else now."""
    through = read_through(goodput_status)
    attempt = _latest(parse_time(goodput_status.get("startTime")), parse_time(job_status.get("workloadStartTime")))
    if through is None or (attempt is not None and through < attempt):
        return now  # no sample of this attempt yet
    return min(now, through)


def stall_message(
    job_spec: Mapping[str, Any],
    job_status: Mapping[str, Any],
    goodput_status: Mapping[str, Any] | None,
    now: datetime,
    sample_interval: float,
) -> str | None:
    """The Failed message when the workload stalled, else None."""
    multiplier = _float(job_spec.get("stallMultiplier"))
    if multiplier is None or goodput_status is None or job_status.get("schedulingBlockedSince"):
        return None
    slack = 2 * max(sample_interval, 0.0)
    now = _observed(goodput_status, job_status, now)
    resumed = parse_time(job_status.get("schedulingResumedTime"))
    last_step = parse_time(goodput_status.get("lastStepTimestamp"))
    step_time = _float(goodput_status.get("avgStepTimeSec"))
    if last_step is None or step_time is None:
        started = _latest(
            parse_time(goodput_status.get("applicationStartTime")) or parse_time(goodput_status.get("startTime")),
            parse_time(job_status.get("workloadStartTime")),
            resumed,
        )
        if started is None:
            return None
        budget = float(job_spec.get("startupStallTimeoutSeconds") or DEFAULT_STARTUP_STALL_SECONDS) + slack
        return STARTUP_STALL if (now - started).total_seconds() > budget else None
    interval = max(int(goodput_status.get("logInterval") or 1), 1)
    limit = multiplier * step_time * interval + slack
    since = _latest(last_step, resumed)
    assert since is not None
    return STEP_STALL if (now - since).total_seconds() > limit else None
