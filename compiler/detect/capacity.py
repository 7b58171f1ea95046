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

A node whose product label names MIG devices (GPU Feature Discovery's ``single`` strategy,
``A100-SXM4-40GB-MIG-1g.5gb``; see :func:`.hints.mig_product`) has no count of whole GPUs, by
any path: its allocatable ``nvidia.com/gpu`` and its ``nvidia.com/gpu.count`` label both count
MIG devices. Its count is None with the source ``mig``, and the capacity filter leaves it out
with warning ``MIGDevicesNotGPUs``: a certification runs on whole GPUs. Under the ``mixed``
strategy the device plugin advertises each MIG profile as a resource of its own
(``nvidia.com/mig-1g.10gb``) beside ``nvidia.com/gpu``; a node that advertises ``nvidia.com/gpu:
0`` and some of those (or the same profiles under another domain, as InstaSlice's
``instaslice.redhat.com/mig-1g.5gb``) has every GPU split: its count is 0 whole GPUs, source ``mig`` too (an
advertised 0 alone stays no count: a device plugin that is restarting advertises nothing).
A device plugin that shares GPUs under the renamed resource ``nvidia.com/gpu.shared``
(time-slicing or MPS with ``renameByDefault``) advertises ``nvidia.com/gpu: 0`` beside it: that
node has 0 GPUs a workload can hold whole, source ``shared``, and the filter leaves it out as
short of GPUs, saying why.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Mapping, Sequence

from ..diagnostics import Diagnostic, error, info, warning
from ..facts import ClusterFacts, advertised, allocatable, annotations_of, labels_of, name_of, parse_quantity
from .dra import dra_gpus_by_node
from .hints import count_hint, hint_kind, mig_product
from .model import ExcludedNode, name_list, plural

__all__ = ["GPUCount", "node_gpu_counts", "filter_by_capacity", "GPU_RESOURCE"]

GPU_RESOURCE = "nvidia.com/gpu"
ALLOCATABLE = "allocatable"
CAPACITY = "capacity"
RESOURCE_SLICES = "resourceslices"
#: the source of a node whose GPUs are MIG devices (its count of whole GPUs is None)
MIG = "mig"
#: the source of a node that advertises its GPUs only as shared replicas (its count of whole GPUs is 0)
SHARED = "shared"
#: the resource NVIDIA's device plugin advertises shared GPUs as when it renames them
SHARED_RESOURCE = "nvidia.com/gpu.shared"


@dataclass(frozen=True)
class GPUCount:
    """GPUs on one node; ``count`` is ``None`` when nothing says, ``source`` names the origin."""

    node: str
    count: int | None
    source: str  # "allocatable", "capacity", "resourceslices", the key of the label that gave it, "mig", "shared", or ""


def _capacity_without_allocatable(node: Mapping[str, Any]) -> int | None:
    """The capacity ``nvidia.com/gpu`` of a node object that has no ``status.allocatable`` at
    all, as a whole positive number; ``None`` otherwise (or when the value is no quantity)."""
    status = node.get("status")
    if not isinstance(status, Mapping) or "allocatable" in status:
        return None
    return _whole_gpus(_quantity(advertised(node), GPU_RESOURCE))


#: how the name of a MIG device resource begins after its domain: NVIDIA's device plugin under the
#: ``mixed`` strategy (``nvidia.com/mig-1g.10gb``), and dynamic MIG slicers that publish the same
#: profiles under their own domain (InstaSlice's ``instaslice.redhat.com/mig-1g.5gb``)
MIG_RESOURCE_NAME_PREFIX = "mig-"


def is_mig_resource(key: str) -> bool:
    """Whether resource ``key`` counts MIG devices: ``<domain>/mig-<N>g.<size>...``."""
    domain, slash, name = key.partition("/")
    rest = name[len(MIG_RESOURCE_NAME_PREFIX) :]
    return bool(domain and slash and name.startswith(MIG_RESOURCE_NAME_PREFIX) and rest[:1].isdigit() and "g." in rest)


def _quantity(resources: Mapping[str, Any], name: str) -> Fraction | None:
    """The parsed quantity of resource ``name``; None when it is absent or no quantity."""
    try:
        return parse_quantity(resources[name]) if name in resources else None
    except (TypeError, ValueError):
        return None


