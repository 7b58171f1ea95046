"""GPU architecture: from product strings to one architecture key for the target nodes.

A node's product is its ``nvidia.com/gpu.product`` label (written by GPU Feature Discovery)
or, when the label is absent, the product its ``gpu.nvidia.com`` ResourceSlices publish,
normalised to the same label form (see :mod:`.dra`). Products parse to architecture keys
(``NVIDIA-H100-80GB-HBM3`` -> ``h100``) with the rules in ``detection/gpu_architectures.yaml``.
A node with neither has its architecture (not a product) read from the labels its cloud or
provisioner writes (:mod:`.hints`: GKE's accelerator label, Karpenter's GPU name, a known
instance type), with a warning naming the label.

The target's architecture is a majority vote over nodes that have a product (ties go to
the architecture of the earliest node by name); nodes of any other architecture, or with
no product at all, are left out and reported. A user-supplied ``--gpu-arch`` replaces the
vote. Without any product, the target's ``nodeSelector`` product is the last resort.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping, NamedTuple, Sequence

from ..diagnostics import Diagnostic, error, info, warning
from ..facts import ClusterFacts, annotations_of, labels_of, name_of
from .dra import dra_gpus_by_node
from .hints import architecture_hint, hint_kind
from .model import DETECTED, SUPPLIED, ExcludedNode, Fact, name_list, plural
from .products import parse_product
from .tables import table
from .target import GPU_PRODUCT_LABEL

__all__ = [
    "parse_product",
    "known_architectures",
    "is_known_architecture",
    "parse_gpu_arch_flag",
    "arch_from_node_selector",
    "NodeProduct",
    "node_products",
    "ArchDetection",
    "detect_gpu_arch",
    "UNKNOWN_ARCH_MESSAGE",
]

UNKNOWN_ARCH_MESSAGE = "cannot determine GPU architecture from target nodeSelector or --gpu-arch (nvidia.com/gpu.product label is required)"
LABEL = "label"
RESOURCE_SLICES = "resourceslices"


def known_architectures() -> tuple[str, ...]:
    """The architectures the catalog knows, sorted."""
    return tuple(sorted(table("gpu_architectures")["architectures"]))


def is_known_architecture(arch: str) -> bool:
    return arch in table("gpu_architectures")["architectures"]


def parse_gpu_arch_flag(value: str | None, *, path: str = "--gpu-arch") -> tuple[str | None, list[Diagnostic]]:
    """Normalise ``--gpu-arch`` (``gb300``, ``NVIDIA-GB300``, ``NVIDIA GB300`` are equal).

    Empty or ``None`` means "not given". The result must be a known architecture.
    """
    if not value:
        return None, []
    arch = parse_product(value)
    if is_known_architecture(arch):
        return arch, []
    return None, [
        error("InvalidGPUArch", path, f"invalid --gpu-arch {json.dumps(value)}: must be one of {', '.join(known_architectures())}")
    ]


def arch_from_node_selector(selector: Mapping[str, Any] | None) -> str:
    """The architecture named by a target nodeSelector's product label, or ``""``."""
    value = (selector or {}).get(GPU_PRODUCT_LABEL)
    return parse_product(value) if isinstance(value, str) else ""


class NodeProduct(NamedTuple):
    """A node's GPU product and where it was read (``label``, ``resourceslices`` or ``""``).

    Without a product, ``source`` may be the key of another label that names the architecture
    (``cloud.google.com/gke-accelerator``, ``node.kubernetes.io/instance-type``...): then
    ``architecture`` holds it and ``hint_value`` the label's value.
    """

    node: str
    product: str
    source: str
    dra_products: tuple[str, ...] = ()  # every product the node's slices publish
    dra_architectures: tuple[str, ...] = ()  # the DRA driver's architecture attribute values
    architecture: str = ""
    hint_value: str = ""

    @property
    def arch(self) -> str:
        return self.architecture or parse_product(self.product)

    @property
    def from_hint(self) -> bool:
        """The architecture came from a label other than the product label."""
        return bool(self.architecture) and not self.product

    @property
    def shown(self) -> str:
        """The product, or the label that named the architecture, for messages."""
        return self.product or (f"{self.source}={self.hint_value}" if self.from_hint else "")


def node_products(facts: ClusterFacts, nodes: Sequence[Mapping[str, Any]]) -> dict[str, NodeProduct]:
    """Each node's product: its label, else what its ResourceSlices publish, else ``""``."""
    out: dict[str, NodeProduct] = {}
    dra = None
    for node in sorted(nodes, key=name_of):
        name = name_of(node)
        label = labels_of(node).get(GPU_PRODUCT_LABEL, "")
        if label:
            out[name] = NodeProduct(name, label, LABEL)
            continue
        if dra is None:
            dra = dra_gpus_by_node(facts)
        found = dra.get(name)
        if found is not None and found.product:
            out[name] = NodeProduct(name, found.product, RESOURCE_SLICES, found.products, found.architectures)
            continue
        hint = architecture_hint(labels_of(node), annotations_of(node))
        dra_archs = found.architectures if found else ()
        if hint is not None:
            out[name] = NodeProduct(name, "", hint.label, (), dra_archs, hint.architecture, hint.value)
        else:
            out[name] = NodeProduct(name, "", "", (), dra_archs)
    return out


