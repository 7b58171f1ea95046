"""The Job tier's verdicts: node health while running, failure, timeout, thresholds after success.

``_check_health`` evaluates the Job's node health monitor (CEL) over the nodes its pods run on
and marks HardwareFailed; ``_fail`` ends a Job Failed, seeding the nodes to blame and a failure
log; ``time_out`` and ``fail_on_domain`` are the Workflow tier's ways to end a Job (reached
through a Protocol it is handed); ``_judge_thresholds`` sets ValidationFailed once a succeeded
Job's measurements answer or their time runs out.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from nvcre.compiler.durations import duration_limit

from ..clock import parse_time
from ..judge.attribution import group_nodes
from ..judge import measured
from ..judge.health import HARDWARE_FAILURE_REASON, hardware_failed_message
from ..judge.thresholds import CONFIGURATION_ERRORS
from ..kube.resources import BANDWIDTH_MEASUREMENTS, GOODPUT_MEASUREMENTS, JOBS, NODES
from . import conditions as cond
from . import verdicts
from .common import name_of, namespace_of
from .context import Result
from .job_base import JobTierBase, workflow_label
from .pods import bound_nodes

__all__ = ["TIMEOUT_TAIL_REASON", "JobVerdicts"]

TIMEOUT_TAIL_REASON = "Timeout"


class JobVerdicts(JobTierBase):
    """How a Job is judged: health while running, Failed, ValidationFailed."""

    def _check_health(self, job: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        monitor = ((job.get("spec") or {}).get("nodeHealthMonitor") or {}).get("cel") or {}
        expression = str(monitor.get("expression") or "")
        if not expression:
            return
        ctx = self.ctx
        began = time.perf_counter()
        nodes = bound_nodes(pods, labelled_for=name_of(job))
        if not nodes:
            return  # no pod on a node yet: nothing to evaluate
        node_objs = {n: o for n in nodes if (o := ctx.cached(NODES, n, None)) is not None}
        unhealthy = verdicts.unhealthy_nodes(expression, node_objs, self.ctx.health)
        namespace, name, workflow = namespace_of(job), name_of(job), workflow_label(job)
        ctx.job_events.health_checked(namespace, name, workflow, time.perf_counter() - began, len(node_objs))
        if not unhealthy:
            return
        seen: dict[str, Any] = {}

        def mutate(status: dict[str, Any]) -> dict[str, Any]:
            before = {e.get("name") for e in status.get("failedNodes") or [] if e.get("reason") == HARDWARE_FAILURE_REASON}
            seen["flip"] = not cond.is_true(status, cond.HARDWARE_FAILED)
            seen["new"] = sorted({e["name"] for e in unhealthy} - before)
            status["failedNodes"] = verdicts.merge_failed_nodes(status.get("failedNodes") or [], unhealthy)
            flagged = [e["name"] for e in status["failedNodes"] if e.get("reason") == HARDWARE_FAILURE_REASON]
            message = hardware_failed_message(flagged)
            return cond.set_condition(status, cond.HARDWARE_FAILED, "True", HARDWARE_FAILURE_REASON, message, ctx.clock.stamp())

        written = ctx.write_status(JOBS, job, mutate, stop_when_terminal=True)
        if written is None:
            return
        ctx.job_events.hardware_failures(namespace, name, workflow, seen.get("new") or [], first=bool(seen.get("flip")))
        if seen.get("flip"):
            ctx.event(written, "Warning", HARDWARE_FAILURE_REASON, hardware_failed_message([e["name"] for e in unhealthy]))

    def _fail(
        self,
        job: dict[str, Any],
        reason: str,
        message: str,
        *,
        log_reason: str | None = None,
        timed_out: bool = False,
        blame: bool = True,
        blame_nodes: Sequence[str] | None = None,
    ) -> dict[str, Any] | None:
        """Failed with ``reason``; seed failed nodes and capture a failure log when none yet.
        Returns the Job as written, None when nothing was written (it was terminal already).

        A timed-out Job whose pods never reached a node blames nobody: nothing ran there, and a
        full cluster is not a fault of the nodes the group was meant for. ``blame_nodes`` names
        the nodes to blame instead of the whole group (with NVCRE's ``WorkloadFailed``; the
        message says why).
        """
        ctx = self.ctx
        pods = self._pods(job)
        ran = any((p.get("spec") or {}).get("nodeName") for p in pods)
        nodes = group_nodes(job, pods) if blame and (ran or not timed_out) else []
        if blame_nodes is not None:
            nodes = list(blame_nodes)
        failure_log = None
        if not (job.get("status") or {}).get("failureLog"):
            failure_log = verdicts.failure_log(ctx.kube, pods, reason_override=log_reason)

        def mutate(status: dict[str, Any]) -> dict[str, Any]:
            if not status.get("failedNodes") and nodes:
                status["failedNodes"] = verdicts.seed_failed_nodes(nodes, "WorkloadFailed", message)
            if failure_log and not status.get("failureLog"):
                status["failureLog"] = failure_log
            return cond.set_lifecycle(status, cond.FAILED, reason, message, ctx.clock.stamp())

        return ctx.write_status(JOBS, job, mutate, stop_when_terminal=True)

    def time_out(self, job: dict[str, Any], message: str) -> dict[str, Any] | None:
        """The Workflow's timeout: Failed/JobTimedOut with a log tail (launcher preferred).
        Returns the Job as written, None when it was terminal already."""
        return self._fail(job, "JobTimedOut", message, log_reason=TIMEOUT_TAIL_REASON, timed_out=True)

    def fail_on_domain(self, job: dict[str, Any], message: str, nodes: Sequence[str]) -> dict[str, Any] | None:
        """Failed/ComputeDomainNotReady, blaming ``nodes`` only (see :mod:`nvcre.runtime.judge.domains`)."""
        return self._fail(job, "ComputeDomainNotReady", message, blame_nodes=nodes)

    def _judge_thresholds(self, job: dict[str, Any]) -> Result:
        ctx = self.ctx
        status = job.get("status") or {}
        thresholds = dict((job.get("spec") or {}).get("thresholds") or {})
        if cond.condition(status, cond.VALIDATION_FAILED) or self._judge_measurement_failure(job):
            return Result()
        if not thresholds:
            # no value to judge, but the measurement may still show the run cannot be trusted
            return Result(min(ctx.settings.poll_interval, 5.0)) if self.bandwidth_unsettled(job) else Result()
        namespace = namespace_of(job)
        bandwidth = ctx.read(BANDWIDTH_MEASUREMENTS, f"{name_of(job)}-bandwidth", namespace)
        goodput = ctx.read(GOODPUT_MEASUREMENTS, f"{name_of(job)}-goodput", namespace)
        values = verdicts.threshold_values(bandwidth, goodput)
        succeeded_at = parse_time((cond.condition(status, cond.SUCCEEDED) or {}).get("lastTransitionTime"))
        spec_timeout = (job.get("spec") or {}).get("measurementTimeout")
        limit = duration_limit(spec_timeout, ctx.settings.measurement_timeout)
        expired = succeeded_at is not None and ctx.clock.now() - succeeded_at > timedelta(seconds=limit)
        outcome = verdicts.judge_thresholds(thresholds, values, expired=expired, timeout_seconds=limit)
        if outcome is None:
            return Result(min(ctx.settings.poll_interval, 5.0))
        failed, reason, message = outcome
        nodes = group_nodes(job, self._pods(job))

        def mutate(s: dict[str, Any]) -> dict[str, Any] | None:
            if cond.condition(s, cond.VALIDATION_FAILED):
                return None
            if failed and not s.get("failedNodes") and nodes and reason not in CONFIGURATION_ERRORS:
                s["failedNodes"] = verdicts.seed_failed_nodes(nodes, "ThresholdViolation", message)
            return cond.set_condition(s, cond.VALIDATION_FAILED, "True" if failed else "False", reason, message, ctx.clock.stamp())

        written = ctx.write_status(JOBS, job, mutate)
        if written is not None:
            ctx.event(written, "Warning" if failed else "Normal", reason, message)
        return Result()

    def _judge_measurement_failure(self, job: dict[str, Any]) -> bool:
        """Fail a succeeded Job whose bandwidth run cannot be trusted (corrupted, failed, cut off).

        Whatever bandwidth its rows print, such a run has not shown its nodes healthy: the Job gets
        ValidationFailed with the measurement's reason and its group's nodes are blamed. True when
        the measurement records a failure (the Job is then judged by it, never by thresholds).
        """
        if not (job.get("spec") or {}).get("bandwidthMeasurement"):
            return False
        ctx = self.ctx
        bandwidth = ctx.read(BANDWIDTH_MEASUREMENTS, f"{name_of(job)}-bandwidth", namespace_of(job))
        failure = measured.measurement_failure(bandwidth) if bandwidth is not None else None
        if failure is None:
            return False
        pods = self._pods(job)

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
        """Whether this succeeded Job's verdict waits for its bandwidth measurement (read from the
        cache; see :func:`nvcre.runtime.judge.measured.bandwidth_unsettled`)."""
        ctx = self.ctx
        if not (job.get("spec") or {}).get("bandwidthMeasurement"):
            return False
        bandwidth = ctx.cached(BANDWIDTH_MEASUREMENTS, f"{name_of(job)}-bandwidth", namespace_of(job))
        succeeded_at = parse_time((cond.condition(job.get("status") or {}, cond.SUCCEEDED) or {}).get("lastTransitionTime"))
        limit = duration_limit((job.get("spec") or {}).get("measurementTimeout"), ctx.settings.measurement_timeout)
        expired = succeeded_at is not None and ctx.clock.now() - succeeded_at > timedelta(seconds=limit)
        return measured.bandwidth_unsettled(job, bandwidth, expired=expired)
