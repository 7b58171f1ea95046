"""Finds every value stored under one key anywhere in a document, with its field path.

Document-wide checks (threshold expressions, node-health expressions) look for a field that can
sit at several depths of several kinds. The walk is depth-limited, so a document that is deep but
otherwise valid costs no more than the fields it holds.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..diagnostics import PathPart

__all__ = ["values_under"]


def values_under(data: Any, key: str, max_depth: int) -> Iterator[tuple[tuple[PathPart, ...], Any]]:
    """``(path of the key, its value)`` for each map entry named ``key``, not searching inside those values."""
    stack: list[tuple[Any, tuple[PathPart, ...]]] = [(data, ())]
    while stack:
        node, path = stack.pop()
        if len(path) > max_depth:
            continue
        if isinstance(node, dict):
            children = [(k, v) for k, v in node.items() if isinstance(k, str)]
            for name, value in children:
                if name == key:
                    yield (*path, name), value
            stack.extend((value, (*path, name)) for name, value in reversed(children) if name != key)
        elif isinstance(node, list):
            stack.extend((item, (*path, index)) for index, item in reversed(list(enumerate(node))))