class ArchDetection(NamedTuple):
    """The decided architecture, the nodes that remain, and what was left out."""

    fact: Fact
    nodes: tuple[dict[str, Any], ...]
    excluded: tuple[ExcludedNode, ...]
    products: tuple[str, ...]  # distinct products of the remaining nodes, sorted
    dra_product_nodes: tuple[str, ...]  # remaining nodes whose product came from ResourceSlices


def _product_source_notes(products: Mapping[str, NodeProduct], target_path: str) -> list[Diagnostic]:
    """Say which nodes' products came from ResourceSlices, and where a node publishes several."""
    diags: list[Diagnostic] = []
    from_dra = [p for p in products.values() if p.source == RESOURCE_SLICES]
    if from_dra:
        diags.append(
            info(
                "GPUProductFromResourceSlice",
                target_path,
                f"GPU product read from gpu.nvidia.com ResourceSlices for {plural(len(from_dra), 'node')} without an "
                f"{GPU_PRODUCT_LABEL} label: " + name_list([f"{p.node} ({p.product})" for p in from_dra]),
            )
        )
    by_label: dict[str, list[NodeProduct]] = {}
    for p in products.values():
        if p.from_hint:
            by_label.setdefault(p.source, []).append(p)
    for label, found in sorted(by_label.items()):
        diags.append(
            warning(
                "GPUArchitectureFromLabel",
                target_path,
                f"{plural(len(found), 'node')} without an {GPU_PRODUCT_LABEL} label (GPU Feature Discovery has not labelled "
                f"{'it' if len(found) == 1 else 'them'}): GPU architecture read from the {label} {hint_kind(label)}: "
                + name_list([f"{p.node} ({p.hint_value} -> {p.architecture})" for p in found]),
            )
        )
    for p in from_dra:
        if len(p.dra_products) > 1:
            diags.append(
                warning(
                    "GPUProductsDiffer",
                    target_path,
                    f"node {p.node} publishes devices of several products ({', '.join(p.dra_products)}); using {p.product}",
                )
            )
    return diags


def _count_votes(ordered: Sequence[Mapping[str, Any]], products: Mapping[str, NodeProduct]) -> tuple[Counter[str], dict[str, int]]:
    """Nodes per architecture, and the index of the first node of each (the tie-break)."""
    votes: Counter[str] = Counter()
    first_seen: dict[str, int] = {}
    for index, node in enumerate(ordered):
        arch = products[name_of(node)].arch
        if arch:
            votes[arch] += 1
            first_seen.setdefault(arch, index)
    return votes, first_seen


@dataclass(frozen=True)
class _Decision:
    """The architecture chosen, why, and whether nodes without a product stay in."""

    arch: str
    fact: Fact
    keep_unknown: bool


def _unknown_arch(ordered: Sequence[Mapping[str, Any]], products: Mapping[str, NodeProduct], target_path: str) -> list[Diagnostic]:
    """The diagnostics when nothing names an architecture."""
    diags: list[Diagnostic] = []
    if ordered:
        hints = [p for p in products.values() if p.dra_architectures]
        extra = (
            "; ResourceSlices name only the architecture family ("
            + name_list([f"{p.node}: {', '.join(p.dra_architectures)}" for p in hints])
            + "), not a product"
            if hints
            else ""
        )
        diags.append(
            info(
                "GPUArchitectureUnknown",
                target_path,
                f"none of the {plural(len(ordered), 'target node')} has an {GPU_PRODUCT_LABEL} label or a gpu.nvidia.com "
                f"ResourceSlice with a productName{extra}; pass --gpu-arch or set {GPU_PRODUCT_LABEL} in the nodeSelector",
            )
        )
    diags.append(error("GPUArchitectureUnknown", f"{target_path}.nodeSelector", UNKNOWN_ARCH_MESSAGE))
    return diags


def _decide(
    ordered: Sequence[Mapping[str, Any]],
    products: Mapping[str, NodeProduct],
    votes: Counter[str],
    first_seen: Mapping[str, int],
    supplied: str | None,
    node_selector: Mapping[str, Any] | None,
) -> _Decision | None:
    """``--gpu-arch``, else the vote, else the nodeSelector's product; ``None`` when none names one."""
    if supplied:
        return _Decision(supplied, Fact(supplied, SUPPLIED, "--gpu-arch"), True)
    if votes:
        arch = min(votes, key=lambda a: (-votes[a], first_seen[a]))
        sources = sorted({products[name_of(n)].source for n in ordered if products[name_of(n)].arch == arch})
        where = " and ".join(_source_words(s) for s in sources)
        return _Decision(arch, Fact(arch, DETECTED, f"{where}; {votes[arch]} of {plural(len(ordered), 'target node')}"), False)
    arch = arch_from_node_selector(node_selector)
    if not arch:
        return None
    return _Decision(arch, Fact(arch, SUPPLIED, f"target nodeSelector {GPU_PRODUCT_LABEL}"), True)


