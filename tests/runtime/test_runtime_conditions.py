"""Lifecycle conditions: exclusivity, transition times, derived phase; the status-write helper's events."""

from __future__ import annotations

from typing import Any

from nvcre.runtime.kube.informers import Store
from nvcre.runtime.kube.resources import JOBS
from nvcre.runtime.reconcile import conditions as cond
from nvcre.runtime.reconcile.context import Context
from nvcre.testing.fakekube import MemoryKube


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


def _ctx(obj: dict[str, Any]) -> tuple[MemoryKube, Context]:
    kube = MemoryKube()
    kube.put({"apiVersion": JOBS.api_version, "kind": "Job", **obj})
    return kube, Context(kube=kube, stores={"jobs": Store()})


def _live(kube: MemoryKube) -> dict[str, Any]:
    return kube.get(JOBS, "j", "ns")


def test_an_event_only_when_the_phase_flips_and_warning_into_failed():
    kube, ctx = _ctx({"metadata": {"name": "j", "namespace": "ns", "generation": 1}})
    ctx.write_status(JOBS, _live(kube), lambda s: cond.set_lifecycle(s, cond.IN_PROGRESS, "WorkloadCreated", "made", "t0"))
    ctx.write_status(JOBS, _live(kube), lambda s: cond.set_lifecycle(s, cond.IN_PROGRESS, "WorkloadRunning", "runs", "t1"))
    ctx.write_status(JOBS, _live(kube), lambda s: cond.set_lifecycle(s, cond.FAILED, "WorkloadFailed", "died", "t2"))
    assert [(e.type, e.reason, e.message) for e in kube.events] == [
        ("Normal", "WorkloadCreated", "made"),
        ("Warning", "WorkloadFailed", "died"),
    ]
    assert _live(kube)["status"]["observedGeneration"] == 1


def test_a_terminal_object_is_not_overwritten_when_asked_to_stop():
    kube, ctx = _ctx({"metadata": {"name": "j", "namespace": "ns"}})
    ctx.write_status(JOBS, _live(kube), lambda s: cond.set_lifecycle(s, cond.SUCCEEDED, "WorkloadCompleted", "ok", "t0"))
    written = ctx.write_status(
        JOBS,
        _live(kube),
        lambda s: cond.set_lifecycle(s, cond.IN_PROGRESS, "WorkloadRunning", "late", "t1"),
        stop_when_terminal=True,
    )
    assert written is None
    assert cond.lifecycle(_live(kube)["status"]) == "Succeeded"
