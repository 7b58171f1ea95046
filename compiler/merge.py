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
    if isinstance(base, dict) and isinstance(patch, dict):
        out = {key: plain_copy(value) for key, value in base.items()}
        for key, value in patch.items():
            if value is None:
                out.pop(key, None)
            elif key in out:
                out[key] = merge(out[key], value)
            else:
                out[key] = _strip_nulls(value)
        return out
    if isinstance(base, list) and isinstance(patch, list) and base and patch and _mergeable(base) and _mergeable(patch):
        out_list = [plain_copy(item) for item in base]
        positions = {identity(item): index for index, item in enumerate(out_list)}
        for item in patch:
            key = identity(item)
            if key in positions:
                out_list[positions[key]] = merge(out_list[positions[key]], item)
            else:
                positions[key] = len(out_list)
                out_list.append(_strip_nulls(item))
        return out_list
    return _strip_nulls(patch)


def _strip_nulls(value: Any) -> Any:
    """A patch value that lands where nothing was: copy it, dropping keys set to null (deletions of nothing)."""
    if isinstance(value, dict):
        return {key: _strip_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_strip_nulls(item) for item in value]
    return value
