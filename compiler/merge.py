"""The merge used by platform overlays: maps merge, named lists merge by identity, the rest replaces.

Rules (the same ones Kubernetes users know from strategic merge, kept small and explicit):

* mapping into mapping: merged key by key, recursively; a ``null`` value deletes the key;
* list into list, when every item on both sides is a mapping with an identity — a non-empty
  ``name``, or ``kind`` plus ``metadata.name`` for whole objects — merged by identity: the base
  order is kept, matched items are merged, new items are appended in patch order;
* anything else (scalars, lists of strings such as ``args``, mixed lists): the patch value
  replaces the base value.

Inputs are never modified; the result shares no mutable structure with either input.
"""

from __future__ import annotations

from typing import Any

from .datacopy import plain_copy

__all__ = ["merge", "identity"]


def identity(item: Any) -> tuple[str, ...] | None:
    """The key an item of a mergeable list is matched by, or None when it has none."""
    if not isinstance(item, dict):
        return None
    metadata = item.get("metadata")
    if isinstance(metadata, dict) and item.get("kind") and metadata.get("name"):
        return ("object", str(item.get("apiVersion", "")), str(item["kind"]), str(metadata["name"]))
    name = item.get("name")
    if isinstance(name, str) and name:
        return ("name", name)
    return None


def _mergeable(items: list[Any]) -> bool:
    return all(identity(item) is not None for item in items)


def merge(base: Any, patch: Any) -> Any:
    """Return ``base`` with ``patch`` merged in, following the rules in the module docstring."""
    if _merges(base, patch):
        return _merge_into(_private(base), patch)
    return _strip_nulls(patch)


def _merges(base: Any, patch: Any) -> bool:
    """True when ``patch`` merges into ``base``; otherwise it replaces it."""
    if isinstance(base, dict) and isinstance(patch, dict):
        return True
    return isinstance(base, list) and isinstance(patch, list) and bool(base) and bool(patch) and _mergeable(base) and _mergeable(patch)


def _private(base: dict[str, Any] | list[Any]) -> dict[str, Any] | list[Any]:
    """A plain dict or list holding copies of ``base``'s items."""
    if isinstance(base, dict):
        return {key: plain_copy(value) for key, value in base.items()}
    return [plain_copy(item) for item in base]


def _merge_into(own: Any, patch: Any) -> Any:
    """``merge`` on a base that is already a private plain dict or list: changed in place, returned.

    Each level of the base is copied once, by ``merge``, rather than again at every level below.
    """
    if type(own) is dict:
        for key, value in patch.items():
            if value is None:
                own.pop(key, None)
            elif key in own:
                own[key] = _merge_private(own[key], value)
            else:
                own[key] = _strip_nulls(value)
        return own
    positions = {identity(item): index for index, item in enumerate(own)}
    for item in patch:
        key = identity(item)
        if key in positions:
            own[positions[key]] = _merge_private(own[positions[key]], item)
        else:
            positions[key] = len(own)
            own.append(_strip_nulls(item))
    return own


def _merge_private(own: Any, patch: Any) -> Any:
    """``merge(own, patch)`` for an ``own`` no one else holds."""
    if not _merges(own, patch):
        return _strip_nulls(patch)
    return _merge_into(own if type(own) is dict or type(own) is list else _private(own), patch)


def _strip_nulls(value: Any) -> Any:
    """A patch value that lands where nothing was: copy it, dropping keys set to null (deletions of nothing)."""
    if isinstance(value, dict):
        return {key: _strip_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_strip_nulls(item) for item in value]
    return value
