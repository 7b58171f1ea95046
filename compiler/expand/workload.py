"""``expand_workload``: a Job's TrainJob and the measurements it asks for.

The TrainJob ``<job>-workload`` is the Job's ``spec.workload.trainJob`` as written (already pinned
by :mod:`.job`), owned by the Job, labelled ``nvcre.nvidia.com/job=<job>`` plus the Job's
``workloadMetadata`` labels. The worker replicated job's pods (``node`` by default) carry the same
job label through the controller's runtime patch, so pods can be found by label. Passes:
``instantiate_trainjob``, ``label_worker_pods``, ``check_trainjob`` (validator).

A ``bandwidthMeasurement`` in the Job gives a ``BandwidthMeasurement`` ``<job>-bandwidth``, a
``goodputMeasurement`` a ``GoodputMeasurement`` ``<job>-goodput``; both are owned by the Workflow
(so they outlive a retried Job) and carry the Job's UID in ``nvcre.nvidia.com/job-uid``. In a
diagnose Workflow they are owned by the Job instead: a round's Jobs are retired when the round ends,
and the Workflow keeps each group's bandwidth in its ``iterationHistory``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..diagnostics import CompileError, Diagnostic, error
from ..pipeline import Pass
from ..unit import Context, Unit
from ..vocabulary import ANNOTATION_JOB_UID, API_VERSION, GROUP, LABEL_JOB, LABEL_WORKFLOW
from .context import ExpandContext, expand_context, run_expansion
from .dependencies import workflow_dependencies
from .meta import (
    MAX_K8S_NAME_LEN,
    MAX_WORKLOAD_NAME_LEN,
    managed_labels,
    name_of,
    owner_reference,
    short_name,
    uid_of,
)
from .placement import add_controller_patch, is_mpi, replicated_job_names

__all__ = ["TRAINJOB_PASSES", "WORKER_JOB", "expand_workload", "worker_job_name"]

TRAINJOB_API_VERSION = "trainer.kubeflow.org/v1alpha1"
WORKER_JOB = "node"


def _ctx(ctx: Context) -> ExpandContext:
    if not isinstance(ctx, ExpandContext):
        raise TypeError(f"expansion passes run with an ExpandContext, got {type(ctx).__name__}")
    return ctx


def _job_spec(job: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = job.get("spec")
    train_job = ((spec or {}).get("workload") or {}).get("trainJob") if isinstance(spec, Mapping) else None
    if not isinstance(train_job, Mapping):
        raise CompileError([error("InvalidJob", "spec.workload.trainJob", "required")])
    return spec  # type: ignore[return-value]


def worker_job_name(names: tuple[str, ...]) -> str:
    """The replicated job whose pods do the work: ``node`` when the runtime has one, else the first non-launcher."""
    if WORKER_JOB in names:
        return WORKER_JOB
    others = [n for n in names if n != "launcher"]
    return others[0] if others else WORKER_JOB


def instantiate_trainjob(unit: Unit, ctx: Context) -> tuple[Unit, list[Diagnostic]]:
    x = _ctx(ctx)
    job = x.job
    spec = _job_spec(job)
    job_name = name_of(job, "Job")
    meta_labels = dict(((spec.get("workloadMetadata") or {}).get("labels")) or {})
    metadata: dict[str, Any] = {
        "name": short_name(f"{job_name}-workload", MAX_WORKLOAD_NAME_LEN),
        "namespace": (job.get("metadata") or {}).get("namespace"),
        "labels": managed_labels({**meta_labels, LABEL_JOB: job_name}),
        "ownerReferences": [owner_reference(job, "Job")],
    }
    train_job = {
        "apiVersion": TRAINJOB_API_VERSION,
        "kind": "TrainJob",
        "metadata": metadata,
        "spec": copy.deepcopy(dict(spec["workload"]["trainJob"])),
    }
    return replace(unit, workflow=train_job), []


def _worker(x: ExpandContext, train_job_spec: Mapping[str, Any]) -> str:
    return worker_job_name(replicated_job_names(train_job_spec, workflow_dependencies(x.workflow)))


def label_worker_pods(unit: Unit, ctx: Context) -> tuple[Unit, list[Diagnostic]]:
    x = _ctx(ctx)
    doc = copy.deepcopy(dict(unit.workflow or {}))
    job_name = name_of(x.job, "Job")
    worker = _worker(x, doc["spec"])
    doc["spec"] = add_controller_patch(doc["spec"], {worker: {"metadata": {"labels": {LABEL_JOB: job_name}}}})
    return replace(unit, workflow=doc), []


def check_trainjob(unit: Unit, ctx: Context) -> tuple[Unit, list[Diagnostic]]:
    doc = unit.workflow or {}
    ref = (doc.get("spec") or {}).get("runtimeRef") or {}
    problems: list[Diagnostic] = []
    if not ref.get("name"):
        problems.append(error("InvalidJob", "spec.workload.trainJob.runtimeRef.name", "a TrainJob needs the runtime it runs on"))
    if not (doc.get("metadata") or {}).get("namespace"):
        problems.append(error("MissingNamespace", "metadata.namespace", "the Job has no namespace"))
    return unit, problems


TRAINJOB_PASSES: tuple[Pass, ...] = (
    Pass("instantiate_trainjob", instantiate_trainjob),
    Pass("label_worker_pods", label_worker_pods),
    Pass("check_trainjob", check_trainjob, validator=True),
)


def _measurement(kind: str, suffix: str, config: Mapping[str, Any], job: Mapping[str, Any], workflow: Mapping[str, Any]) -> dict[str, Any]:
    job_name = name_of(job, "Job")
    spec: dict[str, Any] = {"jobRef": {"apiGroup": GROUP, "kind": "Job", "name": job_name}}
    for key in ("logProfileRef", "sampleInterval", "testType"):
        if config.get(key):
            spec[key] = config[key]
    return {
        "apiVersion": API_VERSION,
        "kind": kind,
        "metadata": {
            "name": short_name(f"{job_name}-{suffix}", MAX_K8S_NAME_LEN),
            "namespace": (job.get("metadata") or {}).get("namespace"),
            "labels": managed_labels({LABEL_JOB: job_name, LABEL_WORKFLOW: name_of(workflow, "Workflow")}),
            "annotations": {ANNOTATION_JOB_UID: uid_of(job, "Job")},
            "ownerReferences": [owner_reference(job, "Job") if _diagnose(workflow) else owner_reference(workflow, "Workflow")],
        },
        "spec": spec,
    }


def _diagnose(workflow: Mapping[str, Any]) -> bool:
    return (((workflow.get("spec") or {}).get("orchestration") or {}).get("diagnose")) is not None


def expand_workload(job: Mapping[str, Any], workflow: Mapping[str, Any], *, check_purity: bool = False) -> list[dict[str, Any]]:
    """The TrainJob, then the BandwidthMeasurement and GoodputMeasurement the Job asks for."""
    spec = _job_spec(job)
    # The Job already holds the overridden template; the Workflow is read only for its runtime.
    workflow = {**workflow, "spec": {k: v for k, v in (workflow.get("spec") or {}).items() if k != "overrides"}}
    launch = "mpi" if is_mpi(replicated_job_names(spec["workload"]["trainJob"], workflow_dependencies(workflow))) else "single"
    ctx = expand_context(workflow, launch=launch, job=job)
    out = [run_expansion(TRAINJOB_PASSES, ctx, check_purity=check_purity)]
    if spec.get("bandwidthMeasurement"):
        out.append(_measurement("BandwidthMeasurement", "bandwidth", spec["bandwidthMeasurement"], job, workflow))
    if spec.get("goodputMeasurement"):
        out.append(_measurement("GoodputMeasurement", "goodput", spec["goodputMeasurement"], job, workflow))
    return out
