"""The node health monitor: a CEL expression over ``node`` that is true for an unhealthy node.

``compile_monitor`` compiles an expression once (cached by its text). ``NodeHealthMonitor``
evaluates it against NVCRE's defaulted Node view (missing ``metadata.labels``/``annotations``,
``spec.taints``/``unschedulable``, ``status.conditions``/``addresses``/``capacity``/
``allocatable`` are filled with empty values, so ``node.spec.unschedulable == true`` works on
any Node). Evaluation errors come back in the result and count as healthy; they never raise.
An expression whose estimated cost at the node's own sizes is over ``cel_cost``'s limit is not
run at all (cel-python has no cost limit): it comes back as such an error.
An unhealthy node's failed-node entry keeps the detector's own message: the message of a node
condition the expression names, when the Node carries one.

``not_ready_entries`` is nvcre's own rule beside the expression (NVCRE has none): a node whose
``Ready`` condition is ``False`` or ``Unknown`` while its Job runs (its kubelet stopped posting
status past the node controller's grace period, or reports itself not ready) is unhealthy
whatever the expression says, with the node controller's own words in the entry. The default
expression reads only the cordon, so without this a node that drops out mid-run could pass on the
strength of containers its lost kubelet left running.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nvcre.compiler.cel import to_cel
from nvcre.compiler.cel_cost import health_cost_problem
from nvcre.compiler.cel_program import compile_expression, run_bool

#: CPU seconds one node's health check may spend; the cost estimate above refuses what it can
#: foresee, this bounds what it misjudges
HEALTH_CPU_SECONDS = 1.5

__all__ = [
    "DEFAULT_EXPRESSION",
    "HARDWARE_FAILURE_MESSAGE",
    "HARDWARE_FAILURE_REASON",
    "HealthCheck",
    "NodeHealthMonitor",
    "compile_monitor",
    "defaulted_node",
    "hardware_failed_message",
    "merge_failed_nodes",
    "not_ready_entries",
]

DEFAULT_EXPRESSION = "node.spec.unschedulable == true"
HARDWARE_FAILURE_REASON = "HardwareFailureDetected"
HARDWARE_FAILURE_MESSAGE = "Hardware failure detected by node health check"

_DEFAULTS: tuple[tuple[str, str, Any], ...] = (
    ("metadata", "labels", {}),
    ("metadata", "annotations", {}),
    ("spec", "taints", []),
    ("spec", "unschedulable", False),
    ("status", "conditions", []),
    ("status", "addresses", []),
    ("status", "capacity", {}),
    ("status", "allocatable", {}),
)
_CONDITION_NAMED = re.compile(r"""\.type\s*==\s*['"]([A-Za-z0-9_.-]+)['"]""")
_NODE_USE = re.compile(r"(?<![\w.])node\b(\s*\.\s*([A-Za-z_]\w*)(\s*\.\s*([A-Za-z_]\w*))?)?")


def _paths(expression: str) -> dict[str, set[str] | None] | None:
    """The Node sections (and keys within them) an expression reads; None when it may read anything.

    Only the parts named are converted for CEL, which keeps a per-node check cheap; an
    expression that uses ``node`` other than as ``node.section[.key]`` gets the whole Node.
    """
    wanted: dict[str, set[str] | None] = {}
    for use in _NODE_USE.finditer(expression):
        section, key = use.group(2), use.group(4)
        if section is None:
            return None
        if key is None or wanted.get(section, set()) is None:
            wanted[section] = None
        else:
            keys = wanted.setdefault(section, set())
            assert keys is not None
            keys.add(key)
    return wanted


def _pruned(view: dict[str, Any], wanted: dict[str, set[str] | None] | None) -> dict[str, Any]:
    if wanted is None:
        return view
    out: dict[str, Any] = {}
    for section, keys in wanted.items():
        if section not in view:
            continue
        part = view[section]
        if keys is None or not isinstance(part, Mapping):
            out[section] = part
        else:
            out[section] = {key: part[key] for key in keys if key in part}
    return out


@dataclass(frozen=True)
class HealthCheck:
    """One node's evaluation."""

    node: str
    unhealthy: bool
    message: str = ""
    error: str | None = None

    def failed_node(self) -> dict[str, str]:
        return {"name": self.node, "reason": HARDWARE_FAILURE_REASON, "message": self.message or HARDWARE_FAILURE_MESSAGE}


def defaulted_node(node: Mapping[str, Any]) -> dict[str, Any]:
    """A shallow copy of a Node with NVCRE's defaults filled in (the input is not changed)."""
    view = dict(node)
    for section, key, empty in _DEFAULTS:
        part = view.get(section)
        part = dict(part) if isinstance(part, Mapping) else {}
        if part.get(key) is None:
            part[key] = type(empty)() if not isinstance(empty, bool) else empty
        view[section] = part
    return view


