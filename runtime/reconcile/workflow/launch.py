"""The Workflow tier's launching: plan the groups, create the dependencies, create one Job per group.

``partition`` puts the planner's groups into ``status.orchestration``; workflow-scoped
dependencies are created (or adopted) and recorded in ``dependencyRefs``; Pending groups are
launched under ``execution.maxConcurrent`` and never two Running groups on one node: the Job,
then its job-scoped dependencies, then the Job tier is told the launch is complete.

Before anything of a group is created, the pods it would run are checked for references
admission did not check against the Workflow's author (:mod:`...judge.pod_references`): such a Workflow
fails ``PodReferencesNotAdmitted`` and nothing runs. When partitioning and again before each
group is launched, the spec after overrides is held to ``spec.gangScheduler``
(:mod:`...judge.gang_contract`): a conflict fails ``GangSchedulingConflict``. A refused diagnose
annotation fails ``WorkflowValidationFailed``; any other build error there ``OverrideError``.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from typing import Any

from ... import compile as compiler
from ...judge import conditions as cond
from ...judge import domains
from ...judge.gang_contract import REASON_GANG_CONFLICT, GangCheck, check_gang_contract
from ...judge.pod_references import REASON_NOT_ADMITTED, admitted, refusal, unadmitted
from ...kube.resources import JOBS
from ..common import create_or_adopt, name_of, namespace_of, reference
from ..context import Context, Result
from .ports import DiagnoseFlags
from .spec import UNSCHEDULABLE_TAINT, execution_of, is_diagnose, iterations_of, orchestration_of, progress_text

__all__ = ["Facts", "Launcher"]

log = logging.getLogger("nvcre.runtime.reconcile.workflow")

#: build errors that are about the Workflow's own annotations, not its overrides
_ANNOTATION_CODES = frozenset({"InvalidDiagnosePrior", "InvalidDiagnosePlanner"})

#: the cluster's facts as the planner reads them, computed when asked (a launch may need none)
Facts = Callable[[], Any]


def _invalid_annotations(exc: Any) -> bool:
    """Whether a CompileError is a refused diagnose annotation (reason WorkflowValidationFailed)."""
    codes = {d.code for d in (getattr(exc, "errors", None) or getattr(exc, "diagnostics", None) or ())}
    return bool(codes) and codes <= _ANNOTATION_CODES


def _with_spec(plan: Any, check: GangCheck) -> Any:
    """``plan`` building its children from the gang check's working copy, when it restored a label."""
    if check.restored and dataclasses.is_dataclass(plan) and not isinstance(plan, type):
        return dataclasses.replace(plan, workflow_spec=check.spec)
    return plan


