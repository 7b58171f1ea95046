"""Views of a Job's pods: which belong to it, which nodes they hold, which the scheduler refused."""

from __future__ import annotations

from typing import Any

from nvcre.runtime.judge.pods import blocked_pods, bound_nodes, job_pods, live_pods, scheduler_message


def pod(name: str, *, node: str = "", phase: str = "Pending", scheduled: tuple[str, str, str] | None = None, labels=None) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase}
    if scheduled:
        state, reason, message = scheduled
        status["conditions"] = [{"type": "PodScheduled", "status": state, "reason": reason, "message": message}]
    spec = {"nodeName": node} if node else {}
    return {"metadata": {"name": name, "namespace": "ns", "labels": labels or {}}, "spec": spec, "status": status}


def test_only_pods_the_scheduler_refused_count_as_blocked():
    refused = pod("a", scheduled=("False", "Unschedulable", "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."))
    gated = pod("b", scheduled=("False", "SchedulingGated", "Scheduling is blocked due to non-empty scheduling gates"))
    unseen = pod("c")
    placed = pod("d", node="n1", phase="Running", scheduled=("True", "", ""))
    blocked = blocked_pods([refused, gated, unseen, placed])
    assert [p["metadata"]["name"] for p in blocked] == ["a"]
    assert scheduler_message(blocked) == "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."


def test_job_pods_include_the_unlabelled_launcher_and_bound_nodes_skip_finished_pods():
    worker = pod("w", node="n2", phase="Running", labels={"nvcre.nvidia.com/job": "j"})
    launcher = pod("l", node="n1", phase="Running", labels={"jobset.sigs.k8s.io/jobset-name": "j-workload"})
    done = pod("x", node="n3", phase="Succeeded", labels={"nvcre.nvidia.com/job": "j"})
    other = pod("o", node="n4", phase="Running", labels={"nvcre.nvidia.com/job": "k"})
    mine = job_pods([worker, launcher, done, other], "j", "j-workload")
    assert [p["metadata"]["name"] for p in mine] == ["l", "w", "x"]
    assert bound_nodes(mine) == ["n1", "n2"]
    assert bound_nodes(mine, labelled_for="j") == ["n2"]


def test_the_drain_barrier_waits_on_unfinished_pods_only_and_a_refusal_has_words_without_a_message() -> None:
    pods = [
        pod("r", node="n1", phase="Running"),
        pod("p"),
        pod("s", phase="Succeeded"),
        pod("f", phase="Failed"),
        pod("u", phase="Unknown"),
    ]
    assert [p["metadata"]["name"] for p in live_pods(pods)] == ["r", "p", "u"]
    silent = pod("q", scheduled=("False", "Unschedulable", ""))
    assert blocked_pods([silent]) and scheduler_message([silent]) == "no node can run the workload's pods"
    finished = pod("z", phase="Failed", scheduled=("False", "Unschedulable", "0/2 nodes are available"))
    assert blocked_pods([finished]) == []
