"""Recognises a deterministic workload failure: the same container failing the same way twice on one node.

A workload pod that crashes is retried by its Job (``backoffLimit``, with the kubelet's or the Job
controller's exponential back-off): with ``nccl-crash`` on one node a loopback category took
about 11 minutes to fail, holding the GPUs of its whole group the while. A second failure of
the same container on the same node with the same exit code and reason says the failure is not
transient; retrying it again only spends GPU time. ``repeated_failure`` finds it in the Job's
pods, counting both shapes a retry takes: a new pod after a failed one (``restartPolicy:
Never``, or a pod the Job controller replaced) and a restarted container in the same pod
(``restartPolicy: OnFailure``: ``lastState`` holds the previous termination).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .attribution import terminations

__all__ = ["REPEATS_TO_STOP", "RepeatedFailure", "repeated_failure"]

#: Identical failures on one node after which a workload is not retried again.
REPEATS_TO_STOP = 2


@dataclass(frozen=True, order=True)
class RepeatedFailure:
    """One container's failure, seen ``count`` times on ``node``."""

    node: str
    container: str
    exit_code: int
    reason: str
    count: int

    def message(self) -> str:
        return (
            f"container {self.container} failed {self.count} times on node {self.node} with exit code "
            f"{self.exit_code} ({self.reason}); the same failure twice on one node is not retried again"
        )


def repeated_failure(pods: Iterable[Mapping[str, Any]]) -> RepeatedFailure | None:
    """The first failure (by node, container, exit code) seen ``REPEATS_TO_STOP`` times, or None."""
    seen: Counter[tuple[str, str, int, str]] = Counter()
    for pod in pods:
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if not node:
            continue
        for term in terminations(pod):
            if not term.previous or term.restarts >= 1:  # a last state counts once the container restarted
                seen[(node, term.container, term.exit_code, term.reason)] += 1
    repeated = sorted(RepeatedFailure(*key, count) for key, count in seen.items() if count >= REPEATS_TO_STOP)
    return repeated[0] if repeated else None
