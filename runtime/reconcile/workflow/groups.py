"""The Workflow tier's running groups: timeouts, ComputeDomain readiness, completion, retries.

Each Running group's Job is read and :func:`~nvcre.runtime.judge.groups.running_group_step`
decides what it means; this part applies the step. A Job past ``timeoutPerJob`` or whose
ComputeDomain stays not Ready is ended through the Job tier's verdicts; a terminal Job completes
its group (a failed one only after its pods drained, and retried while ``retryFailedGroups``
allows).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ... import compile as compiler
from ...clock import parse_time
from ...judge import conditions as cond
from ...judge import domains
from ...judge.groups import GroupStep, Step, running_group_step, timeout_message
from ...judge.pods import bound_nodes, job_pods, live_pods
from ...kube.errors import NotFound
from ...kube.resources import JOBS, PODS, TRAINJOBS
from ..common import meta, name_of, namespace_of, uid_of
from ..context import Context, Result, referenced_by
from ..ports import JobVerdicts
from .ports import Results
from .spec import execution_of, is_diagnose, progress_text

__all__ = ["RunningGroups"]


class RunningGroups:
    """Follows the Running groups of a Workflow to their end; ends a Job through ``jobs``."""

    def __init__(self, ctx: Context, jobs: JobVerdicts, results: Results) -> None:
        self.ctx = ctx
        self.jobs = jobs
        self.results = results

    def poll(self, wf: dict[str, Any], status: dict[str, Any]) -> Result:
        """One look at every Running group; the Workflow's progress message from what it found."""
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
            step = self.step_of(wf, status, group, job, iteration)
            if job is not None and step.step is not Step.JOB_GONE and orchestration.get("placement") == "Unpinned":
                self._backfill(group, job, int(orchestration.get("nodesPerJob") or 0))
            if step.step is Step.BLOCKED:
                blocked_note = f"; job {job_name} scheduling blocked: {step.message}"
            elif step.step is Step.AWAITING_VERDICT:
                next_poll = min(next_poll, 2.0)  # the Job's verdict waits for its measurements
            elif step.step is not Step.RUNNING and not self._apply(wf, status, group, job, job_name, step):
                next_poll = min(next_poll, 1.0)
        running = sum(1 for g in groups if g.get("phase") == "Running")
        now = ctx.clock.stamp()
        if blocked_note:
            message = f"{progress_text(wf, iteration)}: {running} groups running{blocked_note}"
            status.update(cond.set_lifecycle(status, cond.IN_PROGRESS, "JobSchedulingBlocked", message, now))
        elif not cond.is_terminal(status):
            message = f"{progress_text(wf, iteration)}: {running} groups running"
            status.update(cond.set_lifecycle(status, cond.IN_PROGRESS, "JobRunning", message, now))
        finished = sum(1 for g in groups if g.get("phase") != "Running") > before
        if finished or running == 0:
            # a group just ended: step at once to launch what waited for it, or to conclude
            return Result(ctx.settings.step_interval)
        return Result(next_poll)

    def step_of(
        self, wf: Mapping[str, Any], status: Mapping[str, Any], group: Mapping[str, Any], job: Mapping[str, Any] | None, iteration: int
    ) -> GroupStep:
        """What the group's Job as observed means (the decision; nothing is written)."""
        return running_group_step(
            job,
            timeout=self.timed_out(wf, group, job) if job is not None else "",
            domain_problem=lambda: self._domain_problem(status, group, job or {}, iteration),
            verdict_waits=lambda: job is not None and self.jobs.bandwidth_unsettled(job),
        )

    def _apply(
        self, wf: dict[str, Any], status: dict[str, Any], group: dict[str, Any], job: dict[str, Any] | None, job_name: str, step: GroupStep
    ) -> bool:
        """Carry out a step that ends or completes the group; False while a failed group drains."""
        ctx = self.ctx
        if step.step is Step.JOB_GONE:
            # the controller deletes a running group's Job only to retry it, and resets the group first
            done = self._finish_group(wf, status, group, job, failed=True, timed_out=False)
            if done and group.get("phase") == "Failed":
                message = f"Job {job_name} of group {group.get('name')} was deleted before it finished; the group failed"
                ctx.event(wf, "Warning", "JobDeleted", message)
            return True
        if job is None or step.step is Step.FINISHED:
            return self._finish_group(wf, status, group, job, failed=step.failed, timed_out=False)
        if step.step is Step.TIMED_OUT:
            written = self.jobs.time_out(job, step.message)
            ctx.event(job, "Warning", "JobTimedOut", step.message)
        else:
            written = self.jobs.fail_on_domain(job, step.message, step.nodes)
            ctx.event(job, "Warning", "ComputeDomainNotReady", step.message)
        fresh = written or ctx.live(JOBS, job_name, namespace_of(wf)) or job
        self._finish_group(wf, status, group, fresh, failed=True, timed_out=step.step is Step.TIMED_OUT)
        return True

    def timed_out(self, wf: Mapping[str, Any], group: Mapping[str, Any], job: Mapping[str, Any]) -> str:
        """NVCRE's isJobTimedOut: the message to fail with, or '' while within the budget."""
        raw = execution_of(wf).get("timeoutPerJob")
        try:
            limit = compiler.parse_duration(str(raw)) if raw else None
        except ValueError:
            limit = None
        job_status = job.get("status") or {}
        return timeout_message(
            limit,
            self.ctx.clock.now(),
            workload_started=parse_time(job_status.get("workloadStartTime")),
            blocked_since=parse_time(job_status.get("schedulingBlockedSince")),
            has_workload=bool(job_status.get("workloadRef")),
            launched=parse_time(group.get("startTime")),
        )

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
        return domains.domain_problem(found, bound_nodes(pods), waited, bound, compiler.format_duration(bound))

    def _backfill(self, group: dict[str, Any], job: Mapping[str, Any], nodes_per_job: int) -> None:
        if group.get("nodes"):
            return
        pods = job_pods(self.ctx.store(PODS).list(namespace_of(job)), name_of(job), None)
        nodes = bound_nodes(pods, labelled_for=name_of(job))
        if nodes_per_job and len(nodes) == nodes_per_job:
            group["nodes"] = nodes

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
            self.results.merge(wf, status, succeeded=(), failed=failed_nodes)
        retries = int(group.get("retries") or 0)
        if failed and not timed_out and int(execution_of(wf).get("retryFailedGroups") or 0) > retries and job is not None:
            ctx.kube.delete(JOBS, name_of(job), namespace_of(job), uid=uid_of(job))
            self.results.clean_job_dependencies(status, job)
            group["retries"] = retries + 1
            group["phase"] = "Pending"
            for key in ("jobRef", "startTime", "completionTime"):
                group.pop(key, None)
            return True
        group["phase"] = "Failed" if failed else "Succeeded"
        group["completionTime"] = ctx.clock.stamp()
        return True

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
