"""Checkpoint restarts of a Job's workload (pure): when to restart and what the status becomes.

A Job with ``spec.checkpoint {pvcName, maxRestarts}`` gets its workload recreated after a
failure, a stall or an external deletion, as NVCRE does, when all of these hold: the checkpoint
is configured, ``status.restartCount < maxRestarts`` (default 0) and the Job's
GoodputMeasurement saw a checkpoint (``lastCheckpointStep > 0``): without one there is nothing
to resume from. A restart increments ``restartCount``, clears the workload's clocks and reads
``InProgress``/``WorkloadRestarting`` "Restarting workload from checkpoint (restart r/max)",
the condition's ``lastTransitionTime`` being the moment of the restart.
The reconciler keeps no other state: everything it needs to go on after a crash is here.

JobSet-level restarts (a JobSet whose own failure policy recreates its Jobs) are not
checkpoint restarts; they are counted from the ``jobset.sigs.k8s.io/restart-attempt`` label of
the workload's pods.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from ..clock import parse_time
from ..judge.attribution import FailurePod
from . import conditions as cond

__all__ = [
    "RESTARTING",
    "RESTART_ATTEMPT_LABEL",
    "attempt_failure_message",
    "current_attempt_goodput",
    "current_attempt_pods",
    "jobset_restarts",
    "max_restarts",
    "reset_goodput_status",
    "restarted_status",
    "restarting_message",
    "should_restart",
]

RESTARTING = "WorkloadRestarting"
RESTART_ATTEMPT_LABEL = "jobset.sigs.k8s.io/restart-attempt"
_CLEARED_ON_RESTART = ("workloadRef", "workloadStartTime", "schedulingBlockedSince", "schedulingResumedTime")
_GOODPUT_RESET = ("lastStepTimestamp", "avgStepTimeSec", "applicationStartTime", "avgTFLOPSPerGPU")


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def max_restarts(job_spec: Mapping[str, Any]) -> int | None:
    """``checkpoint.maxRestarts`` (0 when unset), or None when the Job has no checkpoint."""
    checkpoint = job_spec.get("checkpoint")
    if not isinstance(checkpoint, Mapping) or not checkpoint.get("pvcName"):
        return None
    return _int(checkpoint.get("maxRestarts"))


def should_restart(job: Mapping[str, Any], goodput_status: Mapping[str, Any] | None) -> bool:
    """Whether a failed, stalled or vanished workload is recreated from its checkpoint."""
    limit = max_restarts(job.get("spec") or {})
    if limit is None:
        return False
    count = _int((job.get("status") or {}).get("restartCount"))
    return count < limit and _int((goodput_status or {}).get("lastCheckpointStep")) > 0


def restarting_message(restart: int, maximum: int) -> str:
    return f"Restarting workload from checkpoint (restart {restart}/{maximum})"


def restarted_status(status: Mapping[str, Any], expected_count: int, maximum: int, stamp: str) -> dict[str, Any] | None:
    """The Job status after restart ``expected_count + 1``; None when someone already counted it."""
    if _int(status.get("restartCount")) != expected_count or not status.get("workloadRef"):
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
    if cond.is_true(status, "Complete") or _int(status.get("interruptionCount")) >= restart:
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
    if _int(goodput_status.get("interruptionCount")) < _int(job_status.get("restartCount")):
        return None
    since = _created(workload) if workload is not None else None
    last_step = parse_time(goodput_status.get("lastStepTimestamp"))
    if since is None or last_step is None or last_step >= since:
        return goodput_status
    return {k: v for k, v in goodput_status.items() if k not in _GOODPUT_RESET}
