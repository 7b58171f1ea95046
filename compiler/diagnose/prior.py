"""The diagnose annotations of a Certification or Workflow, read and checked like the rest of the spec.

``nvcre.nvidia.com/diagnose-prior`` holds JSON ``{"groups": [{"nodes": [...], "passed": bool},
...]}``: the groups of the failed run that led to the diagnose. ``nvcre.nvidia.com/diagnose-planner``
names the planner. Both are strings an API server stores as given, so they are checked here with
the same care as a spec field: the prior's size, its nesting (measured on the text, before
anything parses it, so no input can exhaust the parser's stack), its shape, and every node name,
each problem with the field path inside the JSON.

:func:`annotation_problems` gives the diagnostics for validation and render; :func:`read_prior`
is the reader the runtime uses, which refuses a bad prior with a :class:`CompileError` naming the
field (the Workflow then fails with that message) and never raises anything else.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..diagnostics import CompileError, Diagnostic, error
from ..vocabulary import ANNOTATION_DIAGNOSE_PLANNER, ANNOTATION_DIAGNOSE_PRIOR

if TYPE_CHECKING:
    from .model import Prior

__all__ = ["MAX_PRIOR_BYTES", "MAX_PRIOR_GROUPS", "PLANNERS", "annotation_problems", "prior_problems", "read_prior"]

PLANNERS = ("adaptive", "baseline", "pathfirst")
#: the API server bounds all annotations of an object together at 256 KiB
MAX_PRIOR_BYTES = 256 * 1024
MAX_PRIOR_GROUPS = 4096
#: a node name is a DNS subdomain
MAX_NODE_NAME = 253
#: the documented shape nests four levels: {"groups": [{"nodes": [...]}]}
MAX_PRIOR_DEPTH = 4
_SHAPE = '{"groups": [{"nodes": ["node", ...], "passed": true|false}, ...]}'
#: the characters that decide nesting: brackets, and the quotes and escapes that hide them
_MARKS = re.compile(r'[\[\]{}"\\]')


def _depth(text: str) -> int:
    """How deeply the JSON text nests, counted on its brackets outside strings in one pass (no parsing)."""
    deepest = depth = 0
    in_string = False
    escaped = -1
    for found in _MARKS.finditer(text):
        at, mark = found.start(), found.group()
        if at == escaped:
            continue
        if in_string:
            if mark == "\\":
                escaped = at + 1
            elif mark == '"':
                in_string = False
        elif mark == '"':
            in_string = True
        elif mark in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif mark in "]}":
            depth -= 1
    return deepest


def _node_problem(node: Any) -> str:
    if not isinstance(node, str) or not node:
        return "expected a node name (a non-empty string)"
    if len(node) > MAX_NODE_NAME:
        return f"a node name of {len(node)} characters; at most {MAX_NODE_NAME}"
    return ""


def _group_problems(index: int, group: Any) -> list[str]:
    where = f"groups[{index}]"
    if not isinstance(group, Mapping):
        return [f'{where}: expected an object {{"nodes": [...], "passed": true|false}}']
    found = [f"{where}.{key}: unknown field" for key in group if key not in ("nodes", "passed")]
    nodes = group.get("nodes")
    if not isinstance(nodes, list) or not nodes:
        found.append(f"{where}.nodes: expected a non-empty list of node names")
    else:
        found += [f"{where}.nodes[{i}]: {problem}" for i, node in enumerate(nodes) if (problem := _node_problem(node))][:1]
    if not isinstance(group.get("passed"), bool):
        found.append(f"{where}.passed: expected true or false")
    return found


def _problems(text: Any) -> tuple[list[str], Any]:
    """The problems of the prior's text (each ``<path inside the JSON>: <message>``) and its value."""
    if not isinstance(text, str):
        return [f"expected a JSON string {_SHAPE}"], None
    size = len(text.encode("utf-8"))
    if size > MAX_PRIOR_BYTES:
        return [f"{size:,} bytes; at most {MAX_PRIOR_BYTES:,}"], None
    depth = _depth(text)
    if depth > MAX_PRIOR_DEPTH:
        return [f"nested {depth} levels deep; the prior is {_SHAPE}"], None
    try:
        value = json.loads(text)
    except ValueError as exc:
        return [f"not JSON ({exc}); expected {_SHAPE}"], None
    if not isinstance(value, Mapping):
        return [f"expected {_SHAPE}"], None
    found = [f"{key}: unknown field" for key in value if key != "groups"]
    groups = value.get("groups")
    if not isinstance(groups, list) or not groups:
        return [*found, "groups: expected a non-empty list of groups"], None
    if len(groups) > MAX_PRIOR_GROUPS:
        return [*found, f"groups: {len(groups):,} groups; at most {MAX_PRIOR_GROUPS:,}"], None
    for index, group in enumerate(groups):
        found += _group_problems(index, group)
        if len(found) >= 10:  # enough to fix a hand-written prior in one round
            break
    return found, value


def prior_problems(text: Any, path: str = f"metadata.annotations[{ANNOTATION_DIAGNOSE_PRIOR}]") -> list[Diagnostic]:
    """Every problem of a prior annotation's value, as diagnostics at ``path``."""
    problems, _ = _problems(text)
    return [error("InvalidDiagnosePrior", path, problem) for problem in problems]


def annotation_problems(document: Any) -> list[Diagnostic]:
    """The problems of a document's diagnose annotations (the prior and the planner), if it has any."""
    metadata = document.get("metadata") if isinstance(document, Mapping) else None
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    if not isinstance(annotations, Mapping):
        return []
    found: list[Diagnostic] = []
    if ANNOTATION_DIAGNOSE_PRIOR in annotations:
        found += prior_problems(annotations[ANNOTATION_DIAGNOSE_PRIOR])
    planner = annotations.get(ANNOTATION_DIAGNOSE_PLANNER)
    if planner not in (None, "") and planner not in PLANNERS:
        found.append(
            error(
                "InvalidDiagnosePlanner",
                f"metadata.annotations[{ANNOTATION_DIAGNOSE_PLANNER}]",
                f"unknown diagnose planner {str(planner)[:64]!r}; choose {' or '.join(PLANNERS)}",
            )
        )
    return found


def read_prior(annotations: Mapping[str, Any]) -> Prior | None:
    """The prior in ``annotations`` (None without one); CompileError naming the field when it is invalid."""
    if ANNOTATION_DIAGNOSE_PRIOR not in annotations:
        return None
    text = annotations[ANNOTATION_DIAGNOSE_PRIOR]
    problems, value = _problems(text)
    if problems:
        raise CompileError(prior_problems(text))
    from .model import Prior, PriorGroup  # the planners' types: loaded by the runtime, never by a render

    return Prior(tuple(PriorGroup(tuple(g["nodes"]), g["passed"]) for g in value["groups"]))
