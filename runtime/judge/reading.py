"""Small, tolerant readers over the API objects a verdict is built from (pure).

Every reader takes a plain dict as the API server returns it and never raises on a missing or
mistyped field: a mapping that is not one reads as empty, a list that is not one as no items, a
number that is not one as zero. ``lifecycle`` folds conditions into one word; the failed-node
readers gather and de-duplicate ``{name, reason, message}`` entries from status or from the
failed-nodes ConfigMaps.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from nvcre.compiler.nodelists import read_failed
from nvcre.compiler.vocabulary import LABEL_JOB

from ..measure.profile import parse_rfc3339
from .model import FailedNode

__all__ = [
    "Obj",
    "annotations_of",
    "as_int",
    "as_list",
    "as_map",
    "as_positive",
    "as_seconds",
    "as_time",
    "conditions_of",
    "dedupe_failed",
    "failed_node_entries",
    "job_ref_name",
    "labels_of",
    "lifecycle",
    "lifecycle_from_conditions",
    "name_of",
    "namespace_of",
    "status_of",
    "true_condition",
]

Obj = Mapping[str, Any]


def as_map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def name_of(obj: Obj) -> str:
    return str(as_map(obj.get("metadata")).get("name") or "")


def namespace_of(obj: Obj) -> str:
    return str(as_map(obj.get("metadata")).get("namespace") or "")


def labels_of(obj: Obj) -> Mapping[str, Any]:
    return as_map(as_map(obj.get("metadata")).get("labels"))


def annotations_of(obj: Obj) -> Mapping[str, Any]:
    return as_map(as_map(obj.get("metadata")).get("annotations"))


def status_of(obj: Obj) -> Mapping[str, Any]:
    return as_map(obj.get("status"))


def conditions_of(obj: Obj) -> dict[str, Mapping[str, Any]]:
    found: dict[str, Mapping[str, Any]] = {}
    for cond in as_list(status_of(obj).get("conditions")):
        if isinstance(cond, Mapping) and isinstance(cond.get("type"), str):
            found[cond["type"]] = cond
    return found


def true_condition(conds: Mapping[str, Mapping[str, Any]], kind: str) -> Mapping[str, Any] | None:
    cond = conds.get(kind)
    return cond if cond is not None and cond.get("status") == "True" else None


def lifecycle(obj: Obj) -> str:
    """Failed > Succeeded > InProgress over true conditions, else ``status.phase``, else ""."""
    conds = conditions_of(obj)
    for kind in ("Failed", "Succeeded", "InProgress"):
        if true_condition(conds, kind):
            return kind
    phase = status_of(obj).get("phase")
    return str(phase) if phase in ("Pending", "InProgress", "Succeeded", "Failed") else ""


def as_time(text: Any) -> datetime | None:
    return parse_rfc3339(text) if isinstance(text, str) else None


def as_int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def as_seconds(text: Any) -> float | None:
    """A non-negative decimal-string duration, or None when absent or unreadable."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) and value >= 0 else None


def as_positive(text: Any) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) and value > 0 else None


def lifecycle_from_conditions(obj: Obj) -> str:
    """Failed > Succeeded > InProgress over true conditions only ("" when none is true)."""
    conds = conditions_of(obj)
    for kind in ("Failed", "Succeeded", "InProgress"):
        if true_condition(conds, kind):
            return kind
    return ""


def job_ref_name(measurement: Obj) -> str:
    return str(as_map(as_map(measurement.get("spec")).get("jobRef")).get("name") or labels_of(measurement).get(LABEL_JOB) or "")


# --------------------------------------------------------------------------------------------
# Failed nodes.


def failed_node_entries(failed_nodes: Any, workflows: Mapping[str, Obj]) -> dict[str, list[Mapping[str, Any]]]:
    """Failed-node entries per Workflow name, from a mapping or from ConfigMaps."""
    if failed_nodes is None:
        return {}
    if isinstance(failed_nodes, Mapping):
        return {str(k): [e for e in as_list(v) if isinstance(e, Mapping)] for k, v in failed_nodes.items()}
    by_configmap: dict[str, str] = {}
    for wf_name, workflow in workflows.items():
        ref = as_map(status_of(workflow).get("failedNodesRef")).get("name")
        if isinstance(ref, str):
            by_configmap[ref] = wf_name
    out: dict[str, list[Mapping[str, Any]]] = {}
    for configmap in failed_nodes:
        if not isinstance(configmap, Mapping):
            continue
        owner = by_configmap.get(name_of(configmap))
        if owner is None:
            for ref in as_list(as_map(configmap.get("metadata")).get("ownerReferences")):
                if isinstance(ref, Mapping) and ref.get("kind") == "Workflow" and ref.get("name") in workflows:
                    owner = str(ref["name"])
        if owner is not None:
            out.setdefault(owner, []).extend(read_failed(configmap))
    return out


def dedupe_failed(entries: Iterable[Mapping[str, Any]]) -> tuple[FailedNode, ...]:
    detailed: dict[tuple[str, str], FailedNode] = {}
    names_only: set[str] = set()
    for entry in entries:
        name = str(entry.get("name") or "")
        if not name:
            continue
        reason = str(entry.get("reason") or "")
        if not reason:
            names_only.add(name)
            continue
        detailed.setdefault((name, reason), FailedNode(name, reason, str(entry.get("message") or "")))
    named = {name for name, _ in detailed}
    for name in names_only - named:
        detailed[(name, "")] = FailedNode(name, "")
    return tuple(detailed[key] for key in sorted(detailed))
