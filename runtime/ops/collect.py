"""Collect everything a run's verdict is built from, as the API server holds it.

A Certification's verdict needs the Certification, its Workflows, their Jobs, the measurement
objects, the node-results ConfigMaps and, for failed groups, the failure-log excerpt the Job
recorded. This module lists the run's namespace and keeps what
:class:`~nvcre.runtime.judge.membership.RunIndex` says belongs to the run (the rule the metrics
use too), reads the node lists, and hands plain dicts to the pure verdict code; it judges nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from nvcre.compiler.nodelists import read_failed, read_succeeded

from ..judge.membership import RunIndex
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
    #: a WorkloadRun's one Workflow (the one its status names); ``None`` before it exists
    workflow: dict[str, Any] | None = None

    @property
    def workflow_failed_nodes(self) -> tuple[dict[str, Any], ...]:
        """The failed-node entries of :attr:`workflow`."""
        if self.workflow is None:
            return ()
        return tuple(self.failed_nodes.get(str((self.workflow.get("metadata") or {}).get("name")), ()))


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

    members = RunIndex(
        kube.list(WORKFLOWS, namespace).items,
        kube.list(JOBS, namespace).items,
        [m for res in (BANDWIDTH_MEASUREMENTS, GOODPUT_MEASUREMENTS) for m in kube.list(res, namespace).items],
    ).members(run)
    workflows = [cast(dict[str, Any], wf) for wf in members.workflows]

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
        jobs=tuple(cast(dict[str, Any], job) for job in members.jobs),
        measurements=tuple(cast(dict[str, Any], m) for m in members.measurements),
        failed_nodes=failed,
        succeeded_nodes=succeeded,
        workflow=cast("dict[str, Any] | None", members.workflow),
    )


def phase_of(obj: Mapping[str, Any]) -> str:
    """Succeeded / Failed / InProgress / Pending from an object's lifecycle conditions."""
    conditions: Sequence[Mapping[str, Any]] = (obj.get("status") or {}).get("conditions") or []
    true = {c.get("type") for c in conditions if c.get("status") == "True"}
    for phase in ("Failed", "Succeeded", "InProgress"):
        if phase in true:
            return phase
    return "Pending"
