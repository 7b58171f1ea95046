"""``expand_node_results``: the ConfigMaps that hold a Workflow's succeeded and failed node lists.

``succeeded-nodes-<uid8>`` carries ``binaryData["succeeded-nodes.csv.gz"]``: the sorted, unique
node names joined by commas, gzipped. ``failed-nodes-<uid8>`` carries
``binaryData["failed-nodes.json.gz"]``: a compact JSON array of ``{name, reason, message}``, one
entry per (name, reason), sorted by name then reason, gzipped. ``<uid8>`` is the first eight
characters of the Workflow UID. Gzip is written with mtime 0, so the same lists always give the
same bytes and an unchanged list never rewrites the object. A list that is empty gives no
ConfigMap. Merging with what is already stored (read, gunzip, union) is the caller's step.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..diagnostics import CompileError, Diagnostic, error
from .meta import (
    LABEL_WORKFLOW,
    managed_labels,
    name_of,
    owner_reference,
    uid_of,
    workflow_namespace,
)

__all__ = ["FAILED_KEY", "SUCCEEDED_KEY", "decode_failed", "decode_succeeded", "expand_node_results"]

SUCCEEDED_KEY = "succeeded-nodes.csv.gz"
FAILED_KEY = "failed-nodes.json.gz"
_GO_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _gzip(text: str) -> str:
    return base64.b64encode(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)).decode("ascii")


def _go_json(value: Any) -> str:
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for raw, escaped in _GO_ESCAPES.items():
        text = text.replace(raw, escaped)
    return text


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
        out.append(_config_map(workflow, f"succeeded-nodes-{uid8}", SUCCEEDED_KEY, _gzip(",".join(names))))
    entries = _failed_entries(failed)
    if entries:
        out.append(_config_map(workflow, f"failed-nodes-{uid8}", FAILED_KEY, _gzip(_go_json(entries))))
    return out


def decode_succeeded(config_map: Mapping[str, Any]) -> list[str]:
    """The node names stored in a succeeded-nodes ConfigMap (for the read-union-write step)."""
    raw = gzip.decompress(base64.b64decode((config_map.get("binaryData") or {})[SUCCEEDED_KEY])).decode("utf-8")
    return [n for n in raw.split(",") if n]


def decode_failed(config_map: Mapping[str, Any]) -> list[dict[str, str]]:
    """The entries stored in a failed-nodes ConfigMap."""
    raw = gzip.decompress(base64.b64decode((config_map.get("binaryData") or {})[FAILED_KEY])).decode("utf-8")
    return list(json.loads(raw))
