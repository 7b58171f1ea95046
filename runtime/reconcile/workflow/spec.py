"""The Workflow tier's names and spec readers, shared by every part of the tier (no state).

The condition and taint the tier names (its wire names, finalizer and ConfigMap prefixes come
from the shared vocabulary), readers of ``spec.orchestration``, the progress text of a pass,
and the record a finished group leaves in ``iterationHistory``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "NAMESPACE_ACCESS",
    "UNSCHEDULABLE_TAINT",
    "execution_of",
    "history_record",
    "is_diagnose",
    "iterations_of",
    "orchestration_of",
    "progress_text",
]

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
NAMESPACE_ACCESS = "NamespaceAccess"


def orchestration_of(wf: Mapping[str, Any]) -> dict[str, Any]:
    return dict(((wf.get("spec") or {}).get("orchestration")) or {})


def execution_of(wf: Mapping[str, Any]) -> dict[str, Any]:
    return dict(orchestration_of(wf).get("execution") or {})


def iterations_of(wf: Mapping[str, Any]) -> int:
    return max(1, int(orchestration_of(wf).get("iterations") or 1))


def is_diagnose(wf: Mapping[str, Any]) -> bool:
    """Whether the Workflow runs ``testScale: diagnose`` (its iterations are planner rounds)."""
    return orchestration_of(wf).get("diagnose") is not None


def progress_text(wf: Mapping[str, Any], iteration: int) -> str:
    """``Iteration i/n``, or ``Diagnose round i`` for a diagnose run (its round count is open)."""
    if is_diagnose(wf):
        return f"Diagnose round {iteration}"
    return f"Iteration {iteration}/{iterations_of(wf)}"


def history_record(group: Mapping[str, Any]) -> dict[str, Any]:
    """A finished group as ``iterationHistory`` keeps it."""
    record = {"name": group["name"], "phase": group.get("phase", "Pending")}
    if (group.get("jobRef") or {}).get("name"):
        record["jobName"] = group["jobRef"]["name"]
    for key in ("startTime", "completionTime"):
        if group.get(key):
            record[key] = group[key]
    return record
