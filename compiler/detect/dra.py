"""GPUs published through Dynamic Resource Allocation (``gpu.nvidia.com`` ResourceSlices).

On a DRA-only GPU stack no GPU Feature Discovery runs, so nodes carry no
``nvidia.com/gpu.product`` label and often no ``nvidia.com/gpu`` allocatable. The driver's
ResourceSlices still describe every device. This module reads them per node: the GPU count
(whole GPUs only) and the product name, normalised to the exact label value GFD would have
written, so DRA and GFD nodes compare equal. Rules live in ``detection/dra.yaml``.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import Any, Mapping, NamedTuple

from ..facts import ClusterFacts, device_attributes
from .tables import table

__all__ = ["DRAGPUs", "product_label_value", "dra_gpus_by_node"]


class DRAGPUs(NamedTuple):
    """What the newest ResourceSlices say about one node's GPUs."""

    node: str
    gpu_count: int
    products: tuple[str, ...]  # GFD-form product per readable device, most common first
    architectures: tuple[str, ...]  # the driver's architecture attribute values, sorted

    @property
    def product(self) -> str:
        return self.products[0] if self.products else ""


def product_label_value(name: str) -> str:
    """Turn an NVML product name into the label value GFD writes (``NVIDIA GB300`` -> ``NVIDIA-GB300``)."""
    rules = table("dra")
    kept = re.sub(f"[^{rules['keepCharacters']}]", "", name)
    return str(rules["fieldSeparator"]).join(kept.split())


def _attribute(attrs: Mapping[str, Any], names: tuple[str, ...], driver: str) -> Any:
    for name in names:
        for key in (name, f"{driver}/{name}"):
            if key in attrs:
                return attrs[key]
    return None


def dra_gpus_by_node(facts: ClusterFacts) -> dict[str, DRAGPUs]:
    """Per node name, the GPUs its ResourceSlices publish (only nodes with any device)."""
    rules = table("dra")
    driver = str(rules["driver"])
    type_attr = (str(rules["typeAttribute"]),)
    gpu_types = set(rules["gpuTypes"])
    skip_types = set(rules["skipTypes"])
    product_attrs = tuple(rules["productAttributes"])
    arch_attrs = tuple(rules["architectureAttributes"])

    slices = [
        rs for rs in facts.resource_slices if (rs.get("spec") or {}).get("driver") == driver and (rs.get("spec") or {}).get("nodeName")
    ]
    newest: dict[tuple[str, str], int] = {}
    for rs in slices:
        spec = rs["spec"]
        key = (spec["nodeName"], str((spec.get("pool") or {}).get("name") or ""))
        newest[key] = max(newest.get(key, 0), int((spec.get("pool") or {}).get("generation") or 0))

    counts: Counter[str] = Counter()
    products: dict[str, Counter[str]] = defaultdict(Counter)
    archs: dict[str, set[str]] = defaultdict(set)
    seen: set[str] = set()
    for rs in slices:
        spec = rs["spec"]
        node = spec["nodeName"]
        pool = spec.get("pool") or {}
        if int(pool.get("generation") or 0) != newest[(node, str(pool.get("name") or ""))]:
            continue
        for device in spec.get("devices") or []:
            seen.add(node)
            attrs = device_attributes(device)
            dtype = _attribute(attrs, type_attr, driver)
            if dtype in gpu_types:
                counts[node] += 1
            if dtype in skip_types:
                continue
            name = _attribute(attrs, product_attrs, driver)
            if isinstance(name, str) and product_label_value(name):
                products[node][product_label_value(name)] += 1
            arch = _attribute(attrs, arch_attrs, driver)
            if isinstance(arch, str) and arch:
                archs[node].add(arch)

    return {
        node: DRAGPUs(
            node=node,
            gpu_count=counts[node],
            products=tuple(p for p, _ in sorted(products[node].items(), key=lambda kv: (-kv[1], kv[0]))),
            architectures=tuple(sorted(archs[node])),
        )
        for node in sorted(seen)
    }
