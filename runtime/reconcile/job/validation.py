"""A succeeded Job's validation: its measurements judged, ``ValidationFailed`` set True or False.

Once a Job succeeded, :class:`Validation` first asks whether its bandwidth run can be trusted at
all: a corrupted, failed or cut-off run (``judge.measured``) fails the Job with the
measurement's reason, whatever bandwidth its rows print, and its group's nodes are blamed. Then
the thresholds are evaluated against the measured values (``judge.thresholds``) once the
measurements answer or their time (``spec.measurementTimeout``) runs out; a violation blames the
group's nodes unless it is a configuration error. ``bandwidth_unsettled`` answers the Workflow
tier (through the seam it is handed) whether such a verdict is still to come.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from ... import compile as compiler
from ...clock import parse_time
from ...judge import conditions as cond
from ...judge import measured, thresholds
from ...judge.attribution import group_nodes
from ...judge.thresholds import CONFIGURATION_ERRORS
from ...kube.resources import BANDWIDTH_MEASUREMENTS, GOODPUT_MEASUREMENTS, JOBS
from ..common import namespace_of
from ..context import Context, Result
from .entries import seed_failed_nodes
from .names import bandwidth_name, goodput_name
from .parts import JobReader

__all__ = ["Validation", "judge_thresholds"]


def judge_thresholds(
    spec: Mapping[str, str], values: Mapping[str, float], *, expired: bool, timeout_seconds: float
) -> tuple[bool, str, str] | None:
    """``(failed, reason, message)`` for the ValidationFailed condition, or None while waiting."""
    outcome = thresholds.evaluate(
        spec, values, measurement_timed_out=expired, measurement_timeout=compiler.format_duration(timeout_seconds)
    )
    if outcome.pending or not outcome.enforced:
        return None
    return outcome.failed, outcome.reason, outcome.message


class Validation:
    """Judges a succeeded Job's measurements; handed the context and the shared reads."""

    def __init__(self, ctx: Context, reads: JobReader) -> None:
        self.ctx = ctx
        self.reads = reads

    def _expired(self, job: Mapping[str, Any]) -> tuple[bool, float]:
        """Whether the measurements' time since the Job succeeded ran out, and that time."""
        succeeded_at = parse_time((cond.condition(job.get("status") or {}, cond.SUCCEEDED) or {}).get("lastTransitionTime"))
        limit = compiler.duration_limit((job.get("spec") or {}).get("measurementTimeout"), self.ctx.settings.measurement_timeout)
        return succeeded_at is not None and self.ctx.clock.now() - succeeded_at > timedelta(seconds=limit), limit

    def judge(self, job: dict[str, Any]) -> Result:
        """Set ValidationFailed on a succeeded Job once its measurements allow a verdict."""
        ctx = self.ctx
        status = job.get("status") or {}
        wanted = dict((job.get("spec") or {}).get("thresholds") or {})
        if cond.condition(status, cond.VALIDATION_FAILED) or self.measurement_failure(job):
            return Result()
        if not wanted:
            # no value to judge, but the measurement may still show the run cannot be trusted
            return Result(min(ctx.settings.poll_interval, 5.0)) if self.bandwidth_unsettled(job) else Result()
        namespace = namespace_of(job)
        bandwidth = ctx.read(BANDWIDTH_MEASUREMENTS, bandwidth_name(job), namespace)
        goodput = ctx.read(GOODPUT_MEASUREMENTS, goodput_name(job), namespace)
        values = thresholds.measured_values(bandwidth, goodput)
        expired, limit = self._expired(job)
        outcome = judge_thresholds(wanted, values, expired=expired, timeout_seconds=limit)
        if outcome is None:
            return Result(min(ctx.settings.poll_interval, 5.0))
        failed, reason, message = outcome
        nodes = group_nodes(job, self.reads.pods(job))

        def mutate(s: dict[str, Any]) -> dict[str, Any] | None:
            if cond.condition(s, cond.VALIDATION_FAILED):
                return None
            if failed and not s.get("failedNodes") and nodes and reason not in CONFIGURATION_ERRORS:
                s["failedNodes"] = seed_failed_nodes(nodes, "ThresholdViolation", message)
            return cond.set_condition(s, cond.VALIDATION_FAILED, "True" if failed else "False", reason, message, ctx.clock.stamp())

        written = ctx.write_status(JOBS, job, mutate)
        if written is not None:
            ctx.event(written, "Warning" if failed else "Normal", reason, message)
        return Result()

    def measurement_failure(self, job: dict[str, Any]) -> bool:
        """Fail a succeeded Job whose bandwidth or training run cannot be trusted (a corrupted,
        failed or cut-off collective; a training run whose loss went nan or inf).

        Whatever bandwidth or goodput its log prints, such a run has not shown its nodes healthy:
        the Job gets ValidationFailed with the measurement's reason and its group's nodes are
        blamed. True when a measurement records a failure (the Job is then judged by it, never by
        thresholds).
        """
        spec = job.get("spec") or {}
        ctx = self.ctx
        namespace = namespace_of(job)
        bandwidth = ctx.read(BANDWIDTH_MEASUREMENTS, bandwidth_name(job), namespace) if spec.get("bandwidthMeasurement") else None
        goodput = ctx.read(GOODPUT_MEASUREMENTS, goodput_name(job), namespace) if spec.get("goodputMeasurement") else None
        failure = measured.first_failure(bandwidth, goodput)
        if failure is None:
            return False
        pods = self.reads.pods(job)

        def mutate(s: dict[str, Any]) -> dict[str, Any] | None:
            if cond.condition(s, cond.VALIDATION_FAILED):
                return None
            condition, entries = measured.failure_outcome({**job, "status": s}, failure, pods)
            s["failedNodes"] = entries
            if condition is None:
                return s
            return cond.set_condition(s, cond.VALIDATION_FAILED, "True", failure.reason, failure.message, ctx.clock.stamp())

        written = ctx.write_status(JOBS, job, mutate)
        if written is not None:
            ctx.event(written, "Warning", failure.reason, failure.message)
        return True

    def bandwidth_unsettled(self, job: Mapping[str, Any]) -> bool:
        """Whether this succeeded Job's verdict waits for its bandwidth or training measurement
        (read from the cache; see :func:`nvcre.runtime.judge.measured.bandwidth_unsettled` and
        :func:`~nvcre.runtime.judge.measured.measurement_unsettled`)."""
        spec = job.get("spec") or {}
        namespace = namespace_of(job)
        bandwidth = self.ctx.cached(BANDWIDTH_MEASUREMENTS, bandwidth_name(job), namespace) if spec.get("bandwidthMeasurement") else None
        goodput = self.ctx.cached(GOODPUT_MEASUREMENTS, goodput_name(job), namespace) if spec.get("goodputMeasurement") else None
        expired, _ = self._expired(job)
        if spec.get("bandwidthMeasurement") and measured.bandwidth_unsettled(job, bandwidth, expired=expired):
            return True
        return bool(spec.get("goodputMeasurement")) and measured.measurement_unsettled(job, goodput, expired=expired)