def _split_gpus(node: Mapping[str, Any]) -> tuple[str, ...]:
    """The MIG device resources (``nvidia.com/mig-<profile>``, or another domain's
    ``mig-<profile>``; see :func:`is_mig_resource`) and the shared resource
    (``nvidia.com/gpu.shared``) the node advertises a positive number of, when it advertises
    ``nvidia.com/gpu: 0`` beside them: every GPU split or shared, none offered whole; ()
    otherwise. Sorted by name."""
    resources = advertised(node)
    if _quantity(resources, GPU_RESOURCE) != 0:
        return ()
    split = [key for key in resources if isinstance(key, str) and (is_mig_resource(key) or key == SHARED_RESOURCE)]
    return tuple(sorted(key for key in split if (_quantity(resources, key) or 0) > 0))


def mig_devices(node: Mapping[str, Any]) -> tuple[str, ...]:
    """The MIG device resources (``nvidia.com/mig-<profile>``, or another domain's; see
    :func:`is_mig_resource`) the node advertises a positive number of, when it advertises
    ``nvidia.com/gpu: 0`` beside them (every GPU split: the ``mixed`` strategy, or a dynamic MIG
    slicer); () otherwise."""
    return tuple(key for key in _split_gpus(node) if is_mig_resource(key))


def _whole_gpus(qty: Fraction | None) -> int | None:
    """A GPU quantity as a count: a whole number above zero, else None."""
    return int(qty) if qty is not None and qty > 0 and qty.denominator == 1 else None


def node_gpu_counts(facts: ClusterFacts, nodes: Sequence[Mapping[str, Any]]) -> dict[str, GPUCount]:
    """GPU count per node name, in name order."""
    dra = None
    out: dict[str, GPUCount] = {}
    for node in sorted(nodes, key=name_of):
        name = name_of(node)
        if mig_product(labels_of(node)) is not None:
            # MIG devices, not GPUs: allocatable nvidia.com/gpu and gpu.count count the devices
            out[name] = GPUCount(name, None, MIG)
            continue
        split = _split_gpus(node)
        if split:
            # nvidia.com/gpu 0 beside MIG devices (every GPU split: the mixed strategy) or beside
            # shared replicas under the renamed resource: no GPU to hold whole
            out[name] = GPUCount(name, 0, SHARED if split == (SHARED_RESOURCE,) else MIG)
            continue
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
    if source == SHARED:
        return f"whole {GPU_RESOURCE} (its GPUs are advertised only as shared replicas, {SHARED_RESOURCE})"
    return f"GPUs by its {source} {hint_kind(source)}"


def _mig_reason(node: Mapping[str, Any]) -> str:
    """Why a node of MIG devices is left out: its product label, or the MIG resources it advertises."""
    product = mig_product(labels_of(node))
    if product is not None:
        return f"its {GPU_RESOURCE} are MIG devices ({product}), not whole GPUs"
    return f"it advertises {GPU_RESOURCE}: 0 and MIG devices ({', '.join(mig_devices(node))}), not whole GPUs"


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
    mig: list[str] = []
    for node in ordered:
        c = counts[name_of(node)]
        if c.source == MIG:
            excluded.append(ExcludedNode(c.node, _mig_reason(node)))
            mig.append(c.node)
        elif c.count is None:
            unknown.append(c.node)
            kept.append(dict(node))
        elif c.count < gpus_per_node:
            where = _count_words(c.source)
            excluded.append(ExcludedNode(c.node, f"has {c.count} {where}, the workload requests {gpus_per_node} per node"))
            short.append(f"{c.node} has {c.count}")
        else:
            kept.append(dict(node))

    diags: list[Diagnostic] = []
    if mig:
        diags.append(
            warning(
                "MIGDevicesNotGPUs",
                path,
                f"{category}: {plural(len(mig), 'node')} left out: {'its' if len(mig) == 1 else 'their'} GPUs are split into MIG "
                f"devices, which are not whole GPUs, and the certification needs whole GPUs: {name_list(mig)}",
            )
        )
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
