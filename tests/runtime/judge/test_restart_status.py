"""Checkpoint restarts of a Job, offline: when a workload is restarted and what status becomes."""

from __future__ import annotations

from typing import Any

import pytest

from nvcre.runtime.judge import conditions as cond
from nvcre.runtime.judge import restart as restarts
from nvcre.runtime.judge.attribution import FailurePod

STAMP = "2026-12-02T12:00:00Z"


def job(checkpoint: dict[str, Any] | None, restart_count: int = 0, **status: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"workload": {}}
    if checkpoint is not None:
        spec["checkpoint"] = checkpoint
    return {"spec": spec, "status": {"restartCount": restart_count, **status}}


CKPT = {"pvcName": "nemotron5-8b-pvc-abcde-job", "maxRestarts": 2}
SAVED = {"lastCheckpointStep": 100}


def test_a_restart_needs_a_checkpoint_config_a_budget_and_a_saved_checkpoint() -> None:
    assert restarts.should_restart(job(CKPT), SAVED)
    assert restarts.should_restart(job(CKPT, 1), SAVED)
    assert not restarts.should_restart(job(CKPT, 2), SAVED), "maxRestarts spent"
    assert not restarts.should_restart(job(None), SAVED), "no spec.checkpoint"
    assert not restarts.should_restart(job(CKPT), {"lastCheckpointStep": 0}), "nothing saved to resume from"
    assert not restarts.should_restart(job(CKPT), None), "no goodput measurement"
    assert not restarts.should_restart(job({"pvcName": "p"}), SAVED), "maxRestarts defaults to 0"


def test_max_restarts_reads_the_checkpoint_block() -> None:
    assert restarts.max_restarts({"checkpoint": CKPT}) == 2
    assert restarts.max_restarts({"checkpoint": {"pvcName": "p"}}) == 0
    assert restarts.max_restarts({}) is None
    assert restarts.max_restarts({"checkpoint": {"maxRestarts": 3}}) is None, "a checkpoint needs its claim"


def test_a_restart_counts_once_clears_the_workload_clocks_and_says_so_in_nvcre_words() -> None:
    status = {
        "restartCount": 0,
        "workloadRef": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "j-workload"},
        "workloadStartTime": STAMP,
        "schedulingBlockedSince": STAMP,
        "schedulingResumedTime": STAMP,
        "failedNodes": [],
    }
    new = restarts.restarted_status(status, 0, 3, STAMP)
    assert new is not None
    assert new["restartCount"] == 1
    for key in ("workloadRef", "workloadStartTime", "schedulingBlockedSince", "schedulingResumedTime"):
        assert key not in new
    progress = cond.condition(new, cond.IN_PROGRESS)
    assert (progress["status"], progress["reason"], progress["message"]) == (
        "True",
        "WorkloadRestarting",
        "Restarting workload from checkpoint (restart 1/3)",
    )
    assert progress["lastTransitionTime"] == STAMP
    later = restarts.restarted_status({**new, "workloadRef": {"name": "w"}}, 1, 3, "2026-12-02T12:09:00Z")
    assert later is not None
    assert cond.condition(later, cond.IN_PROGRESS)["lastTransitionTime"] == "2026-12-02T12:09:00Z", "each restart is dated"
    assert restarts.restarted_status(new, 0, 3, STAMP) is None, "a second writer does not count it again"
    assert restarts.restarted_status({**status, "restartCount": 1}, 0, 3, STAMP) is None


def test_the_attempt_failure_names_pod_node_and_exit_code() -> None:
    pod = FailurePod("w-0", "gpu-1", "node", 1, "Error")
    assert restarts.attempt_failure_message(2, "Workload TrainJob/x failed", pod) == (
        "Attempt 2 failed: Workload TrainJob/x failed; pod w-0 on node gpu-1 exited with code 1 (Error)"
    )
    assert restarts.attempt_failure_message(1, "Workload stalled", None) == "Attempt 1 failed: Workload stalled"


def test_the_goodput_status_starts_its_attempt_clocks_again_once() -> None:
    status = {
        "lastStepTimestamp": STAMP,
        "avgStepTimeSec": "1.0",
        "applicationStartTime": STAMP,
        "avgTFLOPSPerGPU": "500.00",
        "result": "0.9000",
        "startTime": "2026-12-02T11:00:00Z",
    }
    pending = {"reason": "r", "tInterrupt": STAMP}
    new = restarts.reset_goodput_status(status, 1, pending, "2026-12-02T12:01:00Z")
    assert new is not None
    assert not {"lastStepTimestamp", "avgStepTimeSec", "applicationStartTime", "avgTFLOPSPerGPU"} & set(new)
    assert new["interruptionCount"] == 1 and new["pendingInterruption"] == pending
    assert new["startTime"] == "2026-12-02T12:01:00Z" and new["result"] == "0.9000"
    assert restarts.reset_goodput_status(new, 1, pending, STAMP) is None
    complete = cond.set_condition({}, "Complete", "True", "JobSucceeded", "done", STAMP)
    assert restarts.reset_goodput_status(complete, 1, pending, STAMP) is None


@pytest.mark.parametrize(
    ("labels", "expected"),
    [([], 0), (["0", "0"], 0), (["0", "2"], 2), (["x", "1"], 1)],
)
def test_jobset_restarts_come_from_the_restart_attempt_label(labels: list[str], expected: int) -> None:
    pods = [{"metadata": {"labels": {restarts.RESTART_ATTEMPT_LABEL: v}}} for v in labels]
    assert restarts.jobset_restarts(pods) == expected


def _created(name: str, at: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "creationTimestamp": at}}


def test_only_the_pods_of_the_recreated_workload_count() -> None:
    workload = _created("j-workload", "2026-12-02T12:05:00Z")
    pods = [_created("old", "2026-12-02T12:00:00Z"), _created("new", "2026-12-02T12:05:01Z")]
    assert [p["metadata"]["name"] for p in restarts.current_attempt_pods(pods, workload)] == ["new"]
    assert len(restarts.current_attempt_pods(pods, None)) == 2


def test_stall_evidence_waits_for_the_measurement_to_record_the_restart() -> None:
    workload = _created("j-workload", "2026-12-02T12:05:00Z")
    stale = {"interruptionCount": 0, "lastStepTimestamp": "2026-12-02T12:01:00Z", "avgStepTimeSec": "1.0"}
    assert restarts.current_attempt_goodput(stale, {"restartCount": 1}, workload) is None
    recorded = {**stale, "interruptionCount": 1}
    evidence = restarts.current_attempt_goodput(recorded, {"restartCount": 1}, workload)
    assert evidence is not None and "lastStepTimestamp" not in evidence and "avgStepTimeSec" not in evidence
    fresh = {**recorded, "lastStepTimestamp": "2026-12-02T12:06:00Z"}
    assert restarts.current_attempt_goodput(fresh, {"restartCount": 1}, workload) == fresh
