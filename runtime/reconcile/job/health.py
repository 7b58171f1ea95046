"""The node health monitor of a running Job: its CEL expression and the readiness rule, over its pods' nodes.

The readiness rule (nvcre's, ``judge.health.not_ready_entries``) flags a node whose ``Ready``
condition is not ``True``, with or without an expression.

:func:`unhealthy_nodes` feeds the Node objects to the monitor (``judge.health``), a memo shared
by every Job answering for nodes that did not change. :class:`HealthWatch` marks the Job
``HardwareFailed`` with the nodes found unhealthy (added to ``status.failedNodes``), counts the
pass and the newly unhealthy nodes for the Job's metrics, and sends the Warning Event when the
condition first turns True.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from ...judge import conditions as cond
from ...judge import health
from ...judge.health import HARDWARE_FAILURE_REASON, hardware_failed_message
from ...judge.pods import bound_nodes
from ...kube.memo import HealthMemo
from ...kube.resources import JOBS, NODES
from ..common import name_of, namespace_of
from ..context import Context
from .names import workflow_label

__all__ = ["HealthWatch", "unhealthy_nodes"]

log = logging.getLogger("nvcre.runtime.reconcile.job")


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


class HealthWatch:
    """Evaluates a running Job's node health monitor; handed the context."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def check(self, job: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        """One pass of the monitor over the nodes the Job's pods are bound to."""
        monitor = ((job.get("spec") or {}).get("nodeHealthMonitor") or {}).get("cel") or {}
        expression = str(monitor.get("expression") or "")
        ctx = self.ctx
        began = time.perf_counter()
        nodes = bound_nodes(pods, labelled_for=name_of(job))
        if not nodes:
            return  # no pod on a node yet: nothing to evaluate
        node_objs = {n: o for n in nodes if (o := ctx.cached(NODES, n, None)) is not None}
        unhealthy = unhealthy_nodes(expression, node_objs, ctx.health) if expression else []
        # a node that dropped out counts whatever the expression (or its absence) says
        flagged = {entry["name"] for entry in unhealthy}
        unhealthy += [entry for entry in health.not_ready_entries(node_objs) if entry["name"] not in flagged]
        namespace, name, workflow = namespace_of(job), name_of(job), workflow_label(job)
        if expression:
            ctx.job_events.health_checked(namespace, name, workflow, time.perf_counter() - began, len(node_objs))
        if not unhealthy:
            return
        seen: dict[str, Any] = {}

        def mutate(status: dict[str, Any]) -> dict[str, Any]:
            before = {e.get("name") for e in status.get("failedNodes") or [] if e.get("reason") == HARDWARE_FAILURE_REASON}
            seen["flip"] = not cond.is_true(status, cond.HARDWARE_FAILED)
            seen["new"] = sorted({e["name"] for e in unhealthy} - before)
            status["failedNodes"] = health.merge_failed_nodes(status.get("failedNodes") or [], unhealthy)
            flagged = [e["name"] for e in status["failedNodes"] if e.get("reason") == HARDWARE_FAILURE_REASON]
            message = hardware_failed_message(flagged)
            return cond.set_condition(status, cond.HARDWARE_FAILED, "True", HARDWARE_FAILURE_REASON, message, ctx.clock.stamp())

        written = ctx.write_status(JOBS, job, mutate, stop_when_terminal=True)
        if written is None:
            return
        ctx.job_events.hardware_failures(namespace, name, workflow, seen.get("new") or [], first=bool(seen.get("flip")))
        if seen.get("flip"):
            ctx.event(written, "Warning", HARDWARE_FAILURE_REASON, hardware_failed_message([e["name"] for e in unhealthy]))
