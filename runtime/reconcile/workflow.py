"""The Workflow tier: plan the groups, create the dependencies and one Job per group, follow them.

One reconcile (NVCRE's Workflow controller): deletion (Jobs first, then dependencies in reverse
creation order) -> finalizer -> terminal: nothing -> no groups yet: ``plan_workflow`` and write
them to ``status.orchestration`` -> workflow-scoped dependencies -> poll Running groups
(timeouts, scheduling-blocked relay, completion, retries) -> when every group is terminal, the
next iteration or the final verdict -> otherwise launch Pending groups under
``execution.maxConcurrent`` and never two Running groups on one node.

Under ``testScale: diagnose`` an iteration is one planner round: when its groups are terminal
:mod:`.diagnose` replays the planner over the recorded rounds and starts the next round or
writes the diagnosis; a failed group's nodes are evidence there, not blame.

A pass rewrites the whole status, so the passes of a Workflow with many groups are spaced
(``Settings.workflow_pass_gap``): an event that comes sooner is answered with a requeue for when
the gap ends, and the events of many Jobs fold into one pass. Deletion is never held back.

State lives in ``status`` only: the Job names are deterministic and creation adopts what
already exists, so a restarted controller continues where the API server says it was.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping
from typing import Any

from nvcre.compiler.compose import RUN_BINDING, RUN_ROLE

from ..clock import parse_time
from ..kube.resources import JOBS, WORKFLOWS
from . import conditions as cond
from .common import name_of, namespace_of
from .context import Context, Result
from .diagnose import DiagnoseRounds
from .ports import JobVerdicts
from .workflow_base import FINALIZER, NAMESPACE_ACCESS
from .workflow_delete import WorkflowDeletion
from .workflow_groups import WorkflowGroups
from .workflow_launch import WorkflowLaunch
from .workflow_verdict import WorkflowVerdict

__all__ = ["FINALIZER", "WorkflowReconciler"]


class WorkflowReconciler(WorkflowDeletion, WorkflowVerdict, WorkflowGroups, WorkflowLaunch):
    """Reconciles Workflows (launching, running groups, the verdict and deletion live in the
    parts it is built from: :mod:`.workflow_launch`, :mod:`.workflow_groups`,
    :mod:`.workflow_verdict`, :mod:`.workflow_delete`)."""

    resource = WORKFLOWS
    finalizer = FINALIZER

    def __init__(self, ctx: Context, jobs: JobVerdicts) -> None:
        self.ctx = ctx
        self.jobs = jobs
        self.diagnose = DiagnoseRounds(self)
        self._passes: dict[tuple[str, str], float] = {}

    # ------------------------------------------------------------------ entry

    def step(self, wf: dict[str, Any]) -> Result:
        namespace, name = namespace_of(wf), name_of(wf)
        if cond.is_terminal(wf.get("status") or {}):
            self.forget(namespace, name)
            return Result()
        early = self._too_soon(wf, (namespace, name))
        if early:
            return Result(early)
        status = copy.deepcopy(dict(wf.get("status") or {}))
        waiting = self._namespace_access(wf, status)
        if waiting is not None:
            return waiting
        orchestration = status.get("orchestration") or {}
        if not orchestration.get("groups"):
            return self._partition(wf, status)
        problem = self._ensure_workflow_dependencies(wf, status)
        if problem is not None:
            self._write(wf, status)
            return Result() if cond.is_terminal(status) else Result(1.0)
        groups = orchestration["groups"]
        if any(g.get("phase") == "Running" for g in groups):
            result = self._poll_running(wf, status)
        elif all(g.get("phase") in ("Succeeded", "Failed") for g in groups):
            result = self._iteration_complete(wf, status)
        else:
            result = self._launch_pending(wf, status)
        self._write(wf, status)
        self._wake_launched(wf, status)
        return result

    def forget(self, namespace: str, name: str) -> None:
        """Drop what this tier and its diagnose rounds remember of a Workflow that ended or went."""
        self._passes.pop((namespace, name), None)
        self.diagnose.forget(namespace, name)

    def _too_soon(self, wf: Mapping[str, Any], key: tuple[str, str]) -> float:
        """Seconds until this Workflow's next pass may run (0: now, and it is recorded)."""
        groups = len(((wf.get("status") or {}).get("orchestration") or {}).get("groups") or ())
        gap = self.ctx.settings.workflow_pass_gap(groups)
        now = time.monotonic()
        last = self._passes.get(key)
        if last is not None and now - last < gap:
            return last + gap - now
        self._passes[key] = now
        return 0.0

    def _wake_launched(self, wf: Mapping[str, Any], status: Mapping[str, Any]) -> None:
        """Queue the Jobs this status records as launched that have no workload yet: the Job
        tier creates a workload only once its launch is recorded (after its dependencies)."""
        namespace = namespace_of(wf)
        for group in (status.get("orchestration") or {}).get("groups") or []:
            name = str((group.get("jobRef") or {}).get("name") or "")
            if group.get("phase") != "Running" or not name:
                continue
            job = self.ctx.cached(JOBS, name, namespace)
            if job is not None and not (job.get("status") or {}).get("workloadRef"):
                self.ctx.enqueue("job", namespace, name)

    # ------------------------------------------------------------------ namespace access

    def _namespace_access(self, wf: dict[str, Any], status: dict[str, Any]) -> Result | None:
        """None when the controller may write in the Workflow's namespace; else wait (or fail)."""
        ctx = self.ctx
        namespace = namespace_of(wf)
        check = ctx.access.check(ctx.kube, namespace)
        now = ctx.clock.stamp()
        if check.allowed:
            if not cond.is_true(status, NAMESPACE_ACCESS) and cond.condition(status, NAMESPACE_ACCESS) is not None:
                new = cond.set_condition(
                    status, NAMESPACE_ACCESS, "True", "NamespaceAccessGranted", f"The controller may write in namespace {namespace}", now
                )
                new = cond.set_lifecycle(
                    new, cond.IN_PROGRESS, "NamespaceAccessGranted", f"The controller may write in namespace {namespace}", now
                )
                self._write(wf, new)
                return Result(ctx.settings.step_interval)  # go on from the status just written
            return None
        reason = "NamespaceAccessCheckFailed" if check.error else "NamespacePermissionsMissing"
        binding = (
            f"RoleBinding {RUN_BINDING} in namespace {namespace} to ClusterRole {RUN_ROLE} (nvcrectl rbac print --namespace {namespace})"
        )
        detail = check.error or "missing " + ", ".join(check.missing)
        message = f"The controller cannot write in namespace {namespace} ({detail}); create the {binding}"
        previous = cond.condition(status, NAMESPACE_ACCESS)
        first = previous is None or previous.get("status") != "False"
        since = parse_time(previous.get("lastTransitionTime")) if previous and not first else None
        waited = (ctx.clock.now() - since).total_seconds() if since else 0.0
        new = (
            status
            if not first and previous and previous.get("reason") == reason
            else cond.set_condition(status, NAMESPACE_ACCESS, "False", reason, message, now)
        )
        if waited > ctx.settings.namespace_access_timeout:
            new = cond.set_lifecycle(new, cond.FAILED, reason, f"{message}; gave up after waiting {int(waited)}s", now)
            self._write(wf, new)
            ctx.event(wf, "Warning", reason, f"{message}; gave up after waiting {int(waited)}s")
            return Result()
        new = cond.set_lifecycle(new, cond.IN_PROGRESS, reason, message, now)
        self._write(wf, new)
        if first:
            ctx.event(wf, "Warning", reason, message)
        return Result(min(ctx.settings.poll_interval, 15.0))
