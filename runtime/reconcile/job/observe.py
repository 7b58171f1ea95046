"""Following a Job's workload once it exists: the TrainJob's state mapped onto the Job.

:class:`WorkloadObserver` reads the TrainJob: gone (deleted by someone else: restart or fail,
blaming no node), not ours, Failed (restart or fail), Succeeded (the Job succeeds, then its
validation runs), suspended (Pending), or running. A workload that passed only after some of
its runs failed and were retried in place or by its Job controller still succeeds, and its
``Succeeded`` message says which runs failed (``judge.retries``, ``judge.retry_note``), with a
Warning Event ``WorkloadAttemptFailed``. While it runs, a pod that keeps failing the
same way (``judge.repeats``) ends the attempt, the running clock is written, a training Job
whose steps stopped coming is stalled (``stall``), and the node health monitor runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ... import compile as compiler
from ...judge import conditions as cond
from ...judge import repeats, retries, retry_note
from ...judge import restart as restarts
from ...judge.stall import stall_message
from ...kube.resources import GOODPUT_MEASUREMENTS, JOBS, TRAINJOBS
from ..common import name_of, namespace_of
from ..context import Context, Result, owned_by
from .names import goodput_name, trainjob_phase, workload_name
from .parts import Failer, HealthChecker, JobReader, Restarter, RunningRecorder, Validator

__all__ = ["WorkloadObserver"]


class WorkloadObserver:
    """Maps a Job's TrainJob onto the Job; handed the parts it hands each outcome to."""

    def __init__(
        self,
        ctx: Context,
        reads: JobReader,
        *,
        failure: Failer,
        restarter: Restarter,
        validation: Validator,
        running: RunningRecorder,
        health: HealthChecker,
    ) -> None:
        self.ctx = ctx
        self.reads = reads
        self.failure = failure
        self.restarter = restarter
        self.validation = validation
        self.running = running
        self.health = health

    def observe(self, job: dict[str, Any]) -> Result:
        """One look at the Job's TrainJob, and what follows from it."""
        ctx = self.ctx
        tj_name = workload_name(job)
        trainjob = ctx.read(TRAINJOBS, tj_name, namespace_of(job))
        if trainjob is None:
            # Deleted by someone else (the controller deletes a workload only with its Job): nothing
            # failed on the nodes, so the Job ends without blaming them.
            message = f"Workload TrainJob/{tj_name} was deleted by someone other than the controller; no node is blamed"
            return self.restarter.restart_or_fail(job, "WorkloadDeleted", message, blame=False)
        if not owned_by(trainjob, job):
            self.failure.fail(job, "WorkloadCreationError", f"TrainJob {tj_name} is not owned by this Job", blame=False)
            return Result()
        phase, detail = trainjob_phase(trainjob)
        if phase == "Failed":
            message = f"Workload TrainJob/{tj_name} failed: {detail}" if detail else f"Workload TrainJob/{tj_name} failed"
            return self.restarter.restart_or_fail(job, "WorkloadFailed", message)
        if phase == "Succeeded":
            return self._succeeded(job, tj_name, detail)
        if phase == "Pending":
            ctx.write_status(
                JOBS,
                job,
                lambda s: cond.set_lifecycle(s, cond.IN_PROGRESS, "WorkloadPending", detail, ctx.clock.stamp()),
                stop_when_terminal=True,
            )
            return Result(ctx.settings.poll_interval)
        pods = self.reads.pods(job)
        repeated = repeats.repeated_failure(pods)
        if repeated is not None:
            return self.restarter.restart_or_fail(job, "WorkloadFailed", f"Workload TrainJob/{tj_name} failed: {repeated.message()}")
        result = self.running.record(job, tj_name, pods)
        stalled = self._stalled(job, trainjob)
        if stalled is not None:
            return stalled
        self.health.check(job, pods)
        return result

    def _succeeded(self, job: dict[str, Any], tj_name: str, detail: str) -> Result:
        """The Job succeeds, its message naming the runs that failed before the ones that counted."""
        ctx = self.ctx
        retried = retries.failed_attempts(self.reads.pods(job))
        completed = f"Workload TrainJob/{tj_name} completed" + (f": {detail}" if detail else "")
        message = retry_note.with_note(completed, retried)
        written = ctx.write_status(
            JOBS,
            job,
            lambda s: cond.set_lifecycle(s, cond.SUCCEEDED, "WorkloadCompleted", message, ctx.clock.stamp()),
            stop_when_terminal=True,
        )
        # Nothing written: the Job was terminal already, and its own event brings it back here.
        if written is None:
            return Result()
        if retried is not None:
            ctx.event(written, "Warning", "WorkloadAttemptFailed", f"Workload TrainJob/{tj_name} {retry_note.note(retried)}")
        return self.validation.judge(written)

    def _stalled(self, job: dict[str, Any], trainjob: Mapping[str, Any]) -> Result | None:
        """Restart, or fail with WorkloadStalled, when the training steps stopped coming."""
        spec = job.get("spec") or {}
        if not spec.get("stallMultiplier") or not spec.get("goodputMeasurement"):
            return None
        fresh = self.ctx.cached(JOBS, name_of(job), namespace_of(job)) or job
        goodput = self.ctx.cached(GOODPUT_MEASUREMENTS, goodput_name(job), namespace_of(job))
        if goodput is None:
            return None
        raw = (goodput.get("spec") or {}).get("sampleInterval") or (spec.get("goodputMeasurement") or {}).get("sampleInterval")
        # the measurement samples at most once a second, however short the interval it is given
        interval = max(1.0, compiler.duration_limit(raw, 60.0))
        evidence = restarts.current_attempt_goodput(goodput.get("status") or {}, fresh.get("status") or {}, trainjob)
        if evidence is None:
            return None
        message = stall_message(spec, fresh.get("status") or {}, evidence, self.ctx.clock.now(), interval)
        if message is None:
            return None
        return self.restarter.restart_or_fail(fresh, "WorkloadStalled", message)
