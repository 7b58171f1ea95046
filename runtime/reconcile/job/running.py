"""A running Job's scheduling clock: blocked pods pause its time, pods that can never schedule fail it.

:class:`RunningClock` writes ``InProgress``/``WorkloadRunning`` (with the JobSet's own restart
count) and ``workloadStartTime`` on the first visit. While pods are unschedulable it records
``schedulingBlockedSince``; once they waited ``schedulingStallGraceSeconds`` the reason becomes
``WorkloadSchedulingBlocked``, and when they are placed the blocked interval is added to the
start time (the timeout clock was paused). Pods the scheduler says no eviction could ever place
(``judge.scheduling``) fail the Job after the controller's bound, blaming no node.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ...clock import format_time, parse_time
from ...judge import conditions as cond
from ...judge import restart as restarts
from ...judge import scheduling
from ...judge.pods import blocked_pods, scheduler_message
from ...kube.resources import JOBS
from ..context import Context, Result
from .parts import Failer

__all__ = ["RunningClock"]


class RunningClock:
    """The running-state write of a Job; handed the context and a way to fail it."""

    def __init__(self, ctx: Context, failure: Failer) -> None:
        self.ctx = ctx
        self.failure = failure

    def never_placed(self, job: dict[str, Any], blocked: list[dict[str, Any]], now: datetime, grace: float) -> bool:
        """Fail the Job, blaming no node, once its pods have waited the controller's bound on nodes
        where no eviction could make room (``judge/scheduling.py``); True when it failed."""
        since = parse_time((job.get("status") or {}).get("schedulingBlockedSince"))
        bound = max(grace, self.ctx.settings.never_schedulable_timeout)
        if since is None or (now - since).total_seconds() < bound:
            return False
        if not scheduling.can_never_schedule(scheduler_message([pod]) for pod in blocked):
            return False
        waited = int((now - since).total_seconds())
        message = (
            f"Workload pods can never schedule on the group's nodes (waited {waited}s; no eviction would make room, "
            f"so the cluster must change first): {scheduler_message(blocked)}"
        )
        self.failure.fail(job, scheduling.NEVER_SCHEDULABLE_REASON, message, blame=False)
        return True

    def record(self, job: dict[str, Any], tj_name: str, pods: list[dict[str, Any]]) -> Result:
        """Write the running state, and say when to look again."""
        ctx = self.ctx
        now = ctx.clock.now()
        stamp = format_time(now)
        blocked = blocked_pods(pods)
        jobset_restarts = restarts.jobset_restarts(pods)
        spec = job.get("spec") or {}
        grace = float(spec.get("schedulingStallGraceSeconds") or ctx.settings.scheduling_stall_grace)
        if blocked and self.never_placed(job, blocked, now, grace):
            return Result()

        def mutate(status: dict[str, Any]) -> dict[str, Any]:
            if not status.get("workloadStartTime"):
                status["workloadStartTime"] = stamp
            since = parse_time(status.get("schedulingBlockedSince"))
            if blocked:
                if since is None:
                    status["schedulingBlockedSince"] = stamp
                    since = now
                if (now - since).total_seconds() >= grace:
                    message = f"Workload pods are unschedulable: {scheduler_message(blocked)}"
                    return cond.set_lifecycle(status, cond.IN_PROGRESS, "WorkloadSchedulingBlocked", message, stamp)
            elif since is not None:
                started = parse_time(status.get("workloadStartTime")) or since
                paused = now - max(since, started)
                status["workloadStartTime"] = format_time(started + paused)
                status["schedulingResumedTime"] = stamp
                status.pop("schedulingBlockedSince", None)
            message = f"Workload TrainJob/{tj_name} is running"
            if jobset_restarts:
                message += f" (its JobSet restarted {jobset_restarts} time{'s' if jobset_restarts > 1 else ''})"
            return cond.set_lifecycle(status, cond.IN_PROGRESS, "WorkloadRunning", message, stamp)

        ctx.write_status(JOBS, job, mutate, stop_when_terminal=True)
        if blocked:
            return Result(min(ctx.settings.poll_interval, max(1.0, grace / 4)))
        if spec.get("stallMultiplier") and spec.get("goodputMeasurement"):
            return Result(ctx.settings.poll_interval)  # the step clock is checked on every visit
        return Result(ctx.settings.safety_net)
