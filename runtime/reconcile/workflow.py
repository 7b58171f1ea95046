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
import logging
import time
from collections.abc import Mapping
from typing import Any

from nvcre.compiler.compose import RUN_BINDING, RUN_ROLE
from nvcre.compiler.durations import format_duration, parse_duration
from nvcre.compiler.vocabulary import LABEL_WORKFLOW, WORKFLOW_FINALIZER

from .. import compile as compiler
from ..clock import parse_time
from ..judge import domains, tracking
from ..kube.errors import ApiError, NotFound
from ..kube.resources import (
    CONFIGMAPS,
    JOBS,
    NODES,
    PODS,
    RESOURCE_SLICES,
    TRAINJOBS,
    WORKFLOWS,
)
from . import conditions as cond
from .common import (
    create_or_adopt,
    lifecycle_gate,
    labels,
    meta,
    name_of,
    namespace_of,
    reference,
    remove_finalizer,
    uid_of,
)
from .context import Context, Result, referenced_by
from .diagnose import DiagnoseRounds, is_diagnose
from .pods import bound_nodes, job_pods, live_pods
from .ports import JobVerdicts

__all__ = ["FINALIZER", "WorkflowReconciler"]

log = logging.getLogger("nvcre.runtime.reconcile.workflow")

FINALIZER = WORKFLOW_FINALIZER
WORKFLOW_LABEL = LABEL_WORKFLOW
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
SUCCEEDED_PREFIX = "succeeded-nodes-"
FAILED_PREFIX = "failed-nodes-"


NAMESPACE_ACCESS = "NamespaceAccess"


def _orchestration(wf: Mapping[str, Any]) -> dict[str, Any]:
    return dict(((wf.get("spec") or {}).get("orchestration")) or {})


def _execution(wf: Mapping[str, Any]) -> dict[str, Any]:
    return dict(_orchestration(wf).get("execution") or {})


def _iterations(wf: Mapping[str, Any]) -> int:
    return max(1, int(_orchestration(wf).get("iterations") or 1))


def _progress(wf: Mapping[str, Any], iteration: int) -> str:
    """``Iteration i/n``, or ``Diagnose round i`` for a diagnose run (its round count is open)."""
    if is_diagnose(wf):
        return f"Diagnose round {iteration}"
    return f"Iteration {iteration}/{_iterations(wf)}"


def _has_thresholds(wf: Mapping[str, Any]) -> bool:
    spec = ((wf.get("spec") or {}).get("jobTemplate") or {}).get("spec") or {}
    validation = ((wf.get("spec") or {}).get("validation") or {}).get("performance") or {}
    return bool(spec.get("thresholds") or (validation.get("thresholds") or {}).get("thresholds"))


