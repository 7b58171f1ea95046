"""Cluster detection: pure functions from cluster facts to the decisions a render needs.

Everything here reads :class:`~nvcre.compiler.facts.ClusterFacts` (or nothing at all, for
an offline render from flags) and returns ``(result, diagnostics)``; nothing touches a
cluster, the clock or randomness, and no result depends on input order. The offline CLI and
the in-cluster controller call the same functions, so they make the same decisions.

:func:`detect_cluster` decides the facts shared by every category: target nodes, platform,
GPU architecture and, for GCP H100, GKE networks and the TCPXO profile. The per-category
checks take the category's resolved sizes: :func:`filter_by_capacity` (``gpusPerNode``) and
:func:`detect_nic_resource` (``mlnxPerNode``, ``nicResourceName``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from ..diagnostics import Diagnostic, error, info
from ..facts import ClusterFacts, name_of
from .capacity import GPUCount, filter_by_capacity, node_gpu_counts
from .gcp import (
    TCPXOProfile,
    default_gke_networks,
    default_tcpxo_profile,
    detect_gke_networks,
    detect_tcpxo_profile,
    gcp_detection_applies,
)
from .gpu_arch import (
    UNKNOWN_ARCH_MESSAGE,
    arch_from_node_selector,
    detect_gpu_arch,
    is_known_architecture,
    known_architectures,
    parse_gpu_arch_flag,
    parse_product,
)
from .model import DEFAULTED, DETECTED, SUPPLIED, ExcludedNode, Fact
from .nics import detect_nic_resource, nic_detection_applies
from .platform import detect_platform, node_platform, platform_names, validate_platform_flag
from .target import select_target_nodes

__all__ = [
    "ClusterDetection",
    "detect_cluster",
    "select_target_nodes",
    "filter_by_capacity",
    "node_gpu_counts",
    "GPUCount",
    "detect_nic_resource",
    "nic_detection_applies",
    "parse_gpu_arch_flag",
    "parse_product",
    "known_architectures",
    "is_known_architecture",
    "detect_gpu_arch",
    "arch_from_node_selector",
    "UNKNOWN_ARCH_MESSAGE",
    "detect_platform",
    "validate_platform_flag",
    "platform_names",
    "node_platform",
    "gcp_detection_applies",
    "detect_gke_networks",
    "detect_tcpxo_profile",
    "default_gke_networks",
    "default_tcpxo_profile",
    "TCPXOProfile",
    "Fact",
    "ExcludedNode",
    "DETECTED",
    "SUPPLIED",
    "DEFAULTED",
]


@dataclass(frozen=True)
class ClusterDetection:
    """The cluster-wide decisions for one target.

    ``decisions`` maps ``platform``, ``gpuArchitecture`` and, on GCP H100, ``gkeNetworks``
    and ``tcpxoPlugin`` to a :class:`Fact`; :attr:`provenance` is the same as plain data.
    ``nodes`` are the target Node objects, for the per-category checks.
    ``dra_product_nodes`` got their product from ResourceSlices, not a label: never build
    node affinity from a product for them.
    """

    platform: str
    gpu_arch: str
    gpu_arch_known: bool
    gpu_products: tuple[str, ...]
    target_nodes: tuple[str, ...]
    excluded_nodes: tuple[ExcludedNode, ...]
    dra_product_nodes: tuple[str, ...]
    gke_networks: tuple[str, ...] | None
    tcpxo: TCPXOProfile | None
    decisions: Mapping[str, Fact]
    nodes: tuple[dict[str, Any], ...] = field(default=(), repr=False, compare=False)

    @property
    def provenance(self) -> dict[str, dict[str, Any]]:
        """Fact name -> ``{"value", "source": detected|supplied|defaulted, "detail"}``, JSON-ready."""
        return {name: self.decisions[name].as_dict() for name in sorted(self.decisions)}

    @property
    def extras(self) -> dict[str, Any]:
        """Platform-specific decisions for templates, JSON-ready: ``gkeNetworks`` and ``tcpxo`` on GCP H100."""
        out: dict[str, Any] = {}
        if self.gke_networks is not None:
            out["gkeNetworks"] = list(self.gke_networks)
        if self.tcpxo is not None:
            out["tcpxo"] = self.tcpxo.as_dict()
        return out

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON/YAML output (no Node objects)."""
        return {
            "platform": self.platform,
            "gpuArchitecture": self.gpu_arch,
            "gpuArchitectureKnown": self.gpu_arch_known,
            "gpuProducts": list(self.gpu_products),
            "targetNodes": list(self.target_nodes),
            "excludedNodes": [{"name": e.name, "reason": e.reason} for e in self.excluded_nodes],
            "draProductNodes": list(self.dra_product_nodes),
            "gkeNetworks": list(self.gke_networks) if self.gke_networks is not None else None,
            "tcpxo": self.tcpxo.as_dict() if self.tcpxo is not None else None,
            "provenance": self.provenance,
        }


