"""What an ended attempt of a checkpointed Job leads to, what its restart waits for and writes (pure).

Two decisions of the Job tier, each returning an outcome the tier applies:

* :func:`choose_restart`: a failed, stalled or vanished workload is recreated from its
  checkpoint when the Job has one (``spec.checkpoint`` with a ``pvcName``: ``maximum`` is not
  None), ``status.restartCount`` is below ``checkpoint.maxRestarts`` and the GoodputMeasurement
  saw a checkpoint (``lastCheckpointStep > 0``: without one there is nothing to resume from);
  otherwise the Job fails. NVCRE decides the same way.
* :func:`plan_restart_step`: before the workload of a restarted Job is created again, the old
  TrainJob must go (deleted in the foreground, so nothing of the ended attempt can be adopted)
  and its pods must drain, at most for the pod-drain grace. Each visit of the tier takes one
  step; the answer says which.

And what a restart writes, for the tier to apply: a restart increments ``restartCount``,
clears the workload's clocks and reads ``InProgress``/``WorkloadRestarting`` "Restarting
workload from checkpoint (restart r/max)", the condition's ``lastTransitionTime`` being the
moment of the restart (:func:`restarted_status`); the GoodputMeasurement's per-attempt clocks
start again (:func:`reset_goodput_status`). The Job keeps no other state: everything the tier
needs to go on after a crash is in these statuses. Two views separate the current attempt from
the ended ones: its pods (:func:`current_attempt_pods`) and its goodput evidence
(:func:`current_attempt_goodput`).

JobSet-level restarts (a JobSet whose own failure policy recreates its Jobs) are not
checkpoint restarts; they are counted from the ``jobset.sigs.k8s.io/restart-attempt`` label of
the workload's pods (:func:`jobset_restarts`).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..clock import parse_time
from . import conditions as cond
from .attribution import FailurePod

__all__ = [
    "RESTARTING",
    "RESTART_ATTEMPT_LABEL",
    "OldWorkload",
    "RestartChoice",
    "RestartStep",
    "attempt_failure_message",
    "choose_restart",
    "counted",
    "current_attempt_goodput",
    "current_attempt_pods",
    "jobset_restarts",
    "max_restarts",
    "plan_restart_step",
    "reset_goodput_status",
    "restarted_status",
    "restarting_message",
    "should_restart",
]

#: how soon the tier looks again while a restart waits for the old attempt to go
RESTART_RETRY_SECONDS = 1.0
#: the reason of the InProgress condition while a Job's workload restarts from its checkpoint
RESTARTING = "WorkloadRestarting"
RESTART_ATTEMPT_LABEL = "jobset.sigs.k8s.io/restart-attempt"
_CLEARED_ON_RESTART = ("workloadRef", "workloadStartTime", "schedulingBlockedSince", "schedulingResumedTime")
_GOODPUT_RESET = ("lastStepTimestamp", "avgStepTimeSec", "applicationStartTime", "avgTFLOPSPerGPU")


def counted(value: object) -> int:
    """A count from a status or spec field: a positive integer, else 0 (absent, negative, bool)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


@dataclass(frozen=True)
class RestartChoice:
    """``restart``: recreate the workload as attempt ``attempt`` of ``1 + maximum``; else fail."""

    restart: bool
    attempt: int
    maximum: int


def choose_restart(maximum: int | None, restart_count: object, last_checkpoint_step: object) -> RestartChoice:
    """Restart or fail, for a Job whose workload failed, stalled or vanished.

    ``maximum``: ``checkpoint.maxRestarts`` (None when the Job has no checkpoint);
    ``restart_count``: ``status.restartCount``; ``last_checkpoint_step``: the GoodputMeasurement's.
    """
    count = counted(restart_count)
    limit = 0 if maximum is None else counted(maximum)
    restart = maximum is not None and count < limit and counted(last_checkpoint_step) > 0
    return RestartChoice(restart, count + 1, limit)


class RestartStep(enum.Enum):
    """One step of preparing a restart's workload."""

    #: the Job is not restarting, or its restart's workload was created already: nothing to do
    NOTHING = "nothing to prepare"
    #: the TrainJob was created for this restart already (a crash before ``workloadRef``)
    CREATED = "the restart's TrainJob exists"
    #: remove the ended attempt's TrainJob (in the foreground), then look again
    DELETE_OLD = "delete the old TrainJob"
    #: the ended attempt's TrainJob is being deleted: look again
    AWAIT_DELETION = "wait for the old TrainJob to go"
    #: the old TrainJob is gone but its pods are still there, within the drain grace: look again
    AWAIT_DRAIN = "wait for the old pods to drain"
    #: create the workload now
    READY = "ready to create the workload"


@dataclass(frozen=True)
class OldWorkload:
    """The TrainJob found under the workload's name, when this Job owns it."""

    created: datetime | None
    deleting: bool


