"""What an ended attempt of a checkpointed Job leads to, and what its restart waits for (pure).

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
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime

__all__ = ["OldWorkload", "RestartChoice", "RestartStep", "choose_restart", "counted", "plan_restart_step"]

#: how soon the tier looks again while a restart waits for the old attempt to go
RESTART_RETRY_SECONDS = 1.0


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
