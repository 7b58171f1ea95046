"""What a Running group's Job means for the Workflow tier: the next step for that group (pure).

The Workflow tier follows each Running group through its Job. From what it observed of that Job,
:func:`running_group_step` says what the tier does next for the group (fail it because the Job
went, end the Job on a timeout or a stuck ComputeDomain, keep waiting, or complete the group);
the tier then applies that step. Two observations cost a read, so they are handed in as probes
and asked only when the answer depends on them: whether a ComputeDomain of the group is stuck
(only for a Job still running and within its timeout) and whether a succeeded Job's verdict still
waits for a measurement (only for a succeeded Job not judged yet and without thresholds).
:func:`timeout_message` is NVCRE's isJobTimedOut over times the caller has read.
Nothing here reads a clock or a cluster.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .domains import DomainProblem

__all__ = ["GroupStep", "Step", "running_group_step", "timeout_message"]

_IN_PROGRESS = "InProgress"
_SUCCEEDED = "Succeeded"
_FAILED = "Failed"
_HARDWARE_FAILED = "HardwareFailed"
_VALIDATION_FAILED = "ValidationFailed"
#: the reason the Job tier gives ``InProgress`` while its pods cannot be scheduled
SCHEDULING_BLOCKED = "WorkloadSchedulingBlocked"

TIMED_OUT = "Job exceeded timeoutPerJob"
TIMED_OUT_UNSCHEDULABLE = "Job exceeded timeoutPerJob while its pods were unschedulable"


class Step(enum.Enum):
    """What the Workflow tier does next for a Running group."""

    #: the Job is missing or being deleted: the group fails (once the Job's pods drained)
    JOB_GONE = "JobGone"
    #: the Job ran past ``timeoutPerJob``: end it as timed out; the group fails and is not retried
    TIMED_OUT = "TimedOut"
    #: a ComputeDomain of the group stayed not Ready: end the Job on it; the group fails
    DOMAIN_NOT_READY = "ComputeDomainNotReady"
    #: still running, and its pods cannot be scheduled: say so in the Workflow's progress
    BLOCKED = "SchedulingBlocked"
    #: still running: nothing to do until the Job changes
    RUNNING = "Running"
    #: the Job succeeded but its verdict waits for its measurements: look again soon
    AWAITING_VERDICT = "AwaitingVerdict"
    #: the Job is terminal and judged: complete the group (``failed`` says how)
    FINISHED = "Finished"


@dataclass(frozen=True)
class GroupStep:
    """The step, and what applying it needs: whether the group fails, the message to end the
    Job with (or the scheduling note), and the nodes a stuck ComputeDomain blames."""

    step: Step
    failed: bool = False
    message: str = ""
    nodes: tuple[str, ...] = ()


def _condition(status: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for item in status.get("conditions") or []:
        if isinstance(item, Mapping) and item.get("type") == type_:
            return item
    return None


def _true(status: Mapping[str, Any], type_: str) -> bool:
    found = _condition(status, type_)
    return bool(found and found.get("status") == "True")


def _lifecycle(status: Mapping[str, Any]) -> str:
    """The exclusive condition that is True (Failed over Succeeded over InProgress), or ''."""
    return next((t for t in (_FAILED, _SUCCEEDED, _IN_PROGRESS) if _true(status, t)), "")


def running_group_step(
    job: Mapping[str, Any] | None,
    *,
    timeout: str,
    domain_problem: Callable[[], DomainProblem | None],
    verdict_waits: Callable[[], bool],
) -> GroupStep:
    """The next step for a Running group whose Job was observed as ``job`` (None: not found).

    ``timeout``: the message to end the Job with, '' while it is within ``timeoutPerJob``
    (:func:`timeout_message`). ``domain_problem``: a stuck ComputeDomain of the group, if any.
    ``verdict_waits``: whether a succeeded Job's verdict still waits for its bandwidth measurement.
    """
    if job is None or (job.get("metadata") or {}).get("deletionTimestamp"):
        return GroupStep(Step.JOB_GONE, failed=True)
    status = job.get("status") or {}
    hardware = _true(status, _HARDWARE_FAILED)
    phase = _lifecycle(status)
    if phase not in (_SUCCEEDED, _FAILED) and not hardware:
        if timeout:
            return GroupStep(Step.TIMED_OUT, failed=True, message=timeout)
        problem = domain_problem()
        if problem is not None:
            return GroupStep(Step.DOMAIN_NOT_READY, failed=True, message=problem.message, nodes=tuple(problem.nodes))
        progress = _condition(status, _IN_PROGRESS) or {}
        if progress.get("reason") == SCHEDULING_BLOCKED:
            return GroupStep(Step.BLOCKED, message=str(progress.get("message", "")))
        return GroupStep(Step.RUNNING)
    succeeded = phase == _SUCCEEDED and not hardware
    judged = _condition(status, _VALIDATION_FAILED) is not None
    if succeeded and not judged and ((job.get("spec") or {}).get("thresholds") or verdict_waits()):
        return GroupStep(Step.AWAITING_VERDICT)
    return GroupStep(Step.FINISHED, failed=not succeeded or _true(status, _VALIDATION_FAILED))


def timeout_message(
    limit: float | None,
    now: datetime,
    *,
    workload_started: datetime | None,
    blocked_since: datetime | None,
    has_workload: bool,
    launched: datetime | None,
) -> str:
    """NVCRE's isJobTimedOut: the message to end the Job with, or '' while within ``limit`` seconds.

    ``limit``: ``timeoutPerJob`` (None: none set, or unreadable). The clock runs from the
    workload's start; while the pods are unschedulable, from when they became so. A Job whose
    workload was never created is timed from the group's launch.
    """
    if limit is None:
        return ""
    if blocked_since is not None:
        if (now - blocked_since).total_seconds() > limit:
            return TIMED_OUT_UNSCHEDULABLE
        if workload_started is not None and (blocked_since - workload_started).total_seconds() > limit:
            return TIMED_OUT
        return ""
    if workload_started is not None:
        return TIMED_OUT if (now - workload_started).total_seconds() > limit else ""
    if has_workload:
        return ""
    if launched is not None and (now - launched).total_seconds() > limit:
        return TIMED_OUT
    return ""
