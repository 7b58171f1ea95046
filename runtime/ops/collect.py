"""Collect everything a run's verdict is built from, as the API server holds it.

A Certification's verdict needs the Certification, its Workflows (by ``categoryStatuses`` refs
and the certification label), their Jobs, the measurement objects, the node-results ConfigMaps
and, for failed groups, the failure-log excerpt the Job recorded. This module reads them (list
calls by label, one namespace) and hands plain dicts to the pure verdict code; it judges nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nvcre.compiler.nodelists import read_failed, read_succeeded
from nvcre.compiler.vocabulary import LABEL_JOB, LABEL_WORKFLOW

from ..kube.client import Kube
from ..kube.errors import NotFound
from ..kube.resources import (
    BANDWIDTH_MEASUREMENTS,
    CERTIFICATIONS,
    CONFIGMAPS,
    GOODPUT_MEASUREMENTS,
    JOBS,
    WORKFLOWS,
    WORKLOADRUNS,
)

__all__ = ["Collected", "RunNotFound", "collect_run", "decode_failed_nodes", "decode_succeeded_nodes"]


class RunNotFound(Exception):
    """No run object of that name in that namespace."""

    def __init__(self, kind: str, name: str, namespace: str) -> None:
        self.kind, self.name, self.namespace = kind, name, namespace
        super().__init__(f'{kind.lower()} "{name}" not found in namespace "{namespace}"')


@dataclass(frozen=True)
class Collected:
    """A run and everything below it, as plain dicts."""

    run: dict[str, Any]
    workflows: tuple[dict[str, Any], ...]
    jobs: tuple[dict[str, Any], ...]
    measurements: tuple[dict[str, Any], ...]
    failed_nodes: Mapping[str, tuple[dict[str, Any], ...]]
    succeeded_nodes: Mapping[str, tuple[str, ...]]


def decode_failed_nodes(configmap: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    """The ``{name, reason, message}`` entries of a failed-nodes ConfigMap; () when unreadable."""
    return tuple(read_failed(configmap))


def decode_succeeded_nodes(configmap: Mapping[str, Any]) -> tuple[str, ...]:
    """The node names of a succeeded-nodes ConfigMap, sorted and unique; () when unreadable."""
    return tuple(sorted({n.strip() for n in read_succeeded(configmap) if n.strip()}))


def _refs(status: Mapping[str, Any], key: str) -> str | None:
    ref = status.get(key) or {}
    name = ref.get("name") if isinstance(ref, Mapping) else None
    return str(name) if name else None


def collect_run(kube: Kube, kind: str, name: str, namespace: str) -> Collected:
    """Read a Certification or WorkloadRun and everything its verdict needs."""
    resource = CERTIFICATIONS if kind == "Certification" else WORKLOADRUNS
    try:
        run = kube.get(resource, name, namespace)
    except NotFound:
        raise RunNotFound(kind, name, namespace) from None

    uid = (run.get("metadata") or {}).get("uid")
    workflows = [
        wf
        for wf in kube.list(WORKFLOWS, namespace).items
        if any(ref.get("uid") == uid for ref in (wf.get("metadata") or {}).get("ownerReferences") or [])
    ]
    workflows.sort(key=lambda wf: wf["metadata"]["name"])
    names = {wf["metadata"]["name"] for wf in workflows}

    jobs = [
        job for job in kube.list(JOBS, namespace).items if ((job.get("metadata") or {}).get("labels") or {}).get(LABEL_WORKFLOW) in names
    ]
    job_names = {job["metadata"]["name"] for job in jobs}
    measurements = [
        m
        for res in (BANDWIDTH_MEASUREMENTS, GOODPUT_MEASUREMENTS)
        for m in kube.list(res, namespace).items
        if ((m.get("spec") or {}).get("jobRef") or {}).get("name") in job_names
        or ((m.get("metadata") or {}).get("labels") or {}).get(LABEL_JOB) in job_names
    ]

    failed: dict[str, tuple[dict[str, Any], ...]] = {}
    succeeded: dict[str, tuple[str, ...]] = {}
    for wf in workflows:
        status = wf.get("status") or {}
        name = wf["metadata"]["name"]
        failed_ref, succeeded_ref = _refs(status, "failedNodesRef"), _refs(status, "succeededNodesRef")
        try:
            if failed_ref:
                failed[name] = decode_failed_nodes(kube.get(CONFIGMAPS, failed_ref, namespace))
            if succeeded_ref:
                succeeded[name] = decode_succeeded_nodes(kube.get(CONFIGMAPS, succeeded_ref, namespace))
        except NotFound:
            continue
    return Collected(
        run=run,
        workflows=tuple(workflows),
        jobs=tuple(sorted(jobs, key=lambda j: j["metadata"]["name"])),
        measurements=tuple(sorted(measurements, key=lambda m: (m["kind"], m["metadata"]["name"]))),
        failed_nodes=failed,
        succeeded_nodes=succeeded,
    )


def phase_of(obj: Mapping[str, Any]) -> str:
    """Succeeded / Failed / InProgress / Pending from an object's lifecycle conditions."""
    conditions: Sequence[Mapping[str, Any]] = (obj.get("status") or {}).get("conditions") or []
    true = {c.get("type") for c in conditions if c.get("status") == "True"}
    for phase in ("Failed", "Succeeded", "InProgress"):
        if phase in true:
            return phase
    return "Pending"
