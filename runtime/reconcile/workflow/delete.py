"""The Workflow tier's deletion: Jobs, then dependencies, then the claims' volumes, then the finalizer.

In NVCRE's phases: the volumes of the Workflow's claims are stamped (:mod:`..reclaim`), the Jobs
are deleted and waited for, then the dependencies in reverse creation order; the Released
volumes on ``Retain`` are switched to ``Delete`` (waiting while one is still Bound); then the
finalizer goes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nvcre.compiler.vocabulary import LABEL_WORKFLOW, WORKFLOW_FINALIZER

from ...kube.errors import ApiError
from ...kube.resources import JOBS, WORKFLOWS
from ..common import labels, meta, name_of, namespace_of, remove_finalizer, uid_of
from ..context import Context, Result, referenced_by
from .ports import VolumeSteps

__all__ = ["RECLAIM_POLL_SECONDS", "Deletion"]

#: how often a deleted Workflow looks again at a volume still Bound to one of its claims
RECLAIM_POLL_SECONDS = 5.0


class Deletion:
    """Removes what a Workflow being deleted created, then lets it go; the claims' volumes are
    stamped and handed back through ``volumes``."""

    def __init__(self, ctx: Context, volumes: VolumeSteps) -> None:
        self.ctx = ctx
        self.volumes = volumes

    def finalize(self, wf: dict[str, Any]) -> Result:
        ctx = self.ctx
        if WORKFLOW_FINALIZER not in (meta(wf).get("finalizers") or []):
            return Result()
        namespace = namespace_of(wf)
        # while the claims exist: a Job-scoped claim goes with its Job, its volume's stamp must not
        self.volumes.stamp_volumes(ctx, wf)
        try:
            jobs = ctx.kube.list(JOBS, namespace, label_selector=f"{LABEL_WORKFLOW}={name_of(wf)}").items
        except ApiError:
            return Result(1.0)
        remaining = [j for j in jobs if referenced_by(j, wf)]
        for job in remaining:
            if not meta(job).get("deletionTimestamp"):
                ctx.kube.delete(JOBS, name_of(job), namespace, uid=uid_of(job))
        if remaining:
            return Result(1.0)
        for ref in reversed((wf.get("status") or {}).get("dependencyRefs") or []):
            try:
                resource = ctx.kube.resource_for(str(ref.get("apiVersion")), str(ref.get("kind")))
            except ApiError:
                continue
            live = ctx.live(resource, str(ref.get("name")), ref.get("namespace") or None)
            if live is None or not referenced_by(live, wf) and not _labelled_for(live, wf):
                continue
            ctx.kube.delete(resource, name_of(live), ref.get("namespace") or None, uid=uid_of(live))
        if not self.volumes.reclaim_volumes(ctx, wf):
            return Result(RECLAIM_POLL_SECONDS)
        remove_finalizer(ctx, WORKFLOWS, wf, WORKFLOW_FINALIZER)
        return Result()


def _labelled_for(obj: Mapping[str, Any], wf: Mapping[str, Any]) -> bool:
    return labels(obj).get(LABEL_WORKFLOW) == name_of(wf) and not (obj.get("metadata") or {}).get("namespace")
