"""What differs between the two measurement kinds, one strategy each.

The measurement tier's flow (wait, sample while the Job runs, read once when it ends, write one
terminal status) is the same for both kinds; what a kind decides is written here once:

* which pod's log it reads (the launcher's for bandwidth, a training node's for goodput);
* how a log becomes status fields (NCCL rows and transports; goodput, steps and checkpoints,
  folded with the attempts before a checkpoint restart);
* how it samples while the Job runs (both read only what was logged since their last read;
  bandwidth within a shared read budget, backing off while nothing changes; goodput keeps the
  running sums of :mod:`..measure.goodput_state` and says how far its reads got, which is the
  clock stall detection runs on);
* whether a sample must wait (goodput, until a checkpoint restart is folded in);
* what an empty read means (a training log says how many iteration lines it saw and why none
  became a step);
* for goodput, whether the log shows a diverged run (a non-finite loss, nan iterations): the
  fields then carry the ``Diverged`` condition (:data:`CONDITION_FIELD`) with the reason
  ``TrainingLossNotFinite`` naming the first such iteration; the goodput of the steps stays.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, ClassVar

from nvcre.compiler.vocabulary import ANNOTATION_GOODPUT_PRIOR_ATTEMPTS

from ..clock import format_time, parse_time
from ..kube.resources import BANDWIDTH_MEASUREMENTS, GOODPUT_MEASUREMENTS, Resource
from ..measure import attempts, goodput_state, nccl, training
from .common import annotations_of

__all__ = [
    "CONDITION_FIELD",
    "KINDS",
    "MAX_TRANSPORT_LENGTH",
    "MAX_TRANSPORTS",
    "MeasurementKind",
    "diverged_condition",
    "no_step_message",
    "transports",
]

#: the key under which status fields carry a condition to set (``{type, status, reason, message}``)
#: rather than a status field; the measurement tier stamps and sets it
CONDITION_FIELD = "+condition"
#: the longest condition message written (the CRD allows far more; a message is a sentence)
_MAX_MESSAGE = 1024

#: ``status.transport`` keeps every NCCL network name a log shows (IB, Socket, Libfabric...), as
#: NVCRE merges them, within the CRD's bounds
MAX_TRANSPORTS = nccl.MAX_TRANSPORTS
MAX_TRANSPORT_LENGTH = nccl.MAX_TRANSPORT_LENGTH
transports = nccl.transport_names


def diverged_condition(state: goodput_state.RunningGoodput) -> dict[str, str] | None:
    """The ``Diverged`` condition a training log that showed a diverged run gives; None otherwise."""
    if not state.diverged_lines:
        return None
    message = (
        f"the training loss is not finite from iteration {state.first_diverged_iteration} "
        f"({state.first_diverged_shows}); {state.diverged_lines} iteration line(s) show a diverged run, "
        "so the run has not shown its nodes healthy whatever its goodput"
    )
    return {
        "type": training.DIVERGED_CONDITION,
        "status": "True",
        "reason": training.LOSS_NOT_FINITE,
        "message": message[:_MAX_MESSAGE],
    }


def no_step_message(state: goodput_state.RunningGoodput) -> str:
    """Why a finished training log gave no step: no line matched, or none carried a step time."""
    if not state.iteration_lines:
        return "Job succeeded but no training step was parsed: no line matched spec.patterns.trainingStep; check spec.logProfileRef"
    return (
        f"Job succeeded but no training step was parsed: {state.iteration_lines} iteration line(s) matched "
        f"spec.patterns.trainingStep and none carried a step time (no elapsedTime, and no timestamps "
        f"to derive one from); check spec.logProfileRef"
    )


class MeasurementKind(ABC):
    """One kind's choices; see the module docstring."""

    resource: ClassVar[Resource]
    #: the profile's pod is a training node (else the launcher)
    training_log: ClassVar[bool] = False
    #: provisional reads share the read budget and back off while they add nothing
    budgeted: ClassVar[bool] = False
    #: the terminal message when a successful Job's log held nothing to parse
    no_data: ClassVar[str] = ""

    @abstractmethod
    def fields(
        self,
        spec: Mapping[str, Any],
        text: str | Iterable[str],
        completed_at: str | None,
        measurement: Mapping[str, Any],
        now: Callable[[], datetime],
    ) -> dict[str, Any]:
        """The status fields a log gives (``{}``: nothing parsed); ``now`` is asked only when the
        Job has no completion time yet."""

    def waits_for_restart(self, job_status: Mapping[str, Any], measurement: Mapping[str, Any]) -> bool:
        """Whether the Job restarted its workload and the measurement has not taken that in yet."""
        return False


