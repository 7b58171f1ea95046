"""Which scheduler messages mean a workload can never be placed without a change to the cluster."""

from __future__ import annotations

import pytest

from nvcre.runtime.judge.scheduling import can_never_schedule

TAINTED = (
    "0/4 nodes are available: 4 node(s) had untolerated taint {nvidia.com/gpu: present}. preemption: 0/4 nodes "
    "are available: 4 Preemption is not helpful for scheduling."
)
MIXED = (
    "0/4 nodes are available: 2 Insufficient nvidia.com/gpu, 2 node(s) didn't match Pod's node affinity/selector. "
    "preemption: 0/4 nodes are available: 2 No preemption victims found for incoming pod, 2 Preemption is not "
    "helpful for scheduling."
)
BUSY = (
    "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are available: 2 No preemption "
    "victims found for incoming pod."
)


@pytest.mark.parametrize(
    ("messages", "never"),
    [
        ([TAINTED], True),
        ([TAINTED, TAINTED], True),
        ([MIXED], False),  # two nodes would have room once their pods end
        ([BUSY], False),
        ([TAINTED, BUSY], False),  # one pod waits for room: the whole group may still start
        (["0/4 nodes are available: 4 node(s) had untolerated taint {a: b}."], False),  # no preemption verdict
        (["preemption: 0/4 nodes are available: 3 Preemption is not helpful for scheduling."], False),  # not every node
        (["preemption: 0/0 nodes are available: "], False),
        ([], False),
    ],
)
def test_only_a_verdict_of_not_helpful_on_every_node_counts(messages: list[str], never: bool) -> None:
    assert can_never_schedule(messages) is never
