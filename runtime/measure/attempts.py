"""Goodput across checkpoint restarts (pure): what earlier attempts of a Job add to the current one.

A GoodputMeasurement reads the log of the workload that runs now. When the Job restarts its
workload from a checkpoint, the time the earlier attempts spent is not in that log any more, so
the measurement carries it forward as :class:`PriorAttempts`:

- ``fold`` snapshots the measurement's totals at the restart (they already hold every attempt
  up to that moment) and adds the interruption's lost work, ``t_ch``: the time from the last
  completed checkpoint to the last step seen before the failure, redone after the resume;
- ``combine`` adds those priors to the numbers of the current attempt. The wall time ``t_w``
  runs from the first attempt's start; the gap from the interruption to the new attempt's
  application start is reschedule time ``t_re``; each attempt's start-up (application start
  to first step, checkpoint loading included) is resume time ``t_rm``. The formula stays
  NVCRE's: ``(t_w - t_ch - t_rm - t_re - t_save) / (t_w - t_re)``.

The priors travel as one JSON annotation on the measurement (the vocabulary's
``ANNOTATION_GOODPUT_PRIOR_ATTEMPTS``); ``interruptions`` says how many restarts they include,
so folding the same restart twice changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any

from .profile import parse_rfc3339
from .timefmt import rfc3339
from .training import Goodput, TrainingParse

__all__ = ["PriorAttempts", "combine", "combine_from", "fold", "has_steps", "logged_steps", "pending_interruption"]


def _seconds(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if number > 0 and number == number and number != float("inf") else 0.0


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _time(value: Any) -> datetime | None:
    return parse_rfc3339(value) if isinstance(value, str) and value else None


@dataclass(frozen=True)
class PriorAttempts:
    """What the attempts before the current one contributed (seconds)."""

    interruptions: int = 0
    wall_start: datetime | None = None
    resume: float = 0.0
    checkpoint_save: float = 0.0
    lost_work: float = 0.0
    reschedule: float = 0.0
    warmup: float = 0.0
    non_warmup: float = 0.0
    highest_step: int = 0
    checkpoint_step: int = 0
    interrupted_at: datetime | None = None

    def to_json(self) -> str:
        data = asdict(self)
        for key in ("wall_start", "interrupted_at"):
            data[key] = rfc3339(data[key]) if data[key] is not None else None
        return json.dumps(data, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | None) -> PriorAttempts:
        """The priors an annotation holds; an absent or unreadable one means none."""
        if not text:
            return cls()
        try:
            data = json.loads(text)
        except ValueError:
            return cls()
        if not isinstance(data, dict):
            return cls()
        return cls(
            interruptions=_count(data.get("interruptions")),
            wall_start=_time(data.get("wall_start")),
            resume=_seconds(data.get("resume")),
            checkpoint_save=_seconds(data.get("checkpoint_save")),
            lost_work=_seconds(data.get("lost_work")),
            reschedule=_seconds(data.get("reschedule")),
            warmup=_seconds(data.get("warmup")),
            non_warmup=_seconds(data.get("non_warmup")),
            highest_step=_count(data.get("highest_step")),
            checkpoint_step=_count(data.get("checkpoint_step")),
            interrupted_at=_time(data.get("interrupted_at")),
        )


def fold(prior: PriorAttempts, status: Mapping[str, Any], restarts: int, now: datetime) -> PriorAttempts:
    """The priors after restart number ``restarts``, from the measurement's status at that moment.

    Already folded (``prior.interruptions >= restarts``): unchanged.
    """
    if prior.interruptions >= restarts:
        return prior
    last_step = _time(status.get("lastStepTimestamp"))
    checkpointed = _time(status.get("lastCheckpointTime"))
    interrupted = last_step or now
    lost = max(0.0, (interrupted - checkpointed).total_seconds()) if checkpointed is not None else 0.0
    wall_start = prior.wall_start or _time(status.get("applicationStartTime")) or _time(status.get("startTime"))
    return replace(
        prior,
        interruptions=restarts,
        wall_start=wall_start,
        resume=_seconds(status.get("resumeTimeSec")),
        checkpoint_save=_seconds(status.get("checkpointSaveTimeSec")),
        lost_work=prior.lost_work + lost,
        reschedule=_seconds(status.get("rescheduleTimeSec")),
        warmup=_seconds(status.get("warmupTimeSec")),
        non_warmup=_seconds(status.get("nonWarmupTimeSec")),
        highest_step=max(prior.highest_step, _count(status.get("highestStep"))),
        checkpoint_step=_count(status.get("lastCheckpointStep")) or prior.checkpoint_step,
        interrupted_at=interrupted,
    )


def pending_interruption(status: Mapping[str, Any], reason: str, now: datetime) -> dict[str, Any]:
    """``status.pendingInterruption`` for a restart seen but not yet accounted for."""
    last_step = _time(status.get("lastStepTimestamp"))
    checkpointed = _time(status.get("lastCheckpointTime"))
    interrupted = last_step or now
    out: dict[str, Any] = {
        "checkpointStep": _count(status.get("lastCheckpointStep")),
        "lastStep": _count(status.get("currentStep")),
        "reason": reason,
        "tInterrupt": rfc3339(interrupted),
    }
    if checkpointed is not None:
        out["tCheckpoint"] = rfc3339(checkpointed)
        out["tCh"] = f"{max(0.0, (interrupted - checkpointed).total_seconds()):.2f}"
    return out


def combine(prior: PriorAttempts, current: Goodput, parse: TrainingParse, now: datetime) -> Goodput:
    """The whole run's goodput: ``current`` (this attempt's log) plus ``prior``."""
    started = parse.application_start or (parse.first_step.timestamp if parse.first_step else None)
    return combine_from(prior, current, started, now)


def combine_from(prior: PriorAttempts, current: Goodput, started: datetime | None, now: datetime) -> Goodput:
    """:func:`combine`, given when this attempt started (its application start, else its first
    step's time; None when neither is known)."""
    if prior.interruptions == 0:
        return current
    reschedule = prior.reschedule
    if prior.interrupted_at is not None:
        resumed_at = started or now
        reschedule += max(0.0, (resumed_at - prior.interrupted_at).total_seconds())
    wall = current.training_time
    if prior.wall_start is not None:
        wall = max(0.0, (now - prior.wall_start).total_seconds())
    resume = prior.resume + current.resume_time
    save = prior.checkpoint_save + current.checkpoint_save_time
    lost = prior.lost_work + current.lost_work_time
    numerator = wall - lost - resume - reschedule - save
    denominator = wall - reschedule
    ratio = 0.0 if numerator < 0 or denominator <= 0 else min(1.0, numerator / denominator)
    return replace(
        current,
        ratio=ratio,
        training_time=wall,
        lost_work_time=lost,
        resume_time=resume,
        reschedule_time=reschedule,
        checkpoint_save_time=save,
        warmup_time=prior.warmup + current.warmup_time,
        non_warmup_time=prior.non_warmup + current.non_warmup_time,
        last_checkpoint_step=current.last_checkpoint_step or prior.checkpoint_step,
        highest_step=max(prior.highest_step, current.highest_step),
    )


def has_steps(prior: PriorAttempts, parse: TrainingParse) -> bool:
    """Whether the run logged a training step in any attempt.

    An attempt that resumes from a checkpoint taken at the last iteration has nothing left to
    train and logs no step; the run still trained, in the attempts before it, so its goodput is
    the earlier attempts' (``combine`` with an empty current attempt), not "no data"."""
    return logged_steps(prior, bool(parse.steps))


def logged_steps(prior: PriorAttempts, current: bool) -> bool:
    """:func:`has_steps`, given whether the current attempt logged a step."""
    return current or (prior.interruptions > 0 and prior.highest_step > 0)
