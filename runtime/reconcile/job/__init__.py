"""The Job tier: one TrainJob per Job, its state mapped onto the Job's conditions.

Flow of one reconcile (NVCRE's Job controller): deletion -> finalizer -> terminal handling
(validation after success) -> once the Job is launched (``judge.launch``: its Workflow created
its dependencies), create the workload and its measurements from the compiler's
``expand_workload`` -> map the TrainJob's conditions -> while running, watch for pods the
scheduler refuses (``schedulingStallGraceSeconds``; the blocked interval pauses the timeout
clock), for stalled training steps, and evaluate the node health monitor on the pods' nodes. A
running Job is visited when its TrainJob, pods, nodes or measurements change; its own timer runs
only while it has a clock to watch (a scheduling stall, stall detection), else it is a slow
safety net. Failures attribute nodes and capture a failure log through ``judge.attribution``.

A Job with ``spec.checkpoint`` restarts instead of failing while ``judge.restart`` allows (a
failed, stalled or vanished workload): the restart is counted in status first, then the old
TrainJob is removed, its pods drain, the goodput measurement carries the attempt's numbers
forward, and the same ``expand_workload`` output is created again under the same name.

:class:`JobReconciler` is the coordinator. Each part is its own object, handed the context and
the few other parts it calls (by the Protocols of :mod:`.parts`), and none holds the
reconciler: :mod:`.create` (launch and workload creation), :mod:`.observe` (the TrainJob's
state), :mod:`.running` (the scheduling clock), :mod:`.restart` (checkpoint restarts),
:mod:`.failure` (Failed, and the Workflow tier's two verdicts), :mod:`.validation` (a succeeded
Job's measurements), :mod:`.health` (the node health monitor), :mod:`.finalize` (deletion) and
:mod:`.reads` (the shared reads). The metric events of a Job (a workload created, a
health-monitor pass, nodes newly found unhealthy) are counted in ``ctx.job_events`` where they
happen.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nvcre.compiler.vocabulary import JOB_FINALIZER

from ...judge import conditions as cond
from ...judge.launch import LAUNCH_POLL_SECONDS, LAUNCH_WAIT_SECONDS
from ...kube.resources import JOBS
from ..context import SAFETY_NET_POLLS, Context, Result
from ..tier import StatusTier
from .create import WorkloadCreator
from .failure import TIMEOUT_TAIL_REASON, JobFailure
from .finalize import JobFinalizer
from .health import HealthWatch
from .names import trainjob_phase, workflow_label, workload_name
from .observe import WorkloadObserver
from .reads import JobReads
from .restart import Restarts
from .running import RunningClock
from .validation import Validation

__all__ = [
    "LAUNCH_POLL_SECONDS",
    "LAUNCH_WAIT_SECONDS",
    "RUNNING_RESYNC_POLLS",
    "TIMEOUT_TAIL_REASON",
    "JobReconciler",
    "trainjob_phase",
    "workflow_label",
    "workload_name",
]

#: A running Job is woken by the events of its TrainJob, pods, nodes and measurements; without
#: a clock of its own to watch (a scheduling stall, stall detection) it comes back only on the
#: safety-net timer. The Workflow keeps the timeout clock.
RUNNING_RESYNC_POLLS = SAFETY_NET_POLLS


class JobReconciler(StatusTier):
    """Reconciles ``nvcre.nvidia.com`` Jobs by handing each step to its part (module docstring).

    It also gives the Workflow tier the Job verdicts it may ask for (``ports.JobVerdicts``).
    """

    resource = JOBS
    finalizer = JOB_FINALIZER  # the compiler sets it when it lowers the Job

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.reads = JobReads(ctx)
        self.failure = JobFailure(ctx, self.reads)
        self.health = HealthWatch(ctx)
        self.validation = Validation(ctx, self.reads)
        self.restarts = Restarts(ctx, self.reads, self.failure)
        self.creator = WorkloadCreator(ctx, self.restarts, self.failure)
        self.observer = WorkloadObserver(
            ctx,
            self.reads,
            failure=self.failure,
            restarter=self.restarts,
            validation=self.validation,
            running=RunningClock(ctx, self.failure),
            health=self.health,
        )
        self.deletion = JobFinalizer(ctx, JOB_FINALIZER)

    def step(self, job: dict[str, Any]) -> Result:
        status = job.get("status") or {}
        life = cond.lifecycle(status)
        if life == cond.SUCCEEDED:
            return self.validation.judge(job)
        if life == cond.FAILED:
            return Result()
        workflow = self.reads.workflow_of(job)
        if not status.get("workloadRef"):
            launch = self.creator.launch(job, workflow)
            if not launch.launched:
                return Result(launch.retry_after)  # the Workflow queues it once it recorded it
            return self.creator.create(job, workflow)
        self.creator.ensure_measurements(job, workflow)
        return self.observer.observe(job)

    def _finalize(self, job: dict[str, Any]) -> Result:
        return self.deletion.finalize(job)

    # ------------------------------------------------------------------ the Workflow tier's seam

    def time_out(self, job: dict[str, Any], message: str) -> dict[str, Any] | None:
        """Failed/JobTimedOut (the Workflow's timeout); the Job as written, None when terminal."""
        return self.failure.time_out(job, message)

    def fail_on_domain(self, job: dict[str, Any], message: str, nodes: Sequence[str]) -> dict[str, Any] | None:
        """Failed/ComputeDomainNotReady, blaming ``nodes`` only."""
        return self.failure.fail_on_domain(job, message, nodes)

    def bandwidth_unsettled(self, job: Mapping[str, Any]) -> bool:
        """Whether a succeeded Job's verdict still waits for its bandwidth measurement."""
        return self.validation.bandwidth_unsettled(job)
