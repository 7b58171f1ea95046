"""A group that passed only after failed runs were retried says so in the text and JSON reports,
and a passed Job's ``Succeeded`` message carries it (the Job tier's part, offline).

The verdict stays PASSED: NVCRE judges a Job by its TrainJob's ``Complete`` and ``Failed``
conditions alone, and the catalog's ``restartPolicy: OnFailure`` pods retry below them.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from nvcre.runtime.judge import retry_note
from nvcre.runtime.judge.model import (
    CategoryVerdict,
    CertificationVerdict,
    FailedAttempt,
    GroupVerdict,
    RetryVerdict,
)
from nvcre.runtime.reconcile.context import Result
from nvcre.runtime.reconcile.job.observe import WorkloadObserver
from nvcre.runtime.report import json as json_report
from nvcre.runtime.report import text

KILLED = FailedAttempt(
    attempt=1,
    node="h100-onprem-1",
    pod="nccl-all-reduce-launcher-0-0-x7k2p",
    container="node",
    role="launcher",
    exit_code=137,
    reason="Error",
    signal=9,
    finished_at="2026-12-06T21:00:30Z",
)
RETRIED = RetryVerdict(attempt=2, failed=(KILLED,))


def _verdict(*groups: GroupVerdict) -> CertificationVerdict:
    category = CategoryVerdict("communication", "nccl-all-reduce", "Succeeded", groups=groups)
    return CertificationVerdict("Certification", "cert", "ns", "Succeeded", "PASSED", categories=(category,))


def _group(name: str = "group-0", retries: RetryVerdict | None = RETRIED, failed: bool = False) -> GroupVerdict:
    return GroupVerdict(
        name,
        ("h100-onprem-0", "h100-onprem-1"),
        "Failed" if failed else "Succeeded",
        failed,
        job_name=f"job-{name}",
        retries=retries,
    )


def _card_lines(report: str) -> list[str]:
    return [line[3:].rstrip("│").rstrip() for line in report.splitlines() if line.startswith("│  ")]


def test_the_card_says_which_attempt_passed_and_how_the_earlier_one_ended() -> None:
    lines = _card_lines(text.render(_verdict(_group())))
    start = lines.index("↻ Passed on attempt 2 after 1 failed run:")
    assert lines[start + 1 : start + 5] == [
        "  attempt 1: the launcher pod on node h100-onprem-1 exited",
        "  with code 137 (signal 9, Killed)",
        "    pod nccl-all-reduce-launcher-0-0-x7k2p, container node,",
        "    ended 2026-12-06T21:00:30Z",
    ]
    assert "Result:       PASSED" in lines


def test_a_reported_signal_and_a_reason_other_than_error_are_named() -> None:
    oom = replace(KILLED, signal=9, signal_reported=True, reason="OOMKilled")
    lines = _card_lines(text.render(_verdict(_group(retries=RetryVerdict(attempt=3, failed=(oom,), undetailed=1)))))
    joined = " ".join(" ".join(lines).split())
    assert "↻ Passed on attempt 3 after 2 failed runs:" in lines
    assert "exited on signal 9 (Killed), exit code 137, OOMKilled" in joined
    assert "  and 1 earlier failed run without detail" in lines


def test_with_several_groups_each_retried_group_is_named() -> None:
    lines = _card_lines(text.render(_verdict(_group("group-0", None), _group("group-1"))))
    assert "↻ group-1 passed on attempt 2 after 1 failed run:" in lines
    assert not any("group-0 passed" in line for line in lines)


def test_the_json_report_lists_every_failed_run() -> None:
    category = json_report.to_dict(_verdict(_group("group-0", None), _group("group-1")))["categories"][0]
    assert category["retriedGroups"] == [
        {
            "name": "group-1",
            "nodes": ["h100-onprem-0", "h100-onprem-1"],
            "job": "job-group-1",
            "passedOnAttempt": 2,
            "failedRuns": [
                {
                    "attempt": 1,
                    "node": "h100-onprem-1",
                    "pod": "nccl-all-reduce-launcher-0-0-x7k2p",
                    "container": "node",
                    "role": "launcher",
                    "exitCode": 137,
                    "reason": "Error",
                    "signal": 9,
                    "signalName": "Killed",
                    "finishedAt": "2026-12-06T21:00:30Z",
                }
            ],
        }
    ]
    assert json_report.to_dict(_verdict(_group()))["result"] == "PASSED"


def test_a_run_without_retries_reports_exactly_as_before() -> None:
    plain = _verdict(_group(retries=None))
    assert "retriedGroups" not in json_report.dumps(plain)
    assert "attempt" not in text.render(plain)
    # a failed group's retries are not a pass after retries: its failure says what happened
    failed = _verdict(_group(failed=True))
    assert "retriedGroups" not in json_report.dumps(failed)
    assert "Passed on attempt" not in text.render(failed)


def test_names_from_the_pods_cannot_reach_the_terminal_raw() -> None:
    hostile = replace(KILLED, role="launcher\x1b[31m", node="n\u202e1")
    report = text.render(_verdict(_group(retries=RetryVerdict(2, (hostile,)))))
    assert "\x1b" not in report and "\u202e" not in report
    assert all(len(line) == 66 for line in report.splitlines() if line.startswith("│"))


# --------------------------------------------------------------------------------------------
# The Job tier: the Succeeded message and a Warning Event.


class _Clock:
    def stamp(self) -> str:
        return "2026-12-06T21:01:00Z"

    def now(self) -> datetime:
        return datetime(2026, 12, 6, 21, 1, tzinfo=UTC)


class _Ctx:
    """What the observer asks of the context on the way to Succeeded."""

    def __init__(self, trainjob: dict[str, Any]) -> None:
        self.trainjob = trainjob
        self.clock = _Clock()
        self.written: list[dict[str, Any]] = []
        self.events: list[tuple[str, str, str]] = []

    def read(self, resource: Any, name: str, namespace: str) -> dict[str, Any]:
        return self.trainjob

    def write_status(self, resource: Any, obj: dict[str, Any], mutate: Any, *, stop_when_terminal: bool = False) -> dict[str, Any]:
        status = mutate(dict(obj.get("status") or {}))
        written = {**obj, "status": status}
        self.written.append(written)
        return written

    def event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        self.events.append((type_, reason, message))


class _Reads:
    def __init__(self, pods: list[dict[str, Any]]) -> None:
        self._pods = pods

    def pods(self, job: Any) -> list[dict[str, Any]]:
        return self._pods


class _Validation:
    def judge(self, job: dict[str, Any]) -> Result:
        return Result()


def _observe(pods: list[dict[str, Any]]) -> _Ctx:
    job = {"metadata": {"name": "j", "namespace": "ns", "uid": "u1"}, "spec": {}, "status": {}}
    trainjob = {
        "metadata": {"name": "j-workload", "ownerReferences": [{"uid": "u1", "controller": True, "kind": "Job", "name": "j"}]},
        "status": {"conditions": [{"type": "Complete", "status": "True", "message": "jobset completed"}]},
    }
    ctx = _Ctx(trainjob)
    observer = WorkloadObserver(
        ctx,  # type: ignore[arg-type]
        _Reads(pods),
        failure=None,  # type: ignore[arg-type]
        restarter=None,  # type: ignore[arg-type]
        validation=_Validation(),
        running=None,  # type: ignore[arg-type]
        health=None,  # type: ignore[arg-type]
    )
    observer.observe(job)
    return ctx


def _launcher(restarts: int) -> dict[str, Any]:
    status: dict[str, Any] = {"name": "node", "restartCount": restarts, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
    if restarts:
        status["lastState"] = {"terminated": {"exitCode": 137, "reason": "Error", "finishedAt": "2026-12-06T21:00:30Z"}}
    return {
        "metadata": {"name": "j-workload-launcher-0-0-x", "labels": {"jobset.sigs.k8s.io/replicatedjob-name": "launcher"}},
        "spec": {"nodeName": "real-1"},
        "status": {"phase": "Succeeded", "containerStatuses": [status]},
    }


def _succeeded(ctx: _Ctx) -> dict[str, Any]:
    (written,) = ctx.written
    (condition,) = [c for c in written["status"]["conditions"] if c["type"] == "Succeeded"]
    assert condition["status"] == "True" and condition["reason"] == "WorkloadCompleted"
    found: dict[str, Any] = condition
    return found


def test_a_job_that_passed_after_a_retry_succeeds_and_its_message_names_the_failed_run() -> None:
    ctx = _observe([_launcher(1)])
    message = _succeeded(ctx)["message"]
    assert message == (
        "Workload TrainJob/j-workload completed: jobset completed; passed on attempt 2 after 1 failed run: attempt 1: "
        "launcher pod j-workload-launcher-0-0-x (container node) on node real-1 exited with code 137 (signal 9, Killed), "
        "reason Error, at 2026-12-06T21:00:30Z"
    )
    assert retry_note.retries_of_job({"status": {"conditions": [_succeeded(ctx)]}}) is not None
    ((kind, reason, note),) = ctx.events
    assert (kind, reason) == ("Warning", "WorkloadAttemptFailed")
    assert note.startswith("Workload TrainJob/j-workload passed on attempt 2 after 1 failed run: attempt 1: launcher pod")


def test_a_job_that_passed_at_once_keeps_its_message_and_emits_nothing_more() -> None:
    ctx = _observe([_launcher(0)])
    assert _succeeded(ctx)["message"] == "Workload TrainJob/j-workload completed: jobset completed"
    assert ctx.events == []