@dataclass(frozen=True)
class _Chosen:
    """What the node-level steps decided: platform, architecture and the remaining nodes."""

    platform: Fact
    arch: Fact
    nodes: tuple[dict[str, Any], ...] = ()
    excluded: tuple[ExcludedNode, ...] = ()
    products: tuple[str, ...] = ()
    dra_nodes: tuple[str, ...] = ()


def _choose_offline(
    target: Mapping[str, Any], platform_flag: str | None, arch_flag: str | None, target_path: str
) -> tuple[_Chosen | None, list[Diagnostic]]:
    """No cluster facts: the flags, else ``onprem`` and the nodeSelector's product."""
    platform_fact, diags = detect_platform((), supplied=platform_flag, target_path=target_path)
    selector_arch = arch_from_node_selector(target.get("nodeSelector"))
    if arch_flag:
        arch_fact = Fact(arch_flag, SUPPLIED, "--gpu-arch")
    elif selector_arch:
        arch_fact = Fact(selector_arch, SUPPLIED, "target nodeSelector nvidia.com/gpu.product")
    else:
        diags.append(error("GPUArchitectureUnknown", f"{target_path}.nodeSelector", UNKNOWN_ARCH_MESSAGE))
        return None, diags
    assert platform_fact is not None
    return _Chosen(platform_fact, arch_fact), diags


def _choose_from_facts(
    facts: ClusterFacts, target: Mapping[str, Any], platform_flag: str | None, arch_flag: str | None, target_path: str
) -> tuple[_Chosen | None, list[Diagnostic]]:
    """Select the target nodes, then detect the platform and the architecture from them."""
    nodes, excluded, diags = select_target_nodes(facts, target, target_path=target_path)
    if _has_error(diags):
        return None, diags
    if not nodes:
        return None, [*diags, _no_nodes(facts, target_path, len(excluded))]
    platform_fact, d = detect_platform(nodes, supplied=platform_flag, target_path=target_path)
    diags += d
    found, d = detect_gpu_arch(facts, nodes, supplied=arch_flag, node_selector=target.get("nodeSelector"), target_path=target_path)
    diags += d
    if platform_fact is None or found is None:
        return None, diags
    all_excluded = tuple(sorted([*excluded, *found.excluded]))
    if not found.nodes:
        return None, [*diags, _no_nodes(facts, target_path, len(all_excluded))]
    return _Chosen(platform_fact, found.fact, found.nodes, all_excluded, found.products, found.dra_product_nodes), diags


