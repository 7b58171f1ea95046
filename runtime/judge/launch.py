"""Whether a Job may create its workload yet: its launch decided from what the tier observed (pure).

The Workflow tier creates a Job first, then the Job's dependencies (the TrainingRuntime its
TrainJob names, a ComputeDomain...), and only then records the launch in its status
(``status.orchestration.groups[].jobRef``). A TrainJob created before its dependencies exist is
refused, so the Job tier waits until the launch is known. Three observations can tell it so,
checked in this order:

1. the Job has no Workflow owning it (nothing to wait for);
2. this process launched the Job a moment ago (the in-memory record the Workflow tier leaves
   the moment the dependencies exist, before its status write arrives);
3. the owning Workflow's status records the Job in one of its groups;

and when none does, a Job older than :data:`LAUNCH_WAIT_SECONDS` (or one without a creation
time) goes ahead anyway, so a launch record that never comes cannot hold it forever. Otherwise
it looks again after :data:`LAUNCH_POLL_SECONDS` (the Workflow tier also queues it as soon as
it recorded it). :func:`decide_launch` returns the answer together with the observation that
gave it; the tier applies it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

__all__ = ["LAUNCH_POLL_SECONDS", "LAUNCH_WAIT_SECONDS", "Launch", "LaunchBasis", "decide_launch", "records_job"]

#: how long a new Job waits for its Workflow to record it before creating the workload anyway
LAUNCH_WAIT_SECONDS = 30.0
#: meanwhile it looks again this often
LAUNCH_POLL_SECONDS = 5.0


class LaunchBasis(enum.Enum):
    """The observation a launch decision rests on."""

    NO_WORKFLOW = "no Workflow owns the Job"
    REMEMBERED = "this process launched the Job moments ago"
    RECORDED = "the Workflow's status records the Job"
    NO_CREATION_TIME = "the Job has no creation time to wait from"
    WAITED_OUT = "the Workflow did not record the Job in time"
    WAITING = "waiting for the Workflow to record the Job"


@dataclass(frozen=True)
class Launch:
    """The decision: ``launched`` (create the workload now), else come back in ``retry_after``."""

    launched: bool
    basis: LaunchBasis
    retry_after: float | None = None


def records_job(workflow_status: Mapping[str, Any], job_name: str) -> bool:
    """Whether a Workflow status names ``job_name`` as the Job of one of its groups."""
    groups = (workflow_status.get("orchestration") or {}).get("groups") or []
    return any(((group or {}).get("jobRef") or {}).get("name") == job_name for group in groups)


def decide_launch(
    job_name: str,
    workflow_status: Mapping[str, Any] | None,
    *,
    remembered: bool,
    created: datetime | None,
    now: datetime,
    wait: float = LAUNCH_WAIT_SECONDS,
) -> Launch:
    """Whether the Job ``job_name`` is launched; see the module docstring for the order.

    ``workflow_status``: the owning Workflow's status, None when no Workflow owns the Job.
    ``remembered``: this process recorded the launch itself. ``created``: the Job's creation time.
    """
    if workflow_status is None:
        return Launch(True, LaunchBasis.NO_WORKFLOW)
    if remembered:
        return Launch(True, LaunchBasis.REMEMBERED)
    if records_job(workflow_status, job_name):
        return Launch(True, LaunchBasis.RECORDED)
    if created is None:
        return Launch(True, LaunchBasis.NO_CREATION_TIME)
    if (now - created).total_seconds() >= wait:
        return Launch(True, LaunchBasis.WAITED_OUT)
    return Launch(False, LaunchBasis.WAITING, LAUNCH_POLL_SECONDS)
