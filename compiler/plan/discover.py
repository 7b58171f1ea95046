"""Node discovery for a Workflow from live cluster facts, as named pure steps.

The steps run in the controller's order and each one returns a new :class:`Discovery`
(immutable), so no step can change what an earlier one decided:

1. ``select_nodes``: the target's nodeSelector, matchExpressions, nodeNames and taintSelectors;
   cordoned nodes are skipped unless a taint selector names ``node.kubernetes.io/unschedulable``;
   only ``nvidia.com/gpu.present=true`` nodes remain (the compiler's target selection);
2. ``check_platform``: every node must detect the same platform;
3. ``filter_gpu_architecture``: majority vote over the GPU products (labels, else ResourceSlices);
   nodes of any other architecture are dropped;
4. ``filter_gpu_capacity``: nodes whose exact allocatable ``nvidia.com/gpu`` is below the
   workload's per-node request are dropped, and so are nodes whose ``nvidia.com/gpu`` are MIG
   devices (GPU Feature Discovery's ``single`` strategy: no whole GPU to give, whatever the
   request), and nodes that advertise ``nvidia.com/gpu: 0`` beside shared replicas
   (``nvidia.com/gpu.shared``); a node that advertises none is kept. It runs after
   the Workflow's overrides are applied (they can change the request), so the planner calls it
   on its own; :func:`discover` runs steps 1 to 3.

Failures raise :class:`PlanError` with NVCRE's reasons and messages.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from ..detect.capacity import ALLOCATABLE, MIG, SHARED, node_gpu_counts
from ..detect.gpu_arch import detect_gpu_arch
from ..detect.platform import node_platform
from ..detect.target import GPU_PRODUCT_LABEL, REASON_CORDONED, select_target_nodes
from ..facts import ClusterFacts, name_of
from ..workflow_spec import GPU_RESOURCE, WorkflowSpecView
from .model import (
    HETEROGENEOUS_PLATFORM,
    NODE_DISCOVERY_ERROR,
    PARTITION_ERROR,
    PlanError,
    PlanEvent,
)

__all__ = ["DISCOVERY_STEPS", "UNKNOWN_ARCH", "Discovery", "discover", "exclusion_summary", "filter_gpu_capacity", "node_labels"]

UNKNOWN_ARCH = "unknown"
TARGET_PATH = "spec.orchestration.target"


@dataclass(frozen=True)
class Discovery:
    """What discovery has decided so far."""

    facts: ClusterFacts
    spec: WorkflowSpecView
    nodes: tuple[dict[str, Any], ...] = ()
    cordoned: tuple[str, ...] = ()
    platform: str = ""
    gpu_architecture: str = ""
    arch_excluded: tuple[str, ...] = ()
    #: (node, allocatable GPUs) of the nodes dropped for capacity
    capacity_excluded: tuple[tuple[str, int], ...] = ()
    #: the nodes dropped because their nvidia.com/gpu are MIG devices, not whole GPUs
    mig_excluded: tuple[str, ...] = ()
    events: tuple[PlanEvent, ...] = ()

    @cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(name_of(n) for n in self.nodes)

    @property
    def gpu_products(self) -> tuple[str, ...]:
        """Distinct product labels of the remaining nodes (DRA-derived products are not labels)."""
        return tuple(sorted({node_labels(n).get(GPU_PRODUCT_LABEL, "") for n in self.nodes} - {""}))

    def exclusions(self) -> tuple[tuple[str, ...], str]:
        return exclusion_summary(
            self.cordoned, self.arch_excluded, self.gpu_architecture, self.capacity_excluded, self.spec.gpus_per_node, self.mig_excluded
        )

    def fail(self, reason: str, message: str) -> PlanError:
        excluded, why = self.exclusions()
        return PlanError(reason, message, excluded_nodes=excluded, exclusion_reason=why, events=self.events)


def node_labels(node: Mapping[str, Any]) -> Mapping[str, str]:
    """A node's labels, read in place rather than copied (planning only reads them)."""
    labels = (node.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, Mapping) else {}


def _shortfall(excluded: tuple[tuple[str, int], ...]) -> str:
    return ", ".join(f"{name} has {count}" for name, count in excluded)


def exclusion_summary(
    cordoned: tuple[str, ...],
    arch_excluded: tuple[str, ...],
    arch: str,
    capacity_excluded: tuple[tuple[str, int], ...],
    gpus_per_node: int,
    mig_excluded: tuple[str, ...] = (),
) -> tuple[tuple[str, ...], str]:
    """``(excludedNodes, exclusionReason)``: every node left out and the causes, joined by ``. ``."""
    causes: list[str] = []
    if cordoned:
        causes.append(f"{len(cordoned)} node(s) matched the target but were unschedulable (cordoned): {', '.join(cordoned)}")
    if arch_excluded:
        causes.append(f"target set has more than one GPU architecture; certified {arch} only")
    if capacity_excluded:
        causes.append(
            f"{len(capacity_excluded)} node(s) matched the target but have insufficient GPU capacity, the workload "
            f"requests {gpus_per_node} {GPU_RESOURCE} per node: {_shortfall(capacity_excluded)}"
        )
    if mig_excluded:
        causes.append(_mig_cause(mig_excluded))
    names = sorted({*cordoned, *arch_excluded, *(n for n, _ in capacity_excluded), *mig_excluded})
    return tuple(names), ". ".join(causes)


