"""GPU architecture and count from the labels a cloud or provisioner writes, for nodes GFD has not labelled.

GPU Feature Discovery writes ``nvidia.com/gpu.product``; a node it has not reached yet (or a
cluster without the GPU Operator, such as GKE with Google's driver installer) carries other
labels that still name the GPU: GKE's ``cloud.google.com/gke-accelerator``, Karpenter's
``karpenter.k8s.aws/instance-gpu-name`` and the well-known ``node.kubernetes.io/instance-type``,
looked up in a table of GPU instance types. The rules and the table live in
``detection/gpu_hints.yaml``, each table row with its public source.

The GPU count of a node that advertises none yet comes from ``nvidia.com/gpu.count`` (GFD),
Karpenter's ``instance-gpu-count`` or the instance-type row.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping

from .products import parse_product
from .tables import table

__all__ = ["ArchitectureHint", "CountHint", "architecture_hint", "count_hint", "instance_type_row"]


@dataclass(frozen=True)
class ArchitectureHint:
    """An architecture read from a node label: which label, its value, and the architecture."""

    architecture: str
    label: str
    value: str


@dataclass(frozen=True)
class CountHint:
    """A GPU count read from a node label (or the instance-type table, through its label)."""

    count: int
    label: str


@lru_cache(maxsize=1)
def _rows_by_name() -> Mapping[str, Mapping[str, Any]]:
    """The instance-type rows by lower-cased name (the table is read once)."""
    return {str(row["name"]).lower(): row for row in table("gpu_hints")["instanceTypes"]}


def instance_type_row(labels: Mapping[str, str]) -> tuple[str, Mapping[str, Any]] | None:
    """``(label key, table row)`` for the node's instance type, when the table lists it."""
    rules = table("gpu_hints")
    rows = _rows_by_name()
    for key in rules["instanceTypeLabels"]:
        value = labels.get(str(key))
        if value:
            row = rows.get(value.lower())
            return (str(key), row) if row is not None else None
    return None


def _allowed(labels: Mapping[str, str], requires: Mapping[str, Any] | None) -> bool:
    """A rule's ``requires`` holds: the other label is absent, or holds one of the values."""
    if not requires:
        return True
    value = labels.get(str(requires["label"]))
    return value is None or value.lower() in {str(v).lower() for v in requires["values"]}


def architecture_hint(labels: Mapping[str, str]) -> ArchitectureHint | None:
    """The architecture the node's other labels name, first rule first; ``None`` when none does."""
    rules = table("gpu_hints")
    for rule in rules["architectureLabels"]:
        key = str(rule["label"])
        value = labels.get(key)
        if not value or not _allowed(labels, rule.get("requires")):
            continue
        arch = parse_product(value)
        if arch:
            return ArchitectureHint(arch, key, value)
    found = instance_type_row(labels)
    if found is None:
        return None
    key, row = found
    return ArchitectureHint(str(row["architecture"]), key, labels[key])


def _positive_int(value: str | None) -> int | None:
    text = (value or "").strip()
    return int(text) if text.isdigit() and len(text) <= 6 and int(text) > 0 else None


def count_hint(labels: Mapping[str, str]) -> CountHint | None:
    """The GPU count the node's labels give, first label first, then the instance-type row."""
    for key in table("gpu_hints")["countLabels"]:
        count = _positive_int(labels.get(str(key)))
        if count is not None:
            return CountHint(count, str(key))
    found = instance_type_row(labels)
    if found is None:
        return None
    key, row = found
    return CountHint(int(row["gpus"]), key)
