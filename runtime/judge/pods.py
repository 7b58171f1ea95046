"""Read-only views of a Job's pods: which pods belong to it, where they run, why they wait.

Pure functions over pod dicts (as the informer holds them); the reconcilers decide what the
observations mean.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from nvcre.compiler.vocabulary import LABEL_JOB

__all__ = [
    "JOBSET_NAME_LABEL",
    "REPLICATED_JOB_LABEL",
    "blocked_pods",
    "bound_nodes",
    "job_pods",
    "live_pods",
    "scheduler_message",
]

JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
_FINISHED = ("Succeeded", "Failed")


def _labels(pod: Mapping[str, Any]) -> dict[str, str]:
    return dict((pod.get("metadata") or {}).get("labels") or {})


def job_pods(pods: Iterable[Mapping[str, Any]], job_name: str, workload_name: str | None) -> list[dict[str, Any]]:
    """Pods labelled for the Job, plus the workload's pods that lack the label (MPI launcher)."""
    found: list[dict[str, Any]] = []
    for pod in pods:
        labels = _labels(pod)
        if labels.get(LABEL_JOB) == job_name or (workload_name and labels.get(JOBSET_NAME_LABEL) == workload_name):
            found.append(dict(pod))
    return sorted(found, key=lambda p: str((p.get("metadata") or {}).get("name") or ""))


def _phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def live_pods(pods: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Pods that are not finished (the pod-drain barrier waits on these)."""
    return [dict(p) for p in pods if _phase(p) not in _FINISHED]


def bound_nodes(pods: Iterable[Mapping[str, Any]], *, labelled_for: str | None = None) -> list[str]:
    """Sorted node names of Pending/Running pods that have a node."""
    nodes: set[str] = set()
    for pod in pods:
        if labelled_for is not None and _labels(pod).get(LABEL_JOB) != labelled_for:
            continue
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if node and _phase(pod) in ("Pending", "Running"):
            nodes.add(node)
    return sorted(nodes)


def _scheduled_condition(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for item in (pod.get("status") or {}).get("conditions") or []:
        if item.get("type") == "PodScheduled":
            found: Mapping[str, Any] = item
            return found
    return None


def blocked_pods(pods: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Pods the scheduler tried and refused: no node, PodScheduled=False, reason Unschedulable.

    Pods held by a scheduling gate (reason SchedulingGated) and pods the scheduler has not
    looked at yet do not count.
    """
    blocked: list[dict[str, Any]] = []
    for pod in pods:
        if (pod.get("spec") or {}).get("nodeName") or _phase(pod) in _FINISHED:
            continue
        scheduled = _scheduled_condition(pod)
        if scheduled and scheduled.get("status") == "False" and scheduled.get("reason") == "Unschedulable":
            blocked.append(dict(pod))
    return blocked


def scheduler_message(pods: Iterable[Mapping[str, Any]]) -> str:
    """The scheduler's own words for the first blocked pod."""
    for pod in pods:
        scheduled = _scheduled_condition(pod)
        if scheduled and scheduled.get("message"):
            return str(scheduled["message"])
    return "no node can run the workload's pods"
