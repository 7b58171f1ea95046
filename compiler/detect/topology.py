"""Topology labels: which network or NVLink domain each node belongs to.

Each cloud has one node label that groups nodes by network block (``detection/platforms.yaml``
``topologyKeys``); GPU fabrics add NVLink-domain labels (``nvidia.com/gpu.clique`` from GFD,
``topology.nks.nscale.com/accelerator-domain`` on Nscale NKS, which runs no GFD).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping, Sequence

from ..facts import labels_of
from .tables import table

__all__ = ["platform_topology_key", "gpu_topology_keys", "topology_keys_for", "topology_domains", "domain_count"]


def platform_topology_key(platform: str) -> str:
    """The platform's network-block label key, or ``""`` when it has none."""
    return str(table("platforms")["topologyKeys"].get(platform, ""))


def gpu_topology_keys() -> tuple[str, ...]:
    return tuple(table("platforms")["gpuTopologyKeys"])


def topology_keys_for(platform: str, nodes: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The topology keys worth showing: the platform's key, then GPU-fabric keys, if any node has them."""
    keys = [k for k in (platform_topology_key(platform), *gpu_topology_keys()) if k]
    return tuple(k for k in dict.fromkeys(keys) if any(labels_of(n).get(k) for n in nodes))


def topology_domains(nodes: Sequence[Mapping[str, Any]], key: str) -> tuple[tuple[str, int], ...]:
    """``(domain value, node count)`` for every non-empty value of ``key``, sorted by value."""
    counts = Counter(v for v in (labels_of(n).get(key) for n in nodes) if v)
    return tuple(sorted(counts.items()))


def domain_count(nodes: Sequence[Mapping[str, Any]], key: str) -> int:
    """Number of distinct non-empty values of ``key`` over ``nodes``."""
    return len(topology_domains(nodes, key))
