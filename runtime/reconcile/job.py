"""The Job tier: one TrainJob per Job, its state mapped onto the Job's conditions.

Flow of one reconcile (NVCRE's Job controller): deletion -> finalizer -> terminal handling
(threshold verdict after success) -> once the Workflow recorded the Job's launch (its
dependencies exist), create the workload and its measurements from the compiler's
``expand_workload`` -> map the TrainJob's conditions -> while running, watch for
pods the scheduler refuses (``schedulingStallGraceSeconds``; the blocked interval pauses the
timeout clock) and evaluate the node health monitor on the pods' nodes. A running Job is
visited when its TrainJob, pods, nodes or measurements change; its own timer runs only while
it has a clock to watch (a scheduling stall, stall detection), else it is a slow safety net. Failures attribute
nodes and capture a failure log through ``judge.attribution``.

The metric events of a Job (a workload created, a health-monitor pass with its duration and
node count, nodes newly found unhealthy) are counted in ``ctx.job_events`` where they happen.

A Job with ``spec.checkpoint`` restarts instead of failing while ``restarts.should_restart``
allows (a failed, stalled or vanished workload): the restart is counted in status first, then
the old TrainJob is removed, its pods drain, the goodput measurement carries the attempt's
numbers forward, and the same ``expand_workload`` output is created again under the same name.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from nvcre.compiler.durations import parse_duration
from nvcre.compiler.vocabulary import LABEL_JOB
from nvcre.compiler.vocabulary import LABEL_WORKFLOW

from .. import compile as compiler
from ..clock import format_time, parse_time
from ..judge.attribution import choose_failure_pod, group_nodes
from ..judge import repeats, scheduling
from ..judge.thresholds import CONFIGURATION_ERRORS
from ..measure import attempts
from ..judge.health import (
    HARDWARE_FAILURE_REASON,
    hardware_failed_message,
)
from ..kube.errors import ApiError
from ..kube.resources import (
    BANDWIDTH_MEASUREMENTS,
    GOODPUT_MEASUREMENTS,
    JOBS,
    NODES,
    PODS,
    TRAINJOBS,
    WORKFLOWS,
)
from . import conditions as cond
from . import restarts, verdicts
from .common import (
    annotations_of,
    create_or_adopt,
    lifecycle_gate,
    meta,
    name_of,
    namespace_of,
    reference,
    remove_finalizer,
)
from .context import SAFETY_NET_POLLS, Context, Result, owned_by
from .stall import stall_message
from .pods import JOB_LABEL, JOBSET_NAME_LABEL, blocked_pods, bound_nodes, job_pods, live_pods, scheduler_message

__all__ = ["FINALIZER", "JobReconciler", "trainjob_phase", "workflow_label", "workload_name"]

log = logging.getLogger("nvcre.runtime.reconcile.job")

FINALIZER = compiler.JOB_FINALIZER  # the compiler sets it when it lowers the Job
TIMEOUT_TAIL_REASON = "Timeout"
#: how long a new Job waits for its Workflow to record it before creating the workload anyway
LAUNCH_WAIT_SECONDS = 30.0
#: meanwhile it looks again this often (the Workflow tier queues it as soon as it recorded it)
LAUNCH_POLL_SECONDS = 5.0
#: A running Job is woken by the events of its TrainJob, pods, nodes and measurements; without
#: a clock of its own to watch (a scheduling stall, stall detection) it comes back only on the
#: safety-net timer. The Workflow keeps the timeout clock.
RUNNING_RESYNC_POLLS = SAFETY_NET_POLLS


def workload_name(job: Mapping[str, Any]) -> str:
    ref = (job.get("status") or {}).get("workloadRef") or {}
    return str(ref.get("name") or f"{name_of(job)}-workload")


def workflow_label(job: Mapping[str, Any]) -> str:
    """The ``workflow`` label of the Job's metric series: its ``nvcre.nvidia.com/workflow`` label."""
    return str((meta(job).get("labels") or {}).get(LABEL_WORKFLOW) or "")


def trainjob_phase(trainjob: Mapping[str, Any]) -> tuple[str, str]:
    """(phase, message) of a TrainJob: Failed is checked before Complete; suspend is Pending."""
    status = trainjob.get("status") or {}
    for type_, phase in (("Failed", "Failed"), ("Complete", "Succeeded")):
        found = cond.condition(status, type_)
        if found and found.get("status") == "True":
            return phase, str(found.get("message") or "")
    if (trainjob.get("spec") or {}).get("suspend"):
        return "Pending", "TrainJob is suspended (spec.suspend=true), waiting for it to be resumed"
    return "Running", ""