def _gcp_decisions(
    facts: ClusterFacts | None, nodes: tuple[dict[str, Any], ...], target_path: str
) -> tuple[dict[str, Fact], list[Diagnostic]]:
    """GKE network names and the TCPXO plugin profile: read from the cluster, or defaulted offline."""
    if facts is not None:
        networks, diags = detect_gke_networks(nodes, path=target_path)
        tcpxo, d = detect_tcpxo_profile(facts, nodes, path=target_path)
        return {"gkeNetworks": networks, "tcpxoPlugin": tcpxo}, diags + d
    decisions = {
        "gkeNetworks": Fact(default_gke_networks(), DEFAULTED, "no cluster facts"),
        "tcpxoPlugin": Fact(default_tcpxo_profile(), DEFAULTED, "no cluster facts"),
    }
    notes = [
        info(
            "GKENetworkDetection",
            target_path,
            "no cluster facts: rendering the default GKE network names gpu-nic0..gpu-nic7; pass cluster facts to read them from the nodes",
        ),
        info(
            "TCPXOPluginDetection",
            target_path,
            f"no cluster facts: rendering the TCPXO {default_tcpxo_profile().plugin_version} images; pass cluster facts "
            "(with kube-system pods) to match the installed plugin",
        ),
    ]
    return decisions, notes


def detect_cluster(
    facts: ClusterFacts | None,
    *,
    target: Mapping[str, Any] | None,
    platform: str | None,
    gpu_arch: str | None,
    target_path: str = "spec.target",
) -> tuple[ClusterDetection | None, list[Diagnostic]]:
    """Decide platform, GPU architecture and target nodes (and GCP H100 extras).

    ``facts=None`` is an offline render: the platform is ``platform`` or ``onprem``
    (defaulted), the architecture is ``gpu_arch`` or the target nodeSelector's product.
    ``platform``/``gpu_arch`` are the raw flag values (validated here) and win over
    detection. The diagnostics start with the facts' own loading notes. The result is
    ``None`` whenever the diagnostics hold an error.
    """
    target = dict(target or {})
    diags: list[Diagnostic] = list(facts.diagnostics) if facts is not None else []
    platform_flag, d = validate_platform_flag(platform)
    diags += d
    arch_flag, d = parse_gpu_arch_flag(gpu_arch)
    diags += d
    if _has_error(diags):
        return None, diags

    if facts is None:
        chosen, d = _choose_offline(target, platform_flag, arch_flag, target_path)
    else:
        chosen, d = _choose_from_facts(facts, target, platform_flag, arch_flag, target_path)
    diags += d
    if chosen is None:
        return None, diags

    decisions: dict[str, Fact] = {"platform": chosen.platform, "gpuArchitecture": chosen.arch}
    gke: tuple[str, ...] | None = None
    tcpxo: TCPXOProfile | None = None
    if gcp_detection_applies(chosen.platform.value, chosen.arch.value):
        gcp, d = _gcp_decisions(facts, chosen.nodes, target_path)
        diags += d
        decisions.update(gcp)
        gke = decisions["gkeNetworks"].value
        tcpxo = decisions["tcpxoPlugin"].value

    detection = ClusterDetection(
        platform=chosen.platform.value,
        gpu_arch=chosen.arch.value,
        gpu_arch_known=is_known_architecture(chosen.arch.value),
        gpu_products=chosen.products,
        target_nodes=tuple(name_of(n) for n in chosen.nodes),
        excluded_nodes=chosen.excluded,
        dra_product_nodes=chosen.dra_nodes,
        gke_networks=gke,
        tcpxo=tcpxo,
        decisions=MappingProxyType(decisions),
        nodes=chosen.nodes,
    )
    return detection, diags


def _has_error(diags: list[Diagnostic]) -> bool:
    return any(d.is_error for d in diags)


def _no_nodes(facts: ClusterFacts, target_path: str, excluded: int) -> Diagnostic:
    where = f" in {facts.source}" if facts.source else ""
    tail = f", {excluded} of them left out (see above)" if excluded else ""
    return error(
        "NoTargetNodes",
        target_path,
        f"no GPU nodes match the target{where}: the facts hold {len(facts.nodes)} node(s){tail}",
    )
