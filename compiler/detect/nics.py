"""NIC resource auto-detection for on-prem GPU nodes.

On-prem sites expose RDMA NICs under site-specific resource names (``rdma/ib``,
``rdma/rdma_shared_device_a``, ``nvidia.com/mlnxnics``...). When a category leaves
``nicResourceName`` unset, and only for the platform/architecture pairs in
``detection/nics.yaml``, the name is detected: the one candidate resource allocatable at
``max(mlnxPerNode, 1)`` or more on every target node. No candidate, or several, means no NIC
is requested, with a diagnostic asking for ``nicResourceName``. An explicit
``nicResourceName`` (even empty) always wins.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Mapping, Sequence

from ..diagnostics import Diagnostic, info, warning
from ..facts import allocatable, name_of
from .model import DEFAULTED, DETECTED, SUPPLIED, Fact, name_list, plural
from .tables import gate_matches, table

__all__ = ["nic_detection_applies", "nic_candidates", "detect_nic_resource"]

CODE = "NICResourceDetection"


def nic_detection_applies(platform: str, gpu_arch: str) -> bool:
    """True for the platform/architecture pairs that get NIC detection."""
    return any(gate_matches(g, platform, gpu_arch) for g in table("nics")["gates"])


def _is_candidate(resource: str) -> bool:
    rules = table("nics")
    return resource in rules["candidateNames"] or any(resource.startswith(p) for p in rules["candidatePrefixes"])


def nic_candidates(nodes: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Fraction]]:
    """Candidate resource name -> {node name: allocatable} over ``nodes`` (absent means 0)."""
    out: dict[str, dict[str, Fraction]] = {}
    for node in sorted(nodes, key=name_of):
        for resource, qty in allocatable(node).items():
            if _is_candidate(resource):
                out.setdefault(resource, {})[name_of(node)] = qty
    return {k: out[k] for k in sorted(out)}


def detect_nic_resource(
    nodes: Sequence[Mapping[str, Any]],
    *,
    platform: str,
    gpu_arch: str,
    mlnx_per_node: int,
    nic_resource_name: str | None = None,
    path: str = "spec.nicResourceName",
) -> tuple[Fact, list[Diagnostic]]:
    """Resolve the NIC resource name for one category.

    Returns a :class:`Fact` whose value is the name (``""``: request no NIC resource).
    ``nodes`` are the category's target nodes; ``mlnx_per_node`` its resolved NIC count.
    """
    if nic_resource_name is not None:
        return Fact(nic_resource_name, SUPPLIED, "nicResourceName"), []
    if not nic_detection_applies(platform, gpu_arch):
        return Fact("", DEFAULTED, f"NIC detection does not apply to {platform}/{gpu_arch}"), []

    required = max(mlnx_per_node, 1)
    names = [name_of(n) for n in sorted(nodes, key=name_of)]
    candidates = nic_candidates(nodes)
    qualifying = [r for r, per_node in candidates.items() if names and all(per_node.get(n, Fraction(0)) >= required for n in names)]
    if len(qualifying) == 1:
        chosen = qualifying[0]
        return (
            Fact(chosen, DETECTED, f"allocatable at {required} or more on all {plural(len(names), 'target node')}"),
            [
                info(
                    CODE,
                    path,
                    f"using NIC resource {chosen}: the only rdma/* or nvidia.com/mlnxnics resource allocatable at {required} or more on every target node",
                )
            ],
        )

    if qualifying:
        message = (
            f"NIC resource not chosen: {len(qualifying)} resources are allocatable at {required} or more on every target node "
            f"({', '.join(qualifying)}), so no NIC is requested. Set nicResourceName to choose one"
        )
        diag = warning(CODE, path, message)
    elif not candidates:
        message = (
            "NIC resource not chosen: no target node has an rdma/* or nvidia.com/mlnxnics resource, so no NIC is requested. "
            "If the NICs are exposed under another name, set nicResourceName"
        )
        diag = info(CODE, path, message)
    else:
        shown = "; ".join(
            f"{r}: " + name_list([f"{n}={_fmt(per_node.get(n, Fraction(0)))}" for n in names], limit=3)
            for r, per_node in candidates.items()
        )
        message = (
            f"NIC resource not chosen: candidates exist ({shown}) but none is allocatable at {required} on every target node, "
            f"so no NIC is requested. Set nicResourceName, and mlnxPerNode to what each node offers (a pooled rdma/ib: 1 plugin needs mlnxPerNode: 1)"
        )
        diag = warning(CODE, path, message)
    return Fact("", DEFAULTED, "no single NIC resource qualifies"), [diag]


def _fmt(qty: Fraction) -> str:
    return str(qty.numerator) if qty.denominator == 1 else str(float(qty))
