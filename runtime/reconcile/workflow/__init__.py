"""The Workflow tier: plan the groups, create the dependencies and one Job per group, follow them.

One reconcile (NVCRE's Workflow controller): deletion (Jobs first, then dependencies in reverse
creation order) -> finalizer -> terminal: nothing -> no groups yet: ``plan_workflow`` and write
them to ``status.orchestration`` -> workflow-scoped dependencies -> poll Running groups
(timeouts, scheduling-blocked relay, completion, retries) -> when every group is terminal, the
next iteration or the final verdict -> otherwise launch Pending groups under
``execution.maxConcurrent`` and never two Running groups on one node.

:class:`WorkflowReconciler` is the coordinator: it spaces the passes, picks the part that acts
on this pass and writes the status that part changed. The parts are handed what they need and
never the coordinator: :mod:`.access` (namespace permissions), :mod:`.launch` (plan, dependencies,
Jobs), :mod:`.groups` (Running groups, decided by :mod:`nvcre.runtime.judge.groups`),
:mod:`.iterations` (the next iteration or the final phase), :mod:`.diagnose` (the rounds of
``testScale: diagnose``), :mod:`.results` (node results and retired Jobs) and :mod:`.delete`.

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

from nvcre.compiler.vocabulary import WORKFLOW_FINALIZER

from ... import compile as compiler
from ...judge import conditions as cond
from ...judge import tracking
from ...kube.resources import NODES, RESOURCE_SLICES, WORKFLOWS
from .. import reclaim
from ..common import name_of, namespace_of
from ..context import Context, Result
from ..ports import JobVerdicts
from ..tier import StatusTier
from .access import NamespaceGate
from .delete import Deletion
from .diagnose import DiagnoseRounds
from .groups import RunningGroups
from .iterations import Iterations
from .launch import Launcher
from .results import NodeResults

__all__ = ["WorkflowReconciler"]


class WorkflowReconciler(StatusTier):
    """Reconciles Workflows through its parts (see the module docstring); the Job tier's
    verdicts reach the running groups as ``jobs`` (a Protocol, never an import of that tier)."""

    resource = WORKFLOWS
    finalizer = WORKFLOW_FINALIZER

    def __init__(self, ctx: Context, jobs: JobVerdicts) -> None:
        self.ctx = ctx
        results = NodeResults(ctx)
        self.diagnose = DiagnoseRounds(ctx, results)
        self.access = NamespaceGate(ctx)
        self.launch = Launcher(ctx, self.diagnose)
        self.running = RunningGroups(ctx, jobs, results)
        self.iterations = Iterations(ctx, results, self.diagnose)
        self.deletion = Deletion(ctx, reclaim)
        self._passes: dict[tuple[str, str], float] = {}

    def step(self, wf: dict[str, Any]) -> Result:
        namespace, name = namespace_of(wf), name_of(wf)
        if cond.is_terminal(wf.get("status") or {}):
            self.forget(namespace, name)
            return Result()
        early = self._too_soon(wf, (namespace, name))
        if early:
            return Result(early)
        status = copy.deepcopy(dict(wf.get("status") or {}))
        waiting = self.access.check(wf, status, self._write)
        if waiting is not None:
            return waiting
        orchestration = status.get("orchestration") or {}
        if not orchestration.get("groups"):
            return self._partition(wf, status)
        problem = self.launch.ensure_workflow_dependencies(wf, status)
        if problem is not None:
            self._write(wf, status)
            return Result() if cond.is_terminal(status) else Result(1.0)
        groups = orchestration["groups"]
        if any(g.get("phase") == "Running" for g in groups):
            result = self.running.poll(wf, status)
        elif all(g.get("phase") in ("Succeeded", "Failed") for g in groups):
            result = self.iterations.complete(wf, status)
        else:
            result = self._launch_pending(wf, status)
        self._write(wf, status)
        self.launch.wake_launched(wf, status)
        return result

    def forget(self, namespace: str, name: str) -> None:
        """Drop what this tier and its diagnose rounds remember of a Workflow that ended or went."""
        self._passes.pop((namespace, name), None)
        self.diagnose.forget(namespace, name)

    def facts(self) -> Any:
        """The cluster's facts for the planner, from the Node and ResourceSlice caches."""
        return compiler.cluster_facts(self.ctx.store(NODES).list(), self.ctx.store(RESOURCE_SLICES).list())

    def _partition(self, wf: dict[str, Any], status: dict[str, Any]) -> Result:
        """Plan the groups (or fail) and write the status."""
        result = self.launch.partition(wf, status, self.facts)
        self._write(wf, status)
        return result

    def _launch_pending(self, wf: dict[str, Any], status: dict[str, Any]) -> Result:
        return self.launch.launch_pending(wf, status, self.facts)

    def _timed_out(self, wf: Mapping[str, Any], group: Mapping[str, Any], job: Mapping[str, Any]) -> str:
        """NVCRE's isJobTimedOut for a Running group's Job ('' while within the budget)."""
        return self.running.timed_out(wf, group, job)

    def _finalize(self, wf: dict[str, Any]) -> Result:
        return self.deletion.finalize(wf)

    def _write(self, wf: Mapping[str, Any], status: dict[str, Any]) -> None:
        # ``status`` is this reconcile's own copy (taken when it read the Workflow): no second one
        tracked = tracking.with_tracking(wf, status)
        self.ctx.write_status(WORKFLOWS, wf, lambda _old: tracked, based_on=wf)

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
