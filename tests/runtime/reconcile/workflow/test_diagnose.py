"""Diagnose round boundaries offline: the next round from a replay, blame only for confirmed nodes."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from nvcre.runtime.clock import Clock
from nvcre.runtime.judge import conditions as cond
from nvcre.runtime.reconcile.workflow.diagnose import DiagnoseRounds

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
NODES = ["n0", "n1", "n2", "n3"]


class FixedClock(Clock):
    def now(self) -> datetime:
        return NOW


class Ctx:
    """What the round logic reads: live objects by kind and name, the clock, events."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.events: list[tuple[str, str]] = []
        self.clock = FixedClock()
        self.reads = 0

    def live(self, resource: Any, name: str, namespace: str | None) -> dict[str, Any] | None:
        self.reads += 1
        return copy.deepcopy(self.objects.get((resource.kind, name)))

    read = live

    def event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        self.events.append((reason, message))


class Owner:
    """The context the rounds read through, and the node results they leave (recorded)."""

    def __init__(self) -> None:
        self.ctx = Ctx()
        self.retired: list[list[str]] = []
        self.succeeded: list[str] = []
        self.failed: list[dict[str, Any]] = []

    def retire_jobs(self, wf: Any, status: Any, groups: list[dict[str, Any]]) -> None:
        self.retired.append([g["name"] for g in groups])

    def clean_job_dependencies(self, status: Any, job: Any) -> None:
        raise AssertionError("the rounds retire whole Jobs, never one Job's dependencies")

    def merge(self, wf: Any, status: Any, *, succeeded: Any, failed: list[Any]) -> None:
        self.succeeded += list(succeeded)
        self.failed += [dict(f) for f in failed]


def workflow(planner: str | None = None) -> dict[str, Any]:
    annotations = {"nvcre.nvidia.com/diagnose-planner": planner} if planner else {}
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": "wf", "namespace": "ns", "uid": "0123456789abcdef", "annotations": annotations},
        "spec": {
            "jobTemplate": {"spec": {"workload": {"trainJob": {"trainer": {"numNodes": 1}}}}},
            "orchestration": {"diagnose": {"minGroupSize": 2}},
        },
    }


def bandwidth(ctx: Ctx, job: str, bus: float) -> None:
    ctx.objects[("BandwidthMeasurement", f"{job}-bandwidth")] = {
        "status": {
            "conditions": [{"type": "Complete", "status": "True", "reason": "JobSucceeded"}],
            "results": [{"sizeBytes": 1 << 30, "algBW": f"{bus / 2:.2f}", "busBW": f"{bus:.2f}", "samples": 1}],
        }
    }


def run_round(owner: Owner, status: dict[str, Any], failing: set[str], bus_ok: float = 11.0, bus_bad: float = 1.1) -> None:
    """Finish every group of the round in flight: Jobs, their measurements and phases."""
    iteration = status["orchestration"]["currentIteration"]
    for group in status["orchestration"]["groups"]:
        job = f"wf-{group['name']}-iter-{iteration}"
        bad = bool(set(group["nodes"]) & failing)
        group.update(phase="Failed" if bad else "Succeeded", jobRef={"kind": "Job", "name": job})
        bandwidth(owner.ctx, job, bus_bad if bad else bus_ok)
        owner.ctx.objects[("Job", job)] = {
            "status": {
                "failedNodes": [{"name": n, "reason": "ThresholdViolation", "message": "Threshold violated"} for n in group["nodes"]]
                if bad
                else []
            }
        }


def first_status() -> dict[str, Any]:
    groups = [{"name": f"local-{i}", "nodes": [n], "phase": "Pending"} for i, n in enumerate(NODES)]
    return {
        "orchestration": {
            "currentIteration": 1,
            "completedIterations": 0,
            "groups": groups,
            "diagnose": {"stage": "intra-screening", "round": 1},
        }
    }


def test_a_slow_node_is_re_run_alone_then_confirmed_with_its_jobs_reason() -> None:
    owner, wf, status = Owner(), workflow(), first_status()
    rounds = DiagnoseRounds(owner.ctx, owner)  # type: ignore[arg-type]
    run_round(owner, status, {"n2"})
    rounds.round_complete(wf, status)
    orchestration = status["orchestration"]
    assert [(g["name"], g["nodes"], g["phase"]) for g in orchestration["groups"]] == [("confirm-2", ["n2"], "Pending")]
    assert (orchestration["currentIteration"], orchestration["completedIterations"]) == (2, 1)
    diagnose = orchestration["diagnose"]
    assert (diagnose["stage"], diagnose["round"]) == ("confirmation", 2)
    assert diagnose["screeningResults"]["local-2"] == {"nodes": ["n2"], "passed": False}
    assert (diagnose["healthyNodes"], diagnose["suspectNodes"]) == (["n0", "n1", "n3"], ["n2"])
    assert [h["iteration"] for h in orchestration["iterationHistory"]] == [1]
    assert owner.retired == [["local-0", "local-1", "local-2", "local-3"]]
    assert owner.failed == [], "a failed group is evidence, not blame"
    assert cond.lifecycle(status) == cond.IN_PROGRESS
    assert "round 2 (confirm)" in cond.condition(status, cond.IN_PROGRESS)["message"]
    assert rounds.group_flags(wf, status, "confirm-2") == (True, False)

    run_round(owner, status, {"n2"})
    rounds.round_complete(wf, status)
    assert owner.failed == [
        {
            "name": "n2",
            "reason": "ThresholdViolation",
            "message": "Diagnosis complete: 1 faulty nodes confirmed; failed 2 of 2 single-node runs",
        }
    ]
    assert owner.succeeded == ["n0", "n1", "n3"]
    assert cond.lifecycle(status) == cond.FAILED
    failed = cond.condition(status, cond.FAILED)
    assert failed["reason"] == "IterationsFailed" and failed["message"].startswith("Diagnosis complete: 1 faulty nodes confirmed")
    assert cond.is_true(status, cond.VALIDATION_FAILED)
    assert status["orchestration"]["diagnose"]["stage"] == "complete"


