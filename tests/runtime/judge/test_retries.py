"""Which runs of a workload failed before the ones that counted (``judge.retries``), and the note a
passed Job's ``Succeeded`` condition carries about them (``judge.retry_note``), offline.

The pod shapes are those the API server serves: a container the kubelet restarted in place under
``restartPolicy: OnFailure`` (``restartCount`` and ``lastState.terminated``), and a pod that
failed as a whole next to the one its Job controller made in its place.
"""

from __future__ import annotations

from typing import Any

import pytest

from nvcre.runtime.judge import retries, retry_note
from nvcre.runtime.judge.model import FailedAttempt, RetryVerdict

LAUNCHER_LABELS = {
    "jobset.sigs.k8s.io/replicatedjob-name": "launcher",
    "jobset.sigs.k8s.io/job-index": "0",
    "batch.kubernetes.io/job-completion-index": "0",
}


def _pod(
    name: str,
    node: str,
    *,
    phase: str = "Succeeded",
    labels: dict[str, str] | None = None,
    created: str = "2026-12-06T21:00:00Z",
    restarts: int = 0,
    last: dict[str, Any] | None = None,
    state: dict[str, Any] | None = None,
    deleting: bool = False,
    container: str = "node",
) -> dict[str, Any]:
    status: dict[str, Any] = {"name": container, "restartCount": restarts}
    if last is not None:
        status["lastState"] = {"terminated": last}
    status["state"] = {"terminated": state or {"exitCode": 0, "reason": "Completed"}}
    meta: dict[str, Any] = {"name": name, "creationTimestamp": created, "labels": dict(LAUNCHER_LABELS if labels is None else labels)}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-06T21:05:00Z"
    return {"metadata": meta, "spec": {"nodeName": node}, "status": {"phase": phase, "containerStatuses": [status]}}


KILLED = {"exitCode": 137, "reason": "Error", "finishedAt": "2026-12-06T21:00:30Z"}


def test_a_launcher_restarted_in_place_passed_on_its_second_attempt() -> None:
    pod = _pod("run-launcher-0-0-x7k2p", "real-1", restarts=1, last=KILLED)
    found = retries.failed_attempts([pod])
    assert found == RetryVerdict(
        attempt=2,
        failed=(
            FailedAttempt(
                attempt=1,
                node="real-1",
                pod="run-launcher-0-0-x7k2p",
                container="node",
                role="launcher",
                exit_code=137,
                reason="Error",
                signal=9,
                signal_reported=False,
                finished_at="2026-12-06T21:00:30Z",
            ),
        ),
    )
    assert found.failed[0].signal_name == "Killed"


def test_a_run_that_passed_at_once_has_no_retries() -> None:
    assert retries.failed_attempts([_pod("run-launcher-0-0-a", "real-1"), _pod("run-node-0-0-b", "real-0", labels={})]) is None
    assert retries.failed_attempts([]) is None


def test_a_pod_its_job_controller_replaced_counts_as_the_first_attempt() -> None:
    """The simulated cluster's shape: kwok fails the pod, the Job controller makes another."""
    failed = _pod(
        "run-node-0-0-aaaaa",
        "sim-0",
        phase="Failed",
        state={"exitCode": 1, "reason": "Error", "finishedAt": "2026-12-06T21:00:10Z"},
        labels={**LAUNCHER_LABELS, "jobset.sigs.k8s.io/replicatedjob-name": "node"},
    )
    passed = _pod(
        "run-node-0-0-bbbbb",
        "sim-0",
        created="2026-12-06T21:00:12Z",
        labels={**LAUNCHER_LABELS, "jobset.sigs.k8s.io/replicatedjob-name": "node"},
    )
    found = retries.failed_attempts([passed, failed])
    assert found is not None and found.attempt == 2 and found.undetailed == 0
    (run,) = found.failed
    assert (run.attempt, run.pod, run.node, run.role, run.exit_code, run.signal) == (1, "run-node-0-0-aaaaa", "sim-0", "node", 1, 0)


def test_the_kubelet_keeps_only_the_last_termination_so_earlier_runs_are_counted_without_detail() -> None:
    found = retries.failed_attempts([_pod("run-launcher-0-0-x", "real-1", restarts=3, last=KILLED)])
    assert found is not None
    assert found.attempt == 4 and found.undetailed == 2
    assert [f.attempt for f in found.failed] == [3]


def test_a_reported_signal_is_kept_as_reported() -> None:
    last = {"exitCode": 139, "signal": 11, "reason": "Error"}
    (run,) = (retries.failed_attempts([_pod("p", "n", restarts=1, last=last)]) or RetryVerdict(0)).failed
    assert (run.signal, run.signal_reported, run.signal_name) == (11, True, "Segmentation fault")


@pytest.mark.parametrize(("code", "signal"), [(1, 0), (255, 0), (128, 0), (130, 2), (143, 15), (192, 64), (193, 0)])
def test_a_signal_is_read_from_an_exit_code_of_128_plus_n_only(code: int, signal: int) -> None:
    (run,) = (retries.failed_attempts([_pod("p", "n", restarts=1, last={"exitCode": code})]) or RetryVerdict(0)).failed
    assert run.signal == signal and not run.signal_reported


