"""``expand_node_results``: the ConfigMaps that hold a Workflow's succeeded and failed node lists.

``succeeded-nodes-<uid8>`` and ``failed-nodes-<uid8>`` (``<uid8>``: the first eight characters
of the Workflow UID) carry the payloads :mod:`nvcre.compiler.nodelists` encodes and decodes;
failed entries are one per (name, reason), sorted by name then reason. The same lists always
give the same bytes, so an unchanged list never rewrites the object. A list that is empty gives
no ConfigMap. Merging with what is already stored (read, decode, union) is the caller's step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..diagnostics import CompileError, Diagnostic, error
from ..nodelists import decode_failed, decode_succeeded, encode_failed, encode_succeeded
from ..vocabulary import (
    CONFIGMAP_FAILED_NODES_KEY,
    CONFIGMAP_SUCCEEDED_NODES_KEY,
    FAILED_NODES_PREFIX,
    LABEL_WORKFLOW,
    SUCCEEDED_NODES_PREFIX,
)
from .meta import (
    managed_labels,
    name_of,
    owner_reference,
    uid_of,
    workflow_namespace,
)

__all__ = ["decode_failed", "decode_succeeded", "expand_node_results"]


def _failed_entries(failed: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    problems: list[Diagnostic] = []
    entries: dict[tuple[str, str], dict[str, str]] = {}
    for i, item in enumerate(failed):
        if not isinstance(item, Mapping):
            problems.append(error("InvalidFailedNode", f"failed[{i}]", "expected {name, reason, message}"))
            continue
        for key in ("name", "reason"):
            if not isinstance(item.get(key), str) or not item.get(key):
                problems.append(error("InvalidFailedNode", f"failed[{i}].{key}", "required"))
        message = item.get("message", "")
        if not isinstance(message, str):
            problems.append(error("InvalidFailedNode", f"failed[{i}].message", "expected a string"))
        if not problems:
            entries.setdefault((item["name"], item["reason"]), {"name": item["name"], "reason": item["reason"], "message": message})
    if problems:
        raise CompileError(problems)
    return [entries[key] for key in sorted(entries)]


def _config_map(workflow: Mapping[str, Any], name: str, key: str, payload: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": workflow_namespace(workflow),
            "labels": managed_labels({LABEL_WORKFLOW: name_of(workflow, "Workflow")}),
            "ownerReferences": [owner_reference(workflow, "Workflow")],
        },
        "binaryData": {key: payload},
    }


def expand_node_results(workflow: Mapping[str, Any], succeeded: Sequence[str], failed: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The succeeded-nodes and failed-nodes ConfigMaps (each only when its list is non-empty)."""
    if isinstance(succeeded, str) or any(not isinstance(n, str) or not n for n in succeeded):
        raise CompileError([error("InvalidSucceededNodes", "succeeded", "expected a list of node names")])
    uid8 = uid_of(workflow, "Workflow")[:8]
    out = []
    names = sorted(set(succeeded))
    if names:
        out.append(_config_map(workflow, f"{SUCCEEDED_NODES_PREFIX}{uid8}", CONFIGMAP_SUCCEEDED_NODES_KEY, encode_succeeded(names)))
    entries = _failed_entries(failed)
    if entries:
        out.append(_config_map(workflow, f"{FAILED_NODES_PREFIX}{uid8}", CONFIGMAP_FAILED_NODES_KEY, encode_failed(entries)))
    return out
