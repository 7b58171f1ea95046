"""The Workflow tier's running groups apply what judge.groups decides: ends, retries, waits, notes."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from nvcre.runtime.clock import Clock
from nvcre.runtime.judge import conditions as cond
from nvcre.runtime.kube.errors import NotFound
from nvcre.runtime.kube.informers import Store
from nvcre.runtime.kube.resources import JOBS, PODS
from nvcre.runtime.reconcile.context import Context, Settings
from nvcre.runtime.reconcile.workflow.groups import RunningGroups

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
SETTINGS = Settings(poll_interval=15.0, step_interval=0.05)


class FixedClock(Clock):
    def now(self) -> datetime:
        return NOW


class Kube:
    """Live objects by (plural, name); deletes and Events are recorded."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.deleted: list[str] = []
        self.events: list[tuple[str, str]] = []

    def get(self, resource: Any, name: str, namespace: str | None = None) -> dict[str, Any]:
        found = self.objects.get((resource.plural, name))
        if found is None:
            raise NotFound(404, "NotFound", name)
        return copy.deepcopy(found)

    def delete(self, resource: Any, name: str, namespace: str | None = None, *, uid: str | None = None) -> None:
        self.deleted.append(f"{resource.plural}/{name}")
        self.objects.pop((resource.plural, name), None)

    def emit_event(self, obj: Mapping[str, Any], *, type: str, reason: str, message: str, component: str) -> None:
        self.events.append((reason, message))


class Verdicts:
    """The Job tier's side of the seam: what the Workflow tier asked it to write."""

    def __init__(self, unsettled: bool = False) -> None:
        self.asked: list[tuple[str, str, tuple[str, ...]]] = []
        self.unsettled = unsettled

    def time_out(self, job: dict[str, Any], message: str) -> dict[str, Any] | None:
        self.asked.append(("time_out", message, ()))
        return None

    def fail_on_domain(self, job: dict[str, Any], message: str, nodes: Sequence[str]) -> dict[str, Any] | None:
        self.asked.append(("fail_on_domain", message, tuple(nodes)))
        return None

    def bandwidth_unsettled(self, job: Mapping[str, Any]) -> bool:
        return self.unsettled


class Results:
    def __init__(self) -> None:
        self.failed: list[str] = []
        self.cleaned: list[str] = []

    def merge(self, wf: Mapping[str, Any], status: dict[str, Any], *, succeeded: Sequence[str], failed: list[Mapping[str, Any]]) -> None:
        self.failed += [str(f["name"]) for f in failed]

    def clean_job_dependencies(self, status: dict[str, Any], job: Mapping[str, Any]) -> None:
        self.cleaned.append(str(job["metadata"]["name"]))

    def retire_jobs(self, wf: Mapping[str, Any], status: dict[str, Any], groups: list[dict[str, Any]]) -> None:
        raise AssertionError("running groups never retire a whole iteration")


def _job(*conditions: tuple[str, str, str], status: dict[str, Any] | None = None, spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "wf-g0-iter-1", "namespace": "ns", "uid": "uid-job"},
        "spec": spec or {},
        "status": {
            **(status or {}),
            "conditions": [
                {"type": t, "status": s, "reason": r, "message": f"{r} said so", "lastTransitionTime": "2026-12-06T11:00:00Z"}
                for t, s, r in conditions
            ],
        },
    }


def _run(
    job: dict[str, Any] | None, *, execution: dict[str, Any] | None = None, verdicts: Verdicts | None = None
) -> tuple[dict[str, Any], Any, Kube, Verdicts, Results]:
    kube, jobs, results = Kube(), verdicts or Verdicts(), Results()
    stores = {JOBS.plural: Store(), PODS.plural: Store()}
    if job is not None:
        stores[JOBS.plural].put(copy.deepcopy(job))
    ctx = Context(kube=kube, stores=stores, clock=FixedClock(), settings=SETTINGS)  # type: ignore[arg-type]
    wf = {"metadata": {"name": "wf", "namespace": "ns", "uid": "uid-wf"}, "spec": {"orchestration": {"execution": execution or {}}}}
    group = {"name": "g0", "nodes": ["n0"], "phase": "Running", "jobRef": {"name": "wf-g0-iter-1"}, "startTime": "2026-12-06T10:00:00Z"}
    status: dict[str, Any] = {"orchestration": {"currentIteration": 1, "groups": [group]}}
    result = RunningGroups(ctx, jobs, results).poll(wf, status)
    return status, result, kube, jobs, results


def _group(status: dict[str, Any]) -> dict[str, Any]:
    return dict(status["orchestration"]["groups"][0])


def test_a_job_past_its_timeout_is_ended_through_the_job_tier_and_its_group_fails_without_a_retry() -> None:
    job = _job(("InProgress", "True", "WorkloadRunning"), status={"workloadStartTime": "2026-12-06T11:00:00Z", "workloadRef": {}})
    status, result, kube, jobs, _ = _run(job, execution={"timeoutPerJob": "10m", "retryFailedGroups": 2})
    assert jobs.asked == [("time_out", "Job exceeded timeoutPerJob", ())]
    assert ("JobTimedOut", "Job exceeded timeoutPerJob") in kube.events
    assert _group(status)["phase"] == "Failed" and "retries" not in _group(status)
    assert result.requeue_after == SETTINGS.step_interval  # a group ended: step at once


def test_a_missing_job_fails_its_group_with_an_event() -> None:
    status, result, kube, jobs, _ = _run(None)
    assert _group(status)["phase"] == "Failed" and jobs.asked == []
    assert [reason for reason, _ in kube.events] == ["JobDeleted"]
    assert result.requeue_after == SETTINGS.step_interval


def test_a_failed_job_with_retries_left_is_deleted_and_its_group_launched_again() -> None:
    job = _job(("Failed", "True", "WorkloadFailed"), status={"failedNodes": [{"name": "n0", "reason": "WorkloadFailed"}]})
    status, _, kube, _, results = _run(job, execution={"retryFailedGroups": 1})
    group = _group(status)
    assert (group["phase"], group["retries"], "jobRef" in group) == ("Pending", 1, False)
    assert "jobs/wf-g0-iter-1" in kube.deleted and results.cleaned == ["wf-g0-iter-1"]
    assert results.failed == ["n0"]  # the failed nodes are kept before the retry


def test_a_succeeded_job_whose_verdict_waits_keeps_its_group_running_and_looks_again_soon() -> None:
    status, result, _, _, _ = _run(_job(("Succeeded", "True", "JobCompleted")), verdicts=Verdicts(unsettled=True))
    assert _group(status)["phase"] == "Running"
    assert result.requeue_after == 2.0


def test_a_blocked_job_is_named_in_the_workflows_progress() -> None:
    status, result, _, _, _ = _run(_job(("InProgress", "True", "WorkloadSchedulingBlocked")))
    progress = cond.condition(status, cond.IN_PROGRESS) or {}
    assert progress["reason"] == "JobSchedulingBlocked"
    assert progress["message"] == "Iteration 1/1: 1 groups running; job wf-g0-iter-1 scheduling blocked: WorkloadSchedulingBlocked said so"
    assert result.requeue_after == SETTINGS.poll_interval


def test_a_succeeded_job_completes_its_group() -> None:
    status, _, _, _, results = _run(_job(("Succeeded", "True", "JobCompleted")))
    group = _group(status)
    assert (group["phase"], group["completionTime"]) == ("Succeeded", "2026-12-06T12:00:00Z")
    assert results.failed == []
