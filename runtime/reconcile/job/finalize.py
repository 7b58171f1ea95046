"""A Job being deleted: its TrainJob removed, its pods drained (bounded), then the finalizer off.

The finalizer stays until the workload's pods are gone, so the Workflow, which deletes the
Job-scoped dependencies (a ComputeDomain, a ResourceClaimTemplate) once the Job is gone, never
takes them from pods that still hold them. The wait is bounded by the pod-drain grace, counted
from :func:`drain_anchor`; past it the finalizer goes with a ``PodDrainTimeout`` Warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from nvcre.compiler.vocabulary import LABEL_JOB

from ...clock import parse_time
from ...judge import conditions as cond
from ...judge.pods import JOBSET_NAME_LABEL, live_pods
from ...kube.errors import ApiError
from ...kube.resources import JOBS, PODS, TRAINJOBS
from ..common import meta, name_of, namespace_of, past_drain_grace, remove_finalizer
from ..context import Context, Result, owned_by
from .names import workload_name

__all__ = ["JobFinalizer", "drain_anchor"]


def drain_anchor(job: Mapping[str, Any]) -> datetime | None:
    """When the pod-drain wait started: the later of the terminal condition time and deletion."""
    status = job.get("status") or {}
    moments = [parse_time((job.get("metadata") or {}).get("deletionTimestamp"))]
    for type_ in (cond.SUCCEEDED, cond.FAILED):
        found = cond.condition(status, type_)
        if found and found.get("status") == "True":
            moments.append(parse_time(found.get("lastTransitionTime")))
    known = [m for m in moments if m is not None]
    return max(known) if known else None


class JobFinalizer:
    """Clean-up of a Job being deleted; handed the context and the finalizer it removes."""

    def __init__(self, ctx: Context, finalizer: str) -> None:
        self.ctx = ctx
        self.finalizer = finalizer

    def finalize(self, job: dict[str, Any]) -> Result:
        """Delete the TrainJob, wait for the pods (bounded), remove the finalizer."""
        ctx = self.ctx
        if self.finalizer not in (meta(job).get("finalizers") or []):
            return Result()
        namespace = namespace_of(job)
        tj_name = workload_name(job)
        trainjob = ctx.live(TRAINJOBS, tj_name, namespace)
        if trainjob is not None and owned_by(trainjob, job) and not meta(trainjob).get("deletionTimestamp"):
            ctx.kube.delete(TRAINJOBS, tj_name, namespace, uid=str(meta(trainjob).get("uid")))
        try:
            running = live_pods(ctx.kube.list(PODS, namespace, label_selector=f"{JOBSET_NAME_LABEL}={tj_name}").items)
            running += live_pods(ctx.kube.list(PODS, namespace, label_selector=f"{LABEL_JOB}={name_of(job)}").items)
        except ApiError:
            running = []
        still_there = (trainjob is not None and owned_by(trainjob, job)) or bool(running)
        if still_there:
            started = drain_anchor(job)
            waited = past_drain_grace(ctx, started)
            if waited is None:
                return Result(1.0)
            ctx.event(
                job,
                "Warning",
                "PodDrainTimeout",
                f"Removed the finalizer after {int(waited)}s with {len(running)} workload pod(s) still present",
            )
        remove_finalizer(ctx, JOBS, job, self.finalizer)
        return Result()
