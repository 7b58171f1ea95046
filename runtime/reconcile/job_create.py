"""The Job tier's workload creation: the TrainJob and measurements of a launched Job.

Once the Workflow recorded the Job's launch (its dependencies exist), the compiler's
``expand_workload`` gives the TrainJob and the measurements; the TrainJob is created (or
adopted when it is ours already) and recorded in ``status.workloadRef``. A TrainJob whose pods
would name a ServiceAccount, Secret, ConfigMap or claim outside the Job's runtime patches (where
admission checked the author's rights, :mod:`.pod_references`) is never created: the Job fails
``PodReferencesNotAdmitted`` and no node is blamed.

A create is never sent twice for one name: a reconcile that runs before the first create's
outcome reached the caches (the Job's status without ``workloadRef`` yet, the TrainJob not in
its cache) finds the object this process created, or is creating, through ``ctx.recent`` and
reads it instead; only a live read that finds nothing lets a create go out again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import compile as compiler
from ..clock import parse_time
from ..kube.resources import BANDWIDTH_MEASUREMENTS, GOODPUT_MEASUREMENTS, JOBS, TRAINJOBS
from . import conditions as cond
from .common import Adopted, create_or_adopt, meta, name_of, namespace_of, reference
from .context import Result, referenced_by
from .job_base import workflow_label
from .job_restart import JobRestarts
from .pod_references import REASON_NOT_ADMITTED, admitted, refusal, unadmitted

__all__ = ["LAUNCH_POLL_SECONDS", "LAUNCH_WAIT_SECONDS", "JobWorkloadCreation"]

#: how long a new Job waits for its Workflow to record it before creating the workload anyway
LAUNCH_WAIT_SECONDS = 30.0
#: meanwhile it looks again this often (the Workflow tier queues it as soon as it recorded it)
LAUNCH_POLL_SECONDS = 5.0


_MEASUREMENTS = {"BandwidthMeasurement": BANDWIDTH_MEASUREMENTS, "GoodputMeasurement": GOODPUT_MEASUREMENTS}


class JobWorkloadCreation(JobRestarts):
    """Creates (or adopts) a Job's TrainJob and measurements."""

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
        refused = unadmitted([trainjob], admitted(job))
        if refused:
            self._fail(job, REASON_NOT_ADMITTED, refusal("Job", refused), blame=False)
            return Result()
        outcome = self._known_workload(job, trainjob) or create_or_adopt(ctx, trainjob, job)
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
