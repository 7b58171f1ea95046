"""What a Running group's Job means for the Workflow tier (judge.groups), table by table."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from nvcre.runtime.judge.domains import DomainProblem
from nvcre.runtime.judge.groups import (
    TIMED_OUT,
    TIMED_OUT_UNSCHEDULABLE,
    GroupStep,
    Step,
    running_group_step,
    timeout_message,
)

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
STUCK = DomainProblem(message="ComputeDomain cd-0 is not Ready", nodes=("n1",))


def _job(*conditions: tuple[str, str, str], thresholds: bool = False, deleting: bool = False) -> dict[str, Any]:
    """A Job with ``(type, status, reason)`` conditions."""
    job: dict[str, Any] = {
        "metadata": {"name": "wf-g0-iter-1", "namespace": "ns"},
        "spec": {"thresholds": {"busBandwidthGBps": "value >= 100"}} if thresholds else {},
        "status": {"conditions": [{"type": t, "status": s, "reason": r, "message": f"{r} said so"} for t, s, r in conditions]},
    }
    if deleting:
        job["metadata"]["deletionTimestamp"] = "2026-12-06T11:59:00Z"
    return job


RUNNING = ("InProgress", "True", "WorkloadRunning")
BLOCKED = ("InProgress", "True", "WorkloadSchedulingBlocked")
SUCCEEDED = ("Succeeded", "True", "JobCompleted")
FAILED = ("Failed", "True", "WorkloadFailed")
HARDWARE = ("HardwareFailed", "True", "HardwareFailureDetected")
VALIDATED = ("ValidationFailed", "False", "ThresholdsMet")
VIOLATED = ("ValidationFailed", "True", "ThresholdViolation")

CASES = [
    # (what, job, timeout, domain, verdict waits, expected step)
    ("the Job is missing", None, "", None, False, GroupStep(Step.JOB_GONE, failed=True)),
    (
        "the Job is being deleted, even a succeeded one",
        _job(SUCCEEDED, deleting=True),
        "",
        None,
        False,
        GroupStep(Step.JOB_GONE, failed=True),
    ),
    ("a running Job past its timeout", _job(RUNNING), TIMED_OUT, STUCK, False, GroupStep(Step.TIMED_OUT, failed=True, message=TIMED_OUT)),
    (
        "a running Job whose ComputeDomain is stuck",
        _job(RUNNING),
        "",
        STUCK,
        False,
        GroupStep(Step.DOMAIN_NOT_READY, failed=True, message=STUCK.message, nodes=("n1",)),
    ),
    (
        "a Job whose pods cannot be scheduled",
        _job(BLOCKED),
        "",
        None,
        False,
        GroupStep(Step.BLOCKED, message="WorkloadSchedulingBlocked said so"),
    ),
    ("a running Job", _job(RUNNING), "", None, False, GroupStep(Step.RUNNING)),
    ("a Job with no condition yet", _job(), "", None, False, GroupStep(Step.RUNNING)),
    ("a succeeded Job with nothing to wait for", _job(SUCCEEDED), "", None, False, GroupStep(Step.FINISHED)),
    (
        "a succeeded Job whose thresholds are not judged yet",
        _job(SUCCEEDED, thresholds=True),
        "",
        None,
        False,
        GroupStep(Step.AWAITING_VERDICT),
    ),
    ("a succeeded Job whose bandwidth is unsettled", _job(SUCCEEDED), "", None, True, GroupStep(Step.AWAITING_VERDICT)),
    ("a succeeded Job that met its thresholds", _job(SUCCEEDED, VALIDATED, thresholds=True), "", None, True, GroupStep(Step.FINISHED)),
    (
        "a succeeded Job that missed its thresholds",
        _job(SUCCEEDED, VIOLATED, thresholds=True),
        "",
        None,
        False,
        GroupStep(Step.FINISHED, failed=True),
    ),
    ("a failed Job, whatever the clock says", _job(FAILED), TIMED_OUT, STUCK, False, GroupStep(Step.FINISHED, failed=True)),
    ("a Job with failed hardware while it runs", _job(RUNNING, HARDWARE), TIMED_OUT, STUCK, False, GroupStep(Step.FINISHED, failed=True)),
    ("a succeeded Job on failed hardware", _job(SUCCEEDED, HARDWARE), "", None, True, GroupStep(Step.FINISHED, failed=True)),
    ("Failed wins over Succeeded", _job(SUCCEEDED, FAILED), "", None, False, GroupStep(Step.FINISHED, failed=True)),
]


@pytest.mark.parametrize(("job", "timeout", "domain", "waits", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_running_groups_job_means_one_next_step(
    job: dict[str, Any] | None, timeout: str, domain: DomainProblem | None, waits: bool, expected: GroupStep
) -> None:
    step = running_group_step(job, timeout=timeout, domain_problem=lambda: domain, verdict_waits=lambda: waits)
    assert step == expected


class _Probe:
    """A probe that counts how often the decider asked it."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.asked = 0

    def __call__(self) -> Any:
        self.asked += 1
        return self.answer


@pytest.mark.parametrize(
    ("job", "timeout", "domain_asked", "verdict_asked"),
    [
        (None, "", 0, 0),
        (_job(RUNNING), TIMED_OUT, 0, 0),  # a timeout is decided before any ComputeDomain is read
        (_job(RUNNING), "", 1, 0),
        (_job(FAILED), "", 0, 0),
        (_job(SUCCEEDED, thresholds=True), "", 0, 0),  # thresholds alone keep the verdict waiting
        (_job(SUCCEEDED), "", 0, 1),
        (_job(SUCCEEDED, VALIDATED), "", 0, 0),  # judged already: no measurement is read
    ],
)
def test_the_decider_reads_only_what_its_answer_depends_on(
    job: dict[str, Any] | None, timeout: str, domain_asked: int, verdict_asked: int
) -> None:
    domain, verdict = _Probe(None), _Probe(False)
    running_group_step(job, timeout=timeout, domain_problem=domain, verdict_waits=verdict)
    assert (domain.asked, verdict.asked) == (domain_asked, verdict_asked)


def _ago(seconds: float | None) -> datetime | None:
    return None if seconds is None else NOW - timedelta(seconds=seconds)


@pytest.mark.parametrize(
    ("limit", "started", "blocked", "has_workload", "launched", "expected"),
    [
        (None, 3600, None, True, 3600, ""),  # no timeoutPerJob
        (60, 100, None, True, 200, TIMED_OUT),
        (60, 30, None, True, 200, ""),
        (0, 1, None, True, 1, TIMED_OUT),  # a zero budget is a budget
        (60, None, 100, True, 200, TIMED_OUT_UNSCHEDULABLE),  # unschedulable for longer than the budget
        (60, 130, 30, True, 200, TIMED_OUT),  # ran past the budget before it became unschedulable
        (60, 40, 30, True, 200, ""),  # the clock stops while the pods are unschedulable
        (60, None, None, True, 200, ""),  # a workload not started yet is not timed from the launch
        (60, None, None, False, 200, TIMED_OUT),  # no workload at all: timed from the launch
        (60, None, None, False, 30, ""),
        (60, None, None, False, None, ""),
    ],
)
def test_nvcres_job_timeout(
    limit: float | None, started: float | None, blocked: float | None, has_workload: bool, launched: float | None, expected: str
) -> None:
    found = timeout_message(
        limit, NOW, workload_started=_ago(started), blocked_since=_ago(blocked), has_workload=has_workload, launched=_ago(launched)
    )
    assert found == expected