def _source_words(source: str) -> str:
    """How a product source reads in a decision's detail."""
    if source == LABEL:
        return f"{GPU_PRODUCT_LABEL} labels"
    if source == RESOURCE_SLICES:
        return "gpu.nvidia.com ResourceSlices"
    return f"{source} {hint_kind(source)}s"


@dataclass
class _Split:
    """The nodes kept for the architecture and those left out, by reason."""

    kept: list[dict[str, Any]]
    excluded: list[ExcludedNode]
    other_arch: list[str]
    no_product: list[str]


def _split_nodes(
    ordered: Sequence[Mapping[str, Any]], products: Mapping[str, NodeProduct], decision: _Decision, supplied: str | None
) -> _Split:
    """Keep the nodes of the decided architecture (and, when not voted, those without a product)."""
    split = _Split([], [], [], [])
    arch = decision.arch
    for node in ordered:
        p = products[name_of(node)]
        if p.arch == arch or (not p.arch and decision.keep_unknown):
            split.kept.append(dict(node))
        elif not p.arch:
            split.excluded.append(
                ExcludedNode(
                    p.node,
                    "no GPU product: no nvidia.com/gpu.product label, no gpu.nvidia.com ResourceSlice product, "
                    "and no label or known instance type naming the GPU",
                )
            )
            split.no_product.append(p.node)
        else:
            against = f"--gpu-arch {arch}" if supplied else f"the majority architecture {arch}"
            split.excluded.append(ExcludedNode(p.node, f"GPU architecture {p.arch} ({p.shown}) differs from {against}"))
            split.other_arch.append(f"{p.node} ({p.arch})")
    return split


def _split_notes(
    split: _Split,
    products: Mapping[str, NodeProduct],
    arch: str,
    basis: str,
    target_path: str,
) -> list[Diagnostic]:
    """Warn about every node left out and note the nodes whose architecture was assumed."""
    diags: list[Diagnostic] = []
    if split.other_arch:
        diags.append(
            warning(
                "NodeExcluded",
                target_path,
                f"target set has more than one GPU architecture; certifying {arch} only ({basis}), "
                f"leaving out {plural(len(split.other_arch), 'node')}: {name_list(split.other_arch)}",
            )
        )
    no_product = split.no_product
    if no_product:
        diags.append(
            warning(
                "NodeExcluded",
                target_path,
                f"{plural(len(no_product), 'node')} {'reports' if len(no_product) == 1 else 'report'} no GPU product ({GPU_PRODUCT_LABEL} label or gpu.nvidia.com "
                f"ResourceSlice) and {'is' if len(no_product) == 1 else 'are'} left out: {name_list(no_product)}",
            )
        )
    assumed = [name_of(n) for n in split.kept if not products[name_of(n)].arch]
    if assumed:
        diags.append(
            info(
                "GPUArchitectureAssumed",
                target_path,
                f"{plural(len(assumed), 'node')} {'reports' if len(assumed) == 1 else 'report'} no GPU product and "
                f"{'is' if len(assumed) == 1 else 'are'} taken to be {arch}: {name_list(assumed)}",
            )
        )
    return diags


def detect_gpu_arch(
    facts: ClusterFacts,
    nodes: Sequence[Mapping[str, Any]],
    *,
    supplied: str | None = None,
    node_selector: Mapping[str, Any] | None = None,
    target_path: str = "spec.target",
) -> tuple[ArchDetection | None, list[Diagnostic]]:
    """Decide the architecture of ``nodes`` (already selected) and filter them to it.

    ``supplied`` is an already validated ``--gpu-arch``. Returns ``None`` with error
    ``GPUArchitectureUnknown`` when nothing names an architecture.
    """
    ordered = sorted(nodes, key=name_of)
    products = node_products(facts, ordered)
    diags = _product_source_notes(products, target_path)
    votes, first_seen = _count_votes(ordered, products)
    decision = _decide(ordered, products, votes, first_seen, supplied, node_selector)
    if decision is None:
        return None, diags + _unknown_arch(ordered, products, target_path)

    arch = decision.arch
    split = _split_nodes(ordered, products, decision, supplied)
    basis = f"--gpu-arch {arch}" if supplied else f"the majority, {votes[arch]} of {plural(len(ordered), 'node')}"
    diags += _split_notes(split, products, arch, basis, target_path)
    kept_products = tuple(sorted({products[name_of(n)].product for n in split.kept} - {""}))
    if len(kept_products) > 1:
        diags.append(
            info(
                "GPUProductsDiffer",
                target_path,
                f"the {arch} nodes report {len(kept_products)} different products: {', '.join(kept_products)}",
            )
        )
    dra_nodes = tuple(name_of(n) for n in split.kept if products[name_of(n)].source == RESOURCE_SLICES)
    detection = ArchDetection(decision.fact, tuple(split.kept), tuple(sorted(split.excluded)), kept_products, dra_nodes)
    return detection, diags
