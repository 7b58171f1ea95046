"""The Certification tier: one Workflow per category, strictly one after another, in spec order.

A failed category does not stop the run: the next one starts, and the Certification ends
Failed ("One or more certification categories failed") once every category is terminal.
Per-category progress lives in ``status.categoryStatuses`` (with the Workflow's node-results
ConfigMap references copied on every poll), so a restarted controller picks up the same
category. The Workflows come from the compiler's ``expand_certification``; deleting the
Certification deletes them (UID-preconditioned) and the finalizer holds until they are gone.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Any

from nvcre.compiler.vocabulary import CERTIFICATION_FINALIZER

from .. import compile as compiler
from ..clock import parse_time
from ..judge import conditions as cond
from ..kube.resources import CERTIFICATIONS, NODES, RESOURCE_SLICES, WORKFLOWS
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

__all__ = ["CertificationReconciler", "waiting_for_nodes_message"]

log = logging.getLogger("nvcre.runtime.reconcile.certification")

TERMINAL = ("Succeeded", "Failed")


def waiting_for_nodes_message(target: Mapping[str, Any], remaining: float) -> str:
    selector = dict(target.get("nodeSelector") or {})
    wanted = ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "the target"
    return (
        f"No schedulable nodes match {wanted}; retrying for up to {int(remaining)}s more. "
        "Nodes that are cordoned or unschedulable do not count."
    )


def _categories(cert: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [dict(c) for c in (cert.get("spec") or {}).get("categories") or []]


def _label(category: Mapping[str, Any]) -> str:
    return f"{category.get('domain')}/{category.get('variant')}"


class CertificationReconciler(StatusTier):
    """Reconciles Certifications."""

    resource = CERTIFICATIONS
    finalizer = CERTIFICATION_FINALIZER

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def facts(self) -> Any:
        return compiler.cluster_facts(self.ctx.store(NODES).list(), self.ctx.store(RESOURCE_SLICES).list())

    # ------------------------------------------------------------------ entry

    def step(self, cert: dict[str, Any]) -> Result:
        status = copy.deepcopy(dict(cert.get("status") or {}))
        if cond.is_terminal(status):
            return self._recover_if_running(cert, status)
        if not status.get("categoryStatuses"):
            return self._start(cert, status)
        return self._advance(cert, status)

    # ------------------------------------------------------------------ starting

    def _unknown_categories(self, cert: Mapping[str, Any]) -> list[str]:
        return [_label(c) for c in _categories(cert) if not compiler.catalog_has(c.get("domain"), c.get("variant"))]

    def _start(self, cert: dict[str, Any], status: dict[str, Any]) -> Result:
        ctx = self.ctx
        now = ctx.clock.stamp()
        unknown = self._unknown_categories(cert)
        if unknown:
            status["categoryStatuses"] = [
                {
                    "domain": c.get("domain"),
                    "variant": c.get("variant"),
                    "status": "Failed" if _label(c) in unknown else "Pending",
                }
                for c in _categories(cert)
            ]
            message = f"Unknown certification category: {unknown[0]}"
            self._write(cert, cond.set_lifecycle(status, cond.FAILED, "CategoryNotFound", message, now))
            return Result()
        waiting = self._waiting_for_nodes(cert)
        if waiting is not None:
            message, retry = waiting
            if message:
                self._write(cert, cond.set_lifecycle(status, cond.IN_PROGRESS, "WaitingForNodes", message, now))
                return Result(retry)
        status["categoryStatuses"] = [
            {"domain": c.get("domain"), "variant": c.get("variant"), "status": "Pending"} for c in _categories(cert)
        ]
        return self._create_workflow(cert, status, 0)

    def _waiting_for_nodes(self, cert: Mapping[str, Any]) -> tuple[str, float] | None:
        """(message, retry) while no schedulable node matches and the discovery window is open."""
        target = dict((cert.get("spec") or {}).get("target") or {})
        if compiler.target_nodes(self.facts(), target):
            return None
        created = parse_time(meta(cert).get("creationTimestamp"))
        elapsed = (self.ctx.clock.now() - created).total_seconds() if created else 0.0
        remaining = self.ctx.settings.node_discovery_timeout - elapsed
        if remaining <= 0:
            return None
        return waiting_for_nodes_message(target, remaining), min(self.ctx.settings.poll_interval, max(1.0, remaining))

    def _create_workflow(self, cert: dict[str, Any], status: dict[str, Any], index: int) -> Result:
        ctx = self.ctx
        categories = status["categoryStatuses"]
        category = categories[index]
        label = f"{category['domain']}/{category['variant']}"
        now = ctx.clock.stamp()
        notes: list[Any] = []
        try:
            workflows = compiler.expand_certification(cert, self.facts(), notes)
            manifest = workflows[index]
        except compiler.CompileError as exc:
            self._write(cert, cond.set_lifecycle(status, cond.FAILED, *compiler.failure_of(exc), now))
            return Result()
        except IndexError:
            message = f"The compiler produced no Workflow for category {label}"
            self._write(cert, cond.set_lifecycle(status, cond.FAILED, "WorkflowValidationFailed", message, now))
            return Result()
        owned = create_owned_workflow(ctx, manifest, cert)
        outcome = owned.outcome
        if outcome.collision:
            category["status"] = "Failed"
            message = f"Workflow {name_of(manifest)} already exists and is not owned by this Certification"
            if owned.taken:
                message += ", nor is the name this Certification falls back to"
            self._write(cert, cond.set_lifecycle(status, cond.FAILED, "WorkflowNameCollision", message, now))
            return Result()
        if outcome.obj is None:
            if outcome.retry:
                return Result(1.0)
            ctx.event(cert, "Warning", "WorkflowCreationError", f"Failed to create Workflow {name_of(manifest)}: {outcome.error}")
            message = f"Failed to create Workflow {name_of(manifest)}: {outcome.error}"
            self._write(cert, cond.set_lifecycle(status, cond.FAILED, "WorkflowFailed", message, now))
            return Result()
        if index == 0 and outcome.created:
            # the render's fallbacks, once per Certification, as NVCRE's controller reports them
            for type_, reason, text in tier_render_events("Certification", notes):
                ctx.event(cert, type_, reason, text)
        if owned.taken and outcome.created:
            ctx.event(cert, "Warning", WORKFLOW_NAME_TAKEN, taken_message(owned.taken, name_of(outcome.obj), "Certification"))
        category["status"] = "InProgress"
        category["workflowRef"] = {"name": name_of(outcome.obj), "namespace": namespace_of(outcome.obj)}
        message = f"Created Workflow for category {label} ({index + 1} of {len(categories)})"
        self._write(cert, cond.set_lifecycle(status, cond.IN_PROGRESS, "WorkflowCreated", message, now))
        return Result(ctx.settings.poll_interval)

    # ------------------------------------------------------------------ advancing

    def _advance(self, cert: dict[str, Any], status: dict[str, Any]) -> Result:
        ctx = self.ctx
        categories = status["categoryStatuses"]
        now = ctx.clock.stamp()
        for index, category in enumerate(categories):
            if category.get("status") in TERMINAL:
                continue
            if category.get("status") == "Pending":
                return self._create_workflow(cert, status, index)
            return self._poll(cert, status, index)
        if any(c.get("status") == "Failed" for c in categories):
            new = cond.set_lifecycle(status, cond.FAILED, "WorkflowFailed", "One or more certification categories failed", now)
        else:
            new = cond.set_lifecycle(
                status, cond.SUCCEEDED, "AllWorkflowsSucceeded", "All certification categories completed successfully", now
            )
        self._write(cert, new)
        return Result()

    def _poll(self, cert: dict[str, Any], status: dict[str, Any], index: int) -> Result:
        ctx = self.ctx
        category = status["categoryStatuses"][index]
        label = f"{category['domain']}/{category['variant']}"
        ref = category.get("workflowRef") or {}
        now = ctx.clock.stamp()
        workflow = ctx.read(WORKFLOWS, str(ref.get("name") or ""), ref.get("namespace") or namespace_of(cert))
        if workflow is None:
            category["status"] = "Failed"
            message = f"Workflow for category {label} not found"
            ctx.event(
                cert,
                "Warning",
                "WorkflowDeleted",
                f"Workflow {ref.get('name')} of category {label} was deleted before it finished; the category failed",
            )
            self._write(cert, cond.set_lifecycle(status, cond.IN_PROGRESS, "WorkflowRunning", message, now))
            return Result(ctx.settings.step_interval)
        wf_status = workflow.get("status") or {}
        for key in ("succeededNodesRef", "failedNodesRef"):
            if wf_status.get(key):
                category[key] = wf_status[key]
        life = cond.lifecycle(wf_status)
        if life in (cond.FAILED, cond.SUCCEEDED):
            category["status"] = "Failed" if life == cond.FAILED else "Succeeded"
            verb = "failed" if life == cond.FAILED else "succeeded"
            message = f"Workflow for category {label} {verb}, advancing to next category"
            self._write(cert, cond.set_lifecycle(status, cond.IN_PROGRESS, "WorkflowRunning", message, now))
            return Result(ctx.settings.step_interval)
        self._write(cert, cond.set_lifecycle(status, cond.IN_PROGRESS, "WorkflowRunning", "Certification in progress", now))
        return Result(ctx.settings.poll_interval)

    def _recover_if_running(self, cert: dict[str, Any], status: dict[str, Any]) -> Result:
        """A Failed category whose Workflow is still running is reopened (NVCRE's recovery)."""
        changed = False
        for category in status.get("categoryStatuses") or []:
            if category.get("status") != "Failed" or not category.get("workflowRef"):
                continue
            ref = category["workflowRef"]
            workflow = self.ctx.cached(WORKFLOWS, str(ref.get("name")), ref.get("namespace") or namespace_of(cert))
            if workflow is not None and not cond.is_terminal(workflow.get("status")) and owned_by(workflow, cert):
                category["status"] = "InProgress"
                changed = True
        if not changed:
            return Result()
        now = self.ctx.clock.stamp()
        self._write(cert, cond.set_lifecycle(status, cond.IN_PROGRESS, "WorkflowRunning", "Recovered: Workflow still running", now))
        return Result(self.ctx.settings.poll_interval)

    # ------------------------------------------------------------------ deletion

    def _finalize(self, cert: dict[str, Any]) -> Result:
        ctx = self.ctx
        if CERTIFICATION_FINALIZER not in (meta(cert).get("finalizers") or []):
            return Result()
        present = 0
        for category in (cert.get("status") or {}).get("categoryStatuses") or []:
            ref = category.get("workflowRef") or {}
            if not ref.get("name"):
                continue
            live = ctx.live(WORKFLOWS, str(ref["name"]), ref.get("namespace") or namespace_of(cert))
            if live is None or not owned_by(live, cert):
                continue
            present += 1
            if not meta(live).get("deletionTimestamp"):
                ctx.kube.delete(WORKFLOWS, name_of(live), namespace_of(live), uid=uid_of(live))
        if present:
            started = parse_time(meta(cert).get("deletionTimestamp"))
            waited = past_drain_grace(ctx, started)
            if waited is None:
                return Result(1.0)
            ctx.event(
                cert,
                "Warning",
                "FinalizerTimeout",
                f"Removed the finalizer after {int(waited)}s with {present} Workflow(s) still being torn down",
            )
        remove_finalizer(ctx, CERTIFICATIONS, cert, CERTIFICATION_FINALIZER)
        return Result()
