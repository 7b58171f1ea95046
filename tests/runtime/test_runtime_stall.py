"""Stall detection: the startup budget before the first step, the step budget after it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from nvcre.runtime.reconcile.stall import STARTUP_STALL, STEP_STALL, stall_message

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
