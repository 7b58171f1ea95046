"""Answers about a node remembered by (expression, node name, node resourceVersion).

The Job tier keeps its node health verdicts here (``HealthMemo[HealthCheck]``).

Every Job reconcile evaluates its monitor on the nodes its pods are bound to, and a Node event
brings every Job on that node back; most of those evaluations see a node that has not changed
since the last one. A verdict depends only on the expression and the node object, and a node's
resourceVersion changes whenever the object does, so the verdict of an unchanged node is taken
from here. Bounded: the least recently used entries leave first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

__all__ = ["HealthMemo"]

_Key = tuple[str, str, str]
V = TypeVar("V")


class HealthMemo(Generic[V]):
    """At most ``size`` verdicts; thread-safe."""

    def __init__(self, size: int = 16384) -> None:
        self._size = size
        self._items: OrderedDict[_Key, V] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def check(self, expression: str, node: Mapping[str, Any], evaluate: Callable[[Mapping[str, Any]], V]) -> V:
        """``evaluate(node)``, or its remembered answer for this version of the node. A node
        without a resourceVersion is always evaluated."""
        meta = node.get("metadata") or {}
        version = str(meta.get("resourceVersion") or "")
        if not version:
            return evaluate(node)
        key = (expression, str(meta.get("name") or ""), version)
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
                return found
        verdict = evaluate(node)
        with self._lock:
            self._items[key] = verdict
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return verdict
