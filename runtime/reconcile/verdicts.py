"""The I/O half of judgement for the Job tier: the pure rules live in ``runtime.judge``.

Here the reconciler's observations are fed to those rules: node objects to the health
monitor, pods and one pod log to failure attribution, measurement objects to the threshold
evaluation. Nothing in this module decides a verdict on its own.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from nvcre.compiler.durations import format_duration

from ..clock import parse_time
from ..judge import attribution, health, thresholds
from ..kube.client import Kube
from ..kube.errors import ApiError
from . import conditions as cond
from ..kube.memo import HealthMemo

__all__ = [
    "drain_anchor",
    "failure_log",
    "judge_thresholds",
    "merge_failed_nodes",
    "seed_failed_nodes",
    "threshold_values",
    "unhealthy_nodes",
]

log = logging.getLogger("nvcre.runtime.reconcile.verdicts")


def unhealthy_nodes(
    expression: str, nodes: Mapping[str, Mapping[str, Any]], memo: HealthMemo[health.HealthCheck] | None = None
) -> list[dict[str, str]]:
    """Failed-node entries for the ``nodes`` the monitor marks unhealthy, each with the detector's
    own message (a matching Node condition's message) when it has one; evaluation errors are
    logged, never fatal. ``memo`` (the controller's, shared by every Job: a verdict depends on
    the node alone) answers for nodes that did not change since they were last evaluated."""
    monitor = health.compile_monitor(expression)
    flagged: list[dict[str, str]] = []
    for name in sorted(nodes):
        node = nodes[name]
        check = memo.check(expression, node, monitor.check) if memo is not None else monitor.check(node)
        if check.error:
            log.warning("node health check failed to evaluate", extra={"node": name, "error": check.error})
        elif check.unhealthy:
            flagged.append({**check.failed_node(), "name": name})
    return flagged


def merge_failed_nodes(existing: Iterable[Mapping[str, Any]], new: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return health.merge_failed_nodes(list(existing), list(new))


def seed_failed_nodes(nodes: Iterable[str], reason: str, message: str) -> list[dict[str, Any]]:
    """One entry per node with ``reason`` (used when a Job fails and nobody was blamed yet)."""
    return health.merge_failed_nodes((), ({"name": n, "reason": reason, "message": message} for n in nodes))


def failure_log(kube: Kube, pods: list[dict[str, Any]], *, reason_override: str | None = None) -> dict[str, Any]:
    """``status.failureLog``: the pod attribution chooses, with the tail of its log."""
    choice = attribution.choose_failure_pod(pods, prefer_launcher=reason_override is not None)
    if choice is None:
        return attribution.missing_failure_log(bool(pods))
    namespace = ""
    for pod in pods:
        if (pod.get("metadata") or {}).get("name") == choice.pod_name:
            namespace = str((pod.get("metadata") or {}).get("namespace") or "")
    try:
        text = kube.pod_log(
            choice.pod_name,
            namespace,
            container=choice.container or None,
            tail_lines=attribution.MAX_TAIL_LINES,
            limit_bytes=attribution.MAX_TAIL_BYTES * 4,
        )
    except ApiError as exc:
        text = f"log unavailable: {exc.message or exc}"
    entry = attribution.failure_log(choice, text)
    if reason_override:
        entry["reason"] = reason_override
    return entry


def threshold_values(bandwidth: Mapping[str, Any] | None, goodput: Mapping[str, Any] | None) -> dict[str, float]:
    return thresholds.measured_values(bandwidth, goodput)


def judge_thresholds(
    spec: Mapping[str, str], values: Mapping[str, float], *, expired: bool, timeout_seconds: float
) -> tuple[bool, str, str] | None:
    """``(failed, reason, message)`` for the ValidationFailed condition, or None while waiting."""
    outcome = thresholds.evaluate(spec, values, measurement_timed_out=expired, measurement_timeout=go_duration(timeout_seconds))
    if outcome.pending or not outcome.enforced:
        return None
    return outcome.failed, outcome.reason, outcome.message


def go_duration(seconds: float) -> str:
    """``5m0s`` style, as Go prints a time.Duration."""
    return format_duration(seconds)


def drain_anchor(job: Mapping[str, Any]) -> datetime | None:
    """When the pod-drain wait started: the later of the terminal condition time and deletion."""
    status = job.get("status") or {}
    moments = [parse_time((job.get("metadata") or {}).get("deletionTimestamp"))]
    for type_ in (cond.SUCCEEDED, cond.FAILED):
        found = cond.condition(status, type_)
        if found and found.get("status") == "True":
            moments.append(parse_time(found.get("lastTransitionTime")))
    known = [m for m in moments if m is not None]
    return max(known) if known else None
