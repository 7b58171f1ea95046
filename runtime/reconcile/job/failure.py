"""How the Job tier ends a Job Failed: the nodes to blame and the failure log, then the status.

:class:`JobFailure` seeds ``status.failedNodes`` (the group's nodes, or the ones named) and
captures ``status.failureLog`` (the pod attribution chooses, with the tail of its log) when the
Job has none yet, and sets the Failed lifecycle condition. It also gives the two verdicts the
Workflow tier may give on a Job (reached through the seam it is handed): the Workflow's timeout
and a ComputeDomain that never became ready.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...judge import attribution
from ...judge import conditions as cond
from ...judge.attribution import group_nodes
from ...kube.client import Kube
from ...kube.errors import ApiError
from ...kube.resources import JOBS
from ..context import Context
from .entries import seed_failed_nodes
from .parts import JobReader

__all__ = ["TIMEOUT_TAIL_REASON", "JobFailure", "failure_log"]

#: the ``failureLog`` reason of a Job the Workflow timed out
TIMEOUT_TAIL_REASON = "Timeout"


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
        # a container that never started has no log to read: its termination message says why
        text = "" if choice.message.strip() else f"log unavailable: {exc.message or exc}"
    entry = attribution.failure_log(choice, text)
    if reason_override:
        entry["reason"] = reason_override
    return entry


class JobFailure:
    """Fails Jobs; handed the context and the shared reads."""

    def __init__(self, ctx: Context, reads: JobReader) -> None:
        self.ctx = ctx
        self.reads = reads

    def fail(
        self,
        job: dict[str, Any],
        reason: str,
        message: str,
        *,
        log_reason: str | None = None,
        timed_out: bool = False,
        blame: bool = True,
        blame_nodes: Sequence[str] | None = None,
    ) -> dict[str, Any] | None:
        """Failed with ``reason``; seed failed nodes and capture a failure log when none yet.
        Returns the Job as written, None when nothing was written (it was terminal already).

        A timed-out Job whose pods never reached a node blames nobody: nothing ran there, and a
        full cluster is not a fault of the nodes the group was meant for. ``blame_nodes`` names
        the nodes to blame instead of the whole group (with NVCRE's ``WorkloadFailed``; the
        message says why).
        """
        ctx = self.ctx
        pods = self.reads.pods(job)
        ran = any((p.get("spec") or {}).get("nodeName") for p in pods)
        nodes = group_nodes(job, pods) if blame and (ran or not timed_out) else []
        if blame_nodes is not None:
            nodes = list(blame_nodes)
        captured = None
        if not (job.get("status") or {}).get("failureLog"):
            captured = failure_log(ctx.kube, pods, reason_override=log_reason)

        def mutate(status: dict[str, Any]) -> dict[str, Any]:
            if not status.get("failedNodes") and nodes:
                status["failedNodes"] = seed_failed_nodes(nodes, "WorkloadFailed", message)
            if captured and not status.get("failureLog"):
                status["failureLog"] = captured
            return cond.set_lifecycle(status, cond.FAILED, reason, message, ctx.clock.stamp())

        return ctx.write_status(JOBS, job, mutate, stop_when_terminal=True)

    def time_out(self, job: dict[str, Any], message: str) -> dict[str, Any] | None:
        """The Workflow's timeout: Failed/JobTimedOut with a log tail (launcher preferred).
        Returns the Job as written, None when it was terminal already."""
        return self.fail(job, "JobTimedOut", message, log_reason=TIMEOUT_TAIL_REASON, timed_out=True)

    def fail_on_domain(self, job: dict[str, Any], message: str, nodes: Sequence[str]) -> dict[str, Any] | None:
        """Failed/ComputeDomainNotReady, blaming ``nodes`` only (see :mod:`nvcre.runtime.judge.domains`)."""
        return self.fail(job, "ComputeDomainNotReady", message, blame_nodes=nodes)