def _mig_cause(nodes: tuple[str, ...]) -> str:
    return f"{len(nodes)} node(s) matched the target but their {GPU_RESOURCE} are MIG devices, not whole GPUs: {', '.join(nodes)}"


def select_nodes(state: Discovery) -> Discovery:
    nodes, excluded, diags = select_target_nodes(state.facts, state.spec.target, target_path=TARGET_PATH)
    problems = [d for d in diags if d.is_error]
    if problems:
        raise PlanError(NODE_DISCOVERY_ERROR, "Node discovery failed: " + "; ".join(d.render() for d in problems))
    cordoned = tuple(sorted(e.name for e in excluded if e.reason == REASON_CORDONED))
    if not nodes:
        raise PlanError(NODE_DISCOVERY_ERROR, "No target nodes found matching orchestration target")
    return replace(state, nodes=tuple(nodes), cordoned=cordoned)


def _go_map(counts: Mapping[str, int]) -> str:
    return "map[" + " ".join(f"{k}:{counts[k]}" for k in sorted(counts)) + "]"


def check_platform(state: Discovery) -> Discovery:
    counts = Counter(node_platform(n) for n in state.nodes)
    if len(counts) > 1:
        message = f"heterogeneous platforms detected: {_go_map(counts)}"
        raise PlanError(HETEROGENEOUS_PLATFORM, message, events=(PlanEvent("Warning", HETEROGENEOUS_PLATFORM, message),))
    events = state.events
    if state.cordoned:
        events += (
            PlanEvent(
                "Warning",
                "CordonedNodesExcluded",
                f"Excluded {len(state.cordoned)} cordoned node(s) from certification: {', '.join(state.cordoned)}",
            ),
        )
    return replace(state, platform=next(iter(counts)), events=events)


def filter_gpu_architecture(state: Discovery) -> Discovery:
    found, _ = detect_gpu_arch(state.facts, state.nodes, node_selector=state.spec.target.get("nodeSelector"), target_path=TARGET_PATH)
    if found is None:
        # No node names a product: nothing votes and nothing is filtered.
        return replace(state, gpu_architecture=UNKNOWN_ARCH)
    kept = {name_of(n) for n in found.nodes}
    dropped = tuple(name for name in state.names if name not in kept)
    events = state.events
    if dropped:
        events += (
            PlanEvent(
                "Warning",
                "HeterogeneousGPU",
                f"Filtered {len(kept)}/{len(state.nodes)} nodes to primary GPU architecture {found.fact.value}; "
                f"excluded: {', '.join(dropped)}",
            ),
        )
    nodes = tuple(n for n in state.nodes if name_of(n) in kept)
    return replace(state, nodes=nodes, gpu_architecture=str(found.fact.value), arch_excluded=dropped, events=events)


def filter_gpu_capacity(state: Discovery) -> Discovery:
    wanted = state.spec.gpus_per_node
    if wanted <= 0:
        return state
    counts = node_gpu_counts(state.facts, state.nodes)
    short = tuple(
        (name, int(c.count))
        for name, c in counts.items()
        if c.count is not None and ((c.source == ALLOCATABLE and 0 < c.count < wanted) or c.source == SHARED)
    )
    mig = tuple(name for name, c in counts.items() if c.source == MIG)
    if not short and not mig:
        return state
    dropped = {*(name for name, _ in short), *mig}
    kept = tuple(n for n in state.nodes if name_of(n) not in dropped)
    events: list[PlanEvent] = []
    if short:
        message = f"Excluded {len(short)} node(s) with fewer than {wanted} allocatable {GPU_RESOURCE}: {_shortfall(short)}"
        events.append(PlanEvent("Warning", "InsufficientGPUCapacity", message))
    if mig:
        events.append(PlanEvent("Warning", "MIGDevicesNotGPUs", f"Excluded {_mig_cause(mig)}; the workload needs whole GPUs"))
    state = replace(state, nodes=kept, capacity_excluded=short, mig_excluded=mig, events=state.events + tuple(events))
    if not kept:
        best = f"best available is {max(count for _, count in short)}" if short else "the target's nodes have MIG devices, not whole GPUs"
        raise state.fail(PARTITION_ERROR, f"No node can supply the {wanted} {GPU_RESOURCE} the workload requests per node; {best}")
    return state


#: The discovery steps before overrides, in order (``filter_gpu_capacity`` comes after them).
DISCOVERY_STEPS: tuple[tuple[str, Callable[[Discovery], Discovery]], ...] = (
    ("select_nodes", select_nodes),
    ("check_platform", check_platform),
    ("filter_gpu_architecture", filter_gpu_architecture),
)


def discover(facts: ClusterFacts, spec: WorkflowSpecView) -> Discovery:
    """Run the discovery steps before overrides; raise PlanError at the first that fails."""
    state = Discovery(facts=facts, spec=spec)
    for _, step in DISCOVERY_STEPS:
        state = step(state)
    return state
