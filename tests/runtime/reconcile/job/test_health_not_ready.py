"""A node that drops out while its Job runs (its ``Ready`` condition turns ``Unknown`` or ``False``)
is a hardware failure of the Job, whatever its health expression says, and even when the Job has
none (a target that opts cordoned nodes in gets no expression): the entry carries the node
controller's own words. A Ready node, or one that never reported Ready at all, is not blamed."""

from __future__ import annotations

from typing import Any

from nvcre.runtime.judge.health import not_ready_entries
from nvcre.runtime.kube.informers import Store
from nvcre.runtime.kube.resources import JOBS
from nvcre.runtime.reconcile.context import Context
from nvcre.runtime.reconcile.job import JobReconciler
from nvcre.testing.fakekube import MemoryKube

#: what kube-controller-manager writes when a kubelet stops posting status
LOST = {
    "type": "Ready",
    "status": "Unknown",
    "reason": "NodeStatusUnknown",
    "message": "Kubelet stopped posting node status.",
}


def _node(name: str, *conditions: dict[str, str], version: str = "1") -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": version}, "spec": {}, "status": {"conditions": list(conditions)}}


def _job(expression: str | None) -> dict[str, Any]:
    spec = {"nodeHealthMonitor": {"cel": {"expression": expression}}} if expression else {}
    return {
        "apiVersion": JOBS.api_version,
        "kind": "Job",
        "metadata": {"name": "job-a", "namespace": "ns", "labels": {"nvcre.nvidia.com/workflow": "wf"}},
        "spec": spec,
        "status": {"conditions": [{"type": "InProgress", "status": "True", "reason": "WorkloadRunning"}]},
    }


def _pod(name: str, node: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "labels": {"nvcre.nvidia.com/job": "job-a"}},
        "spec": {"nodeName": node},
        "status": {"phase": "Running"},
    }


def _check(expression: str | None, *nodes: dict[str, Any]) -> tuple[dict[str, Any], MemoryKube]:
    kube = MemoryKube()
    kube.put(_job(expression))
    store = Store()
    store.replace(list(nodes))
    ctx = Context(kube=kube, stores={"nodes": store})
    JobReconciler(ctx).health.check(kube.get(JOBS, "job-a", "ns"), [_pod("p1", "n1"), _pod("p2", "n2")])
    return kube.get(JOBS, "job-a", "ns"), kube


def test_only_a_present_ready_condition_that_is_not_true_counts() -> None:
    nodes = {
        "n1": _node("n1", {"type": "Ready", "status": "True"}),
        "n2": _node("n2", LOST),
        "n3": _node("n3", {"type": "Ready", "status": "False", "reason": "KubeletNotReady", "message": "container runtime is down"}),
        "n4": _node("n4"),  # registered, never reported: not a node that dropped out
    }
    entries = not_ready_entries(nodes)
    assert [(e["name"], e["reason"]) for e in entries] == [("n2", "HardwareFailureDetected"), ("n3", "HardwareFailureDetected")]
    assert "Ready is Unknown: NodeStatusUnknown: Kubelet stopped posting node status." in entries[0]["message"]
    assert entries[1]["message"].endswith("Ready is False: KubeletNotReady: container runtime is down")


def test_a_lost_node_fails_the_job_under_the_default_expression_and_the_healthy_one_is_not_blamed() -> None:
    job, kube = _check("node.spec.unschedulable == true", _node("n1", {"type": "Ready", "status": "True"}), _node("n2", LOST))
    status = job["status"]
    assert [(e["name"], e["reason"]) for e in status["failedNodes"]] == [("n2", "HardwareFailureDetected")]
    assert "Kubelet stopped posting node status." in status["failedNodes"][0]["message"]
    [hardware] = [c for c in status["conditions"] if c["type"] == "HardwareFailed"]
    assert hardware["status"] == "True" and "n2" in hardware["message"]
    assert [event.reason for event in kube.events] == ["HardwareFailureDetected"]


def test_a_job_without_an_expression_still_fails_on_a_lost_node() -> None:
    job, _ = _check(None, _node("n1", {"type": "Ready", "status": "True"}), _node("n2", LOST))
    assert [e["name"] for e in job["status"]["failedNodes"]] == ["n2"]


def test_a_node_flagged_by_both_rules_is_listed_once_with_the_expressions_words() -> None:
    cordoned_and_lost = _node("n2", LOST) | {"spec": {"unschedulable": True}}
    job, _ = _check("node.spec.unschedulable == true", _node("n1", {"type": "Ready", "status": "True"}), cordoned_and_lost)
    [entry] = job["status"]["failedNodes"]
    assert entry["name"] == "n2" and entry["message"] == "Hardware failure detected by node health check"


def test_ready_nodes_leave_the_job_untouched() -> None:
    ready = {"type": "Ready", "status": "True"}
    job, kube = _check(None, _node("n1", ready), _node("n2", ready))
    assert "failedNodes" not in job["status"] and kube.events == []