class Launcher:
    """Plans a Workflow's groups and creates their Jobs and dependencies; a diagnose round's
    group flags come from ``rounds``. It changes the status it is handed and never writes it."""

    def __init__(self, ctx: Context, rounds: DiagnoseFlags) -> None:
        self.ctx = ctx
        self.rounds = rounds

    def partition(self, wf: dict[str, Any], status: dict[str, Any], facts: Facts) -> Result:
        """Plan the groups into ``status.orchestration``, or fail the Workflow with the reason."""
        ctx = self.ctx
        now = ctx.clock.stamp()
        status["namespace"] = namespace_of(wf)
        try:
            plan = compiler.plan_workflow(wf, facts())
        except compiler.PlanError as exc:
            for event in getattr(exc, "events", ()):
                ctx.event(wf, event.type, event.reason, event.message)
            if getattr(exc, "excluded_nodes", ()):
                status.setdefault("orchestration", {"totalNodes": 0, "nodesPerJob": 0, "totalGroups": 0})
                status["orchestration"]["excludedNodes"] = list(exc.excluded_nodes)
                status["orchestration"]["exclusionReason"] = exc.exclusion_reason
            status.update(cond.set_lifecycle(status, cond.FAILED, exc.reason, exc.message, now))
            return Result()
        except compiler.CompileError as exc:
            if _invalid_annotations(exc):
                new = cond.set_lifecycle(status, cond.FAILED, "WorkflowValidationFailed", str(exc), now)
            else:
                new = cond.set_lifecycle(status, cond.FAILED, "OverrideError", f"Failed to apply overrides: {exc}", now)
            status.update(new)
            return Result()
        for event in plan.events:
            ctx.event(wf, event.type, event.reason, event.message)
        if self._gang_conflict(wf, status, plan).problems:
            return Result()
        orchestration = plan.as_status()
        orchestration["completedIterations"] = 0
        status["orchestration"] = orchestration
        status.update(cond.set_lifecycle(status, cond.IN_PROGRESS, "GroupsPartitioned", plan.message, now))
        return Result(ctx.settings.step_interval)

    def _gang_conflict(self, wf: Mapping[str, Any], status: dict[str, Any], plan: Any) -> GangCheck:
        """Hold the spec after overrides to ``spec.gangScheduler`` (:mod:`...judge.gang_contract`); on a
        conflict the Workflow fails ``GangSchedulingConflict``, before any child exists."""
        check = check_gang_contract(wf, getattr(plan, "workflow_spec", None))
        if check.problems:
            self.ctx.event(wf, "Warning", REASON_GANG_CONFLICT, check.message)
            status.update(cond.set_lifecycle(status, cond.FAILED, REASON_GANG_CONFLICT, check.message, self.ctx.clock.stamp()))
        return check

    @staticmethod
    def _plan_for_launch(wf: Mapping[str, Any], status: Mapping[str, Any], facts: Facts) -> Any:
        """The plan the Jobs are expanded from: the stored groups, with today's facts for the rest."""
        target = orchestration_of(wf).get("target") or {}
        opted_in = any(t.get("key") == UNSCHEDULABLE_TAINT for t in target.get("taintSelectors") or [])
        current = {**wf, "status": status}
        return compiler.stored_plan(current, facts(), cordoned_opt_in=opted_in, iterations=iterations_of(wf))

    # ------------------------------------------------------------------ dependencies

    def _record_dependency(self, status: dict[str, Any], obj: Mapping[str, Any], scope: str, group: str = "", iteration: int = 0) -> None:
        ref = reference(obj)
        ref["scope"] = scope
        if group:
            ref["groupName"] = group
            ref["iteration"] = iteration
        refs = list(status.get("dependencyRefs") or [])
        key = (ref.get("kind"), ref.get("name"), ref.get("namespace"))
        if all((r.get("kind"), r.get("name"), r.get("namespace")) != key for r in refs):
            refs.append(ref)
        status["dependencyRefs"] = refs

    def _create_dependency(
        self, wf: Mapping[str, Any], status: dict[str, Any], obj: Mapping[str, Any], owner: Mapping[str, Any]
    ) -> str | None:
        outcome = create_or_adopt(self.ctx, obj, owner if namespace_of(obj) else None)
        now = self.ctx.clock.stamp()
        if outcome.collision:
            message = f"Dependency {obj.get('kind')} {name_of(obj)} already exists and is not owned by this Workflow"
            status.update(cond.set_lifecycle(status, cond.FAILED, "DependencyNameCollision", message, now))
            return message
        if outcome.error:
            message = f"Failed to create dependency: {outcome.error}"
            hint = domains.missing_api_hint(str(obj.get("apiVersion") or "")) if outcome.missing_api else ""
            if hint:
                message = f"Failed to create dependency {obj.get('kind')} {name_of(obj)}: {outcome.error}; {hint}"
            status.update(cond.set_lifecycle(status, cond.FAILED, "DependencyCreationError", message, now))
            return message
        if outcome.obj is None:
            return "retry"  # the name is held by an object being deleted
        return None

    def ensure_workflow_dependencies(self, wf: dict[str, Any], status: dict[str, Any]) -> str | None:
        """Create (or adopt) the workflow-scoped dependencies; the problem that stopped it, if any."""
        try:
            deps = compiler.expand_workflow_dependencies(wf)
        except compiler.CompileError as exc:
            message = f"Failed to create dependency: {exc}"
            status.update(cond.set_lifecycle(status, cond.FAILED, "DependencyCreationError", message, self.ctx.clock.stamp()))
            return message
        own = {(str(d.get("kind")), name_of(d)) for d in deps if d.get("kind") in ("ConfigMap", "PersistentVolumeClaim")}
        refused = unadmitted(deps, admitted(wf) | own)
        if refused:
            message = refusal("Workflow", refused)
            self.ctx.event(wf, "Warning", REASON_NOT_ADMITTED, message)
            status.update(cond.set_lifecycle(status, cond.FAILED, REASON_NOT_ADMITTED, message, self.ctx.clock.stamp()))
            return message
        for dep in deps:
            known = any(r.get("kind") == dep.get("kind") and r.get("name") == name_of(dep) for r in status.get("dependencyRefs") or [])
            if known:
                continue
            problem = self._create_dependency(wf, status, dep, wf)
            if problem:
                return problem
            self._record_dependency(status, dep, "workflow")
        return None

    # ------------------------------------------------------------------ launching

    def launch_pending(self, wf: dict[str, Any], status: dict[str, Any], facts: Facts) -> Result:
        """Launch Pending groups under ``maxConcurrent``, never two Running groups on one node."""
        ctx = self.ctx
        orchestration = status["orchestration"]
        groups: list[dict[str, Any]] = orchestration["groups"]
        limit = int(execution_of(wf).get("maxConcurrent") or 0)
        iteration = int(orchestration.get("currentIteration") or 1)
        plan = None
        launched = 0
        for group in groups:
            running = [g for g in groups if g.get("phase") == "Running"]
            if limit > 0 and len(running) >= limit:
                break
            if group.get("phase") != "Pending":
                continue
            busy = {n for g in running for n in g.get("nodes") or ()}
            if busy & set(group.get("nodes") or ()):
                continue
            if plan is None:
                plan = self._plan_for_launch(wf, status, facts)
            problem = self._launch(wf, status, plan, group, iteration)
            if problem:
                return Result() if cond.is_terminal(status) else Result(1.0)
            launched += 1
        running_count = sum(1 for g in groups if g.get("phase") == "Running")
        message = f"{progress_text(wf, iteration)}: {running_count} groups running"
        status.update(cond.set_lifecycle(status, cond.IN_PROGRESS, "JobCreated", message, ctx.clock.stamp()))
        return Result(ctx.settings.step_interval if launched else ctx.settings.poll_interval)

    def _refuse_unadmitted(
        self, wf: dict[str, Any], status: dict[str, Any], plan: Any, planned: Any, iteration: int, manifest: Mapping[str, Any]
    ) -> str | None:
        """Fail the Workflow, before its first Job of a group exists, when the pods it would run name
        a ServiceAccount, Secret, ConfigMap or claim that admission never checked (:mod:`...judge.pod_references`)."""
        ctx = self.ctx
        try:
            deps = compiler.expand_job_dependencies(wf, plan, planned, iteration, manifest)
            # the TrainJob the Job tier will make from this Job; the uid only fills its ownerReference
            job = {**manifest, "metadata": {**dict(manifest.get("metadata") or {}), "uid": "not-created-yet"}}
            objects = [*deps, *compiler.expand_workload(job, wf)]
        except compiler.CompileError:
            return None  # the steps below report it with their own reasons
        # the TrainingRuntimes a TrainJob names are job-scoped, so ``deps`` holds them; the claims
        # and ConfigMaps the Workflow creates (overrides applied) keep their names or get the Job's
        effective = getattr(plan, "workflow_spec", None) or wf.get("spec") or {}
        own = {
            (str(d.get("kind")), name_of(d))
            for d in [*deps, *(effective.get("dependencies") or [])]
            if isinstance(d, Mapping) and d.get("kind") in ("ConfigMap", "PersistentVolumeClaim")
        }
        refused = unadmitted(objects, admitted(wf) | own)
        if not refused:
            return None
        message = refusal("Workflow", refused)
        ctx.event(wf, "Warning", REASON_NOT_ADMITTED, message)
        status.update(cond.set_lifecycle(status, cond.FAILED, REASON_NOT_ADMITTED, message, ctx.clock.stamp()))
        return message

    def _planned(self, wf: Mapping[str, Any], status: dict[str, Any], group: Mapping[str, Any]) -> Any:
        """The planner's group to expand the Job from (a diagnose round's flags included), or the
        message the Workflow failed with when the rounds cannot go on."""
        if not is_diagnose(wf):
            return compiler.planned_group(group)
        try:
            loopback, no_nvl = self.rounds.group_flags(wf, status, str(group["name"]))
        except (compiler.CompileError, ValueError) as exc:
            message = f"Cannot continue the diagnosis: {exc}"
            status.update(cond.set_lifecycle(status, cond.FAILED, "DiagnoseFailed", message, self.ctx.clock.stamp()))
            return message
        return compiler.planned_group(group, loopback=loopback, no_nvl=no_nvl)

    def _launch(self, wf: dict[str, Any], status: dict[str, Any], plan: Any, group: dict[str, Any], iteration: int) -> str | None:
        ctx = self.ctx
        planned = self._planned(wf, status, group)
        if isinstance(planned, str):
            return planned
        gang = self._gang_conflict(wf, status, plan)
        if gang.problems:
            return gang.message
        plan = _with_spec(plan, gang)
        try:
            manifest = compiler.expand_job(wf, plan, planned, iteration)
        except compiler.CompileError as exc:
            message = f"Failed to build Job for group {group['name']}: {exc}"
            status.update(cond.set_lifecycle(status, cond.FAILED, "JobCreationError", message, ctx.clock.stamp()))
            return message
        problem = self._refuse_unadmitted(wf, status, plan, planned, iteration, manifest)
        if problem:
            return problem
        # The compiler gives the Job the Job tier's finalizer (no patch after the create). The Job
        # tier creates the workload only once the dependencies below exist (the Job tier's launch check).
        outcome = create_or_adopt(ctx, manifest, wf)
        if outcome.collision:
            message = f"Job {name_of(manifest)} already exists and is not owned by this Workflow"
            status.update(cond.set_lifecycle(status, cond.FAILED, "JobNameCollision", message, ctx.clock.stamp()))
            return message
        if outcome.obj is None:
            log.warning("job not created yet", extra={"job": name_of(manifest), "error": outcome.error})
            return outcome.error or "retry"
        job = outcome.obj
        try:
            deps = compiler.expand_job_dependencies(wf, plan, planned, iteration, job)
        except compiler.CompileError as exc:
            message = f"Failed to create dependency: {exc}"
            status.update(cond.set_lifecycle(status, cond.FAILED, "DependencyCreationError", message, ctx.clock.stamp()))
            return message
        for dep in deps:
            problem = self._create_dependency(wf, status, dep, job)
            if problem:
                return problem
            self._record_dependency(status, dep, "job", group["name"], iteration)
        # The Job may create its workload now (its dependencies exist): tell the Job tier at once
        # rather than after the status write that records the launch.
        ctx.recent.launched(namespace_of(job), name_of(job))
        ctx.enqueue("job", namespace_of(job), name_of(job))
        group["phase"] = "Running"
        group["jobRef"] = reference(job)
        group["startTime"] = ctx.clock.stamp()
        group.pop("completionTime", None)
        return None

    def wake_launched(self, wf: Mapping[str, Any], status: Mapping[str, Any]) -> None:
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