def test_a_pod_stopped_because_its_workload_completed_is_no_failed_run() -> None:
    """Workers a completed JobSet deletes end with a non-zero code; that is no failure."""
    stopped = _pod(
        "run-node-0-0-w",
        "real-0",
        phase="Failed",
        deleting=True,
        state={"exitCode": 137, "reason": "Error"},
        labels={**LAUNCHER_LABELS, "jobset.sigs.k8s.io/replicatedjob-name": "node"},
    )
    assert retries.failed_attempts([stopped, _pod("run-launcher-0-0-l", "real-1")]) is None


def test_every_slot_counts_its_own_attempts_and_the_highest_is_the_one_that_counted() -> None:
    launcher = _pod("run-launcher-0-0-l", "real-1", restarts=1, last=KILLED)
    worker = _pod(
        "run-node-0-1-w",
        "real-0",
        restarts=2,
        last={"exitCode": 1, "reason": "Error", "finishedAt": "2026-12-06T21:00:20Z"},
        labels={**LAUNCHER_LABELS, "jobset.sigs.k8s.io/replicatedjob-name": "node", "batch.kubernetes.io/job-completion-index": "1"},
    )
    found = retries.failed_attempts([launcher, worker])
    assert found is not None and found.attempt == 3 and found.undetailed == 1
    # oldest first, by when each run ended
    assert [(f.role, f.attempt) for f in found.failed] == [("node", 2), ("launcher", 1)]


def test_only_the_first_failed_runs_are_detailed_and_the_rest_counted() -> None:
    pods = [
        _pod(
            f"run-node-0-{i}-p",
            "n",
            restarts=1,
            last={"exitCode": 1, "finishedAt": f"2026-12-06T21:00:{i:02d}Z"},
            labels={**LAUNCHER_LABELS, "batch.kubernetes.io/job-completion-index": str(i)},
        )
        for i in range(retries.MAX_DETAILED + 3)
    ]
    found = retries.failed_attempts(pods)
    assert found is not None
    assert len(found.failed) == retries.MAX_DETAILED and found.undetailed == 3
    assert found.failed[0].pod == "run-node-0-0-p"


def test_the_note_reads_back_to_what_was_written() -> None:
    found = retries.failed_attempts(
        [
            _pod("run-launcher-0-0-l", "real-1", restarts=3, last=KILLED),
            _pod("run-node-0-1-w", "real-0", restarts=1, last={"exitCode": 139, "signal": 11, "reason": "Error"}, labels={}),
            _pod(
                "run-x",
                "real-0",
                restarts=1,
                last={"exitCode": 2, "reason": "OOMKilled", "finishedAt": "2026-12-06T21:01:00.5Z"},
                labels={},
            ),
        ]
    )
    assert found is not None
    message = retry_note.with_note("Workload TrainJob/run completed: jobset completed", found)
    assert message.startswith("Workload TrainJob/run completed: jobset completed; passed on attempt 4 after ")
    assert retry_note.read_note(message) == found


def test_the_note_says_it_in_words() -> None:
    found = retries.failed_attempts([_pod("run-launcher-0-0-l", "real-1", restarts=1, last=KILLED)])
    assert found is not None
    assert retry_note.note(found) == (
        "passed on attempt 2 after 1 failed run: attempt 1: launcher pod run-launcher-0-0-l (container node) on node real-1 "
        "exited with code 137 (signal 9, Killed), reason Error, at 2026-12-06T21:00:30Z"
    )


def test_what_the_pods_say_cannot_change_the_shape_of_the_note() -> None:
    hostile = FailedAttempt(
        attempt=1,
        node="n (x); attempt 9: y",
        pod="",
        container="c)",
        role="r, s",
        exit_code=3,
        reason="Bad; reason (x)",
        finished_at="yesterday; attempt 2",
    )
    written = retry_note.with_note("done", RetryVerdict(attempt=2, failed=(hostile,)))
    read = retry_note.read_note(written)
    assert read is not None and len(read.failed) == 1
    (back,) = read.failed
    assert (back.reason, back.finished_at, back.pod, back.exit_code) == ("Badreasonx", "", "", 3)
    assert ";" not in back.node and "(" not in back.node


@pytest.mark.parametrize(
    "message",
    [
        "Workload TrainJob/run completed",
        "Workload TrainJob/run completed; passed on attempt 2 after 1 failed run: something else",
        "passed on attempt x",
        "passed on attempt 2 after 1 failed run: ",
    ],
)
def test_a_message_without_a_note_in_its_shape_names_no_retries(message: str) -> None:
    assert retry_note.read_note(message) is None


def test_only_a_true_succeeded_condition_is_read() -> None:
    note = retry_note.note(RetryVerdict(attempt=2, undetailed=1))
    assert note == "passed on attempt 2 after 1 failed run: 1 more failed run not detailed"

    def job(kind: str, status: str) -> dict[str, Any]:
        return {"status": {"conditions": [{"type": kind, "status": status, "message": f"Workload TrainJob/j completed; {note}"}]}}

    assert retry_note.retries_of_job(job("Succeeded", "True")) == RetryVerdict(attempt=2, undetailed=1)
    assert retry_note.retries_of_job(job("Succeeded", "False")) is None
    assert retry_note.retries_of_job(job("Failed", "True")) is None
    assert retry_note.retries_of_job(None) is None
    assert retry_note.retries_of_job({"status": {"conditions": "x"}}) is None
