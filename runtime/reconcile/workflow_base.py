"""The Workflow tier's shared ground: its names, spec readers and the steps every part takes.

The steps: write the status, read the cluster's facts, record node results, remove a finished
Job's job-scoped dependencies.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from nvcre.compiler.vocabulary import LABEL_WORKFLOW, WORKFLOW_FINALIZER

from .. import compile as compiler
from ..judge import tracking
from ..kube.errors import ApiError
from ..kube.resources import CONFIGMAPS, NODES, RESOURCE_SLICES, WORKFLOWS
from .common import name_of, namespace_of, uid_of
from .context import Context, referenced_by
from .tier import StatusTier
from .diagnose import DiagnoseRounds, is_diagnose
from .ports import JobVerdicts

__all__ = [
    "FAILED_PREFIX",
    "FINALIZER",
    "NAMESPACE_ACCESS",
    "SUCCEEDED_PREFIX",
    "UNSCHEDULABLE_TAINT",
    "WORKFLOW_LABEL",
    "WorkflowTierBase",
    "execution_of",
    "iterations_of",
    "orchestration_of",
    "progress_text",
]

log = logging.getLogger("nvcre.runtime.reconcile.workflow")

FINALIZER = WORKFLOW_FINALIZER
WORKFLOW_LABEL = LABEL_WORKFLOW
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
SUCCEEDED_PREFIX = "succeeded-nodes-"
FAILED_PREFIX = "failed-nodes-"


NAMESPACE_ACCESS = "NamespaceAccess"


def orchestration_of(wf: Mapping[str, Any]) -> dict[str, Any]:
    return dict(((wf.get("spec") or {}).get("orchestration")) or {})


def execution_of(wf: Mapping[str, Any]) -> dict[str, Any]:
    return dict(orchestration_of(wf).get("execution") or {})


def iterations_of(wf: Mapping[str, Any]) -> int:
    return max(1, int(orchestration_of(wf).get("iterations") or 1))


def progress_text(wf: Mapping[str, Any], iteration: int) -> str:
    """``Iteration i/n``, or ``Diagnose round i`` for a diagnose run (its round count is open)."""
    if is_diagnose(wf):
        return f"Diagnose round {iteration}"
    return f"Iteration {iteration}/{iterations_of(wf)}"


class WorkflowTierBase(StatusTier):
    """What the parts of the Workflow tier share: the context, the Job tier's verdicts (a
    Protocol, never an import of the Job tier), the diagnose rounds, and the common steps."""

    ctx: Context
    jobs: JobVerdicts
    diagnose: DiagnoseRounds

    def _write(self, wf: Mapping[str, Any], status: dict[str, Any]) -> None:
        # ``status`` is this reconcile's own copy (taken when it read the Workflow): no second one
        tracked = tracking.with_tracking(wf, status)
        self.ctx.write_status(WORKFLOWS, wf, lambda _old: tracked, based_on=wf)

    def facts(self) -> Any:
        return compiler.cluster_facts(self.ctx.store(NODES).list(), self.ctx.store(RESOURCE_SLICES).list())

    def _clean_job_dependencies(self, status: dict[str, Any], job: Mapping[str, Any]) -> None:
        """Delete the dependencies owned by ``job`` and drop them from ``dependencyRefs``."""
        kept = []
        for ref in status.get("dependencyRefs") or []:
            if ref.get("scope") != "job":
                kept.append(ref)
                continue
            try:
                resource = self.ctx.kube.resource_for(str(ref.get("apiVersion")), str(ref.get("kind")))
            except ApiError:
                kept.append(ref)
                continue
            live = self.ctx.live(resource, str(ref.get("name")), ref.get("namespace") or None)
            if live is None:
                continue
            if referenced_by(live, job):
                self.ctx.kube.delete(resource, name_of(live), ref.get("namespace") or None, uid=uid_of(live))
                continue
            kept.append(ref)
        status["dependencyRefs"] = kept

    def _merge_node_results(
        self, wf: Mapping[str, Any], status: dict[str, Any], *, succeeded: Any, failed: list[Mapping[str, Any]]
    ) -> None:
        ctx = self.ctx
        uid8 = uid_of(wf)[:8]
        namespace = namespace_of(wf)
        stored_ok = compiler.stored_succeeded_nodes(ctx.live(CONFIGMAPS, f"{SUCCEEDED_PREFIX}{uid8}", namespace))
        stored_failed = compiler.stored_failed_nodes(ctx.live(CONFIGMAPS, f"{FAILED_PREFIX}{uid8}", namespace))
        all_ok = sorted(set(stored_ok) | set(succeeded))
        all_failed = [*stored_failed, *failed]
        for configmap in compiler.expand_node_results(wf, all_ok, all_failed):
            name = name_of(configmap)
            if name.startswith(SUCCEEDED_PREFIX) and not succeeded:
                continue
            if name.startswith(FAILED_PREFIX) and not all_failed:
                continue
            try:
                ctx.kube.apply(configmap)
            except ApiError as exc:
                log.warning("node results not written", extra={"configmap": name, "error": exc.message})
                continue
            key = "succeededNodesRef" if name.startswith(SUCCEEDED_PREFIX) else "failedNodesRef"
            status[key] = {"kind": "ConfigMap", "name": name}
