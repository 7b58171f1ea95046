"""GPU architecture and count from the labels a cloud or provisioner writes, for nodes GFD has not labelled.

GPU Feature Discovery writes ``nvidia.com/gpu.product``; a node it has not reached yet (or a
cluster without the GPU Operator, such as GKE with Google's driver installer) carries other
labels that still name the GPU: GKE's ``cloud.google.com/gke-accelerator``, Karpenter's
``karpenter.k8s.aws/instance-gpu-name`` and the well-known ``node.kubernetes.io/instance-type``,
looked up in a table of GPU instance types grouped by the cloud that sells them, and the
capability labels of Akash providers (``akash.network/capabilities.gpu.vendor.nvidia.model.h100=8``)
and the device list HAMi's device plugin registers in a node annotation.
The rules and the table live in ``detection/gpu_hints.yaml``, each table row with its public
source.

The GPU count of a node that advertises none yet comes from ``nvidia.com/gpu.count`` (GFD),
Karpenter's ``instance-gpu-count``, the capability label's value, the register annotation's
device records or the instance-type row. A node whose GPUs are MIG devices (:func:`mig_product`)
has no count of whole GPUs: GPU Feature Discovery then counts MIG devices in
``nvidia.com/gpu.count``, and the device plugin advertises them as ``nvidia.com/gpu``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping, NamedTuple

from .products import GPU_PRODUCT_LABEL, parse_product
from .tables import table

__all__ = [
    "ArchitectureHint",
    "CountHint",
    "InstanceType",
    "architecture_hint",
    "count_hint",
    "instance_type_row",
    "instance_type",
    "capability_hint",
    "register_hint",
    "hint_kind",
    "mig_product",
]

#: The end GPU Feature Discovery gives the product label under the MIG ``single`` strategy:
#: ``-MIG-`` and the GPU instance profile (``A100-SXM4-40GB-MIG-1g.5gb``, ``...-MIG-3g.20gb``,
#: ``...-MIG-7g.80gb``, a media-extension or graphics variant such as ``1g.10gb+me``), then
#: ``-SHARED`` when the devices are time-sliced. See the single-strategy walkthrough of
#: https://github.com/NVIDIA/cloud-native-docs/blob/52dcb7b8d956784344e241df476de17094a4574c/kubernetes/index.rst
_MIG_PRODUCT = re.compile(r"-MIG-[0-9]{1,2}g\.[0-9]{1,4}gb(?:[+-](?:me|gfx)(?:\.all)?)?(?:-SHARED)?\Z", re.ASCII | re.IGNORECASE)


class ArchitectureHint(NamedTuple):
    """An architecture read from a node label (or register annotation): which key, its value, and the architecture."""

    architecture: str
    label: str
    value: str


@dataclass(frozen=True)
class CountHint:
    """A GPU count read from a node label or annotation (or the instance-type table, through its label)."""

    count: int
    label: str


class InstanceType(NamedTuple):
    """A node's instance type found in the table: the label read, its value, the cloud, the row."""

    label: str
    value: str
    platform: str
    row: Mapping[str, Any]


@lru_cache(maxsize=1)
def _rows_by_name() -> Mapping[str, tuple[str, Mapping[str, Any]]]:
    """``(platform, row)`` by lower-cased instance-type name (the table is read once)."""
    out: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for platform, rows in table("gpu_hints")["instanceTypes"].items():
        for row in rows:
            for name in row["names"]:
                out[str(name).lower()] = (str(platform), row)
    return out


def instance_type(labels: Mapping[str, str]) -> InstanceType | None:
    """The node's instance type (first instance-type label present), when the table lists it."""
    rows = _rows_by_name()
    for key in table("gpu_hints")["instanceTypeLabels"]:
        value = labels.get(str(key))
        if value:
            found = rows.get(value.lower())
            return InstanceType(str(key), value, found[0], found[1]) if found is not None else None
    return None


def instance_type_row(labels: Mapping[str, str]) -> tuple[str, Mapping[str, Any]] | None:
    """``(label key, table row)`` for the node's instance type, when the table lists it."""
    found = instance_type(labels)
    return (found.label, found.row) if found is not None else None


def capability_hint(labels: Mapping[str, str]) -> tuple[ArchitectureHint, CountHint | None] | None:
    """The GPU model (and count) a capability label names, when exactly one model is named.

    ``akash.network/capabilities.gpu.vendor.nvidia.model.h100=8`` gives ``h100`` and 8; the
    ``...model.h100.ram.80Gi`` style keys describe the same GPUs and are skipped.
    """
    for rule in table("gpu_hints").get("capabilityLabels", ()):
        prefix = str(rule["prefix"])
        models = [(key, value) for key, value in labels.items() if key.startswith(prefix) and "." not in key[len(prefix) :]]
        models = [(key, value) for key, value in models if key[len(prefix) :]]
        if len(models) != 1:
            continue
        ((key, value),) = models
        arch = parse_product(key[len(prefix) :])
        if not arch:
            continue
        count = _positive_int(value)
        return ArchitectureHint(arch, key, value), (CountHint(count, key) if count is not None else None)
    return None


