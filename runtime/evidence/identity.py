"""The cluster identity a bundle attests to: which machines ran the run, as their Node objects say.

For every node the run names (its groups, its failed and excluded nodes) the identity records
``name``, ``providerID``, ``systemUUID``, the GPU product and count, the driver and CUDA versions
read from the GPU feature discovery labels, and the node's topology domain (the first of the
platform's topology labels it carries). A node the API server no longer has is listed with
``found: false`` and empty fields. The document is deterministic (nodes sorted by name) and is
one of the Statement's subjects.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["IDENTITY_FILE", "cluster_identity", "node_names_of"]

IDENTITY_FILE = "cluster-identity.json"
_PRODUCT = "nvidia.com/gpu.product"
_COUNT = "nvidia.com/gpu.count"
# GPU feature discovery has written the versions under two spellings over the years; the newer first.
_DRIVER = (
    ("nvidia.com/cuda.driver-version.full",),
    ("nvidia.com/cuda.driver-version.major", "nvidia.com/cuda.driver-version.minor", "nvidia.com/cuda.driver-version.revision"),
    ("nvidia.com/cuda.driver.major", "nvidia.com/cuda.driver.minor", "nvidia.com/cuda.driver.rev"),
)
_CUDA = (
    ("nvidia.com/cuda.runtime-version.full",),
    ("nvidia.com/cuda.runtime-version.major", "nvidia.com/cuda.runtime-version.minor"),
    ("nvidia.com/cuda.runtime.major", "nvidia.com/cuda.runtime.minor"),
)


def _version(labels: Mapping[str, str], spellings: Sequence[tuple[str, ...]]) -> str:
    for keys in spellings:
        parts = [str(labels[k]) for k in keys if labels.get(k)]
        if parts and keys[0] in labels:
            return ".".join(parts)
    return ""


def _count(value: Any) -> int | None:
    text = str(value or "").strip()
    return int(text) if text.isdigit() else None


def node_names_of(verdict: Any) -> tuple[str, ...]:
    """Every node the verdict names: group members, failed and excluded nodes, per-node results."""
    names: set[str] = set(verdict.excluded_nodes)
    names.update(n.name for n in verdict.failed_nodes)
    names.update(r.name for r in verdict.node_results)
    for category in verdict.categories:
        for group in category.groups:
            names.update(group.nodes)
    return tuple(sorted(n for n in names if n))


def _entry(name: str, node: Mapping[str, Any] | None, topology_keys: Sequence[str]) -> dict[str, Any]:
    meta = (node or {}).get("metadata") or {}
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    spec = (node or {}).get("spec") or {}
    info = ((node or {}).get("status") or {}).get("nodeInfo") or {}
    key = next((k for k in topology_keys if labels.get(k)), "")
    return {
        "name": name,
        "found": node is not None,
        "providerID": str(spec.get("providerID") or ""),
        "systemUUID": str(info.get("systemUUID") or ""),
        "gpu": {"product": labels.get(_PRODUCT, ""), "count": _count(labels.get(_COUNT))},
        "driverVersion": _version(labels, _DRIVER),
        "cudaVersion": _version(labels, _CUDA),
        "topology": {"key": key, "domain": labels.get(key, "") if key else ""},
    }


def cluster_identity(names: Iterable[str], nodes: Iterable[Mapping[str, Any]], platform: str) -> dict[str, Any]:
    """The identity document of ``names``, from the Node objects the API server returned."""
    from nvcre.compiler.detect.topology import topology_keys_for

    by_name = {str((n.get("metadata") or {}).get("name") or ""): n for n in nodes}
    wanted = sorted(set(names))
    present = [by_name[n] for n in wanted if n in by_name]
    keys = topology_keys_for(platform, present) if present else ()
    return {"nodes": [_entry(name, by_name.get(name), keys) for name in wanted]}
