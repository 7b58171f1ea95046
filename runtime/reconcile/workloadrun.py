"""The WorkloadRun tier: one Workflow from the inline spec, followed to its verdict.

The Workflow comes from the compiler's ``expand_workloadrun``. The WorkloadRun's conditions are
NVCRE's: ``InProgress/WorkflowCreated "Workflow X created"`` from creation until the Workflow
ends; then ``Succeeded/WorkflowSucceeded "Workflow completed successfully"``, or
``Failed/WorkflowFailed`` with the Workflow's message (``WorkflowValidationFailed`` when the
Workflow's thresholds failed, mirrored as ``ValidationFailed=True/ThresholdViolation``);
``Failed/WorkflowDeleted "Workflow was deleted"`` when it vanished. The inactive lifecycle types
read ``Superseded``. The node-results ConfigMap references are copied. Deleting the WorkloadRun
deletes its Workflow; the finalizer holds until the Workflow (and with it every TrainJob and pod)
is gone, bounded.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from nvcre.compiler.vocabulary import WORKLOADRUN_FINALIZER

from .. import compile as compiler
from ..clock import parse_time
from ..kube.resources import NODES, RESOURCE_SLICES, WORKFLOWS, WORKLOADRUNS
from . import conditions as cond
from .common import (
    create_or_adopt,
    meta,
    name_of,
    namespace_of,
    remove_finalizer,
    uid_of,
)
from .context import Context, Result, owned_by
from .tier import StatusTier

__all__ = ["FINALIZER", "WorkloadRunReconciler"]

FINALIZER = WORKLOADRUN_FINALIZER
#: what NVCRE writes on a WorkloadRun's lifecycle types that are not the current one
SUPERSEDED = "Superseded"


def _lifecycle(status: Mapping[str, Any], type_: str, reason: str, message: str, now: str) -> dict[str, Any]:
    return cond.set_lifecycle(status, type_, reason, message, now, inactive_reason=SUPERSEDED)


class WorkloadRunReconciler(StatusTier):
    """Reconciles WorkloadRuns."""

    resource = WORKLOADRUNS
    finalizer = FINALIZER

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def step(self, run: dict[str, Any]) -> Result:
        status = copy.deepcopy(dict(run.get("status") or {}))
        if cond.is_terminal(status):
            return Result()
        if not status.get("workflowRef"):
            return self._create(run, status)
        return self._poll(run, status)

    def _create(self, run: dict[str, Any], status: dict[str, Any]) -> Result:
        ctx = self.ctx
        now = ctx.clock.stamp()
        facts = compiler.cluster_facts(ctx.store(NODES).list(), ctx.store(RESOURCE_SLICES).list())
        notes: list[Any] = []
        try:
            manifest = compiler.expand_workloadrun(run, facts, notes)
        except compiler.CompileError as exc:
            self._write(run, _lifecycle(status, cond.FAILED, *compiler.failure_of(exc), now))
            return Result()
        outcome = create_or_adopt(ctx, manifest, run)
        if outcome.collision:
            message = f"Workflow {name_of(manifest)} already exists and is not owned by this WorkloadRun"
            self._write(run, _lifecycle(status, cond.FAILED, "WorkflowNameCollision", message, now))
            return Result()
        if outcome.obj is None:
            if outcome.retry:
                return Result(1.0)
            message = f"Failed to create Workflow {name_of(manifest)}: {outcome.error}"
            ctx.event(run, "Warning", "WorkflowCreationError", message)
            self._write(run, _lifecycle(status, cond.FAILED, "WorkflowFailed", message, now))
            return Result()
        if outcome.created:
            for type_, reason, text in compiler.render_events(notes):
                ctx.event(run, type_, reason, text)
        status["workflowRef"] = {"name": name_of(outcome.obj), "namespace": namespace_of(outcome.obj)}
        message = f"Workflow {name_of(outcome.obj)} created"
        self._write(run, _lifecycle(status, cond.IN_PROGRESS, "WorkflowCreated", message, now))
        return Result(ctx.settings.poll_interval)

    def _poll(self, run: dict[str, Any], status: dict[str, Any]) -> Result:
        ctx = self.ctx
        ref = status["workflowRef"]
        now = ctx.clock.stamp()
        workflow = ctx.read(WORKFLOWS, str(ref.get("name")), ref.get("namespace") or namespace_of(run))
        if workflow is None:
            self._write(run, _lifecycle(status, cond.FAILED, "WorkflowDeleted", "Workflow was deleted", now))
            return Result()
        wf_status = workflow.get("status") or {}
        orchestration = wf_status.get("orchestration") or {}
        if orchestration.get("detectedPlatform"):
            status["detectedPlatform"] = orchestration["detectedPlatform"]
        if orchestration.get("detectedGPUArchitecture"):
            status["detectedGPUArchitecture"] = orchestration["detectedGPUArchitecture"]
        for key in ("succeededNodesRef", "failedNodesRef"):
            if wf_status.get(key):
                status[key] = wf_status[key]
        life = cond.lifecycle(wf_status)
        if life == cond.SUCCEEDED:
            self._write(run, _lifecycle(status, cond.SUCCEEDED, "WorkflowSucceeded", "Workflow completed successfully", now))
            return Result()
        if life == cond.FAILED:
            message = str((cond.condition(wf_status, cond.FAILED) or {}).get("message") or "")
            validation = cond.condition(wf_status, cond.VALIDATION_FAILED) or {}
            if validation.get("status") == "True":
                new = _lifecycle(status, cond.FAILED, "WorkflowValidationFailed", message, now)
                new = cond.set_condition(
                    new, cond.VALIDATION_FAILED, "True", "ThresholdViolation", str(validation.get("message") or message), now
                )
            else:
                new = _lifecycle(status, cond.FAILED, "WorkflowFailed", message, now)
            self._write(run, new)
            return Result()
        if (cond.condition(status, cond.IN_PROGRESS) or {}).get("reason") != "WorkflowCreated":
            self._write(run, _lifecycle(status, cond.IN_PROGRESS, "WorkflowCreated", f"Workflow {ref.get('name')} created", now))
        return Result(ctx.settings.poll_interval)

    def _finalize(self, run: dict[str, Any]) -> Result:
        ctx = self.ctx
        if FINALIZER not in (meta(run).get("finalizers") or []):
            return Result()
        ref = (run.get("status") or {}).get("workflowRef") or {}
        live = ctx.live(WORKFLOWS, str(ref["name"]), ref.get("namespace") or namespace_of(run)) if ref.get("name") else None
        if live is not None and owned_by(live, run):
            if not meta(live).get("deletionTimestamp"):
                ctx.kube.delete(WORKFLOWS, name_of(live), namespace_of(live), uid=uid_of(live))
            started = parse_time(meta(run).get("deletionTimestamp"))
            waited = (ctx.clock.now() - started).total_seconds() if started else 0.0
            if waited < ctx.settings.pod_drain_grace:
                return Result(1.0)
            ctx.event(
                run,
                "Warning",
                "FinalizerTimeout",
                f"Removed the finalizer after {int(waited)}s with Workflow {name_of(live)} still being torn down",
            )
        remove_finalizer(ctx, WORKLOADRUNS, run, FINALIZER)
        return Result()
