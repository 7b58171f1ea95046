"""Whether a Job may create its workload: the launch decision, one row per observation."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from nvcre.runtime.judge.launch import LAUNCH_POLL_SECONDS, LAUNCH_WAIT_SECONDS, Launch, LaunchBasis, decide_launch, records_job

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=timezone.utc)


def recorded(*names: str) -> dict[str, Any]:
    """A Workflow status whose groups name these Jobs (and one group not launched yet)."""
    groups: list[dict[str, Any]] = [{"name": f"g{i}", "jobRef": {"name": n}} for i, n in enumerate(names)]
    return {"orchestration": {"groups": [*groups, {"name": "pending", "phase": "Pending"}]}}


def ago(seconds: float) -> datetime:
    return NOW - timedelta(seconds=seconds)


WAITING = Launch(False, LaunchBasis.WAITING, LAUNCH_POLL_SECONDS)


@pytest.mark.parametrize(
    ("workflow_status", "remembered", "created", "expected"),
    [
        # no Workflow owns the Job: nothing to wait for, whatever else is observed
        (None, False, ago(0), Launch(True, LaunchBasis.NO_WORKFLOW)),
        (None, True, None, Launch(True, LaunchBasis.NO_WORKFLOW)),
        # this process launched it a moment ago: no need to wait for the status write
        (recorded(), True, ago(1), Launch(True, LaunchBasis.REMEMBERED)),
        ({}, True, ago(1), Launch(True, LaunchBasis.REMEMBERED)),
        # the Workflow's status records it (another process launched it, or the memory expired)
        (recorded("j"), False, ago(1), Launch(True, LaunchBasis.RECORDED)),
        (recorded("other", "j"), False, ago(1), Launch(True, LaunchBasis.RECORDED)),
        # not recorded: a young Job waits, an old one (or one without a creation time) goes ahead
        (recorded("other"), False, ago(1), WAITING),
        ({}, False, ago(0), WAITING),
        ({"orchestration": {"groups": None}}, False, ago(LAUNCH_WAIT_SECONDS - 0.5), WAITING),
        (recorded("other"), False, ago(LAUNCH_WAIT_SECONDS), Launch(True, LaunchBasis.WAITED_OUT)),
        (recorded(), False, ago(3600), Launch(True, LaunchBasis.WAITED_OUT)),
        (recorded(), False, None, Launch(True, LaunchBasis.NO_CREATION_TIME)),
    ],
)
def test_the_launch_is_decided_from_the_first_observation_that_tells(
    workflow_status: dict[str, Any] | None, remembered: bool, created: datetime | None, expected: Launch
) -> None:
    assert decide_launch("j", workflow_status, remembered=remembered, created=created, now=NOW) == expected


def test_the_wait_is_an_input_not_a_constant_of_the_rule() -> None:
    assert decide_launch("j", {}, remembered=False, created=ago(5), now=NOW, wait=5.0).launched
    assert not decide_launch("j", {}, remembered=False, created=ago(5), now=NOW, wait=5.5).launched


@pytest.mark.parametrize(
    ("status", "found"),
    [
        (recorded("j"), True),
        (recorded("j-2"), False),  # a name that only starts with the Job's is another Job
        ({"orchestration": {"groups": [None, {"jobRef": None}, {"jobRef": {}}]}}, False),
        ({"orchestration": None}, False),
        ({}, False),
    ],
)
def test_a_status_records_a_job_only_by_its_exact_name(status: dict[str, Any], found: bool) -> None:
    assert records_job(status, "j") is found