class JobReconciler:
    """Reconciles ``nvcre.nvidia.com`` Jobs."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    # ------------------------------------------------------------------ entry

    def reconcile(self, namespace: str, name: str) -> Result:
        ctx = self.ctx
        job = ctx.read(JOBS, name, namespace)
        gate = lifecycle_gate(ctx, JOBS, job, FINALIZER, self._finalize)
        if gate is not None or job is None:
            return gate or Result()
        status = job.get("status") or {}
        life = cond.lifecycle(status)
        if life == cond.SUCCEEDED:
            return self._judge_thresholds(job)
        if life == cond.FAILED:
            return Result()
        workflow = self._workflow_of(job)
        if not status.get("workloadRef"):
            if not self._launched(job, workflow):
                return Result(LAUNCH_POLL_SECONDS)  # the Workflow queues it once it recorded it
            return self._create_workload(job, workflow)
        self._ensure_measurements(job, workflow)
        return self._observe_workload(job)

    # ------------------------------------------------------------------ creation

    def _workflow_of(self, job: Mapping[str, Any]) -> dict[str, Any] | None:
        for ref in meta(job).get("ownerReferences") or []:
            if ref.get("kind") == "Workflow" and ref.get("controller"):
                return self.ctx.read(WORKFLOWS, str(ref.get("name")), namespace_of(job))
        return None

    def _launched(self, job: Mapping[str, Any], workflow: Mapping[str, Any] | None) -> bool:
        """Whether the Workflow finished launching the Job: it creates the Job, then the Job's
        dependencies (the TrainingRuntime the TrainJob names), then records the group's jobRef.
        A TrainJob created before the dependencies is refused. True once this process created
        them, or the status records the launch; a Job without a Workflow, or one the Workflow
        has not recorded within LAUNCH_WAIT_SECONDS, goes ahead."""
        if workflow is None or self.ctx.recent.was_launched(namespace_of(job), name_of(job)):
            return True
        groups = (((workflow.get("status") or {}).get("orchestration") or {}).get("groups")) or []
        if any((g.get("jobRef") or {}).get("name") == name_of(job) for g in groups):
            return True
        created = parse_time(meta(job).get("creationTimestamp"))
        return created is None or (self.ctx.clock.now() - created).total_seconds() >= LAUNCH_WAIT_SECONDS

    def _workload_objects(self, job: Mapping[str, Any], workflow: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        return compiler.expand_workload(job, workflow or {})

    def _create_workload(self, job: dict[str, Any], workflow: Mapping[str, Any] | None) -> Result:
        ctx = self.ctx
        if int((job.get("status") or {}).get("restartCount") or 0) > 0:
            waiting = self._prepare_restart(job)
            if waiting is not None:
                return waiting
        try:
            objects = self._workload_objects(job, workflow)
        except compiler.CompileError as exc:
            self._fail(job, "WorkloadCreationError", f"Failed to build the workload: {exc}", blame=False)
            return Result()
        trainjob = next((o for o in objects if o.get("kind") == "TrainJob"), None)
        if trainjob is None:
            self._fail(job, "WorkloadCreationError", "The Job's workload produced no TrainJob", blame=False)
            return Result()
        outcome = create_or_adopt(ctx, trainjob, job)
        tj_name = name_of(trainjob)
        if outcome.collision:
            self._fail(job, "WorkloadCreationError", f"TrainJob {tj_name} already exists and is not owned by this Job", blame=False)
            return Result()
        if outcome.obj is None:
            if outcome.error:
                ctx.event(job, "Warning", "WorkloadCreationError", f"Failed to create TrainJob {tj_name}: {outcome.error}")
            return Result(ctx.settings.poll_interval if outcome.error else 1.0)
        if not outcome.adopted:
            ctx.job_events.workload_created(namespace_of(job), name_of(job), workflow_label(job))
        self._create_measurements(job, objects)
        reason, message = (
            ("WorkloadAdopted", f"Workload TrainJob/{tj_name} adopted and is starting")
            if outcome.adopted
            else ("WorkloadCreated", f"Workload TrainJob/{tj_name} created and is starting")
        )
        ref = reference(trainjob)
        ref.setdefault("namespace", namespace_of(job))

        def mutate(status: dict[str, Any]) -> dict[str, Any]:
            status["workloadRef"] = ref
            return cond.set_lifecycle(status, cond.IN_PROGRESS, reason, message, ctx.clock.stamp())

        ctx.write_status(JOBS, job, mutate, stop_when_terminal=True)
        return Result(ctx.settings.poll_interval)

    def _create_measurements(self, job: Mapping[str, Any], objects: list[dict[str, Any]]) -> None:
        for obj in objects:
            if obj.get("kind") not in ("BandwidthMeasurement", "GoodputMeasurement"):
                continue
            outcome = create_or_adopt(self.ctx, obj, None)
            if outcome.obj is None and (outcome.error or outcome.collision):
                self.ctx.event(
                    job,
                    "Warning",
                    "MeasurementCreationError",
                    f"Failed to create {obj.get('kind')} {name_of(obj)}: {outcome.error or 'name taken'}",
                )

    def _ensure_measurements(self, job: Mapping[str, Any], workflow: Mapping[str, Any] | None) -> None:
        spec = job.get("spec") or {}
        wanted = []
        if spec.get("bandwidthMeasurement"):
            wanted.append((BANDWIDTH_MEASUREMENTS, f"{name_of(job)}-bandwidth"))
        if spec.get("goodputMeasurement"):
            wanted.append((GOODPUT_MEASUREMENTS, f"{name_of(job)}-goodput"))
        # A measurement this process created moments ago may not have reached the cache yet.
        if all(
            self.ctx.cached(res, name, namespace_of(job)) or self.ctx.recent.created(res.plural, name, namespace_of(job))
            for res, name in wanted
        ):
            return
        try:
            objects = self._workload_objects(job, workflow)
        except compiler.CompileError:
            return
        self._create_measurements(job, objects)

    # ------------------------------------------------------------------ observing

    def _pods(self, job: Mapping[str, Any]) -> list[dict[str, Any]]:
        store = self.ctx.store(PODS)
        namespace = namespace_of(job)
        candidates = {
            name_of(p): p
            for p in (
                *store.by_label(namespace, JOB_LABEL, name_of(job)),
                *store.by_label(namespace, JOBSET_NAME_LABEL, workload_name(job)),
            )
        }
        pods = job_pods(candidates.values(), name_of(job), workload_name(job))
        if not int((job.get("status") or {}).get("restartCount") or 0):
            return pods
        workload = self.ctx.cached(TRAINJOBS, workload_name(job), namespace) if (job.get("status") or {}).get("workloadRef") else None
        return restarts.current_attempt_pods(pods, workload)

    def _observe_workload(self, job: dict[str, Any]) -> Result:
        ctx = self.ctx
        tj_name = workload_name(job)
        trainjob = ctx.read(TRAINJOBS, tj_name, namespace_of(job))
        if trainjob is None:
            # Deleted by someone else (the controller deletes a workload only with its Job): nothing
            # failed on the nodes, so the Job ends without blaming them.
            message = f"Workload TrainJob/{tj_name} was deleted by someone other than the controller; no node is blamed"
            return self._restart_or_fail(job, "WorkloadDeleted", message, blame=False)
        if not owned_by(trainjob, job):
            self._fail(job, "WorkloadCreationError", f"TrainJob {tj_name} is not owned by this Job", blame=False)
            return Result()
        phase, detail = trainjob_phase(trainjob)
        if phase == "Failed":
            message = f"Workload TrainJob/{tj_name} failed: {detail}" if detail else f"Workload TrainJob/{tj_name} failed"
            return self._restart_or_fail(job, "WorkloadFailed", message)
        if phase == "Succeeded":
            message = f"Workload TrainJob/{tj_name} completed" + (f": {detail}" if detail else "")
            written = ctx.write_status(
                JOBS,
                job,
                lambda s: cond.set_lifecycle(s, cond.SUCCEEDED, "WorkloadCompleted", message, ctx.clock.stamp()),
                stop_when_terminal=True,
            )
            # Nothing written: the Job was terminal already, and its own event brings it back here.
            return self._judge_thresholds(written) if written is not None else Result()
        if phase == "Pending":
            ctx.write_status(
                JOBS,
                job,
                lambda s: cond.set_lifecycle(s, cond.IN_PROGRESS, "WorkloadPending", detail, ctx.clock.stamp()),
                stop_when_terminal=True,
            )
            return Result(ctx.settings.poll_interval)
        pods = self._pods(job)
        repeated = repeats.repeated_failure(pods)
        if repeated is not None:
            return self._restart_or_fail(job, "WorkloadFailed", f"Workload TrainJob/{tj_name} failed: {repeated.message()}")
        result = self._running(job, tj_name, pods)
        stalled = self._stalled(job, trainjob)
        if stalled is not None:
            return stalled
        self._check_health(job, pods)
        return result

    def _running(self, job: dict[str, Any], tj_name: str, pods: list[dict[str, Any]]) -> Result:
        ctx = self.ctx
        now = ctx.clock.now()
        stamp = format_time(now)
        blocked = blocked_pods(pods)
        jobset_restarts = restarts.jobset_restarts(pods)
        spec = job.get("spec") or {}
        grace = float(spec.get("schedulingStallGraceSeconds") or ctx.settings.scheduling_stall_grace)
        if blocked and self._never_placed(job, blocked, now, grace):
            return Result()

        def mutate(status: dict[str, Any]) -> dict[str, Any]:
            if not status.get("workloadStartTime"):
                status["workloadStartTime"] = stamp
            since = parse_time(status.get("schedulingBlockedSince"))
            if blocked:
                if since is None:
                    status["schedulingBlockedSince"] = stamp
                    since = now
                if (now - since).total_seconds() >= grace:
                    message = f"Workload pods are unschedulable: {scheduler_message(blocked)}"
                    return cond.set_lifecycle(status, cond.IN_PROGRESS, "WorkloadSchedulingBlocked", message, stamp)
            elif since is not None:
                started = parse_time(status.get("workloadStartTime")) or since
                paused = now - max(since, started)
                status["workloadStartTime"] = format_time(started + paused)
                status["schedulingResumedTime"] = stamp
                status.pop("schedulingBlockedSince", None)
            message = f"Workload TrainJob/{tj_name} is running"
            if jobset_restarts:
                message += f" (its JobSet restarted {jobset_restarts} time{'s' if jobset_restarts > 1 else ''})"
            return cond.set_lifecycle(status, cond.IN_PROGRESS, "WorkloadRunning", message, stamp)

        ctx.write_status(JOBS, job, mutate, stop_when_terminal=True)
        if blocked:
            return Result(min(ctx.settings.poll_interval, max(1.0, grace / 4)))
        if spec.get("stallMultiplier") and spec.get("goodputMeasurement"):
            return Result(ctx.settings.poll_interval)  # the step clock is checked on every visit
        return Result(ctx.settings.safety_net)

    def _stalled(self, job: dict[str, Any], trainjob: Mapping[str, Any]) -> Result | None:
        """Restart, or fail with WorkloadStalled, when the training steps stopped coming."""
        spec = job.get("spec") or {}
        if not spec.get("stallMultiplier") or not spec.get("goodputMeasurement"):
            return None
        fresh = self.ctx.cached(JOBS, name_of(job), namespace_of(job)) or job
        goodput = self.ctx.cached(GOODPUT_MEASUREMENTS, f"{name_of(job)}-goodput", namespace_of(job))
        if goodput is None:
            return None
        raw = (goodput.get("spec") or {}).get("sampleInterval") or (spec.get("goodputMeasurement") or {}).get("sampleInterval")
        try:
            interval = parse_duration(str(raw)) if raw else 60.0
        except ValueError:
            interval = 60.0
        evidence = restarts.current_attempt_goodput(goodput.get("status") or {}, fresh.get("status") or {}, trainjob)
        if evidence is None:
            return None
        message = stall_message(spec, fresh.get("status") or {}, evidence, self.ctx.clock.now(), interval)
        if message is None:
            return None
        return self._restart_or_fail(fresh, "WorkloadStalled", message)

    # ------------------------------------------------------------------ checkpoint restarts

    def _goodput(self, job: Mapping[str, Any]) -> dict[str, Any] | None:
        return self.ctx.read(GOODPUT_MEASUREMENTS, f"{name_of(job)}-goodput", namespace_of(job))

    def _never_placed(self, job: dict[str, Any], blocked: list[dict[str, Any]], now: datetime, grace: float) -> bool:
        """Fail the Job, blaming no node, once its pods have waited the controller's bound on nodes
        where no eviction could make room (``judge/scheduling.py``); True when it failed."""
        since = parse_time((job.get("status") or {}).get("schedulingBlockedSince"))
        bound = max(grace, self.ctx.settings.never_schedulable_timeout)
        if since is None or (now - since).total_seconds() < bound:
            return False
        if not scheduling.can_never_schedule(scheduler_message([pod]) for pod in blocked):
            return False
        waited = int((now - since).total_seconds())
        message = (
            f"Workload pods can never schedule on the group's nodes (waited {waited}s; no eviction would make room, "
            f"so the cluster must change first): {scheduler_message(blocked)}"
        )
        self._fail(job, scheduling.NEVER_SCHEDULABLE_REASON, message, blame=False)
        return True

    def _restart_or_fail(self, job: dict[str, Any], reason: str, message: str, *, blame: bool = True) -> Result:
        """Count a checkpoint restart when ``restarts.should_restart`` allows, else fail."""
        goodput = self._goodput(job) if restarts.max_restarts(job.get("spec") or {}) is not None else None
        if not restarts.should_restart(job, (goodput or {}).get("status")):
            self._fail(job, reason, message, blame=blame)
            return Result()
        ctx = self.ctx
        count = int((job.get("status") or {}).get("restartCount") or 0)
        maximum = restarts.max_restarts(job.get("spec") or {}) or 0
        failed_pod = choose_failure_pod(self._pods(job))
        stamp = ctx.clock.stamp()
        written = ctx.write_status(JOBS, job, lambda s: restarts.restarted_status(s, count, maximum, stamp), stop_when_terminal=True)
        if written is None:
            return Result(1.0)
        ctx.event(written, "Warning", "WorkloadAttemptFailed", restarts.attempt_failure_message(count + 1, message, failed_pod))
        ctx.event(written, "Normal", restarts.RESTARTING, restarts.restarting_message(count + 1, maximum))
        log.info("restarting workload from checkpoint", extra={"job": name_of(job), "restart": count + 1, "cause": reason})
        return self._prepare_restart(written) or Result(1.0)

    def _prepare_restart(self, job: dict[str, Any]) -> Result | None:
        """Before the workload of a restarted Job is created again (each step idempotent): carry
        the goodput forward, remove the old TrainJob, wait for its pods to go. None when ready."""
        ctx = self.ctx
        status = job.get("status") or {}
        restart = int(status.get("restartCount") or 0)
        restarting = cond.condition(status, cond.IN_PROGRESS) or {}
        since = parse_time(restarting.get("lastTransitionTime")) if restarting.get("reason") == restarts.RESTARTING else None
        if since is None:
            return None  # the restart's workload was already created once; nothing to prepare
        self._carry_goodput(job, restart, str(restarting.get("message") or ""))
        namespace = namespace_of(job)
        tj_name = workload_name(job)
        trainjob = ctx.live(TRAINJOBS, tj_name, namespace)
        if trainjob is not None and owned_by(trainjob, job):
            created = parse_time(meta(trainjob).get("creationTimestamp"))
            if created is not None and created >= since and not meta(trainjob).get("deletionTimestamp"):
                return None  # created for this restart already (a crash before workloadRef was written)
            if not meta(trainjob).get("deletionTimestamp"):
                # Foreground: the TrainJob stays until its JobSet, Jobs and pods are gone, so the
                # new one cannot meet (or adopt) anything of the old attempt.
                ctx.kube.delete(TRAINJOBS, tj_name, namespace, uid=str(meta(trainjob).get("uid")), propagation="Foreground")
            return Result(1.0)
        leftover = [p for p in self.ctx.store(PODS).by_label(namespace, JOBSET_NAME_LABEL, tj_name)]
        waited = (ctx.clock.now() - since).total_seconds()
        if leftover and waited < ctx.settings.pod_drain_grace:
            return Result(1.0)
        return None

    def _carry_goodput(self, job: Mapping[str, Any], restart: int, reason: str) -> None:
        """Fold the ended attempt into the GoodputMeasurement (annotation, then status reset)."""
        ctx = self.ctx
        goodput = self._goodput(job)
        if goodput is None:
            return
        now = ctx.clock.now()
        prior = attempts.PriorAttempts.from_json(annotations_of(goodput).get(attempts.PRIOR_ANNOTATION))
        if prior.interruptions < restart:
            folded = attempts.fold(prior, goodput.get("status") or {}, restart, now)
            patch = {"metadata": {"annotations": {attempts.PRIOR_ANNOTATION: folded.to_json()}}}
            try:
                goodput = ctx.kube.merge_patch(GOODPUT_MEASUREMENTS, name_of(goodput), namespace_of(goodput), patch)
            except ApiError as exc:
                log.info("goodput priors not written yet", extra={"job": name_of(job), "error": exc.message})
                return
        stamp = ctx.clock.stamp()
        ctx.write_status(
            GOODPUT_MEASUREMENTS,
            goodput,
            lambda s: restarts.reset_goodput_status(s, restart, attempts.pending_interruption(s, reason, now), stamp),
        )

    # ------------------------------------------------------------------ health

    def _check_health(self, job: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        monitor = ((job.get("spec") or {}).get("nodeHealthMonitor") or {}).get("cel") or {}
        expression = str(monitor.get("expression") or "")
        if not expression:
            return
        ctx = self.ctx
        began = time.perf_counter()
        nodes = bound_nodes(pods, labelled_for=name_of(job))
        if not nodes:
            return  # no pod on a node yet: nothing to evaluate
        node_objs = {n: o for n in nodes if (o := ctx.cached(NODES, n, None)) is not None}
        unhealthy = verdicts.unhealthy_nodes(expression, node_objs)
        namespace, name, workflow = namespace_of(job), name_of(job), workflow_label(job)
        ctx.job_events.health_checked(namespace, name, workflow, time.perf_counter() - began, len(node_objs))
        if not unhealthy:
            return
        seen: dict[str, Any] = {}

        def mutate(status: dict[str, Any]) -> dict[str, Any]:
            before = {e.get("name") for e in status.get("failedNodes") or [] if e.get("reason") == HARDWARE_FAILURE_REASON}
            seen["flip"] = not cond.is_true(status, cond.HARDWARE_FAILED)
            seen["new"] = sorted({e["name"] for e in unhealthy} - before)
            status["failedNodes"] = verdicts.merge_failed_nodes(status.get("failedNodes") or [], unhealthy)
            flagged = [e["name"] for e in status["failedNodes"] if e.get("reason") == HARDWARE_FAILURE_REASON]
            message = hardware_failed_message(flagged)
            return cond.set_condition(status, cond.HARDWARE_FAILED, "True", HARDWARE_FAILURE_REASON, message, ctx.clock.stamp())

        written = ctx.write_status(JOBS, job, mutate, stop_when_terminal=True)
        if written is None:
            return
        ctx.job_events.hardware_failures(namespace, name, workflow, seen.get("new") or [], first=bool(seen.get("flip")))
        if seen.get("flip"):
            ctx.event(written, "Warning", HARDWARE_FAILURE_REASON, hardware_failed_message([e["name"] for e in unhealthy]))

    # ------------------------------------------------------------------ verdicts

    def _fail(
        self,
        job: dict[str, Any],
        reason: str,
        message: str,
        *,
        log_reason: str | None = None,
        timed_out: bool = False,
        blame: bool = True,
        blame_nodes: Sequence[str] | None = None,
    ) -> dict[str, Any] | None:
        """Failed with ``reason``; seed failed nodes and capture a failure log when none yet.
        Returns the Job as written, None when nothing was written (it was terminal already).

        A timed-out Job whose pods never reached a node blames nobody: nothing ran there, and a
        full cluster is not a fault of the nodes the group was meant for. ``blame_nodes`` names
        the nodes to blame instead of the whole group (with NVCRE's ``WorkloadFailed``; the
        message says why).
        """
        ctx = self.ctx
        pods = self._pods(job)
        ran = any((p.get("spec") or {}).get("nodeName") for p in pods)
        nodes = group_nodes(job, pods) if blame and (ran or not timed_out) else []
        if blame_nodes is not None:
            nodes = list(blame_nodes)
        failure_log = None
        if not (job.get("status") or {}).get("failureLog"):
            failure_log = verdicts.failure_log(ctx.kube, pods, reason_override=log_reason)

        def mutate(status: dict[str, Any]) -> dict[str, Any]:
            if not status.get("failedNodes") and nodes:
                status["failedNodes"] = verdicts.seed_failed_nodes(nodes, "WorkloadFailed", message)
            if failure_log and not status.get("failureLog"):
                status["failureLog"] = failure_log
            return cond.set_lifecycle(status, cond.FAILED, reason, message, ctx.clock.stamp())

        return ctx.write_status(JOBS, job, mutate, stop_when_terminal=True)

    def time_out(self, job: dict[str, Any], message: str) -> dict[str, Any] | None:
        """The Workflow's timeout: Failed/JobTimedOut with a log tail (launcher preferred).
        Returns the Job as written, None when it was terminal already."""
        return self._fail(job, "JobTimedOut", message, log_reason=TIMEOUT_TAIL_REASON, timed_out=True)

    def fail_on_domain(self, job: dict[str, Any], message: str, nodes: Sequence[str]) -> dict[str, Any] | None:
        """Failed/ComputeDomainNotReady, blaming ``nodes`` only (see :mod:`nvcre.runtime.judge.domains`)."""
        return self._fail(job, "ComputeDomainNotReady", message, blame_nodes=nodes)

    def _judge_thresholds(self, job: dict[str, Any]) -> Result:
        ctx = self.ctx
        status = job.get("status") or {}
        thresholds = dict((job.get("spec") or {}).get("thresholds") or {})
        if not thresholds or cond.condition(status, cond.VALIDATION_FAILED):
            return Result()
        namespace = namespace_of(job)
        bandwidth = ctx.read(BANDWIDTH_MEASUREMENTS, f"{name_of(job)}-bandwidth", namespace)
        goodput = ctx.read(GOODPUT_MEASUREMENTS, f"{name_of(job)}-goodput", namespace)
        values = verdicts.threshold_values(bandwidth, goodput)
        succeeded_at = parse_time((cond.condition(status, cond.SUCCEEDED) or {}).get("lastTransitionTime"))
        spec_timeout = (job.get("spec") or {}).get("measurementTimeout")
        limit = parse_duration(spec_timeout) if spec_timeout else ctx.settings.measurement_timeout
        expired = succeeded_at is not None and ctx.clock.now() - succeeded_at > timedelta(seconds=limit)
        outcome = verdicts.judge_thresholds(thresholds, values, expired=expired, timeout_seconds=limit)
        if outcome is None:
            return Result(min(ctx.settings.poll_interval, 5.0))
        failed, reason, message = outcome
        nodes = group_nodes(job, self._pods(job))

        def mutate(s: dict[str, Any]) -> dict[str, Any] | None:
            if cond.condition(s, cond.VALIDATION_FAILED):
                return None
            if failed and not s.get("failedNodes") and nodes and reason not in CONFIGURATION_ERRORS:
                s["failedNodes"] = verdicts.seed_failed_nodes(nodes, "ThresholdViolation", message)
            return cond.set_condition(s, cond.VALIDATION_FAILED, "True" if failed else "False", reason, message, ctx.clock.stamp())

        written = ctx.write_status(JOBS, job, mutate)
        if written is not None:
            ctx.event(written, "Warning" if failed else "Normal", reason, message)
        return Result()

    # ------------------------------------------------------------------ deletion

    def _finalize(self, job: dict[str, Any]) -> Result:
        ctx = self.ctx
        if FINALIZER not in (meta(job).get("finalizers") or []):
            return Result()
        namespace = namespace_of(job)
        tj_name = workload_name(job)
        trainjob = ctx.live(TRAINJOBS, tj_name, namespace)
        if trainjob is not None and owned_by(trainjob, job) and not meta(trainjob).get("deletionTimestamp"):
            ctx.kube.delete(TRAINJOBS, tj_name, namespace, uid=str(meta(trainjob).get("uid")))
        try:
            selector = f"jobset.sigs.k8s.io/jobset-name={tj_name}"
            running = live_pods(ctx.kube.list(PODS, namespace, label_selector=selector).items)
            running += live_pods(ctx.kube.list(PODS, namespace, label_selector=f"{LABEL_JOB}={name_of(job)}").items)
        except ApiError:
            running = []
        still_there = (trainjob is not None and owned_by(trainjob, job)) or bool(running)
        if still_there:
            started = verdicts.drain_anchor(job)
            waited = (ctx.clock.now() - started).total_seconds() if started else 0.0
            if waited < ctx.settings.pod_drain_grace:
                return Result(1.0)
            ctx.event(
                job,
                "Warning",
                "PodDrainTimeout",
                f"Removed the finalizer after {int(waited)}s with {len(running)} workload pod(s) still present",
            )
        remove_finalizer(ctx, JOBS, job, FINALIZER)
        return Result()
