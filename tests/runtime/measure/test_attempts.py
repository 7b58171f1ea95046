"""Goodput across checkpoint restarts: folding an ended attempt and combining it with the next."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from nvcre.runtime.measure.attempts import PriorAttempts, combine, fold, pending_interruption
from nvcre.runtime.measure.training import Checkpoint, TrainingParse, TrainingStep, calculate_goodput

T0 = datetime(2026, 12, 2, 12, 0, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def stamp(seconds: float) -> str:
    return at(seconds).strftime("%Y-%m-%dT%H:%M:%SZ")


# The first attempt: started at 0, first step at 10, checkpoint at 50, last step at 70.
FIRST_STATUS = {
    "applicationStartTime": stamp(0),
    "lastStepTimestamp": stamp(70),
    "lastCheckpointTime": stamp(50),
    "lastCheckpointStep": 100,
    "currentStep": 140,
    "highestStep": 140,
    "resumeTimeSec": "10.00",
    "checkpointSaveTimeSec": "1.00",
    "rescheduleTimeSec": "0.00",
    "warmupTimeSec": "5.00",
    "nonWarmupTimeSec": "54.00",
}


def test_fold_takes_the_totals_and_the_work_lost_since_the_checkpoint() -> None:
    prior = fold(PriorAttempts(), FIRST_STATUS, 1, at(95))
    assert prior.interruptions == 1
    assert prior.wall_start == at(0)
    assert prior.lost_work == 20.0, "last step at 70, checkpoint at 50"
    assert (prior.resume, prior.checkpoint_save, prior.warmup, prior.non_warmup) == (10.0, 1.0, 5.0, 54.0)
    assert prior.interrupted_at == at(70) and prior.checkpoint_step == 100 and prior.highest_step == 140
    assert fold(prior, {}, 1, at(200)) is prior, "the same restart folds once"


def test_fold_round_trips_through_its_annotation() -> None:
    prior = fold(PriorAttempts(), FIRST_STATUS, 1, at(95))
    assert PriorAttempts.from_json(prior.to_json()) == prior
    assert PriorAttempts.from_json("not json") == PriorAttempts()
    assert PriorAttempts.from_json('{"interruptions": "2", "resume": -4}') == PriorAttempts()


def test_pending_interruption_has_nvcre_fields() -> None:
    pending = pending_interruption(FIRST_STATUS, "Workload stalled", at(95))
    assert pending == {
        "checkpointStep": 100,
        "lastStep": 140,
        "reason": "Workload stalled",
        "tInterrupt": "2026-12-02T12:01:10Z",
        "tCheckpoint": "2026-12-02T12:00:50Z",
        "tCh": "20.00",
    }


def _second_attempt() -> TrainingParse:
    # Started at 100 (30 s after the interruption), loaded the checkpoint, first step at 104.
    steps = tuple(TrainingStep(110 + 10 * i, 1.0, at(104 + 10 * i)) for i in range(10))
    return TrainingParse(
        steps=steps,
        checkpoints=(Checkpoint(200, "/mnt/workspace/checkpoints", at(195), 1.0),),
        checkpoint_restores=("/mnt/workspace/checkpoints",),
        application_start=at(100),
        warmup_steps=10,
        log_interval=10,
    )


def test_combine_counts_the_whole_run_against_goodput() -> None:
    prior = fold(PriorAttempts(), FIRST_STATUS, 1, at(95))
    parse = _second_attempt()
    now = at(200)
    current = calculate_goodput(parse, now)
    whole = combine(prior, current, parse, now)
    assert whole.training_time == 200.0, "t_w from the first attempt's start"
    assert whole.reschedule_time == 30.0, "interruption at 70, next application start at 100"
    assert whole.resume_time == 14.0, "10 s first start-up, 4 s to the first resumed step"
    assert whole.lost_work_time == 20.0
    assert whole.checkpoint_save_time == 2.0
    expected = (200 - 20 - 14 - 30 - 2) / (200 - 30)
    assert abs(whole.ratio - expected) < 1e-9
    assert whole.ratio < current.ratio, "the restart costs goodput"
    assert whole.warmup_time == 5.0 + current.warmup_time
    assert whole.highest_step == 200 and whole.last_checkpoint_step == 200


def test_combine_before_the_new_attempt_starts_counts_the_wait_as_reschedule() -> None:
    prior = fold(PriorAttempts(), FIRST_STATUS, 1, at(95))
    empty = TrainingParse(steps=(TrainingStep(110, 1.0, None),))
    whole = combine(prior, calculate_goodput(empty, at(90)), empty, at(90))
    assert whole.reschedule_time == 20.0


def test_without_interruptions_combine_changes_nothing() -> None:
    parse = _second_attempt()
    current = calculate_goodput(parse, at(200))
    assert combine(PriorAttempts(), current, parse, at(200)) is current


def test_an_attempt_resumed_at_the_last_checkpoint_keeps_the_runs_steps() -> None:
    """The last attempt loads the checkpoint of the final iteration and logs no step: the run's
    goodput is the earlier attempts', not "no data" (this made a checkpoint test fail at random)."""
    from nvcre.runtime.measure.attempts import has_steps

    nothing_left = TrainingParse(application_start=at(100))
    prior = PriorAttempts(
        interruptions=1, wall_start=at(0), warmup=5.0, non_warmup=40.0, highest_step=200, checkpoint_step=200, interrupted_at=at(90)
    )
    assert has_steps(prior, nothing_left)
    assert not has_steps(PriorAttempts(), nothing_left)
    assert not has_steps(PriorAttempts(interruptions=1), nothing_left)  # interrupted before any step
    whole = combine(prior, calculate_goodput(nothing_left, at(110)), nothing_left, at(110))
    assert (whole.highest_step, whole.last_checkpoint_step) == (200, 200)
    assert whole.training_time == 110.0 and whole.reschedule_time == 10.0
