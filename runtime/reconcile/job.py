"""The Job tier: one TrainJob per Job, its state mapped onto the Job's conditions.

Flow of one reconcile (NVCRE's Job controller): deletion -> finalizer -> terminal handling
(threshold verdict after success) -> once the Workflow recorded the Job's launch (its
dependencies exist), create the workload and its measurements from the compiler's
``expand_workload`` -> map the TrainJob's conditions -> while running, watch for
pods the scheduler refuses (``schedulingStallGraceSeconds``; the blocked interval pauses the
timeout clock) and evaluate the node health monitor on the pods' nodes. A running Job is
visited when its TrainJob, pods, nodes or measurements change; its own timer runs only while
it has a clock to watch (a scheduling stall, stall detection), else it is a slow safety net. Failures attribute
nodes and capture a failure log through ``judge.attribution``.

The metric events of a Job (a workload created, a health-monitor pass with its duration and
node count, nodes newly found unhealthy) are counted in ``ctx.job_events`` where they happen.

A Job with ``spec.checkpoint`` restarts instead of failing while ``restarts.should_restart``
allows (a failed, stalled or vanished workload): the restart is counted in status first, then
the old TrainJob is removed, its pods drain, the goodput measurement carries the attempt's
numbers forward, and the same ``expand_workload`` output is created again under the same name.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from nvcre.compiler.durations import duration_limit
from nvcre.compiler.vocabulary import LABEL_JOB

from .. import compile as compiler
from ..clock import format_time, parse_time
from ..judge import repeats
from ..kube.errors import ApiError
from ..kube.resources import GOODPUT_MEASUREMENTS, JOBS, PODS, TRAINJOBS
from . import conditions as cond
from . import restarts, verdicts
from .common import meta, name_of, namespace_of, remove_finalizer
from .context import SAFETY_NET_POLLS, Result, owned_by
from .job_base import trainjob_phase, workflow_label, workload_name
from .job_create import LAUNCH_POLL_SECONDS, LAUNCH_WAIT_SECONDS, JobWorkloadCreation
from .job_verdicts import TIMEOUT_TAIL_REASON
from .pods import blocked_pods, live_pods, scheduler_message
from .stall import stall_message

__all__ = [
    "FINALIZER",
    "LAUNCH_POLL_SECONDS",
    "LAUNCH_WAIT_SECONDS",
    "RUNNING_RESYNC_POLLS",
    "TIMEOUT_TAIL_REASON",
    "JobReconciler",
    "trainjob_phase",
    "workflow_label",
    "workload_name",
]

log = logging.getLogger("nvcre.runtime.reconcile.job")

FINALIZER = compiler.JOB_FINALIZER  # the compiler sets it when it lowers the Job
#: A running Job is woken by the events of its TrainJob, pods, nodes and measurements; without
#: a clock of its own to watch (a scheduling stall, stall detection) it comes back only on the
#: safety-net timer. The Workflow keeps the timeout clock.
RUNNING_RESYNC_POLLS = SAFETY_NET_POLLS


class JobReconciler(JobWorkloadCreation):
    """Reconciles ``nvcre.nvidia.com`` Jobs (creation, restarts and verdicts live in the parts
    it is built from: :mod:`.job_create`, :mod:`.job_restart`, :mod:`.job_verdicts`)."""

    resource = JOBS
    finalizer = FINALIZER

    # ------------------------------------------------------------------ entry

    def step(self, job: dict[str, Any]) -> Result:
        status = job.get("status") or {}
        life = cond.lifecycle(status)
        if life == cond.SUCCEEDED:
            return self._judge_thresholds(job)
        if life == cond.FAILED:
            return Result()
        workflow = self._workflow_of(job)
        if not status.get("workloadRef"):
            if not self._launched(job, workflow):
                return Result(LAUNCH_POLL_SECONDS)  # the Workflow queues it once it recorded it
            return self._create_workload(job, workflow)
        self._ensure_measurements(job, workflow)
        return self._observe_workload(job)

    # ------------------------------------------------------------------ observing

    def _observe_workload(self, job: dict[str, Any]) -> Result:
        ctx = self.ctx
        tj_name = workload_name(job)
        trainjob = ctx.read(TRAINJOBS, tj_name, namespace_of(job))
        if trainjob is None:
            # Deleted by someone else (the controller deletes a workload only with its Job): nothing
            # failed on the nodes, so the Job ends without blaming them.
            message = f"Workload TrainJob/{tj_name} was deleted by someone other than the controller; no node is blamed"
            return self._restart_or_fail(job, "WorkloadDeleted", message, blame=False)
        if not owned_by(trainjob, job):
            self._fail(job, "WorkloadCreationError", f"TrainJob {tj_name} is not owned by this Job", blame=False)
            return Result()
        phase, detail = trainjob_phase(trainjob)
        if phase == "Failed":
            message = f"Workload TrainJob/{tj_name} failed: {detail}" if detail else f"Workload TrainJob/{tj_name} failed"
            return self._restart_or_fail(job, "WorkloadFailed", message)
        if phase == "Succeeded":
            message = f"Workload TrainJob/{tj_name} completed" + (f": {detail}" if detail else "")
            written = ctx.write_status(
                JOBS,
                job,
                lambda s: cond.set_lifecycle(s, cond.SUCCEEDED, "WorkloadCompleted", message, ctx.clock.stamp()),
                stop_when_terminal=True,
            )
            # Nothing written: the Job was terminal already, and its own event brings it back here.
            return self._judge_thresholds(written) if written is not None else Result()
        if phase == "Pending":
            ctx.write_status(
                JOBS,
                job,
                lambda s: cond.set_lifecycle(s, cond.IN_PROGRESS, "WorkloadPending", detail, ctx.clock.stamp()),
                stop_when_terminal=True,
            )
            return Result(ctx.settings.poll_interval)
        pods = self._pods(job)
        repeated = repeats.repeated_failure(pods)
        if repeated is not None:
            return self._restart_or_fail(job, "WorkloadFailed", f"Workload TrainJob/{tj_name} failed: {repeated.message()}")
        result = self._running(job, tj_name, pods)
        stalled = self._stalled(job, trainjob)
        if stalled is not None:
            return stalled
        self._check_health(job, pods)
        return result

    def _running(self, job: dict[str, Any], tj_name: str, pods: list[dict[str, Any]]) -> Result:
        ctx = self.ctx
        now = ctx.clock.now()
        stamp = format_time(now)
        blocked = blocked_pods(pods)
        jobset_restarts = restarts.jobset_restarts(pods)
        spec = job.get("spec") or {}
        grace = float(spec.get("schedulingStallGraceSeconds") or ctx.settings.scheduling_stall_grace)
        if blocked and self._never_placed(job, blocked, now, grace):
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

    def _stalled(self, job: dict[str, Any], trainjob: Mapping[str, Any]) -> Result | None:
        """Restart, or fail with WorkloadStalled, when the training steps stopped coming."""
        spec = job.get("spec") or {}
        if not spec.get("stallMultiplier") or not spec.get("goodputMeasurement"):
            return None
        fresh = self.ctx.cached(JOBS, name_of(job), namespace_of(job)) or job
        goodput = self.ctx.cached(GOODPUT_MEASUREMENTS, f"{name_of(job)}-goodput", namespace_of(job))
        if goodput is None:
            return None
        raw = (goodput.get("spec") or {}).get("sampleInterval") or (spec.get("goodputMeasurement") or {}).get("sampleInterval")
        # the measurement samples at most once a second, however short the interval it is given
        interval = max(1.0, duration_limit(raw, 60.0))
        evidence = restarts.current_attempt_goodput(goodput.get("status") or {}, fresh.get("status") or {}, trainjob)
        if evidence is None:
            return None
        message = stall_message(spec, fresh.get("status") or {}, evidence, self.ctx.clock.now(), interval)
        if message is None:
            return None
        return self._restart_or_fail(fresh, "WorkloadStalled", message)

    # ------------------------------------------------------------------ deletion

    def _finalize(self, job: dict[str, Any]) -> Result:
        ctx = self.ctx
        if FINALIZER not in (meta(job).get("finalizers") or []):
            return Result()
        namespace = namespace_of(job)
        tj_name = workload_name(job)
        trainjob = ctx.live(TRAINJOBS, tj_name, namespace)
        if trainjob is not None and owned_by(trainjob, job) and not meta(trainjob).get("deletionTimestamp"):
            ctx.kube.delete(TRAINJOBS, tj_name, namespace, uid=str(meta(trainjob).get("uid")))
        try:
            selector = f"jobset.sigs.k8s.io/jobset-name={tj_name}"
            running = live_pods(ctx.kube.list(PODS, namespace, label_selector=selector).items)
            running += live_pods(ctx.kube.list(PODS, namespace, label_selector=f"{LABEL_JOB}={name_of(job)}").items)
        except ApiError:
            running = []
        still_there = (trainjob is not None and owned_by(trainjob, job)) or bool(running)
        if still_there:
            started = verdicts.drain_anchor(job)
            waited = (ctx.clock.now() - started).total_seconds() if started else 0.0
            if waited < ctx.settings.pod_drain_grace:
                return Result(1.0)
            ctx.event(
                job,
                "Warning",
                "PodDrainTimeout",
                f"Removed the finalizer after {int(waited)}s with {len(running)} workload pod(s) still present",
            )
        remove_finalizer(ctx, JOBS, job, FINALIZER)
        return Result()