def test_a_restarted_controller_reaches_the_same_round_from_the_status_alone() -> None:
    owner, wf, status = Owner(), workflow(), first_status()
    run_round(owner, status, set())
    DiagnoseRounds(owner.ctx, owner).round_complete(wf, status)  # type: ignore[arg-type]
    assert [(g["name"], g["nodes"]) for g in status["orchestration"]["groups"]] == [("path-0", NODES)]
    fresh = DiagnoseRounds(owner.ctx, owner)  # type: ignore[arg-type]
    assert fresh.group_flags(wf, status, "path-0") == (False, False)
    run_round(owner, status, set())
    fresh.round_complete(wf, status)
    assert cond.lifecycle(status) == cond.SUCCEEDED
    assert cond.condition(status, cond.SUCCEEDED)["message"] == "All nodes and paths passed, no faults detected"
    assert owner.succeeded == NODES and owner.failed == []


def test_a_round_the_planner_would_not_have_run_fails_the_workflow() -> None:
    owner, wf, status = Owner(), workflow(), first_status()
    run_round(owner, status, set())
    DiagnoseRounds(owner.ctx, owner).round_complete(wf, status)  # type: ignore[arg-type]
    status["orchestration"]["groups"][0]["name"] = "path-9"
    run_round(owner, status, set())
    DiagnoseRounds(owner.ctx, owner).round_complete(wf, status)  # type: ignore[arg-type]
    failed = cond.condition(status, cond.FAILED)
    assert cond.lifecycle(status) == cond.FAILED and failed["reason"] == "DiagnoseFailed"
    assert "round 2 ran groups path-9 but the planner replays path-0" in failed["message"]


def test_an_unknown_planner_fails_the_workflow_naming_the_annotation() -> None:
    owner, status = Owner(), first_status()
    run_round(owner, status, set())
    DiagnoseRounds(owner.ctx, owner).round_complete(workflow("quickest"), status)  # type: ignore[arg-type]
    failed = cond.condition(status, cond.FAILED)
    assert failed["reason"] == "DiagnoseFailed"
    assert "metadata.annotations[nvcre.nvidia.com/diagnose-planner]" in failed["message"]


def test_final_bandwidth_is_read_once_per_job() -> None:
    owner, wf, status = Owner(), workflow(), first_status()
    rounds = DiagnoseRounds(owner.ctx, owner)  # type: ignore[arg-type]
    run_round(owner, status, {"n1"})
    rounds.round_complete(wf, status)
    reads = owner.ctx.reads
    run_round(owner, status, {"n1"})
    rounds.round_complete(wf, status)
    # round 2 re-reads nothing of round 1: one measurement plus the confirming Job
    assert owner.ctx.reads - reads == 2


def run_round_measured(owner: Owner, status: dict[str, Any], bus: dict[str, float]) -> None:
    """Finish every group of the round in flight as a completed Job that measured ``bus`` (by node)."""
    iteration = status["orchestration"]["currentIteration"]
    for group in status["orchestration"]["groups"]:
        job = f"wf-{group['name']}-iter-{iteration}"
        group.update(phase="Succeeded", jobRef={"kind": "Job", "name": job})
        bandwidth(owner.ctx, job, min(bus[n] for n in group["nodes"]))
        owner.ctx.objects[("Job", job)] = {"status": {"failedNodes": []}}


def test_a_node_blamed_on_its_bandwidth_in_an_earlier_round_keeps_threshold_violation_as_its_reason() -> None:
    """Every Job completed: n2 measured far below its peers twice and is blamed after round 2,
    while n3 (a near miss in round 1) is re-run until round 3 closes the diagnosis. n2's last run
    is not in the closing round, and its reason is still the bandwidth, not a failed workload."""
    owner, wf, status = Owner(), workflow(), first_status()
    rounds = DiagnoseRounds(owner.ctx, owner)  # type: ignore[arg-type]
    for bus in ({"n0": 10.0, "n1": 10.0, "n2": 2.0, "n3": 6.0}, {"n2": 2.0, "n3": 10.0}, {"n3": 10.0}):
        assert cond.lifecycle(status) != cond.FAILED
        run_round_measured(owner, status, bus)
        rounds.round_complete(wf, status)
    assert [g["nodes"] for h in status["orchestration"]["iterationHistory"][-1:] for g in h["groups"]] == [["n3"]]
    assert [(f["name"], f["reason"]) for f in owner.failed] == [("n2", "ThresholdViolation")]
    assert "failed 2 of 2 single-node runs" in owner.failed[0]["message"]
    assert cond.lifecycle(status) == cond.FAILED
