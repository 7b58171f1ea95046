"""GPU capacity: how many GPUs each node can give a workload, and the per-category filter.

A node's GPU count is its allocatable ``nvidia.com/gpu`` (device plugin) or, when it
advertises none, the number of whole GPUs its ``gpu.nvidia.com`` ResourceSlices publish, or,
when it has none of those yet, what its labels say (``nvidia.com/gpu.count``, Karpenter's GPU
count, a known instance type; see :mod:`.hints`). A node object with no ``status.allocatable``
at all (a pasted piece of ``describe`` or ``-o yaml`` that kept only the Capacity block; the API
server always sends both) counts its capacity ``nvidia.com/gpu``: with an allocatable block
present, capacity is never read, since kubelet lowers allocatable below capacity for unhealthy
devices.
A node whose count is known and below the workload's ``gpusPerNode`` is left out. A node
with no count at all is kept, as the controller does: a device plugin that is restarting
advertises nothing for a moment.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Mapping, Sequence

from ..diagnostics import Diagnostic, error, info, warning
from ..facts import ClusterFacts, allocatable, annotations_of, labels_of, name_of, parse_quantity
from .dra import dra_gpus_by_node
from .hints import count_hint, hint_kind
from .model import ExcludedNode, name_list, plural

__all__ = ["GPUCount", "node_gpu_counts", "filter_by_capacity", "GPU_RESOURCE"]

GPU_RESOURCE = "nvidia.com/gpu"
ALLOCATABLE = "allocatable"
CAPACITY = "capacity"
RESOURCE_SLICES = "resourceslices"


@dataclass(frozen=True)
class GPUCount:
    """GPUs on one node; ``count`` is ``None`` when nothing says, ``source`` names the origin."""

    node: str
    count: int | None
    source: str  # "allocatable", "capacity", "resourceslices", the key of the label that gave it, or ""


def _capacity_without_allocatable(node: Mapping[str, Any]) -> int | None:
    """The capacity ``nvidia.com/gpu`` of a node object that has no ``status.allocatable`` at
    all, as a whole positive number; ``None`` otherwise (or when the value is no quantity)."""
    status = node.get("status")
    if not isinstance(status, Mapping) or "allocatable" in status:
        return None
    capacity = status.get("capacity")
    if not isinstance(capacity, Mapping) or GPU_RESOURCE not in capacity:
        return None
    try:
        return _whole_gpus(parse_quantity(capacity[GPU_RESOURCE]))
    except (TypeError, ValueError):
        return None


def _whole_gpus(qty: Fraction | None) -> int | None:
    """A GPU quantity as a count: a whole number above zero, else None."""
    return int(qty) if qty is not None and qty > 0 and qty.denominator == 1 else None


def node_gpu_counts(facts: ClusterFacts, nodes: Sequence[Mapping[str, Any]]) -> dict[str, GPUCount]:
    """GPU count per node name, in name order."""
    dra = None
    out: dict[str, GPUCount] = {}
    for node in sorted(nodes, key=name_of):
        name = name_of(node)
        from_allocatable = _whole_gpus(allocatable(node).get(GPU_RESOURCE))
        if from_allocatable is not None:
            out[name] = GPUCount(name, from_allocatable, ALLOCATABLE)
            continue
        from_capacity = _capacity_without_allocatable(node)
        if from_capacity is not None:
            out[name] = GPUCount(name, from_capacity, CAPACITY)
            continue
        if dra is None:
            dra = dra_gpus_by_node(facts)
        found = dra.get(name)
        hint = count_hint(labels_of(node), annotations_of(node))
        if found is not None and found.gpu_count > 0:
            out[name] = GPUCount(name, found.gpu_count, RESOURCE_SLICES)
        elif hint is not None:
            out[name] = GPUCount(name, hint.count, hint.label)
        else:
            out[name] = GPUCount(name, None, "")
    return out


def _count_words(source: str) -> str:
    """What a count's source reads as after the number (``has 4 ...``)."""
    if source == ALLOCATABLE:
        return "allocatable nvidia.com/gpu"
    if source == CAPACITY:
        return "capacity nvidia.com/gpu (the node object has no allocatable block)"
    if source == RESOURCE_SLICES:
        return "GPUs in gpu.nvidia.com ResourceSlices"
    return f"GPUs by its {source} {hint_kind(source)}"


# Long: keeps or excludes each node and words the diagnostic for every way a node falls short.
def filter_by_capacity(
    facts: ClusterFacts,
    nodes: Sequence[Mapping[str, Any]],
    *,
    gpus_per_node: int,
    category: str,
    path: str = "spec.gpusPerNode",
) -> tuple[tuple[dict[str, Any], ...], list[ExcludedNode], list[Diagnostic]]:
    """Keep the nodes that can supply ``gpus_per_node`` GPUs; ``category`` is ``domain/variant``.

    Returns ``(kept, excluded, diagnostics)``; when no node remains the diagnostics hold
    error ``InsufficientGPUCapacity`` and ``kept`` is empty.
    """
    ordered = sorted(nodes, key=name_of)
    counts = node_gpu_counts(facts, ordered)
    kept: list[dict[str, Any]] = []
    excluded: list[ExcludedNode] = []
    short: list[str] = []
    unknown: list[str] = []
    for node in ordered:
        c = counts[name_of(node)]
        if c.count is None:
            unknown.append(c.node)
            kept.append(dict(node))
        elif c.count < gpus_per_node:
            where = _count_words(c.source)
            excluded.append(ExcludedNode(c.node, f"has {c.count} {where}, the workload requests {gpus_per_node} per node"))
            short.append(f"{c.node} has {c.count}")
        else:
            kept.append(dict(node))

    diags: list[Diagnostic] = []
    if unknown:
        diags.append(
            info(
                "GPUCountUnknown",
                path,
                f"{plural(len(unknown), 'node')} advertise no {GPU_RESOURCE} and no gpu.nvidia.com devices; kept, as a device "
                f"plugin may be restarting: {name_list(unknown)}",
            )
        )
    if short and kept:
        diags.append(
            warning(
                "NodeExcluded",
                path,
                f"{category}: {plural(len(short), 'node')} matched the target but {'has' if len(short) == 1 else 'have'} insufficient GPU capacity, "
                f"the workload requests {gpus_per_node} {GPU_RESOURCE} per node: {name_list(short)}",
            )
        )
    if not kept and ordered:
        best = max(c.count or 0 for c in counts.values())
        diags.append(
            error(
                "InsufficientGPUCapacity",
                path,
                f"{category}: no node can supply the {gpus_per_node} {GPU_RESOURCE} the workload requests per node; "
                f"best available is {best} across {len(ordered)} matching node(s). Lower gpusPerNode or target nodes with more GPUs",
            )
        )
    return tuple(kept), sorted(excluded), diags
