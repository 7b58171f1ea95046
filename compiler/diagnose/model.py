"""The types every diagnose planner speaks: rounds of groups in, group results back, a diagnosis out."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Diagnosis",
    "GroupResult",
    "InfrastructureFault",
    "Options",
    "Planner",
    "Prior",
    "PriorGroup",
    "Round",
    "RoundGroup",
]


@dataclass(frozen=True)
class PriorGroup:
    """One group of the run that led to the diagnose, and whether it passed."""

    nodes: tuple[str, ...]
    passed: bool


@dataclass(frozen=True)
class Prior:
    """What the failed run before the diagnose already showed: its groups and their verdicts.

    A pure, serialisable input: the same prior always plans the same rounds. Nodes of failed groups
    are suspects; the adaptive planner gives them ``exposures`` single-node runs in all (a flaky
    node needs several chances to show) and screens the failed groups' paths first.
    """

    groups: tuple[PriorGroup, ...] = ()
    exposures: int = 6

    def suspects(self, nodes: Sequence[str]) -> tuple[str, ...]:
        """Nodes of ``nodes`` that were in a failed group, in order."""
        failed = {n for g in self.groups if not g.passed for n in g.nodes}
        return tuple(n for n in nodes if n in failed)


@dataclass(frozen=True)
class Options:
    """Knobs a Workflow's ``diagnose`` block and options set."""

    #: smallest group bisection splits down to (NVCRE: default 2, minimum 1)
    min_group_size: int = 2
    #: whether the base workload runs with multi-node NVLink (NVCRE adds a no-NVL re-screen)
    mnnvl: bool = False
    #: how many failures of a node, each in a group whose other members are cleared, blame it
    confirmations: int = 2
    #: how many times a node that failed once but not again is re-tested before it is cleared
    retests: int = 6
    #: whole-cluster screening cycles to run before a clean bill is given (flaky faults need > 1)
    screen_cycles: int = 1
    #: the run was started because something failed: keep screening (up to ``screen_cycles``)
    #: until a fault is reproduced instead of stopping at the first clean cycle
    expect_fault: bool = False
    #: the largest group the workload runs (the path screen and link search never exceed it)
    max_group_size: int = 4096
    #: the failed run of the same Workflow that led to this diagnose, when there was one
    prior: Prior | None = None


@dataclass(frozen=True)
class RoundGroup:
    """One group of a round: a Job on these nodes."""

    name: str
    nodes: tuple[str, ...]
    #: run with NCCL_MNNVL_ENABLE=0
    no_nvl: bool = False
    #: run single-node with SHM and P2P off so traffic crosses the node's own NICs
    loopback: bool = False


@dataclass(frozen=True)
class Round:
    """The groups that run at once; ``stage`` and ``message`` go into the Workflow's status."""

    stage: str
    groups: tuple[RoundGroup, ...]
    message: str = ""


@dataclass(frozen=True)
class GroupResult:
    """How one group's Job ended.

    ``passed`` is the verdict (pass/fail and any bandwidth threshold); ``bus_bw`` is the measured
    bus bandwidth when there is one (evidence for planners that weigh it); ``evaluable`` is False when
    the result could not be read (the Job was deleted, the measurement never completed).
    """

    name: str
    nodes: tuple[str, ...]
    passed: bool
    bus_bw: float | None = None
    evaluable: bool = True


@dataclass(frozen=True)
class InfrastructureFault:
    """A fault on the path between nodes, not in one node: the two sides that fail only together."""

    side_a: tuple[str, ...]
    side_b: tuple[str, ...]
    stage: str
    message: str = ""


@dataclass(frozen=True)
class Diagnosis:
    """The end of a diagnose run."""

    failed: bool
    message: str
    #: node -> why it is blamed
    faulty_nodes: Mapping[str, str] = field(default_factory=dict)
    infrastructure_faults: tuple[InfrastructureFault, ...] = ()
    healthy_nodes: tuple[str, ...] = ()
    #: nodes that failed once and were never confirmed nor cleared (reported, never blamed)
    unresolved: tuple[str, ...] = ()
    #: every group missed the category's threshold while each node measured like its peers
    threshold_unmet: bool = False


@dataclass(frozen=True)
class Planner:
    """``start`` then ``advance`` until a :class:`Diagnosis` comes back; the state is opaque and immutable."""

    name: str
    start: Callable[[Sequence[str], Mapping[str, str] | None, Options], tuple[Any, Round]]
    advance: Callable[[Any, Sequence[GroupResult]], tuple[Any, Round | Diagnosis]]
