"""Stall detection: the startup budget before the first step, the step budget after it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from nvcre.runtime.judge import conditions as cond
from nvcre.runtime.judge import log_read
from nvcre.runtime.judge.stall import STARTUP_STALL, STEP_STALL, stall_message

T0 = "2026-01-01T00:00:00Z"


def at(seconds: int) -> datetime:
    return datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds)


SPEC = {"stallMultiplier": 3, "startupStallTimeoutSeconds": 600}


def test_no_multiplier_or_no_measurement_means_no_stall_detection():
    assert stall_message({}, {"workloadStartTime": T0}, {"startTime": T0}, at(10_000), 30) is None
    assert stall_message(SPEC, {"workloadStartTime": T0}, None, at(10_000), 30) is None


def test_startup_budget_counts_from_the_latest_start_and_includes_two_sample_intervals():
    status = {"workloadStartTime": T0}
    goodput = {"startTime": T0, "applicationStartTime": "2026-01-01T00:01:40Z"}
    assert stall_message(SPEC, status, goodput, at(100 + 600 + 60), 30) is None
    assert stall_message(SPEC, status, goodput, at(100 + 600 + 61), 30) == STARTUP_STALL


def test_step_budget_scales_with_step_time_and_log_interval():
    goodput = {"lastStepTimestamp": T0, "avgStepTimeSec": "2.0", "logInterval": 10}
    # 3 x 2.0 s x 10 steps + 2 x 30 s = 120 s
    assert stall_message(SPEC, {"workloadStartTime": T0}, goodput, at(120), 30) is None
    assert stall_message(SPEC, {"workloadStartTime": T0}, goodput, at(121), 30) == STEP_STALL


def test_an_unschedulable_episode_pauses_and_then_restarts_the_clock():
    goodput = {"lastStepTimestamp": T0, "avgStepTimeSec": "2.0", "logInterval": 10}
    blocked = {"workloadStartTime": T0, "schedulingBlockedSince": "2026-01-01T00:00:30Z"}
    assert stall_message(SPEC, blocked, goodput, at(10_000), 30) is None
    resumed = {"workloadStartTime": T0, "schedulingResumedTime": "2026-01-01T00:05:00Z"}
    assert stall_message(SPEC, resumed, goodput, at(300 + 120), 30) is None
    assert stall_message(SPEC, resumed, goodput, at(300 + 121), 30) == STEP_STALL


def _read_through(seconds: int) -> dict[str, object]:
    return cond.set_condition({}, log_read.CONDITION, "True", log_read.CAUGHT_UP, log_read.message(at(seconds), "ok"), T0)


def test_the_step_budget_runs_on_the_measurements_clock_once_it_sampled_the_attempt():
    job = {"workloadStartTime": T0}
    measured = {"startTime": T0, "lastStepTimestamp": T0, "avgStepTimeSec": 10.0, **_read_through(60)}
    # the wall clock is far past the budget (3 x 10 s + 2 x 30 s), but the reads got to 60 s only
    assert stall_message(SPEC, job, measured, at(10_000), 30) is None
    later = {**measured, **_read_through(91)}
    assert stall_message(SPEC, job, later, at(10_000), 30) == STEP_STALL


def test_a_read_from_before_the_attempt_leaves_the_wall_clock_in_charge():
    job = {"workloadStartTime": "2026-01-01T00:02:00Z"}
    measured = {"startTime": T0, **_read_through(60)}  # read the previous attempt's log
    assert stall_message(SPEC, job, measured, at(120 + 660), 30) is None
    assert stall_message(SPEC, job, measured, at(120 + 661), 30) == STARTUP_STALL


def test_the_measurements_clock_never_runs_ahead_of_the_wall():
    job = {"workloadStartTime": T0}
    measured = {"startTime": T0, "lastStepTimestamp": T0, "avgStepTimeSec": 10.0, **_read_through(5_000)}
    assert stall_message(SPEC, job, measured, at(90), 30) is None
    assert stall_message(SPEC, job, measured, at(91), 30) == STEP_STALL
