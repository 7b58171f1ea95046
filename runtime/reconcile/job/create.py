"""The Job tier's workload creation: the TrainJob and measurements of a launched Job.

Once the Job is launched (``judge.launch``: its Workflow created its dependencies), the
compiler's ``expand_workload`` gives the TrainJob and the measurements; the TrainJob is created
(or adopted when it is ours already) and recorded in ``status.workloadRef``. A TrainJob whose
pods would name a ServiceAccount, Secret, ConfigMap or claim outside the Job's runtime patches
(where admission checked the author's rights, :mod:`...judge.pod_references`) is never created: the Job
fails ``PodReferencesNotAdmitted`` and no node is blamed.

A create is never sent twice for one name: a reconcile that runs before the first create's
outcome reached the caches (the Job's status without ``workloadRef`` yet, the TrainJob not in
its cache) finds the object this process created, or is creating, through ``ctx.recent`` and
reads it instead; only a live read that finds nothing lets a create go out again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ... import compile as compiler
from ...clock import parse_time
from ...judge import conditions as cond
from ...judge.launch import Launch, decide_launch
from ...judge.pod_references import REASON_NOT_ADMITTED, admitted, refusal, unadmitted
from ...kube.resources import BANDWIDTH_MEASUREMENTS, GOODPUT_MEASUREMENTS, JOBS, TRAINJOBS
from ..common import Adopted, create_or_adopt, meta, name_of, namespace_of, reference
from ..context import Context, Result, referenced_by
from .names import bandwidth_name, goodput_name, workflow_label
from .parts import Failer, RestartPreparer

__all__ = ["WorkloadCreator"]

_MEASUREMENTS = {"BandwidthMeasurement": BANDWIDTH_MEASUREMENTS, "GoodputMeasurement": GOODPUT_MEASUREMENTS}


class WorkloadCreator:
    """Creates (or adopts) a Job's TrainJob and measurements; handed the context, a way to
    prepare a restart and a way to fail."""

    def __init__(self, ctx: Context, restarts: RestartPreparer, failure: Failer) -> None:
        self.ctx = ctx
        self.restarts = restarts
        self.failure = failure

    def launch(self, job: Mapping[str, Any], workflow: Mapping[str, Any] | None) -> Launch:
        """Whether the Workflow finished launching the Job, from what this process observes:
        the Workflow (if any), its own record of the launch and the Job's age (``judge.launch``)."""
        return decide_launch(
            name_of(job),
            None if workflow is None else (workflow.get("status") or {}),
            remembered=workflow is not None and self.ctx.recent.was_launched(namespace_of(job), name_of(job)),
            created=parse_time(meta(job).get("creationTimestamp")),
            now=self.ctx.clock.now(),
        )

    def workload_objects(self, job: Mapping[str, Any], workflow: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        """The TrainJob and measurements the compiler builds for the Job."""
        return compiler.expand_workload(job, workflow or {})

    def create(self, job: dict[str, Any], workflow: Mapping[str, Any] | None) -> Result:
        """Create (or adopt) the workload and record it in ``status.workloadRef``."""
        ctx = self.ctx
        if int((job.get("status") or {}).get("restartCount") or 0) > 0:
            waiting = self.restarts.prepare(job)
            if waiting is not None:
                return waiting
        try:
            objects = self.workload_objects(job, workflow)
        except compiler.CompileError as exc:
            self.failure.fail(job, "WorkloadCreationError", f"Failed to build the workload: {exc}", blame=False)
            return Result()
        trainjob = next((o for o in objects if o.get("kind") == "TrainJob"), None)
        if trainjob is None:
            self.failure.fail(job, "WorkloadCreationError", "The Job's workload produced no TrainJob", blame=False)
            return Result()
        refused = unadmitted([trainjob], admitted(job))
        if refused:
            self.failure.fail(job, REASON_NOT_ADMITTED, refusal("Job", refused), blame=False)
            return Result()
        outcome = self._known_workload(job, trainjob) or create_or_adopt(ctx, trainjob, job)
        tj_name = name_of(trainjob)
        if outcome.collision:
            self.failure.fail(job, "WorkloadCreationError", f"TrainJob {tj_name} already exists and is not owned by this Job", blame=False)
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

        def mutate(status: dict[str, Any]) -> dict[str, Any] | None:
            if (status.get("workloadRef") or {}).get("name") == tj_name:
                return None  # recorded already: this reconcile started from a copy before that write
            status["workloadRef"] = ref
            return cond.set_lifecycle(status, cond.IN_PROGRESS, reason, message, ctx.clock.stamp())

        ctx.write_status(JOBS, job, mutate, stop_when_terminal=True)
        return Result(ctx.settings.poll_interval)

    def _known_workload(self, job: Mapping[str, Any], trainjob: Mapping[str, Any]) -> Adopted | None:
        """The outcome of a TrainJob create this process sent a moment ago, found with a live
        read instead of a second create; None when no such create is remembered, or the read
        finds the name free (then the create goes out)."""
        ctx = self.ctx
        name, namespace = name_of(trainjob), namespace_of(job)
        if not ctx.recent.created(TRAINJOBS.plural, name, namespace):
            return None
        live = ctx.live(TRAINJOBS, name, namespace)
        if live is None:
            ctx.recent.forget(TRAINJOBS.plural, name, namespace)
            return None
        if meta(live).get("deletionTimestamp"):
            return Adopted(None, retry=True)
        if not referenced_by(live, job):
            return Adopted(None, collision=True)
        return Adopted(live, adopted=True)

    def _create_measurements(self, job: Mapping[str, Any], objects: list[dict[str, Any]]) -> None:
        for obj in objects:
            resource = _MEASUREMENTS.get(str(obj.get("kind")))
            if resource is None:
                continue
            # one this process created (or is creating) moments ago: its event is on its way
            if self.ctx.cached(resource, name_of(obj), namespace_of(obj)) or self.ctx.recent.created(
                resource.plural, name_of(obj), namespace_of(obj)
            ):
                continue
            outcome = create_or_adopt(self.ctx, obj, None)
            if outcome.obj is None and (outcome.error or outcome.collision):
                self.ctx.event(
                    job,
                    "Warning",
                    "MeasurementCreationError",
                    f"Failed to create {obj.get('kind')} {name_of(obj)}: {outcome.error or 'name taken'}",
                )

    def ensure_measurements(self, job: Mapping[str, Any], workflow: Mapping[str, Any] | None) -> None:
        """Create the Job's measurements that neither the cache nor this process's memory has."""
        spec = job.get("spec") or {}
        wanted = []
        if spec.get("bandwidthMeasurement"):
            wanted.append((BANDWIDTH_MEASUREMENTS, bandwidth_name(job)))
        if spec.get("goodputMeasurement"):
            wanted.append((GOODPUT_MEASUREMENTS, goodput_name(job)))
        # A measurement this process created moments ago may not have reached the cache yet.
        if all(
            self.ctx.cached(res, name, namespace_of(job)) or self.ctx.recent.created(res.plural, name, namespace_of(job))
            for res, name in wanted
        ):
            return
        try:
            objects = self.workload_objects(job, workflow)
        except compiler.CompileError:
            return
        self._create_measurements(job, objects)
