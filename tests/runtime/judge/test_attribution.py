"""Failure attribution: who is blamed, and which pod's log explains it."""

from __future__ import annotations

from dataclasses import replace

from nvcre.runtime.judge.attribution import (
    choose_failure_pod,
    cut_tail,
    failure_log,
    group_nodes,
    missing_failure_log,
    seed_failed_nodes,
)


def _job(conditions: list[dict], failed_nodes: list[dict] | None = None, started: bool = True) -> dict:
    status: dict = {"conditions": conditions}
    if failed_nodes is not None:
        status["failedNodes"] = failed_nodes
    if started:
        status["workloadStartTime"] = "2026-03-01T10:00:00Z"
    return {"metadata": {"name": "j", "annotations": {"nvcre.nvidia.com/group-nodes": "n2,n1, n2"}}, "status": status}


def _cond(kind: str, reason: str, message: str) -> dict:
    return {"type": kind, "status": "True", "reason": reason, "message": message, "lastTransitionTime": "2026-03-01T10:00:00Z"}


def test_group_nodes_from_annotation_else_bound_pods() -> None:
    assert group_nodes(_job([])) == ["n1", "n2"]
    pods = [{"spec": {"nodeName": "x"}}, {"spec": {}}, {"spec": {"nodeName": "w"}}]
    assert group_nodes({"metadata": {}}, pods) == ["w", "x"]


def test_failed_job_blames_every_group_node() -> None:
    job = _job([_cond("Failed", "WorkloadFailed", "Workload TrainJob/j-workload failed: BackoffLimitExceeded")])
    assert seed_failed_nodes(job, group_nodes(job)) == [
        {"name": "n1", "reason": "WorkloadFailed", "message": "Workload TrainJob/j-workload failed: BackoffLimitExceeded"},
        {"name": "n2", "reason": "WorkloadFailed", "message": "Workload TrainJob/j-workload failed: BackoffLimitExceeded"},
    ]


def test_threshold_violation_blames_every_group_node() -> None:
    job = _job([_cond("Succeeded", "WorkloadCompleted", ""), _cond("ValidationFailed", "ThresholdViolated", "Threshold x")])
    assert {e["reason"] for e in seed_failed_nodes(job, ["n1"])} == {"ThresholdViolation"}


def test_detector_entries_survive() -> None:
    entry = {
        "name": "n1",
        "reason": "HardwareFailureDetected",
        "message": "Hardware failure detected by node health check: GPUHealthy: XID 79",
    }
    job = _job([_cond("Failed", "WorkloadFailed", "boom")], failed_nodes=[entry])
    assert seed_failed_nodes(job, ["n1", "n2"]) == [entry]


def test_timeouts_blame_only_when_the_workload_ran() -> None:
    ran = _job([_cond("Failed", "JobTimedOut", "Job exceeded timeoutPerJob")])
    assert [e["name"] for e in seed_failed_nodes(ran, ["n1", "n2"])] == ["n1", "n2"]
    blocked = _job([_cond("Failed", "JobTimedOut", "Job exceeded timeoutPerJob while its pods were unschedulable")])
    assert seed_failed_nodes(blocked, ["n1"]) == []
    never_started = _job([_cond("Failed", "JobTimedOut", "Job exceeded timeoutPerJob")], started=False)
    assert seed_failed_nodes(never_started, ["n1"]) == []


def _pod(name: str, node: str, code: int, reason: str = "Error", labels: dict | None = None) -> dict:
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"nodeName": node},
        "status": {"containerStatuses": [{"name": "node", "state": {"terminated": {"exitCode": code, "reason": reason}}}]},
    }


def test_failure_pod_prefers_oomkilled_then_the_first_nonzero() -> None:
    pods = [_pod("c", "n3", 137, "OOMKilled"), _pod("a", "n1", 0, "Completed"), _pod("b", "n2", 1)]
    choice = choose_failure_pod(pods)
    assert choice is not None and (choice.pod_name, choice.exit_code, choice.reason) == ("c", 137, "OOMKilled")
    choice = choose_failure_pod(pods[1:])
    assert choice is not None and (choice.pod_name, choice.node_name) == ("b", "n2")
    assert choose_failure_pod([pods[1]]) is None


def test_timeout_path_takes_the_launcher() -> None:
    launcher = _pod("l", "n1", 0, labels={"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"})
    choice = choose_failure_pod([_pod("b", "n2", 1), launcher], prefer_launcher=True)
    assert choice is not None and (choice.pod_name, choice.reason) == ("l", "Timeout")


def test_tail_is_cut_to_lines_then_bytes() -> None:
    text = "\n".join(f"line {i}" for i in range(2000))
    tail = cut_tail(text)
    assert tail.splitlines()[0] == "line 1200" and len(tail.splitlines()) == 800
    wide = "é" * 40000
    cut = cut_tail(wide)
    assert len(cut.encode()) <= 32 * 1024 and set(cut) == {"é"}
    choice = choose_failure_pod([_pod("b", "n2", 1)])
    assert choice is not None
    assert failure_log(choice, "a\nb") == {"podName": "b", "nodeName": "n2", "exitCode": 1, "reason": "Error", "tail": "a\nb"}
    assert missing_failure_log(True)["reason"] == "NoTerminatedContainer"
    assert missing_failure_log(False)["reason"] == "PodNotFound"


def test_a_threshold_that_cannot_be_judged_blames_no_node() -> None:
    for reason in ("InvalidThresholdExpression", "UnknownThresholdKey"):
        message = 'Threshold "busBandwidthGBps": threshold expression "1/0 == 0" failed: evaluate: modulus or divide by zero'
        job = _job([_cond("Succeeded", "WorkloadCompleted", ""), _cond("ValidationFailed", reason, message)])
        assert seed_failed_nodes(job, group_nodes(job)) == []


def test_a_container_that_never_started_gets_the_runtimes_reason_as_its_tail() -> None:
    # a torch WorkloadRun on an image without torchrun, as runc reported it on real nodes
    message = 'failed to create containerd task: exec: "torchrun": executable file not found in $PATH'
    pod = {
        "metadata": {"name": "run-node-0-0"},
        "spec": {"nodeName": "h100-0"},
        "status": {
            "containerStatuses": [
                {"name": "node", "restartCount": 1, "state": {"terminated": {"exitCode": 128, "reason": "StartError", "message": message}}}
            ]
        },
    }
    choice = choose_failure_pod([pod])
    assert choice is not None and (choice.exit_code, choice.reason) == (128, "StartError")
    assert failure_log(choice, "")["tail"] == message
    # what a log read of it returns is the kubelet's complaint about the missing file (seen on
    # real nodes with a 200 answer): the runtime's reason still wins
    log = "/var/log/pods/ns_run-node-0-0_uid/node/3.log"
    kubelet = f'failed to try resolving symlinks in path "{log}": lstat {log}: no such file or directory'
    assert failure_log(choice, kubelet)["tail"] == message
    # a container that ran and logged keeps its log: its message is only the fallback
    ran = replace(choice, exit_code=1, reason="Error", message="written to the termination log")
    assert failure_log(ran, "Traceback: boom\n")["tail"] == "Traceback: boom"
    assert failure_log(ran, "")["tail"] == "written to the termination log"
