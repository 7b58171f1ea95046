"""Compose the labels of the submitted workload object (``jobTemplate.spec.workloadMetadata.labels``).

These labels go on the TrainJob itself, where queueing systems (Kueue, KAI Scheduler) read
them before any pod exists; they are not pod labels. Composition, per key, lowest first:

1. labels the catalog entry and overlays rendered;
2. ``workloadMetadata.labels`` from the options (global then category, already merged);
3. the gang queue label: inserted, kept when the same value is already there, an error when a
   different one is.

The result must stay within 32 labels, use no key reserved for the controller, and hold valid
label keys and values; ``""`` is a real value. An empty result leaves the field absent.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from ..datacopy import plain_copy
from ..diagnostics import Diagnostic, error, format_path
from ..unit import Context, Unit
from ..vocabulary import RESERVED_PREFIX
from ..workflow_paths import ROOT, WORKLOAD_LABELS, dig, keyed, option_path

__all__ = ["merge_workload_labels", "MAX_WORKLOAD_LABELS", "is_reserved_label_key"]

MAX_WORKLOAD_LABELS = 32
RESERVED_KEYS = frozenset({"app.kubernetes.io/managed-by"})
#: the field as NVCRE names it in its messages
FIELD = "spec.jobTemplate.spec.workloadMetadata.labels"

_KEY = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[a-zA-Z0-9]([-a-zA-Z0-9_.]{0,61}[a-zA-Z0-9])?$")
_VALUE = re.compile(r"^$|^[a-zA-Z0-9]([-a-zA-Z0-9_.]{0,61}[a-zA-Z0-9])?$")
_MAX_PREFIX = 253


def is_reserved_label_key(key: str) -> bool:
    return key in RESERVED_KEYS or key.startswith(RESERVED_PREFIX)


def merge_workload_labels(unit: Unit, ctx: Context) -> tuple[Unit, list[Diagnostic]]:
    if unit.workflow is None:
        return unit, []
    catalog = dig(unit.workflow, WORKLOAD_LABELS)
    user = dig(unit.options, ("workloadMetadata", "labels"))
    catalog_path = ROOT + WORKLOAD_LABELS
    user_path = option_path(ctx, "workloadMetadata", "labels")
    for labels, path in ((catalog, catalog_path), (user, user_path)):
        if labels is not None and not isinstance(labels, dict):
            return unit, [error("WorkloadLabelInvalid", path, f"{FIELD}: labels must be a map, got {type(labels).__name__}")]

    merged: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for labels, path in ((catalog or {}, catalog_path), (user or {}, user_path)):
        for key, value in labels.items():
            merged[key] = value
            origin[key] = keyed(path, key)
    problems = _insert_queue_label(merged, origin, ctx)
    cap_path = user_path if user else catalog_path
    problems += _check(merged, origin, cap_path if isinstance(cap_path, str) else format_path(cap_path))
    if problems:
        return unit, problems
    if catalog and merged == catalog:
        return unit, []
    if not merged and catalog is None:
        return unit, []

    workflow = plain_copy(dict(unit.workflow))
    job_spec = dig(workflow, WORKLOAD_LABELS[:-2], create=True)
    if merged:
        metadata = job_spec.get("workloadMetadata")
        if not isinstance(metadata, dict):
            metadata = job_spec["workloadMetadata"] = {}
        metadata["labels"] = dict(sorted(merged.items()))
    else:
        metadata = job_spec.get("workloadMetadata")
        metadata.pop("labels", None)
        if not metadata:
            del job_spec["workloadMetadata"]
    return replace(unit, workflow=workflow), []


def _insert_queue_label(merged: dict[str, Any], origin: dict[str, str], ctx: Context) -> list[Diagnostic]:
    gang = ctx.gang
    if gang is None:
        return []
    key = gang.queue_label_key
    if key in merged and merged[key] != gang.queue:
        return [
            error(
                "GangQueueLabelConflict",
                origin[key],
                f'{FIELD}["{key}"]: conflicting label value "{merged[key]}", expected "{gang.queue}"',
            )
        ]
    if key not in merged:
        merged[key] = gang.queue
        origin[key] = "spec.gangScheduler.queue"
    return []


def _check(merged: dict[str, Any], origin: dict[str, str], cap_path: str) -> list[Diagnostic]:
    problems: list[Diagnostic] = []
    if len(merged) > MAX_WORKLOAD_LABELS:
        problems.append(
            error(
                "WorkloadLabelLimit",
                cap_path,
                f"{FIELD}: {len(merged)} labels exceeds the maximum of {MAX_WORKLOAD_LABELS}",
            )
        )
    for key in sorted(merged):
        value = merged[key]
        field = f'{FIELD}["{key}"]'
        if is_reserved_label_key(key):
            problems.append(
                error(
                    "WorkloadLabelReserved",
                    origin[key],
                    f"{field}: label key is reserved for the controller "
                    f"(app.kubernetes.io/managed-by and keys starting with {RESERVED_PREFIX})",
                )
            )
        elif not _KEY.match(key) or ("/" in key and len(key.split("/", 1)[0]) > _MAX_PREFIX):
            problems.append(error("WorkloadLabelInvalid", origin[key], f"{field}: label key is not a valid qualified name"))
        if not isinstance(value, str) or not _VALUE.match(value):
            problems.append(
                error(
                    "WorkloadLabelInvalid",
                    origin[key],
                    f"{field}: invalid label value {value!r}: at most 63 characters, alphanumeric at both ends, "
                    "with '-', '_' or '.' between",
                )
            )
    return problems
