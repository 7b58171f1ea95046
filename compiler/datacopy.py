"""Document data: the deep copy every pass makes before it changes a Workflow, and the test
for plain data whose ``repr`` can key a memo."""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["plain_copy", "is_plain"]

_PLAIN_SCALARS = frozenset({str, int, float, bool, type(None)})


def plain_copy(value: Any) -> Any:
    """A deep copy of document data, much cheaper than ``copy.deepcopy`` for what documents hold.

    Dicts and lists are copied level by level, strings, numbers, booleans and None are shared
    (they are immutable); anything else (a tuple, a model) is handed to ``copy.deepcopy``. Unlike
    ``copy.deepcopy``, an object reached twice is copied twice: documents never rely on sharing.
    """
    kind = type(value)
    if kind is dict:
        return {key: item if type(item) in _PLAIN_SCALARS else plain_copy(item) for key, item in value.items()}
    if kind is list:
        return [item if type(item) in _PLAIN_SCALARS else plain_copy(item) for item in value]
    if kind in _PLAIN_SCALARS:
        return value
    return copy.deepcopy(value)


def is_plain(value: Any) -> bool:
    """True for plain data: strings, numbers, booleans, None, and dicts, lists and tuples of them.

    For such values ``repr`` tells apart everything an expression or template could see
    (types, order, ``1`` from ``True`` from ``"1"``, lists from tuples), so it can key a memo.
    """
    kind = type(value)
    if kind in _PLAIN_SCALARS:
        return True
    # Loops rather than all() over generators, and no call for a scalar: this runs on every key
    # of the render memos.
    if kind is dict:
        for key, item in value.items():
            if type(key) not in _PLAIN_SCALARS or (type(item) not in _PLAIN_SCALARS and not is_plain(item)):
                return False
        return True
    if kind is list or kind is tuple:
        for item in value:
            if type(item) not in _PLAIN_SCALARS and not is_plain(item):
                return False
        return True
    return False