class WorkflowReconciler:
    """Reconciles Workflows."""

    def __init__(self, ctx: Context, jobs: JobVerdicts) -> None:
        self.ctx = ctx
        self.jobs = jobs
        self.diagnose = DiagnoseRounds(self)
        self._passes: dict[tuple[str, str], float] = {}

    # ------------------------------------------------------------------ entry

    def reconcile(self, namespace: str, name: str) -> Result:
        ctx = self.ctx
        # The status below is rewritten whole, but only over the version it was computed from
        # (``based_on``): a copy the cache had not brought up to date yet ends in a Conflict and
        # the reconcile runs again. ``ctx.read`` also knows this process's own latest write.
        wf = ctx.read(WORKFLOWS, name, namespace)
        gate = lifecycle_gate(ctx, WORKFLOWS, wf, FINALIZER, self._finalize)
        if gate is not None or wf is None:
            if wf is None:
                self.forget(namespace, name)  # deleted: nothing remembered of it stays
            return gate or Result()
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

    def _write(self, wf: Mapping[str, Any], status: dict[str, Any]) -> None:
        # ``status`` is this reconcile's own copy (taken when it read the Workflow): no second one
        tracked = tracking.with_tracking(wf, status)
        self.ctx.write_status(WORKFLOWS, wf, lambda _old: tracked, based_on=wf)

    # ------------------------------------------------------------------ planning

    def facts(self) -> Any:
        return compiler.cluster_facts(self.ctx.store(NODES).list(), self.ctx.store(RESOURCE_SLICES).list())

    def _partition(self, wf: dict[str, Any], status: dict[str, Any]) -> Result:
        ctx = self.ctx
        now = ctx.clock.stamp()
        status["namespace"] = namespace_of(wf)
        try:
            plan = compiler.plan_workflow(wf, self.facts())
        except compiler.PlanError as exc:
            for event in getattr(exc, "events", ()):
                ctx.event(wf, event.type, event.reason, event.message)
            if getattr(exc, "excluded_nodes", ()):
                status.setdefault("orchestration", {"totalNodes": 0, "nodesPerJob": 0, "totalGroups": 0})
                status["orchestration"]["excludedNodes"] = list(exc.excluded_nodes)
                status["orchestration"]["exclusionReason"] = exc.exclusion_reason
            new = cond.set_lifecycle(status, cond.FAILED, exc.reason, exc.message, now)
            self._write(wf, new)
            return Result()
        except compiler.CompileError as exc:
            new = cond.set_lifecycle(status, cond.FAILED, "OverrideError", f"Failed to apply overrides: {exc}", now)
            self._write(wf, new)
            return Result()
        for event in plan.events:
            ctx.event(wf, event.type, event.reason, event.message)
        orchestration = plan.as_status()
        orchestration["completedIterations"] = 0
        status["orchestration"] = orchestration
        new = cond.set_lifecycle(status, cond.IN_PROGRESS, "GroupsPartitioned", plan.message, now)
        self._write(wf, new)
        return Result(ctx.settings.step_interval)

    def _plan_for_launch(self, wf: Mapping[str, Any], status: Mapping[str, Any]) -> Any:
        """The plan the Jobs are expanded from: the stored groups, with today's facts for the rest."""
        target = _orchestration(wf).get("target") or {}
        opted_in = any(t.get("key") == UNSCHEDULABLE_TAINT for t in target.get("taintSelectors") or [])
        current = {**wf, "status": status}
        return compiler.stored_plan(current, self.facts(), cordoned_opt_in=opted_in, iterations=_iterations(wf))

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

    def _ensure_workflow_dependencies(self, wf: dict[str, Any], status: dict[str, Any]) -> str | None:
        try:
            deps = compiler.expand_workflow_dependencies(wf)
        except compiler.CompileError as exc:
            message = f"Failed to create dependency: {exc}"
            status.update(cond.set_lifecycle(status, cond.FAILED, "DependencyCreationError", message, self.ctx.clock.stamp()))
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

    def _launch_pending(self, wf: dict[str, Any], status: dict[str, Any]) -> Result:
        ctx = self.ctx
        orchestration = status["orchestration"]
        groups: list[dict[str, Any]] = orchestration["groups"]
        limit = int(_execution(wf).get("maxConcurrent") or 0)
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
                plan = self._plan_for_launch(wf, status)
            problem = self._launch(wf, status, plan, group, iteration)
            if problem:
                return Result() if cond.is_terminal(status) else Result(1.0)
            launched += 1
        running_count = sum(1 for g in groups if g.get("phase") == "Running")
        message = f"{_progress(wf, iteration)}: {running_count} groups running"
        status.update(cond.set_lifecycle(status, cond.IN_PROGRESS, "JobCreated", message, ctx.clock.stamp()))
        return Result(ctx.settings.step_interval if launched else ctx.settings.poll_interval)

    def _launch(self, wf: dict[str, Any], status: dict[str, Any], plan: Any, group: dict[str, Any], iteration: int) -> str | None:
        ctx = self.ctx
        if is_diagnose(wf):
            try:
                loopback, no_nvl = self.diagnose.group_flags(wf, status, str(group["name"]))
            except (compiler.CompileError, ValueError) as exc:
                message = f"Cannot continue the diagnosis: {exc}"
                status.update(cond.set_lifecycle(status, cond.FAILED, "DiagnoseFailed", message, ctx.clock.stamp()))
                return message
            planned = compiler.planned_group(group, loopback=loopback, no_nvl=no_nvl)
        else:
            planned = compiler.planned_group(group)
        try:
            manifest = compiler.expand_job(wf, plan, planned, iteration)
        except compiler.CompileError as exc:
            message = f"Failed to build Job for group {group['name']}: {exc}"
            status.update(cond.set_lifecycle(status, cond.FAILED, "JobCreationError", message, ctx.clock.stamp()))
            return message
        # The compiler gives the Job the Job tier's finalizer (no patch after the create). The Job
        # tier creates the workload only once the dependencies below exist (``JobReconciler._launched``).
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

    # ------------------------------------------------------------------ polling

    def _poll_running(self, wf: dict[str, Any], status: dict[str, Any]) -> Result:
        ctx = self.ctx
        orchestration = status["orchestration"]
        groups: list[dict[str, Any]] = orchestration["groups"]
        iteration = int(orchestration.get("currentIteration") or 1)
        blocked_note = ""
        next_poll = ctx.settings.poll_interval
        before = sum(1 for g in groups if g.get("phase") != "Running")
        for group in groups:
            if group.get("phase") != "Running":
                continue
            job_name = str((group.get("jobRef") or {}).get("name") or "")
            job = ctx.read(JOBS, job_name, namespace_of(wf)) if job_name else None
            if job is None or meta(job).get("deletionTimestamp"):
                # the controller deletes a running group's Job only to retry it, and resets the group first
                if self._finish_group(wf, status, group, job, failed=True, timed_out=False) and group.get("phase") == "Failed":
                    ctx.event(
                        wf,
                        "Warning",
                        "JobDeleted",
                        f"Job {job_name} of group {group.get('name')} was deleted before it finished; the group failed",
                    )
                continue
            if orchestration.get("placement") == "Unpinned":
                self._backfill(group, job, int(orchestration.get("nodesPerJob") or 0))
            job_status = job.get("status") or {}
            terminal = cond.is_terminal(job_status) or cond.is_true(job_status, cond.HARDWARE_FAILED)
            if not terminal:
                timeout = self._timed_out(wf, group, job)
                if timeout:
                    written = self.jobs.time_out(job, timeout)
                    ctx.event(job, "Warning", "JobTimedOut", timeout)
                    fresh = written or ctx.live(JOBS, job_name, namespace_of(wf)) or job
                    self._finish_group(wf, status, group, fresh, failed=True, timed_out=True)
                    continue
                problem = self._domain_problem(status, group, job, iteration)
                if problem is not None:
                    written = self.jobs.fail_on_domain(job, problem.message, problem.nodes)
                    ctx.event(job, "Warning", "ComputeDomainNotReady", problem.message)
                    fresh = written or ctx.live(JOBS, job_name, namespace_of(wf)) or job
                    self._finish_group(wf, status, group, fresh, failed=True, timed_out=False)
                    continue
                if (cond.condition(job_status, cond.IN_PROGRESS) or {}).get("reason") == "WorkloadSchedulingBlocked":
                    message = (cond.condition(job_status, cond.IN_PROGRESS) or {}).get("message", "")
                    blocked_note = f"; job {job_name} scheduling blocked: {message}"
                continue
            succeeded = cond.lifecycle(job_status) == cond.SUCCEEDED and not cond.is_true(job_status, cond.HARDWARE_FAILED)
            if succeeded and (job.get("spec") or {}).get("thresholds") and not cond.condition(job_status, cond.VALIDATION_FAILED):
                next_poll = min(next_poll, 2.0)
                continue
            failed = not succeeded or cond.is_true(job_status, cond.VALIDATION_FAILED)
            if not self._finish_group(wf, status, group, job, failed=failed, timed_out=False):
                next_poll = min(next_poll, 1.0)
        running = sum(1 for g in groups if g.get("phase") == "Running")
        now = ctx.clock.stamp()
        if blocked_note:
            message = f"{_progress(wf, iteration)}: {running} groups running{blocked_note}"
            status.update(cond.set_lifecycle(status, cond.IN_PROGRESS, "JobSchedulingBlocked", message, now))
        elif not cond.is_terminal(status):
            message = f"{_progress(wf, iteration)}: {running} groups running"
            status.update(cond.set_lifecycle(status, cond.IN_PROGRESS, "JobRunning", message, now))
        finished = sum(1 for g in groups if g.get("phase") != "Running") > before
        if finished or running == 0:
            # a group just ended: step at once to launch what waited for it, or to conclude
            return Result(ctx.settings.step_interval)
        return Result(next_poll)

    def _domain_problem(
        self, status: Mapping[str, Any], group: Mapping[str, Any], job: Mapping[str, Any], iteration: int
    ) -> domains.DomainProblem | None:
        """A Job-scoped ComputeDomain still not Ready ``--compute-domain-timeout`` after launch."""
        ctx = self.ctx
        refs = [
            r
            for r in status.get("dependencyRefs") or []
            if r.get("kind") == domains.COMPUTE_DOMAIN_KIND
            and r.get("groupName") == group.get("name")
            and int(r.get("iteration") or 0) == iteration
        ]
        started = parse_time(group.get("startTime"))
        if not refs or started is None:
            return None
        waited = (ctx.clock.now() - started).total_seconds()
        bound = ctx.settings.compute_domain_timeout
        if waited <= bound:
            return None
        found = []
        for ref in refs:
            try:
                resource = ctx.kube.resource_for(str(ref.get("apiVersion") or ""), domains.COMPUTE_DOMAIN_KIND)
                domain = ctx.live(resource, str(ref.get("name")), str(ref.get("namespace") or namespace_of(job)))
            except NotFound:
                continue  # the API went away: the Job's own checks see what that does to its pods
            if domain is not None:
                found.append(domain)
        pods = job_pods(ctx.store(PODS).list(namespace_of(job)), name_of(job), None)
        return domains.domain_problem(found, bound_nodes(pods), waited, bound, format_duration(bound))

    def _backfill(self, group: dict[str, Any], job: Mapping[str, Any], nodes_per_job: int) -> None:
        if group.get("nodes"):
            return
        pods = job_pods(self.ctx.store(PODS).list(namespace_of(job)), name_of(job), None)
        nodes = bound_nodes(pods, labelled_for=name_of(job))
        if nodes_per_job and len(nodes) == nodes_per_job:
            group["nodes"] = nodes

    def _timed_out(self, wf: Mapping[str, Any], group: Mapping[str, Any], job: Mapping[str, Any]) -> str:
        """NVCRE's isJobTimedOut: the message to fail with, or '' while within the budget."""
        raw = _execution(wf).get("timeoutPerJob")
        if not raw:
            return ""
        try:
            limit = parse_duration(str(raw))
        except ValueError:
            return ""
        now = self.ctx.clock.now()
        status = job.get("status") or {}
        started = parse_time(status.get("workloadStartTime"))
        blocked = parse_time(status.get("schedulingBlockedSince"))
        if blocked is not None:
            if (now - blocked).total_seconds() > limit:
                return "Job exceeded timeoutPerJob while its pods were unschedulable"
            if started is not None and (blocked - started).total_seconds() > limit:
                return "Job exceeded timeoutPerJob"
            return ""
        if started is not None:
            return "Job exceeded timeoutPerJob" if (now - started).total_seconds() > limit else ""
        if status.get("workloadRef"):
            return ""
        begun = parse_time(group.get("startTime"))
        if begun is not None and (now - begun).total_seconds() > limit:
            return "Job exceeded timeoutPerJob"
        return ""

    def _finish_group(
        self,
        wf: dict[str, Any],
        status: dict[str, Any],
        group: dict[str, Any],
        job: Mapping[str, Any] | None,
        *,
        failed: bool,
        timed_out: bool,
    ) -> bool:
        """Complete a terminal group; False while a failed group's pods still drain."""
        ctx = self.ctx
        if failed and job is not None and not self._drained(job):
            return False
        failed_nodes = list(((job or {}).get("status") or {}).get("failedNodes") or [])
        # Under diagnose a failed group is evidence, not blame: only confirmed nodes are recorded.
        if failed_nodes and not is_diagnose(wf):
            self._merge_node_results(wf, status, succeeded=(), failed=failed_nodes)
        execution = _execution(wf)
        retries = int(group.get("retries") or 0)
        if failed and not timed_out and int(execution.get("retryFailedGroups") or 0) > retries and job is not None:
            ctx.kube.delete(JOBS, name_of(job), namespace_of(job), uid=uid_of(job))
            self._clean_job_dependencies(status, job)
            group["retries"] = retries + 1
            group["phase"] = "Pending"
            for key in ("jobRef", "startTime", "completionTime"):
                group.pop(key, None)
            return True
        group["phase"] = "Failed" if failed else "Succeeded"
        group["completionTime"] = ctx.clock.stamp()
        return True

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

    def _drained(self, job: Mapping[str, Any]) -> bool:
        """Delete a failed Job's TrainJob and report whether its pods are gone (bounded wait)."""
        ctx = self.ctx
        namespace = namespace_of(job)
        workload = str(((job.get("status") or {}).get("workloadRef") or {}).get("name") or f"{name_of(job)}-workload")
        trainjob = ctx.live(TRAINJOBS, workload, namespace)
        if trainjob is not None and referenced_by(trainjob, job) and not meta(trainjob).get("deletionTimestamp"):
            ctx.kube.delete(TRAINJOBS, workload, namespace, uid=uid_of(trainjob))
        pods = live_pods(job_pods(ctx.store(PODS).list(namespace), name_of(job), workload))
        if not pods:
            return True
        anchor = None
        for type_ in (cond.FAILED, cond.SUCCEEDED, cond.HARDWARE_FAILED):
            found = cond.condition(job.get("status"), type_)
            if found and found.get("status") == "True":
                anchor = max(filter(None, [anchor, parse_time(found.get("lastTransitionTime"))]), default=None)
        waited = (ctx.clock.now() - anchor).total_seconds() if anchor else 0.0
        return waited >= ctx.settings.pod_drain_grace

    # ------------------------------------------------------------------ node results

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

    # ------------------------------------------------------------------ iterations and the verdict

    def _iteration_complete(self, wf: dict[str, Any], status: dict[str, Any]) -> Result:
        ctx = self.ctx
        orchestration = status["orchestration"]
        groups: list[dict[str, Any]] = orchestration["groups"]
        iteration = int(orchestration.get("currentIteration") or 1)
        total = _iterations(wf)
        now = ctx.clock.stamp()
        if is_diagnose(wf):
            self.diagnose.round_complete(wf, status)
            return Result() if cond.is_terminal(status) else Result(ctx.settings.step_interval)
        if iteration < total:
            history = list(orchestration.get("iterationHistory") or [])
            if all(int(h.get("iteration") or 0) != iteration for h in history):
                history.append({"iteration": iteration, "groups": [self._record(g) for g in groups]})
            orchestration["iterationHistory"] = history
            self.retire_jobs(wf, status, groups)
            for group in groups:
                group["phase"] = "Pending"
                for key in ("jobRef", "startTime", "completionTime", "retries"):
                    group.pop(key, None)
                if orchestration.get("placement") == "Unpinned":
                    group["nodes"] = []
            orchestration["completedIterations"] = iteration
            orchestration["currentIteration"] = iteration + 1
            message = f"Iteration {iteration}/{total} completed, starting next"
            status.update(cond.set_lifecycle(status, cond.IN_PROGRESS, "IterationCompleted", message, now))
            return Result(ctx.settings.step_interval)
        return self._final(wf, status, groups, total)

    def retire_jobs(self, wf: Mapping[str, Any], status: dict[str, Any], groups: list[dict[str, Any]]) -> None:
        """Delete the Jobs (and their job-scoped dependencies) of a finished iteration's groups."""
        ctx = self.ctx
        for group in groups:
            ref = group.get("jobRef") or {}
            job = ctx.live(JOBS, str(ref.get("name") or ""), namespace_of(wf)) if ref.get("name") else None
            if job is not None:
                ctx.kube.delete(JOBS, name_of(job), namespace_of(job), uid=uid_of(job))
                self._clean_job_dependencies(status, job)

    def record(self, group: Mapping[str, Any]) -> dict[str, Any]:
        """A finished group as ``iterationHistory`` keeps it."""
        return self._record(group)

    def merge_node_results(self, wf: Mapping[str, Any], status: dict[str, Any], *, succeeded: Any, failed: list[Mapping[str, Any]]) -> None:
        """Add to the Workflow's succeeded/failed node ConfigMaps."""
        self._merge_node_results(wf, status, succeeded=succeeded, failed=failed)

    @staticmethod
    def _record(group: Mapping[str, Any]) -> dict[str, Any]:
        record = {"name": group["name"], "phase": group.get("phase", "Pending")}
        if (group.get("jobRef") or {}).get("name"):
            record["jobName"] = group["jobRef"]["name"]
        for key in ("startTime", "completionTime"):
            if group.get(key):
                record[key] = group[key]
        return record

    def _final(self, wf: dict[str, Any], status: dict[str, Any], groups: list[dict[str, Any]], total: int) -> Result:
        ctx = self.ctx
        orchestration = status["orchestration"]
        history = orchestration.get("iterationHistory") or []
        failed_count = sum(1 for h in history for g in h.get("groups") or [] if g.get("phase") == "Failed")
        failed_count += sum(1 for g in groups if g.get("phase") == "Failed")
        failed_entries = compiler.stored_failed_nodes(ctx.live(CONFIGMAPS, f"{FAILED_PREFIX}{uid_of(wf)[:8]}", namespace_of(wf)))
        failed_names = {e["name"] for e in failed_entries}
        ok_nodes = sorted({n for g in groups if g.get("phase") == "Succeeded" for n in g.get("nodes") or ()} - failed_names)
        if ok_nodes:
            self._merge_node_results(wf, status, succeeded=ok_nodes, failed=[])
        orchestration["completedIterations"] = total
        now = ctx.clock.stamp()
        if failed_count:
            hardware = any(e.get("reason") == "HardwareFailureDetected" for e in failed_entries)
            validation = any(e.get("reason") == "ThresholdViolation" for e in failed_entries)
            message = f"{failed_count} groups failed across {total} iterations"
            if hardware:
                reason = "JobHardwareFailed"
                message += "; hardware failures occurred on one or more nodes"
            elif validation:
                reason = "JobValidationFailed"
            else:
                reason = "IterationsFailed"
            if validation:
                status.update(cond.jobs_failed_validation(status, now))
            status.update(cond.set_lifecycle(status, cond.FAILED, reason, message, now))
        else:
            message = f"All {total} iterations completed successfully"
            status.update(cond.set_lifecycle(status, cond.SUCCEEDED, "JobCompleted", message, now))
        return Result()

    # ------------------------------------------------------------------ deletion

    def _finalize(self, wf: dict[str, Any]) -> Result:
        ctx = self.ctx
        if FINALIZER not in (meta(wf).get("finalizers") or []):
            return Result()
        namespace = namespace_of(wf)
        try:
            jobs = ctx.kube.list(JOBS, namespace, label_selector=f"{WORKFLOW_LABEL}={name_of(wf)}").items
        except ApiError:
            return Result(1.0)
        remaining = [j for j in jobs if referenced_by(j, wf)]
        for job in remaining:
            if not meta(job).get("deletionTimestamp"):
                ctx.kube.delete(JOBS, name_of(job), namespace, uid=uid_of(job))
        if remaining:
            return Result(1.0)
        for ref in reversed((wf.get("status") or {}).get("dependencyRefs") or []):
            try:
                resource = ctx.kube.resource_for(str(ref.get("apiVersion")), str(ref.get("kind")))
            except ApiError:
                continue
            live = ctx.live(resource, str(ref.get("name")), ref.get("namespace") or None)
            if live is None or not referenced_by(live, wf) and not _labelled_for(live, wf):
                continue
            ctx.kube.delete(resource, name_of(live), ref.get("namespace") or None, uid=uid_of(live))
        remove_finalizer(ctx, WORKFLOWS, wf, FINALIZER)
        return Result()


def _labelled_for(obj: Mapping[str, Any], wf: Mapping[str, Any]) -> bool:
    return labels(obj).get(WORKFLOW_LABEL) == name_of(wf) and not (obj.get("metadata") or {}).get("namespace")
