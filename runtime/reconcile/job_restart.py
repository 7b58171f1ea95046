"""The Job tier's checkpoint restarts, and the one failure that never restarts (never placed).

A Job with ``spec.checkpoint`` restarts instead of failing while ``restarts.should_restart``
allows: the restart is counted in status first, then the old TrainJob is removed (foreground,
so nothing of the old attempt can be adopted), its pods drain, and the GoodputMeasurement
carries the ended attempt's numbers forward. The creation part then makes the workload again
under the same name. Pods that can never schedule fail the Job without blaming any node.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ..clock import parse_time
from ..judge import scheduling
from ..judge.attribution import choose_failure_pod
from ..kube.errors import ApiError
from ..kube.resources import GOODPUT_MEASUREMENTS, JOBS, PODS, TRAINJOBS
from ..measure import attempts
from . import conditions as cond
from . import restarts
from .common import annotations_of, meta, name_of, namespace_of
from .context import Result, owned_by
from .job_base import workload_name
from .job_verdicts import JobVerdicts
from .pods import JOBSET_NAME_LABEL, scheduler_message

__all__ = ["JobRestarts"]

log = logging.getLogger("nvcre.runtime.reconcile.job")


class JobRestarts(JobVerdicts):
    """Checkpoint restarts of a Job's workload."""

    def _never_placed(self, job: dict[str, Any], blocked: list[dict[str, Any]], now: datetime, grace: float) -> bool:
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
        self._fail(job, scheduling.NEVER_SCHEDULABLE_REASON, message, blame=False)
        return True

    def _restart_or_fail(self, job: dict[str, Any], reason: str, message: str, *, blame: bool = True) -> Result:
        """Count a checkpoint restart when ``restarts.should_restart`` allows, else fail."""
        goodput = self._goodput(job) if restarts.max_restarts(job.get("spec") or {}) is not None else None
        if not restarts.should_restart(job, (goodput or {}).get("status")):
            self._fail(job, reason, message, blame=blame)
            return Result()
        ctx = self.ctx
        count = int((job.get("status") or {}).get("restartCount") or 0)
        maximum = restarts.max_restarts(job.get("spec") or {}) or 0
        failed_pod = choose_failure_pod(self._pods(job))
        stamp = ctx.clock.stamp()
        written = ctx.write_status(JOBS, job, lambda s: restarts.restarted_status(s, count, maximum, stamp), stop_when_terminal=True)
        if written is None:
            return Result(1.0)
        ctx.event(written, "Warning", "WorkloadAttemptFailed", restarts.attempt_failure_message(count + 1, message, failed_pod))
        ctx.event(written, "Normal", restarts.RESTARTING, restarts.restarting_message(count + 1, maximum))
        log.info("restarting workload from checkpoint", extra={"job": name_of(job), "restart": count + 1, "cause": reason})
        return self._prepare_restart(written) or Result(1.0)

    def _prepare_restart(self, job: dict[str, Any]) -> Result | None:
        """Before the workload of a restarted Job is created again (each step idempotent): carry
        the goodput forward, remove the old TrainJob, wait for its pods to go. None when ready."""
        ctx = self.ctx
        status = job.get("status") or {}
        restart = int(status.get("restartCount") or 0)
        restarting = cond.condition(status, cond.IN_PROGRESS) or {}
        since = parse_time(restarting.get("lastTransitionTime")) if restarting.get("reason") == restarts.RESTARTING else None
        if since is None:
            return None  # the restart's workload was already created once; nothing to prepare
        self._carry_goodput(job, restart, str(restarting.get("message") or ""))
        namespace = namespace_of(job)
        tj_name = workload_name(job)
        trainjob = ctx.live(TRAINJOBS, tj_name, namespace)
        if trainjob is not None and owned_by(trainjob, job):
            created = parse_time(meta(trainjob).get("creationTimestamp"))
            if created is not None and created >= since and not meta(trainjob).get("deletionTimestamp"):
                return None  # created for this restart already (a crash before workloadRef was written)
            # the create of the attempt that ended is no longer the one to look for
            ctx.recent.forget(TRAINJOBS.plural, tj_name, namespace)
            if not meta(trainjob).get("deletionTimestamp"):
                # Foreground: the TrainJob stays until its JobSet, Jobs and pods are gone, so the
                # new one cannot meet (or adopt) anything of the old attempt.
                ctx.kube.delete(TRAINJOBS, tj_name, namespace, uid=str(meta(trainjob).get("uid")), propagation="Foreground")
            return Result(1.0)
        leftover = [p for p in self.ctx.store(PODS).by_label(namespace, JOBSET_NAME_LABEL, tj_name)]
        waited = (ctx.clock.now() - since).total_seconds()
        if leftover and waited < ctx.settings.pod_drain_grace:
            return Result(1.0)
        return None

    def _carry_goodput(self, job: Mapping[str, Any], restart: int, reason: str) -> None:
        """Fold the ended attempt into the GoodputMeasurement (annotation, then status reset)."""
        ctx = self.ctx
        goodput = self._goodput(job)
        if goodput is None:
            return
        now = ctx.clock.now()
        prior = attempts.PriorAttempts.from_json(annotations_of(goodput).get(attempts.PRIOR_ANNOTATION))
        if prior.interruptions < restart:
            folded = attempts.fold(prior, goodput.get("status") or {}, restart, now)
            patch = {"metadata": {"annotations": {attempts.PRIOR_ANNOTATION: folded.to_json()}}}
            try:
                goodput = ctx.kube.merge_patch(GOODPUT_MEASUREMENTS, name_of(goodput), namespace_of(goodput), patch)
            except ApiError as exc:
                log.info("goodput priors not written yet", extra={"job": name_of(job), "error": exc.message})
                return
        stamp = ctx.clock.stamp()
        ctx.write_status(
            GOODPUT_MEASUREMENTS,
            goodput,
            lambda s: restarts.reset_goodput_status(s, restart, attempts.pending_interruption(s, reason, now), stamp),
        )
