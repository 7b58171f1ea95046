"""Pass: resolve a category's options from the spec-level defaults and the category's own options.

A per-category value wins field by field; an unset one falls back to the spec level. Lists and
maps (thresholds, resources, imagePullSecrets) replace wholesale, with two exceptions that merge:
``env`` merges per variable name (a category can change or add a name, not remove a global one)
and ``workloadMetadata.labels`` merges per key (catalog labels come first, later, in their pass).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from ..diagnostics import Diagnostic
from ..unit import Context, Unit

__all__ = ["resolve_options", "OPTION_KEYS", "merge_env_lists"]

#: Fields a Certification may set at spec level and per category (CategoryOptions).
OPTION_KEYS = (
    "nodesPerJob",
    "gpusPerNode",
    "mlnxPerNode",
    "nicResourceName",
    "enableMNNVL",
    "enableCheckpoint",
    "maxSteps",
    "exitDurationMins",
    "startupStallTimeoutSeconds",
    "schedulingStallGraceSeconds",
    "resources",
    "image",
    "imagePullSecrets",
    "storageClassName",
    "saveInterval",
    "saveRetainInterval",
    "saveTopK",
    "storageSize",
    "maxRestarts",
    "repeatCount",
    "testScale",
    "maxBytes",
    "numIterations",
    "numCycles",
    "thresholds",
    "maxConcurrent",
    "minGroupSize",
    "timeoutPerJob",
    "measurementTimeout",
    "sourceRepo",
    "dcgmHost",
    "rdmaDeviceAccess",
    "env",
    "workloadMetadata",
)


def merge_env_lists(*levels: Any) -> list[dict[str, Any]]:
    """Merge env lists by name: later levels replace a name's value in place or append new names."""
    merged: dict[str, dict[str, Any]] = {}
    for level in levels:
        for item in level or ():
            merged[item["name"]] = {"name": item["name"], "value": item.get("value", "")}
    return list(merged.values())


def _labels(options: Mapping[str, Any] | None) -> dict[str, str]:
    meta = (options or {}).get("workloadMetadata") or {}
    return dict(meta.get("labels") or {})


def resolve_options(unit: Unit, ctx: Context) -> tuple[Unit, list[Diagnostic]]:
    spec = ctx.spec
    own = unit.category.get("options") or {}
    resolved: dict[str, Any] = {}
    for key in OPTION_KEYS:
        if key in ("env", "workloadMetadata"):
            continue
        value = own.get(key)
        if value is None or value == "":
            value = spec.get(key)
        if value is not None and value != "":
            resolved[key] = value
    env = merge_env_lists(spec.get("env"), own.get("env"))
    if env:
        resolved["env"] = env
    labels = {**_labels(spec), **_labels(own)}
    if labels:
        resolved["workloadMetadata"] = {"labels": labels}
    return replace(unit, options=resolved), []
