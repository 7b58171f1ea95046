"""Lifecycle conditions: exclusivity, transition times, the derived phase, additive verdicts."""

from __future__ import annotations

from nvcre.runtime.judge import conditions as cond


def test_setting_one_lifecycle_type_clears_the_other_two():
    status = cond.set_lifecycle({}, cond.IN_PROGRESS, "WorkloadCreated", "created", "2026-01-01T00:00:00Z")
    status = cond.set_lifecycle(status, cond.FAILED, "WorkloadFailed", "boom", "2026-01-01T00:01:00Z")
    by_type = {c["type"]: c for c in status["conditions"]}
    assert by_type["Failed"]["status"] == "True"
    assert by_type["InProgress"] == {
        "type": "InProgress",
        "status": "False",
        "reason": "NotApplicable",
        "message": "",
        "lastTransitionTime": "2026-01-01T00:01:00Z",
    }
    assert by_type["Succeeded"]["status"] == "False"
    assert status["phase"] == "Failed"
    assert cond.is_terminal(status)


def test_transition_time_moves_only_when_the_status_flips():
    status = cond.set_lifecycle({}, cond.IN_PROGRESS, "A", "a", "2026-01-01T00:00:00Z")
    status = cond.set_lifecycle(status, cond.IN_PROGRESS, "B", "b", "2026-01-01T00:05:00Z")
    found = cond.condition(status, cond.IN_PROGRESS)
    assert found is not None
    assert (found["reason"], found["lastTransitionTime"]) == ("B", "2026-01-01T00:00:00Z")


def test_failed_wins_over_succeeded_and_no_condition_is_pending():
    assert cond.phase_of({}) == "Pending"
    both = {
        "conditions": [
            {"type": "Succeeded", "status": "True"},
            {"type": "Failed", "status": "True"},
        ]
    }
    assert cond.lifecycle(both) == "Failed"


def test_additive_conditions_do_not_touch_the_lifecycle():
    status = cond.set_lifecycle({}, cond.IN_PROGRESS, "WorkloadRunning", "running", "t0")
    status = cond.set_condition(status, cond.HARDWARE_FAILED, "True", "HardwareFailureDetected", "bad", "t1")
    assert cond.lifecycle(status) == "InProgress"
    assert cond.is_true(status, "HardwareFailed")
