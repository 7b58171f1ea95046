"""Tells a workload that waits for room from one that can never be placed, from the scheduler's words.

kube-scheduler ends an unschedulable pod's message with what preemption could do, node by node:
``preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.`` It says so
when the node refused the pod for a reason that no eviction clears: an untolerated taint, a
selector or affinity that does not match, a cordon, a request larger than the node's whole
allocatable. When every node is of that kind, the pods wait for a change to the cluster, not for
other work to end, and a Job whose budget is paused while it waits (``timeoutPerJob``) would wait
with no end. ``can_never_schedule`` recognises that message; ``NEVER_SCHEDULABLE_REASON`` is the
failure a Job ends with after the controller's ``--never-schedulable-timeout``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["NEVER_SCHEDULABLE_REASON", "can_never_schedule"]

NEVER_SCHEDULABLE_REASON = "WorkloadUnschedulable"
#: The scheduler's verdict for a node where evicting pods would not make room.
_NOT_HELPFUL = "Preemption is not helpful for scheduling"
_PREEMPTION = re.compile(r"preemption: 0/(\d+) nodes are available: (.*)$", re.S)
_ITEM = re.compile(r"^(\d+) (.+)$")


def can_never_schedule(messages: Iterable[str]) -> bool:
    """True when every message (one per blocked pod) says preemption helps on none of the nodes."""
    seen = False
    for message in messages:
        if not _unhelpful_everywhere(message):
            return False
        seen = True
    return seen


def _unhelpful_everywhere(message: str) -> bool:
    found = _PREEMPTION.search(message.strip())
    if found is None:
        return False
    total, counted = int(found.group(1)), 0
    for part in found.group(2).rstrip(".").split(", "):
        item = _ITEM.match(part.strip().rstrip("."))
        if item is None or item.group(2) != _NOT_HELPFUL:
            return False
        counted += int(item.group(1))
    return total > 0 and counted == total
