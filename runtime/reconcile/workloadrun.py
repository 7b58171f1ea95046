"""The WorkloadRun tier: one Workflow from the inline spec, followed to its verdict.

The Workflow comes from the compiler's ``expand_workloadrun``. The WorkloadRun's conditions are
NVCRE's: ``InProgress/WorkflowCreated "Workflow X created"`` from creation until the Workflow
ends; then ``Succeeded/WorkflowSucceeded "Workflow completed successfully"``, or
``Failed/WorkflowFailed`` with the Workflow's message (``WorkflowValidationFailed`` only when
the Workflow failed for its thresholds alone, reason ``JobValidationFailed``: a hardware failure
takes precedence); ``Failed/WorkflowDeleted "Workflow was deleted"`` when it vanished. Whenever
the Workflow's ``ValidationFailed`` is True it is mirrored as ``ValidationFailed=True/
ThresholdViolation``. The inactive lifecycle types read ``Superseded``. The node-results
ConfigMap references are copied. A build that fails is ``Failed`` with the build's reason; when
that status cannot be written, the Warning ``BuildFailedStatusUpdateFailed`` says both errors.
Deleting the WorkloadRun deletes its Workflow; the finalizer holds until the Workflow (and with
it every TrainJob and pod) is gone, bounded.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from nvcre.compiler.vocabulary import WORKLOADRUN_FINALIZER

from .. import compile as compiler
from ..clock import parse_time
from ..judge import conditions as cond
from ..kube.errors import ApiError, Conflict
from ..kube.resources import NODES, RESOURCE_SLICES, WORKFLOWS, WORKLOADRUNS
from .common import (
    meta,
    name_of,
    namespace_of,
    past_drain_grace,
    remove_finalizer,
    uid_of,
)
from .context import Context, Result, owned_by
from .owned_names import WORKFLOW_NAME_TAKEN, create_owned_workflow, taken_message
from .render_events import tier_render_events
from .tier import StatusTier

__all__ = ["BUILD_FAILED_STATUS_UPDATE_FAILED", "WorkloadRunReconciler"]

#: what NVCRE writes on a WorkloadRun's lifecycle types that are not the current one
SUPERSEDED = "Superseded"
#: the Warning when a failed build's Failed condition could not be written either
BUILD_FAILED_STATUS_UPDATE_FAILED = "BuildFailedStatusUpdateFailed"
#: the Workflow's Failed reason when a threshold miss is the only cause
JOB_VALIDATION_FAILED = "JobValidationFailed"


def _lifecycle(status: Mapping[str, Any], type_: str, reason: str, message: str, now: str) -> dict[str, Any]:
    return cond.set_lifecycle(status, type_, reason, message, now, inactive_reason=SUPERSEDED)


class WorkloadRunReconciler(StatusTier):
    """Reconciles WorkloadRuns."""

    resource = WORKLOADRUNS
    finalizer = WORKLOADRUN_FINALIZER

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
            reason, message = compiler.failure_of(exc)
            try:
                self._write(run, _lifecycle(status, cond.FAILED, reason, message, now))
            except Conflict:
                raise  # a newer version to build from: the reconcile runs again
            except ApiError as write_error:
                ctx.event(
                    run,
                    "Warning",
                    BUILD_FAILED_STATUS_UPDATE_FAILED,
                    f"WorkloadRun build failed: {message}; recording the WorkloadRun Failed condition also failed: {write_error}",
                )
                raise
            return Result()
        owned = create_owned_workflow(ctx, manifest, run)
        outcome = owned.outcome
        if outcome.collision:
            message = f"Workflow {name_of(manifest)} already exists and is not owned by this WorkloadRun"
            if owned.taken:
                message += ", nor is the name this WorkloadRun falls back to"
            self._write(run, _lifecycle(status, cond.FAILED, "WorkflowNameCollision", message, now))
            return Result()
        if outcome.obj is None:
            if outcome.retry:
                return Result(1.0)
            message = f"Failed to create Workflow {name_of(manifest)}: {outcome.error}"
            ctx.event(run, "Warning", "WorkflowCreationError", message)
            self._write(run, _lifecycle(status, cond.FAILED, "WorkflowFailed", message, now))
            return Result()
        if owned.taken and outcome.created:
            ctx.event(run, "Warning", WORKFLOW_NAME_TAKEN, taken_message(owned.taken, name_of(outcome.obj), "WorkloadRun"))
        if outcome.created:
            for type_, reason, text in tier_render_events("WorkloadRun", notes):
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
        mirrored = self._mirror_validation(status, wf_status, now)
        life = cond.lifecycle(wf_status)
        if life == cond.SUCCEEDED:
            self._write(run, _lifecycle(status, cond.SUCCEEDED, "WorkflowSucceeded", "Workflow completed successfully", now))
            return Result()
        if life == cond.FAILED:
            failed = cond.condition(wf_status, cond.FAILED) or {}
            message = str(failed.get("message") or "")
            # keyed off the Workflow's Failed reason, so hardware keeps the generic reason
            reason = "WorkflowValidationFailed" if failed.get("reason") == JOB_VALIDATION_FAILED else "WorkflowFailed"
            self._write(run, _lifecycle(status, cond.FAILED, reason, message, now))
            return Result()
        if mirrored or (cond.condition(status, cond.IN_PROGRESS) or {}).get("reason") != "WorkflowCreated":
            self._write(run, _lifecycle(status, cond.IN_PROGRESS, "WorkflowCreated", f"Workflow {ref.get('name')} created", now))
        return Result(ctx.settings.poll_interval)

    @staticmethod
    def _mirror_validation(status: dict[str, Any], wf_status: Mapping[str, Any], now: str) -> bool:
        """Copy a True ``ValidationFailed`` of the Workflow onto ``status``; True when it changed."""
        validation = cond.condition(wf_status, cond.VALIDATION_FAILED) or {}
        if validation.get("status") != "True":
            return False
        message = str(validation.get("message") or "")
        mine = cond.condition(status, cond.VALIDATION_FAILED) or {}
        if mine.get("status") == "True" and mine.get("message") == message:
            return False
        status.update(cond.set_condition(status, cond.VALIDATION_FAILED, "True", "ThresholdViolation", message, now))
        return True

    def _finalize(self, run: dict[str, Any]) -> Result:
        ctx = self.ctx
        if WORKLOADRUN_FINALIZER not in (meta(run).get("finalizers") or []):
            return Result()
        ref = (run.get("status") or {}).get("workflowRef") or {}
        live = ctx.live(WORKFLOWS, str(ref["name"]), ref.get("namespace") or namespace_of(run)) if ref.get("name") else None
        if live is not None and owned_by(live, run):
            if not meta(live).get("deletionTimestamp"):
                ctx.kube.delete(WORKFLOWS, name_of(live), namespace_of(live), uid=uid_of(live))
            started = parse_time(meta(run).get("deletionTimestamp"))
            waited = past_drain_grace(ctx, started)
            if waited is None:
                return Result(1.0)
            ctx.event(
                run,
                "Warning",
                "FinalizerTimeout",
                f"Removed the finalizer after {int(waited)}s with Workflow {name_of(live)} still being torn down",
            )
        remove_finalizer(ctx, WORKLOADRUNS, run, WORKLOADRUN_FINALIZER)
        return Result()