def hint_kind(key: str) -> str:
    """``annotation`` for a register annotation's key, else ``label`` (for messages)."""
    annotations = {str(r["annotation"]) for r in table("gpu_hints").get("registerAnnotations", ())}
    return "annotation" if key in annotations else "label"


def register_hint(annotations: Mapping[str, str]) -> tuple[ArchitectureHint, CountHint | None] | None:
    """The GPU architecture (and count) a device plugin's register annotation lists.

    The hint's value is the first record's device type. Only whole records count: a record with
    fewer fields (a value cut short) leaves the count unknown; records naming different
    architectures decide nothing.
    """
    for rule in table("gpu_hints").get("registerAnnotations", ()):
        key = str(rule["annotation"])
        value = annotations.get(key) or ""
        records = [r for r in value.split(":") if r.strip()]
        widths, at = {int(w) for w in rule["fields"]}, int(rule["typeField"])
        whole = [r.split(",") for r in records if len(r.split(",")) in widths]
        archs = {parse_product(fields[at]) for fields in whole}
        if len(archs) != 1 or "" in archs:
            continue
        (arch,) = archs
        count = CountHint(len(whole), key) if len(whole) == len(records) else None
        return ArchitectureHint(arch, key, whole[0][at]), count
    return None


def _allowed(labels: Mapping[str, str], requires: Mapping[str, Any] | None) -> bool:
    """A rule's ``requires`` holds: the other label is absent, or holds one of the values."""
    if not requires:
        return True
    value = labels.get(str(requires["label"]))
    return value is None or value.lower() in {str(v).lower() for v in requires["values"]}


def architecture_hint(labels: Mapping[str, str], annotations: Mapping[str, str] | None = None) -> ArchitectureHint | None:
    """The architecture the node's other labels (or register annotation) name, first rule first; ``None`` when none does."""
    rules = table("gpu_hints")
    for rule in rules["architectureLabels"]:
        key = str(rule["label"])
        value = labels.get(key)
        if not value or not _allowed(labels, rule.get("requires")):
            continue
        arch = parse_product(value.replace("_", "-") if rule.get("underscores") else value)
        if arch:
            return ArchitectureHint(arch, key, value)
    capability = capability_hint(labels)
    if capability is not None:
        return capability[0]
    registered = register_hint(annotations or {})
    if registered is not None:
        return registered[0]
    found = instance_type(labels)
    if found is None:
        return None
    return ArchitectureHint(str(found.row["architecture"]), found.label, found.value)


def mig_product(labels: Mapping[str, str]) -> str | None:
    """The product label's value when it names MIG devices rather than GPUs, else None.

    Under the MIG ``single`` strategy GPU Feature Discovery names the product
    ``<product>-MIG-<profile>`` and sets ``nvidia.com/gpu.count`` to the number of MIG devices, and
    the device plugin advertises them as ``nvidia.com/gpu``: seven ``1g.5gb`` devices of one A100
    read as seven. Only that suffix counts (any case), not any value holding ``mig``; the
    ``mixed`` strategy and a MIG-capable GPU with MIG disabled keep the whole GPU's product.
    """
    value = labels.get(GPU_PRODUCT_LABEL)
    return value if isinstance(value, str) and _MIG_PRODUCT.search(value) is not None else None


def _positive_int(value: str | None) -> int | None:
    text = (value or "").strip()
    return int(text) if text.isdigit() and len(text) <= 6 and int(text) > 0 else None


def count_hint(labels: Mapping[str, str], annotations: Mapping[str, str] | None = None) -> CountHint | None:
    """The GPU count the node's labels give, first label first, then the register annotation, then the instance-type row.

    None for a node whose GPUs are MIG devices (:func:`mig_product`): its count labels count MIG
    devices, and how many whole GPUs they were cut from is not a count the node can give.
    """
    if mig_product(labels) is not None:
        return None
    for key in table("gpu_hints")["countLabels"]:
        count = _positive_int(labels.get(str(key)))
        if count is not None:
            return CountHint(count, str(key))
    capability = capability_hint(labels)
    if capability is not None and capability[1] is not None:
        return capability[1]
    registered = register_hint(annotations or {})
    if registered is not None and registered[1] is not None:
        return registered[1]
    found = instance_type(labels)
    if found is None:
        return None
    return CountHint(int(found.row["gpus"]), found.label)
