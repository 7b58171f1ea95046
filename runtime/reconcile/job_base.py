"""The Job tier's shared ground: names it derives from a Job and what every part of it reads.

``workload_name`` (the TrainJob a Job runs), ``workflow_label`` (the metric series label) and
``trainjob_phase`` are pure; :class:`JobTierBase` holds the context and the reads the creation,
restart, verdict and observing parts of the tier all use: the owning Workflow, the Job's pods
of the current attempt, and its GoodputMeasurement.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nvcre.compiler.vocabulary import LABEL_WORKFLOW

from ..kube.resources import GOODPUT_MEASUREMENTS, PODS, TRAINJOBS, WORKFLOWS
from . import conditions as cond
from . import restarts
from .common import meta, name_of, namespace_of
from .context import Context
from .tier import StatusTier
from .pods import JOB_LABEL, JOBSET_NAME_LABEL, job_pods

__all__ = ["JobTierBase", "trainjob_phase", "workflow_label", "workload_name"]


def workload_name(job: Mapping[str, Any]) -> str:
    ref = (job.get("status") or {}).get("workloadRef") or {}
    return str(ref.get("name") or f"{name_of(job)}-workload")


def workflow_label(job: Mapping[str, Any]) -> str:
    """The ``workflow`` label of the Job's metric series: its ``nvcre.nvidia.com/workflow`` label."""
    return str((meta(job).get("labels") or {}).get(LABEL_WORKFLOW) or "")


def trainjob_phase(trainjob: Mapping[str, Any]) -> tuple[str, str]:
    """(phase, message) of a TrainJob: Failed is checked before Complete; suspend is Pending."""
    status = trainjob.get("status") or {}
    for type_, phase in (("Failed", "Failed"), ("Complete", "Succeeded")):
        found = cond.condition(status, type_)
        if found and found.get("status") == "True":
            return phase, str(found.get("message") or "")
    if (trainjob.get("spec") or {}).get("suspend"):
        return "Pending", "TrainJob is suspended (spec.suspend=true), waiting for it to be resumed"
    return "Running", ""


class JobTierBase(StatusTier):
    """The context and the shared reads of the Job tier's parts."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def _workflow_of(self, job: Mapping[str, Any]) -> dict[str, Any] | None:
        for ref in meta(job).get("ownerReferences") or []:
            if ref.get("kind") == "Workflow" and ref.get("controller"):
                return self.ctx.read(WORKFLOWS, str(ref.get("name")), namespace_of(job))
        return None

    def _pods(self, job: Mapping[str, Any]) -> list[dict[str, Any]]:
        store = self.ctx.store(PODS)
        namespace = namespace_of(job)
        candidates = {
            name_of(p): p
            for p in (
                *store.by_label(namespace, JOB_LABEL, name_of(job)),
                *store.by_label(namespace, JOBSET_NAME_LABEL, workload_name(job)),
            )
        }
        pods = job_pods(candidates.values(), name_of(job), workload_name(job))
        if not int((job.get("status") or {}).get("restartCount") or 0):
            return pods
        workload = self.ctx.cached(TRAINJOBS, workload_name(job), namespace) if (job.get("status") or {}).get("workloadRef") else None
        return restarts.current_attempt_pods(pods, workload)

    def _goodput(self, job: Mapping[str, Any]) -> dict[str, Any] | None:
        return self.ctx.read(GOODPUT_MEASUREMENTS, f"{name_of(job)}-goodput", namespace_of(job))
