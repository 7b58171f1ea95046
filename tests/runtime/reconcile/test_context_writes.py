"""The status-write helper: an Event only when the phase flips, and a terminal object left alone."""

from __future__ import annotations

from typing import Any

from nvcre.runtime.judge import conditions as cond
from nvcre.runtime.kube.informers import Store
from nvcre.runtime.kube.resources import JOBS
from nvcre.runtime.reconcile.context import Context
from nvcre.testing.fakekube import MemoryKube


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