def plan_restart_step(
    restarting_since: datetime | None,
    workload: OldWorkload | None,
    leftover_pods: int,
    now: datetime,
    drain_grace: float,
) -> RestartStep:
    """The next step before a restarted Job's workload is created.

    ``restarting_since``: when the restart was counted (the ``WorkloadRestarting`` condition's
    time), None when the Job is not restarting. ``workload``: the TrainJob of the workload's name
    this Job owns, if any. ``leftover_pods``: pods of that name's JobSet still present.
    """
    if restarting_since is None:
        return RestartStep.NOTHING
    if workload is not None:
        if workload.created is not None and workload.created >= restarting_since and not workload.deleting:
            return RestartStep.CREATED
        return RestartStep.AWAIT_DELETION if workload.deleting else RestartStep.DELETE_OLD
    if leftover_pods and (now - restarting_since).total_seconds() < drain_grace:
        return RestartStep.AWAIT_DRAIN
    return RestartStep.READY


def max_restarts(job_spec: Mapping[str, Any]) -> int | None:
    """``checkpoint.maxRestarts`` (0 when unset), or None when the Job has no checkpoint."""
    checkpoint = job_spec.get("checkpoint")
    if not isinstance(checkpoint, Mapping) or not checkpoint.get("pvcName"):
        return None
    return counted(checkpoint.get("maxRestarts"))


def should_restart(job: Mapping[str, Any], goodput_status: Mapping[str, Any] | None) -> bool:
    """:func:`choose_restart` read from a whole Job and its GoodputMeasurement's status."""
    status = job.get("status") or {}
    choice = choose_restart(
        max_restarts(job.get("spec") or {}), status.get("restartCount"), (goodput_status or {}).get("lastCheckpointStep")
    )
    return choice.restart


def restarting_message(restart: int, maximum: int) -> str:
    return f"Restarting workload from checkpoint (restart {restart}/{maximum})"


def restarted_status(status: Mapping[str, Any], expected_count: int, maximum: int, stamp: str) -> dict[str, Any] | None:
    """The Job status after restart ``expected_count + 1``; None when someone already counted it."""
    if counted(status.get("restartCount")) != expected_count or not status.get("workloadRef"):
        return None
    new = {k: v for k, v in status.items() if k not in _CLEARED_ON_RESTART}
    new["restartCount"] = expected_count + 1
    new = cond.set_lifecycle(new, cond.IN_PROGRESS, RESTARTING, restarting_message(expected_count + 1, maximum), stamp)
    # The condition's time marks the restart itself (it stays InProgress, so set_lifecycle keeps
    # the old time): a TrainJob created before it belongs to the attempt that ended.
    new["conditions"] = [
        {**c, "lastTransitionTime": stamp} if c.get("type") == cond.IN_PROGRESS else c for c in new.get("conditions") or []
    ]
    return new


def attempt_failure_message(attempt: int, cause: str, pod: FailurePod | None) -> str:
    """One line naming how attempt ``attempt`` ended and, when known, the pod and node."""
    where = ""
    if pod is not None:
        where = f"; pod {pod.pod_name} on node {pod.node_name or '(none)'} exited with code {pod.exit_code}"
        if pod.reason:
            where += f" ({pod.reason})"
    return f"Attempt {attempt} failed: {cause}{where}"


def reset_goodput_status(status: Mapping[str, Any], restart: int, pending: Mapping[str, Any], stamp: str) -> dict[str, Any] | None:
    """The GoodputMeasurement status at restart ``restart``: the per-attempt clocks start again.

    None when the measurement already recorded this restart or is complete.
    """
    if cond.is_true(status, "Complete") or counted(status.get("interruptionCount")) >= restart:
        return None
    new = {k: v for k, v in status.items() if k not in _GOODPUT_RESET}
    new["interruptionCount"] = restart
    new["pendingInterruption"] = dict(pending)
    new["startTime"] = stamp
    return new


def jobset_restarts(pods: Iterable[Mapping[str, Any]]) -> int:
    """How often the workload's JobSet recreated its Jobs (the highest restart-attempt label)."""
    highest = 0
    for pod in pods:
        value = str(((pod.get("metadata") or {}).get("labels") or {}).get(RESTART_ATTEMPT_LABEL) or "")
        if value.isdigit():
            highest = max(highest, int(value))
    return highest


def _created(obj: Mapping[str, Any]) -> datetime | None:
    return parse_time((obj.get("metadata") or {}).get("creationTimestamp"))


def current_attempt_pods(pods: Iterable[Mapping[str, Any]], workload: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The pods of the workload that exists now: a restart reuses the TrainJob's name, so pods
    created before it (the previous attempt's, still draining) are left out."""
    since = _created(workload) if workload is not None else None
    if since is None:
        return [dict(p) for p in pods]
    return [dict(p) for p in pods if (_created(p) or since) >= since]


def current_attempt_goodput(
    goodput_status: Mapping[str, Any], job_status: Mapping[str, Any], workload: Mapping[str, Any] | None
) -> Mapping[str, Any] | None:
    """The goodput status as evidence about the current attempt (for stall detection).

    None while the measurement has not recorded the Job's latest restart yet; step clocks seen
    before the current workload was created are dropped (they belong to an earlier attempt).
    """
    if counted(goodput_status.get("interruptionCount")) < counted(job_status.get("restartCount")):
        return None
    since = _created(workload) if workload is not None else None
    last_step = parse_time(goodput_status.get("lastStepTimestamp"))
    if since is None or last_step is None or last_step >= since:
        return goodput_status
    return {k: v for k, v in goodput_status.items() if k not in _GOODPUT_RESET}