class BandwidthKind(MeasurementKind):
    resource = BANDWIDTH_MEASUREMENTS
    budgeted = True
    no_data = "Job succeeded but no bandwidth data was parsed; check spec.logProfileRef"

    def fields(
        self,
        spec: Mapping[str, Any],
        text: str | Iterable[str],
        completed_at: str | None,
        measurement: Mapping[str, Any],
        now: Callable[[], datetime],
    ) -> dict[str, Any]:
        # rows, networks and, for a corrupted, failed or unfinished run, its failure (the rows stay)
        return nccl.status_fields(nccl.parse_bandwidth(text, spec))


class GoodputKind(MeasurementKind):
    resource = GOODPUT_MEASUREMENTS
    training_log = True
    no_data = "Job succeeded but no training step was parsed; check spec.logProfileRef"

    def waits_for_restart(self, job_status: Mapping[str, Any], measurement: Mapping[str, Any]) -> bool:
        recorded = int((measurement.get("status") or {}).get("interruptionCount") or 0)
        return int(job_status.get("restartCount") or 0) > recorded

    def fields(
        self,
        spec: Mapping[str, Any],
        text: str | Iterable[str],
        completed_at: str | None,
        measurement: Mapping[str, Any],
        now: Callable[[], datetime],
    ) -> dict[str, Any]:
        state = goodput_state.fold(goodput_state.RunningGoodput(), text, spec)
        return self.fields_of(state, completed_at, measurement, now)

    def fields_of(
        self,
        state: goodput_state.RunningGoodput,
        completed_at: str | None,
        measurement: Mapping[str, Any],
        now: Callable[[], datetime],
    ) -> dict[str, Any]:
        """The status fields of the lines ``state`` took in (``{}``: no step in any attempt and no
        sign of a diverged run)."""
        prior = attempts.PriorAttempts.from_json(annotations_of(measurement).get(ANNOTATION_GOODPUT_PRIOR_ATTEMPTS))
        diverged = diverged_condition(state)
        if not attempts.logged_steps(prior, state.steps > 0):
            return {CONDITION_FIELD: diverged} if diverged is not None else {}
        moment = parse_time(completed_at) or now()
        started = state.application_start or state.first_step_time
        goodput = attempts.combine_from(prior, state.goodput(moment), started, moment)
        out: dict[str, Any] = dict(goodput.status_fields())
        out["highestStep"] = goodput.highest_step
        out["currentStep"] = state.last_iteration if state.steps else goodput.highest_step
        out["lastCheckpointStep"] = goodput.last_checkpoint_step
        if state.checkpoints and state.last_checkpoint_time is not None:
            out["lastCheckpointTime"] = format_time(state.last_checkpoint_time)
        if prior.interruptions:
            out["interruptionCount"] = prior.interruptions
            out["priorWarmupTimeSec"] = f"{prior.warmup:.2f}"
            out["priorNonWarmupTimeSec"] = f"{prior.non_warmup:.2f}"
            # The new attempt ran (and logged its steps, if it had any left): the interruption is accounted for.
            out["pendingInterruption"] = None
        if state.log_interval:
            out["logInterval"] = state.log_interval
        if state.application_start is not None:
            out["applicationStartTime"] = format_time(state.application_start)
        if state.steps and state.last_step_time is not None:
            out["lastStepTimestamp"] = format_time(state.last_step_time)
        if diverged is not None:
            out[CONDITION_FIELD] = diverged
        return out


#: each kind by its resource's plural
KINDS: dict[str, MeasurementKind] = {kind.resource.plural: kind for kind in (BandwidthKind(), GoodputKind())}
