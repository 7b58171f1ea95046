"""What an ended attempt of a checkpointed Job leads to, and each step before its restart."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from itertools import product
from typing import Any

import pytest

from nvcre.runtime.judge import restart as restarts
from nvcre.runtime.judge.restart import OldWorkload, RestartChoice, RestartStep, choose_restart, counted, plan_restart_step

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=timezone.utc)
SINCE = NOW - timedelta(seconds=30)
GRACE = 300.0


@pytest.mark.parametrize(
    ("maximum", "count", "checkpoint", "expected"),
    [
        (2, 0, 100, RestartChoice(True, 1, 2)),
        (2, 1, 100, RestartChoice(True, 2, 2)),
        (2, 2, 100, RestartChoice(False, 3, 2)),  # the budget is spent
        (2, None, 100, RestartChoice(True, 1, 2)),  # no restart counted yet
        (2, 0, 0, RestartChoice(False, 1, 2)),  # no checkpoint saved: nothing to resume from
        (2, 0, None, RestartChoice(False, 1, 2)),
        (0, 0, 100, RestartChoice(False, 1, 0)),  # a checkpoint with no restarts allowed
        (None, 0, 100, RestartChoice(False, 1, 0)),  # no checkpoint configured
        (2, True, 100, RestartChoice(True, 1, 2)),  # a bool is not a count
        (2, -1, 100, RestartChoice(True, 1, 2)),
        (2, 0, "100", RestartChoice(False, 1, 2)),  # a step must be a number
    ],
)
def test_an_ended_attempt_restarts_only_with_a_budget_and_a_saved_checkpoint(
    maximum: int | None, count: object, checkpoint: object, expected: RestartChoice
) -> None:
    assert choose_restart(maximum, count, checkpoint) == expected


def test_the_choice_agrees_with_the_status_rule_everywhere() -> None:
    """The decision the tier applies and ``restarts.should_restart`` answer alike on every mix."""
    checkpoints: list[dict[str, Any] | None] = [None, {"pvcName": ""}, {"pvcName": "p"}, {"pvcName": "p", "maxRestarts": 2}]
    for checkpoint, count, step in product(checkpoints, [None, 0, 1, 2, 3], [None, 0, 1]):
        spec: dict[str, Any] = {} if checkpoint is None else {"checkpoint": checkpoint}
        job = {"spec": spec, "status": {"restartCount": count}}
        choice = choose_restart(restarts.max_restarts(spec), count, step)
        assert choice.restart is restarts.should_restart(job, {"lastCheckpointStep": step}), (checkpoint, count, step)


@pytest.mark.parametrize(("value", "expected"), [(3, 3), (0, 0), (-2, 0), (True, 0), (None, 0), ("3", 0), (2.0, 0)])
def test_counted_takes_only_positive_integers(value: object, expected: int) -> None:
    assert counted(value) == expected


BEFORE = SINCE - timedelta(seconds=60)
AFTER = SINCE + timedelta(seconds=5)


@pytest.mark.parametrize(
    ("since", "workload", "leftover", "now", "expected"),
    [
        # not restarting (or the restart's workload was created already): nothing to prepare
        (None, OldWorkload(BEFORE, False), 3, NOW, RestartStep.NOTHING),
        # the old attempt's TrainJob is still there: remove it, then wait for it to go
        (SINCE, OldWorkload(BEFORE, False), 0, NOW, RestartStep.DELETE_OLD),
        (SINCE, OldWorkload(None, False), 0, NOW, RestartStep.DELETE_OLD),
        (SINCE, OldWorkload(BEFORE, True), 0, NOW, RestartStep.AWAIT_DELETION),
        # a TrainJob created at or after the restart belongs to it (a crash before workloadRef)
        (SINCE, OldWorkload(AFTER, False), 0, NOW, RestartStep.CREATED),
        (SINCE, OldWorkload(SINCE, False), 0, NOW, RestartStep.CREATED),
        (SINCE, OldWorkload(AFTER, True), 0, NOW, RestartStep.AWAIT_DELETION),  # ours, but going
        # the TrainJob is gone: wait for its pods, at most the drain grace
        (SINCE, None, 2, NOW, RestartStep.AWAIT_DRAIN),
        (SINCE, None, 2, SINCE + timedelta(seconds=GRACE), RestartStep.READY),
        (SINCE, None, 0, NOW, RestartStep.READY),
    ],
)
def test_each_visit_takes_the_next_step_before_the_restart(
    since: datetime | None, workload: OldWorkload | None, leftover: int, now: datetime, expected: RestartStep
) -> None:
    assert plan_restart_step(since, workload, leftover, now, GRACE) is expected
