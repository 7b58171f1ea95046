"""The reads several parts of the Job tier share: its owning Workflow, its pods, its goodput.

:class:`JobReads` holds only the context. The pods are those of the current attempt: after a
checkpoint restart the workload keeps its name, so pods created before the current TrainJob
(the ended attempt's, still draining) are left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nvcre.compiler.vocabulary import LABEL_JOB

from ...judge import restart as restarts
from ...judge.pods import JOBSET_NAME_LABEL, job_pods
from ...kube.resources import GOODPUT_MEASUREMENTS, PODS, TRAINJOBS, WORKFLOWS
from ..common import meta, name_of, namespace_of
from ..context import Context
from .names import goodput_name, workload_name

__all__ = ["JobReads"]


class JobReads:
    """Reads of a Job's surroundings, from the caches (or this process's latest writes)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def workflow_of(self, job: Mapping[str, Any]) -> dict[str, Any] | None:
        """The Workflow that controls the Job, None when there is none (or it is gone)."""
        for ref in meta(job).get("ownerReferences") or []:
            if ref.get("kind") == "Workflow" and ref.get("controller"):
                return self.ctx.read(WORKFLOWS, str(ref.get("name")), namespace_of(job))
        return None

    def pods(self, job: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The pods of the Job's current attempt: labelled for it, or made by its JobSet."""
        store = self.ctx.store(PODS)
        namespace = namespace_of(job)
        candidates = {
            name_of(p): p
            for p in (
                *store.by_label(namespace, LABEL_JOB, name_of(job)),
                *store.by_label(namespace, JOBSET_NAME_LABEL, workload_name(job)),
            )
        }
        pods = job_pods(candidates.values(), name_of(job), workload_name(job))
        status = job.get("status") or {}
        if not int(status.get("restartCount") or 0):
            return pods
        workload = self.ctx.cached(TRAINJOBS, workload_name(job), namespace) if status.get("workloadRef") else None
        return restarts.current_attempt_pods(pods, workload)

    def goodput(self, job: Mapping[str, Any]) -> dict[str, Any] | None:
        """The Job's GoodputMeasurement, None when it has none (yet)."""
        return self.ctx.read(GOODPUT_MEASUREMENTS, goodput_name(job), namespace_of(job))