class NodeHealthMonitor:
    """A compiled health expression."""

    def __init__(self, expression: str):
        self.expression = expression
        _, self.compile_error = compile_expression(expression)
        self._condition_types = tuple(dict.fromkeys(_CONDITION_NAMED.findall(expression)))
        self._wanted = _paths(expression)

    def check(self, node: Mapping[str, Any]) -> HealthCheck:
        """The node's verdict, with the detector's message or the evaluation error."""
        name = str(((node.get("metadata") or {}).get("name")) or "")
        if self.compile_error is not None:
            return HealthCheck(name, False, error=f"compile: {self.compile_error}")
        try:
            activation = {"node": to_cel(_pruned(defaulted_node(node), self._wanted))}
        except ValueError as exc:
            return HealthCheck(name, False, error=f"node cannot be passed to CEL: {exc}")
        # cel-python has no cost limit: judge the expression's cost at this node's sizes before running it
        too_costly = health_cost_problem(self.expression, _largest_collection(activation))
        if too_costly is not None:
            return HealthCheck(name, False, error=f"not evaluated: {too_costly}")
        outcome = run_bool(self.expression, activation, cpu_budget=HEALTH_CPU_SECONDS)
        if outcome.value is None:
            return HealthCheck(name, False, error=outcome.error)
        if not outcome.value:
            return HealthCheck(name, False)
        return HealthCheck(name, True, message=self._message(node))

    def evaluate(self, node: Mapping[str, Any]) -> bool:
        """True when the node is unhealthy; an evaluation error counts as healthy."""
        return self.check(node).unhealthy

    def _message(self, node: Mapping[str, Any]) -> str:
        conditions = ((node.get("status") or {}).get("conditions")) or []
        for wanted in self._condition_types:
            for cond in conditions:
                if isinstance(cond, Mapping) and cond.get("type") == wanted and str(cond.get("message") or "").strip():
                    return f"{HARDWARE_FAILURE_MESSAGE}: {wanted}: {str(cond['message']).strip()}"
        return HARDWARE_FAILURE_MESSAGE


def _largest_collection(value: Any) -> int:
    """The most elements of any list or map in ``value`` (a node's pruned CEL view)."""
    largest, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            largest = max(largest, len(item))
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            largest = max(largest, len(item))
            stack.extend(item)
    return largest


_MONITORS: dict[str, NodeHealthMonitor] = {}


def compile_monitor(expression: str) -> NodeHealthMonitor:
    """The monitor for ``expression``, compiled once."""
    monitor = _MONITORS.get(expression)
    if monitor is None:
        if len(_MONITORS) > 512:
            _MONITORS.clear()
        monitor = _MONITORS[expression] = NodeHealthMonitor(expression)
    return monitor


def merge_failed_nodes(existing: Iterable[Mapping[str, Any]] | None, new: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Additive merge: one entry per (name, reason), the first message kept, sorted by name then reason."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for entry in [*(existing or ()), *new]:
        name, reason = str(entry.get("name", "")), str(entry.get("reason", ""))
        if not name or not reason or (name, reason) in merged:
            continue
        item: dict[str, Any] = {"name": name, "reason": reason}
        if entry.get("message"):
            item["message"] = str(entry["message"])
        merged[(name, reason)] = item
    return [merged[key] for key in sorted(merged)]


def not_ready_entries(nodes: Mapping[str, Mapping[str, Any]]) -> list[dict[str, str]]:
    """Failed-node entries for the ``nodes`` whose ``Ready`` condition is present and not ``True``,
    by name; the message names the condition's status, reason and message as the Node gives them."""
    found: list[dict[str, str]] = []
    for name in sorted(nodes):
        conditions = ((nodes[name].get("status") or {}).get("conditions")) or []
        for cond in conditions:
            if not isinstance(cond, Mapping) or cond.get("type") != "Ready" or cond.get("status") in (None, "True"):
                continue
            words = [f"{HARDWARE_FAILURE_MESSAGE}: Ready is {cond.get('status')}"]
            words += [str(cond[key]).strip() for key in ("reason", "message") if str(cond.get(key) or "").strip()]
            found.append({"name": name, "reason": HARDWARE_FAILURE_REASON, "message": ": ".join(words)})
            break
    return found


def hardware_failed_message(names: Sequence[str]) -> str:
    """The Job's ``HardwareFailed`` condition message."""
    return f"Hardware failure detected on node(s): [{' '.join(sorted(set(names)))}]"
