"""The Job tier's checkpoint restarts, applying the decisions of ``judge.restart``.

When a workload failed, stalled or vanished, :meth:`Restarts.restart_or_fail` asks
:func:`~nvcre.runtime.judge.restart.choose_restart`; a restart is counted in status first
(:func:`~nvcre.runtime.judge.restart.restarted_status`), announced with two Events, then prepared. Preparing
(:meth:`Restarts.prepare`, each step idempotent, so a crash anywhere is picked up again) folds
the ended attempt into the GoodputMeasurement, then takes the step
:func:`~nvcre.runtime.judge.restart.plan_restart_step` names: remove the old TrainJob in the
foreground, wait for it and its pods to go. The creating part then makes the workload again
under the same name.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from nvcre.compiler.vocabulary import ANNOTATION_GOODPUT_PRIOR_ATTEMPTS

from ...clock import parse_time
from ...judge import conditions as cond
from ...judge import restart as restarts
from ...judge.attribution import choose_failure_pod
from ...judge.pods import JOBSET_NAME_LABEL
from ...judge.restart import RESTART_RETRY_SECONDS, OldWorkload, RestartStep, choose_restart, plan_restart_step
from ...kube.errors import ApiError
from ...kube.resources import GOODPUT_MEASUREMENTS, JOBS, PODS, TRAINJOBS
from ...measure import attempts
from ..common import annotations_of, meta, name_of, namespace_of
from ..context import Context, Result, owned_by
from .names import workload_name
from .parts import Failer, JobReader

__all__ = ["Restarts"]

log = logging.getLogger("nvcre.runtime.reconcile.job")


class Restarts:
    """Checkpoint restarts of a Job's workload; handed the context, the reads and a way to fail."""

    def __init__(self, ctx: Context, reads: JobReader, failure: Failer) -> None:
        self.ctx = ctx
        self.reads = reads
        self.failure = failure

    def restart_or_fail(self, job: dict[str, Any], reason: str, message: str, *, blame: bool = True) -> Result:
        """Count a checkpoint restart when the Job may restart, else fail it with ``reason``."""
        spec, status = job.get("spec") or {}, job.get("status") or {}
        maximum = restarts.max_restarts(spec)
        goodput = self.reads.goodput(job) if maximum is not None else None
        choice = choose_restart(maximum, status.get("restartCount"), ((goodput or {}).get("status") or {}).get("lastCheckpointStep"))
        if not choice.restart:
            self.failure.fail(job, reason, message, blame=blame)
            return Result()
        ctx = self.ctx
        count = choice.attempt - 1
        failed_pod = choose_failure_pod(self.reads.pods(job))
        stamp = ctx.clock.stamp()
        written = ctx.write_status(JOBS, job, lambda s: restarts.restarted_status(s, count, choice.maximum, stamp), stop_when_terminal=True)
        if written is None:
            return Result(RESTART_RETRY_SECONDS)
        ctx.event(written, "Warning", "WorkloadAttemptFailed", restarts.attempt_failure_message(choice.attempt, message, failed_pod))
        ctx.event(written, "Normal", restarts.RESTARTING, restarts.restarting_message(choice.attempt, choice.maximum))
        log.info("restarting workload from checkpoint", extra={"job": name_of(job), "restart": choice.attempt, "cause": reason})
        return self.prepare(written) or Result(RESTART_RETRY_SECONDS)

    def prepare(self, job: dict[str, Any]) -> Result | None:
        """Before the workload of a restarted Job is created again: carry the goodput forward,
        remove the old TrainJob, wait for its pods to go. None when ready."""
        ctx = self.ctx
        status = job.get("status") or {}
        restarting = cond.condition(status, cond.IN_PROGRESS) or {}
        since = parse_time(restarting.get("lastTransitionTime")) if restarting.get("reason") == restarts.RESTARTING else None
        if since is None:
            return None  # the restart's workload was already created once; nothing to prepare
        self._carry_goodput(job, int(status.get("restartCount") or 0), str(restarting.get("message") or ""))
        namespace, tj_name = namespace_of(job), workload_name(job)
        trainjob = ctx.live(TRAINJOBS, tj_name, namespace)
        ours = trainjob if trainjob is not None and owned_by(trainjob, job) else None
        old = (
            None
            if ours is None
            else OldWorkload(parse_time(meta(ours).get("creationTimestamp")), bool(meta(ours).get("deletionTimestamp")))
        )
        leftover = 0 if ours is not None else len(ctx.store(PODS).by_label(namespace, JOBSET_NAME_LABEL, tj_name))
        step = plan_restart_step(since, old, leftover, ctx.clock.now(), ctx.settings.pod_drain_grace)
        if step in (RestartStep.DELETE_OLD, RestartStep.AWAIT_DELETION) and ours is not None:
            # the create of the attempt that ended is no longer the one to look for
            ctx.recent.forget(TRAINJOBS.plural, tj_name, namespace)
            if step is RestartStep.DELETE_OLD:
                # Foreground: the TrainJob stays until its JobSet, Jobs and pods are gone, so the
                # new one cannot meet (or adopt) anything of the old attempt.
                ctx.kube.delete(TRAINJOBS, tj_name, namespace, uid=str(meta(ours).get("uid")), propagation="Foreground")
        if step in (RestartStep.DELETE_OLD, RestartStep.AWAIT_DELETION, RestartStep.AWAIT_DRAIN):
            return Result(RESTART_RETRY_SECONDS)
        return None

    def _carry_goodput(self, job: Mapping[str, Any], restart: int, reason: str) -> None:
        """Fold the ended attempt into the GoodputMeasurement (annotation, then status reset)."""
        ctx = self.ctx
        goodput = self.reads.goodput(job)
        if goodput is None:
            return
        now = ctx.clock.now()
        prior = attempts.PriorAttempts.from_json(annotations_of(goodput).get(ANNOTATION_GOODPUT_PRIOR_ATTEMPTS))
        if prior.interruptions < restart:
            folded = attempts.fold(prior, goodput.get("status") or {}, restart, now)
            patch = {"metadata": {"annotations": {ANNOTATION_GOODPUT_PRIOR_ATTEMPTS: folded.to_json()}}}
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
