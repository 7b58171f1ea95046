"""Failure attribution: which nodes a failed Job is blamed on, and which pod's log explains it.

``seed_failed_nodes`` applies NVCRE's rules to a Job dict: entries already recorded (for
example by the health monitor, with the detector's own message) are kept; when there are none,
a ``Failed`` Job blames every group node with ``WorkloadFailed`` and its condition message, a
``ValidationFailed`` Job with ``ThresholdViolation`` and the violation message, unless the
threshold itself could not be judged (an unknown key, an expression that gives no boolean):
that is the configuration's fault, and no node is blamed. Nor is one whose workload was deleted
by someone else (``WorkloadDeleted``) or never created (``WorkloadCreationError``). A Job that timed
out after its workload ran blames its nodes too; one that timed out while its pods were
unschedulable blames nobody, because nothing ran there. Group nodes come from the
``nvcre.nvidia.com/group-nodes`` annotation, else from the pods bound for the Job.

``choose_failure_pod`` picks the pod whose log goes into ``status.failureLog``: the first with a
container terminated non-zero, an ``OOMKilled`` one preferred; ``failure_log`` cuts its log to
the last 800 lines and 32 KiB.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nvcre.compiler.vocabulary import ANNOTATION_GROUP_NODES

from .health import merge_failed_nodes
from .thresholds import CONFIGURATION_ERRORS

#: A Job that failed for one of these reasons failed because of something done to it, not on
#: its nodes: its workload was deleted by someone other than the controller, could not be
#: built or created (a name taken by another object, a template the compiler refuses), or could
#: never be placed on them (``judge/scheduling.py``).
NO_BLAME_FAILURES = frozenset({"WorkloadDeleted", "WorkloadCreationError", "WorkloadUnschedulable"})

__all__ = [
    "MAX_TAIL_BYTES",
    "MAX_TAIL_LINES",
    "FailurePod",
    "choose_failure_pod",
    "cut_tail",
    "failure_log",
    "group_nodes",
    "missing_failure_log",
    "seed_failed_nodes",
    "timed_out_while_unschedulable",
]

LAUNCHER_STEP_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
MAX_TAIL_LINES = 800
MAX_TAIL_BYTES = 32 * 1024
TIMEOUT_REASON = "JobTimedOut"
UNSCHEDULABLE_TIMEOUT_MARK = "while its pods were unschedulable"


def _conditions(obj: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    found: dict[str, Mapping[str, Any]] = {}
    for cond in ((obj.get("status") or {}).get("conditions")) or ():
        if isinstance(cond, Mapping) and isinstance(cond.get("type"), str):
            found[cond["type"]] = cond
    return found


def _true(cond: Mapping[str, Any] | None) -> bool:
    return bool(cond) and cond is not None and cond.get("status") == "True"


def group_nodes(job: Mapping[str, Any], pods: Iterable[Mapping[str, Any]] = ()) -> list[str]:
    """The Job's group nodes: the annotation (deduplicated, sorted), else nodes of its bound pods."""
    annotation = ((job.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_GROUP_NODES)
    if isinstance(annotation, str) and annotation.strip():
        return sorted({name.strip() for name in annotation.split(",") if name.strip()})
    return sorted({str(pod["spec"]["nodeName"]) for pod in pods if (pod.get("spec") or {}).get("nodeName")})


def timed_out_while_unschedulable(job: Mapping[str, Any]) -> bool:
    """A timeout that hit while the pods were never placed: nothing ran, nobody is blamed."""
    failed = _conditions(job).get("Failed")
    if not _true(failed) or failed is None or failed.get("reason") != TIMEOUT_REASON:
        return False
    status = job.get("status") or {}
    return UNSCHEDULABLE_TIMEOUT_MARK in str(failed.get("message", "")) or not status.get("workloadStartTime")


def seed_failed_nodes(job: Mapping[str, Any], nodes: Sequence[str]) -> list[dict[str, Any]]:
    """``status.failedNodes`` after attribution (sorted by name, then reason)."""
    status = job.get("status") or {}
    existing = [entry for entry in status.get("failedNodes") or () if isinstance(entry, Mapping)]
    if existing:
        return merge_failed_nodes(existing, ())
    conds = _conditions(job)
    failed, validation = conds.get("Failed"), conds.get("ValidationFailed")
    if _true(failed) and failed is not None:
        if timed_out_while_unschedulable(job) or failed.get("reason") in NO_BLAME_FAILURES:
            return []
        message = str(failed.get("message") or failed.get("reason") or "Workload failed")
        return merge_failed_nodes((), ({"name": n, "reason": "WorkloadFailed", "message": message} for n in nodes))
    if _true(validation) and validation is not None and validation.get("reason") not in CONFIGURATION_ERRORS:
        message = str(validation.get("message") or validation.get("reason") or "Threshold violated")
        return merge_failed_nodes((), ({"name": n, "reason": "ThresholdViolation", "message": message} for n in nodes))
    return []


@dataclass(frozen=True)
class FailurePod:
    """The pod chosen for the failure log."""

    pod_name: str
    node_name: str
    container: str
    exit_code: int
    reason: str
    #: the termination's own ``message`` (the runtime's error for a container that never
    #: started, or what the container wrote to its termination log)
    message: str = ""


@dataclass(frozen=True)
class Termination:
    """A container's non-zero exit, from its current ``state`` or its ``lastState``."""

    container: str
    exit_code: int
    reason: str
    previous: bool
    restarts: int
    message: str = ""


def terminations(pod: Mapping[str, Any]) -> Iterable[Termination]:
    """Every non-zero termination a pod reports, init containers first, the current state before the last."""
    status = pod.get("status") or {}
    for key in ("initContainerStatuses", "containerStatuses"):
        for cs in status.get(key) or ():
            if not isinstance(cs, Mapping):
                continue
            for state_key in ("state", "lastState"):
                term = ((cs.get(state_key) or {}).get("terminated")) or None
                if isinstance(term, Mapping) and isinstance(term.get("exitCode"), int) and term["exitCode"] != 0:
                    yield Termination(
                        str(cs.get("name", "")),
                        int(term["exitCode"]),
                        str(term.get("reason") or "Error"),
                        state_key == "lastState",
                        int(cs.get("restartCount") or 0),
                        str(term.get("message") or ""),
                    )


def _terminated(pod: Mapping[str, Any]) -> Iterable[Termination]:
    """The first non-zero termination of each container."""
    seen: set[str] = set()
    for term in terminations(pod):
        if term.container not in seen:
            seen.add(term.container)
            yield term


def choose_failure_pod(pods: Iterable[Mapping[str, Any]], *, prefer_launcher: bool = False) -> FailurePod | None:
    """The first pod (by name) with a container terminated non-zero; ``OOMKilled`` wins.

    With ``prefer_launcher`` (the timeout path) the launcher pod is taken when present, whether
    or not anything in it terminated.
    """
    ordered = sorted(pods, key=lambda pod: str((pod.get("metadata") or {}).get("name", "")))
    if prefer_launcher:
        for pod in ordered:
            labels = (pod.get("metadata") or {}).get("labels") or {}
            if labels.get(LAUNCHER_STEP_LABEL) == "trainer":
                return FailurePod(_name(pod), _node(pod), "node", 0, "Timeout")
    first: FailurePod | None = None
    for pod in ordered:
        for term in _terminated(pod):
            choice = FailurePod(_name(pod), _node(pod), term.container, term.exit_code, term.reason, term.message)
            if term.reason == "OOMKilled":
                return choice
            if first is None:
                first = choice
    return first


def _name(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("name", ""))


def _node(pod: Mapping[str, Any]) -> str:
    return str((pod.get("spec") or {}).get("nodeName", ""))


def cut_tail(text: str, max_lines: int = MAX_TAIL_LINES, max_bytes: int = MAX_TAIL_BYTES) -> str:
    """The last ``max_lines`` lines of ``text``, then at most its last ``max_bytes`` UTF-8 bytes."""
    lines = text.splitlines()
    tail = "\n".join(lines[-max_lines:]) if max_lines > 0 else ""
    data = tail.encode("utf-8")
    if len(data) > max_bytes:
        data = data[-max_bytes:]
        tail = data.decode("utf-8", errors="ignore")
    return tail


#: termination reasons of a container the runtime never started: it has no log of its own
NEVER_STARTED = frozenset({"StartError", "ContainerCannotRun"})


def failure_log(choice: FailurePod, log_text: str) -> dict[str, Any]:
    """``status.failureLog`` for the chosen pod. A container that logged nothing, or that the
    runtime never started (``StartError``, exit 128), gets its termination message as the tail,
    so the report says why (``exec: "torchrun": executable file not found in $PATH``): what a
    log read returns for such a container is the kubelet's own complaint that no log file
    exists (``failed to try resolving symlinks in path "/var/log/pods/..."``), not the pod's."""
    tail = cut_tail(log_text)
    if choice.message.strip() and (not tail.strip() or choice.reason in NEVER_STARTED):
        tail = cut_tail(choice.message)
    return {
        "podName": choice.pod_name,
        "nodeName": choice.node_name,
        "exitCode": choice.exit_code,
        "reason": choice.reason,
        "tail": tail,
    }


def missing_failure_log(pods_seen: bool) -> dict[str, Any]:
    """``status.failureLog`` when no pod qualifies: ``NoTerminatedContainer`` or ``PodNotFound``."""
    if pods_seen:
        return {
            "podName": "",
            "nodeName": "",
            "exitCode": 0,
            "reason": "NoTerminatedContainer",
            "tail": "No workload container terminated with a non-zero exit code.",
        }
    return {
        "podName": "",
        "nodeName": "",
        "exitCode": 0,
        "reason": "PodNotFound",
        "tail": "No workload pod was found for this Job; it may have been deleted before its log was captured.",
    }
