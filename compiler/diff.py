"""Semantic diff of two renders: which objects changed, at which field paths, and why.

Pure: two lists of rendered objects in, a :class:`RenderDiff` out. Objects are matched by kind
and name, then (for a name that changed, e.g. a new options suffix) by the category they render.
Fields are compared in one walk that skips equal subtrees; lists of named items (``containers``,
``env``, ``volumes``, dependencies by kind and name) are compared by name, so a path reads
``...containers[name=node].image`` rather than an index that shifts, and other lists that
changed go to deepdiff. A list of plain values that
changed is reported once, at the list. Each change names its cause from the provenance
annotations the renders carry: overlays that started or stopped applying and cluster facts whose
value or source changed; when neither moved, the change came from the source document or the
catalog. Presentation (text, markdown, JSON) is the CLI's job.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .redact import redact_value
from .vocabulary import (
    ANNOTATION_APPLIED_OVERLAYS,
    ANNOTATION_RENDER_FACTS,
    LABEL_CATEGORY_DOMAIN,
    LABEL_CATEGORY_VARIANT,
    LABEL_CERTIFICATION,
    LABEL_WORKLOADRUN,
)

__all__ = [
    "UNCHANGED_PROVENANCE",
    "FieldChange",
    "ObjectChange",
    "RenderDiff",
    "category_of",
    "diff_renders",
    "format_path",
]

UNCHANGED_PROVENANCE = "source or catalog (no overlay or cluster fact changed)"
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


class _Absent:
    def __repr__(self) -> str:
        return "<absent>"


ABSENT: Any = _Absent()


@dataclass(frozen=True)
class FieldChange:
    """One field that differs; ``old`` or ``new`` is :data:`ABSENT` for an added or removed field."""

    path: str
    change: str  # "changed" | "added" | "removed" | "reordered"
    old: Any
    new: Any
    causes: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"path": self.path, "change": self.change, "causes": list(self.causes)}
        if self.old is not ABSENT:
            data["old"] = self.old
        if self.new is not ABSENT:
            data["new"] = self.new
        return data


@dataclass(frozen=True)
class ObjectChange:
    category: str
    kind: str
    name: str
    status: str  # "added" | "removed" | "changed" | "renamed"
    causes: tuple[str, ...]
    fields: tuple[FieldChange, ...] = ()
    old_name: str | None = None

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "category": self.category,
            "kind": self.kind,
            "name": self.name,
            "status": self.status,
            "causes": list(self.causes),
            "fields": [f.as_dict() for f in self.fields],
        }
        if self.old_name is not None:
            data["oldName"] = self.old_name
        return data


@dataclass(frozen=True)
class RenderDiff:
    objects: tuple[ObjectChange, ...] = field(default_factory=tuple)

    @property
    def equal(self) -> bool:
        return not self.objects

    def categories(self) -> list[tuple[str, list[ObjectChange]]]:
        """Changes grouped by category, categories in first-seen order."""
        groups: dict[str, list[ObjectChange]] = {}
        for change in self.objects:
            groups.setdefault(change.category, []).append(change)
        return list(groups.items())

    def as_dict(self) -> dict[str, Any]:
        return {"equal": self.equal, "objects": [o.as_dict() for o in self.objects]}


# --- identity -----------------------------------------------------------------------------------


def _meta(document: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = document.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _identity(document: Mapping[str, Any]) -> tuple[str, str, str]:
    meta = _meta(document)
    return (str(document.get("kind") or ""), str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def category_of(document: Mapping[str, Any]) -> str:
    """``domain/variant`` from the category labels, else the WorkloadRun it renders, else the kind."""
    labels = _meta(document).get("labels") or {}
    domain = labels.get(LABEL_CATEGORY_DOMAIN)
    variant = labels.get(LABEL_CATEGORY_VARIANT)
    if domain and variant:
        return f"{domain}/{variant}"
    for key, value in sorted(labels.items()):
        if key.startswith(LABEL_WORKLOADRUN):
            return f"workloadrun/{value}"
    return str(document.get("kind") or "object")


def _lineage(document: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """What a renamed object still shares with its old self: kind, source and category."""
    labels = _meta(document).get("labels") or {}
    source = labels.get(LABEL_CERTIFICATION) or labels.get(LABEL_WORKLOADRUN)
    if not source:
        return None
    return (str(document.get("kind") or ""), str(source), category_of(document))


# --- provenance ---------------------------------------------------------------------------------


class _Unreadable(Exception):
    """A provenance annotation that is present but not the JSON the renderer writes."""


def _annotation_json(document: Mapping[str, Any], key: str, default: Any, expected: type) -> Any:
    raw = (_meta(document).get("annotations") or {}).get(key)
    if raw is None:
        return default
    try:
        value = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        value = None
    if not isinstance(value, expected):
        raise _Unreadable(key)
    return value


#: Longest fact value quoted in a cause (structured facts such as the TCPXO plugin can be long).
FACT_TEXT_LIMIT = 72


def _fact_text(item: Any) -> str:
    value, source = (item.get("value"), item.get("source")) if isinstance(item, Mapping) else (item, None)
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(",", ":"))
    if len(text) > FACT_TEXT_LIMIT:
        text = text[: FACT_TEXT_LIMIT - 3] + "..."
    return f"{text} ({source})" if source else text


def _unreadable(key: str) -> list[str]:
    return [f"annotation {key} was edited: it no longer holds the JSON the renderer writes"]


def overlay_causes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Overlays that started or stopped applying (or changed order) between two versions of an object."""
    try:
        before = [str(o) for o in _annotation_json(old, ANNOTATION_APPLIED_OVERLAYS, [], list)]
        after = [str(o) for o in _annotation_json(new, ANNOTATION_APPLIED_OVERLAYS, [], list)]
    except _Unreadable as exc:
        return _unreadable(str(exc))
    causes = [f"overlay {name} now applies" for name in after if name not in before]
    causes += [f"overlay {name} no longer applies" for name in before if name not in after]
    if not causes and before != after:
        causes.append(f"overlay order changed: {', '.join(before)} -> {', '.join(after)}")
    return causes


def fact_causes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Cluster facts whose value or source changed between two versions of an object."""
    try:
        before = _annotation_json(old, ANNOTATION_RENDER_FACTS, {}, dict)
        after = _annotation_json(new, ANNOTATION_RENDER_FACTS, {}, dict)
    except _Unreadable as exc:
        return _unreadable(str(exc))
    causes = []
    for name in sorted(set(before) | set(after)):
        if name not in before:
            causes.append(f"fact {name} now set: {_fact_text(after[name])}")
        elif name not in after:
            causes.append(f"fact {name} no longer set (was {_fact_text(before[name])})")
        elif before[name] != after[name]:
            causes.append(f"fact {name}: {_fact_text(before[name])} -> {_fact_text(after[name])}")
    return causes


def _provenance_summary(document: Mapping[str, Any]) -> tuple[str, ...]:
    """What an added object was rendered with: its overlays and facts."""
    try:
        overlays = [str(o) for o in _annotation_json(document, ANNOTATION_APPLIED_OVERLAYS, [], list)]
        facts = _annotation_json(document, ANNOTATION_RENDER_FACTS, {}, dict)
    except _Unreadable as exc:
        return tuple(_unreadable(str(exc)))
    causes = [f"overlay {name} applies" for name in overlays]
    causes += [f"fact {name}: {_fact_text(facts[name])}" for name in sorted(facts)]
    return tuple(causes)


# --- fields -------------------------------------------------------------------------------------


def _item_key(items: Sequence[Any]) -> list[tuple[str, ...]] | None:
    """Keys for a list whose items are all named (uniquely), else None."""
    if not items or not all(isinstance(i, dict) for i in items):
        return None
    if all(isinstance(i.get("name"), str) for i in items):
        keys: list[tuple[str, ...]] = [("name", i["name"]) for i in items]
    elif all(isinstance(i.get("kind"), str) and isinstance(_meta(i).get("name"), str) for i in items):
        keys = [("kind", i["kind"], _meta(i)["name"]) for i in items]
    else:
        return None
    return keys if len(set(keys)) == len(keys) else None


def _keyed(value: Any) -> Any:
    """A copy in which named lists become dicts keyed by ``(\"name\", value)`` tuples."""
    if isinstance(value, dict):
        return {k: _keyed(v) for k, v in value.items()}
    if isinstance(value, list):
        keys = _item_key(value)
        if keys is not None:
            return {key: _keyed(item) for key, item in zip(keys, value)}
        return [_keyed(item) for item in value]
    return value


def _plain(value: Any) -> Any:
    """Undo :func:`_keyed` for display."""
    if isinstance(value, dict):
        if value and all(isinstance(k, tuple) for k in value):
            return [_plain(v) for v in value.values()]
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def format_path(parts: Sequence[Any]) -> str:
    """``metadata.annotations["a/b"]``, ``spec.args[3]``, ``containers[name=node]``, ``[kind=K,name=n]``."""
    out = ""
    for part in parts:
        if isinstance(part, tuple):
            out += f"[name={part[1]}]" if part[0] == "name" else f"[kind={part[1]},name={part[2]}]"
        elif isinstance(part, int):
            out += f"[{part}]"
        elif _IDENTIFIER.match(str(part)):
            out += f".{part}" if out else str(part)
        else:
            out += f"[{json.dumps(str(part))}]"
    return out


def _walk(tree: Any, parts: Sequence[Any]) -> Any:
    for part in parts:
        try:
            tree = tree[part]
        except (KeyError, IndexError, TypeError):
            return ABSENT
    return tree


def _scalar_list(value: Any) -> bool:
    return isinstance(value, list) and all(not isinstance(v, (dict, list)) for v in value)


def _strict_equal(a: Any, b: Any) -> bool:
    """Equality that also tells ``true`` from ``1`` and ``1`` from ``1.0`` (plain ``==`` does not)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_strict_equal(x, y) for x, y in zip(a, b))
    return bool(a == b)


Raw = tuple[list[Any], str, Any, Any]
Reorder = tuple[list[Any], list[Any], list[Any]]


def _changes(old: Any, new: Any, parts: list[Any], changes: list[Raw], reorders: list[Reorder]) -> None:
    """Changed leaves and subtrees into ``changes``, named lists whose order changed into ``reorders``.

    One walk over the raw values that skips every equal subtree at once (most of two renders), so
    the unchanged parts are never copied or visited twice. A list whose items are all named is
    compared as a mapping keyed by name (so an insertion does not shift every index) and checked
    for a changed order; other lists go to deepdiff whole."""
    if old == new and _strict_equal(old, new):  # plain == first: fast, and False settles it
        return
    if isinstance(old, dict) and isinstance(new, dict):
        _mapping_changes(old, new, parts, changes, reorders)
        return
    if isinstance(old, list) and isinstance(new, list):
        old_keys, new_keys = _item_key(old), _item_key(new)
        if old_keys is not None and new_keys is not None:
            in_old, in_new = set(old_keys), set(new_keys)
            common_old = [k for k in old_keys if k in in_new]
            common_new = [k for k in new_keys if k in in_old]
            if common_old != common_new:
                reorders.append((parts, [format_path([k]) for k in old_keys], [format_path([k]) for k in new_keys]))
            _mapping_changes(dict(zip(old_keys, old)), dict(zip(new_keys, new)), parts, changes, reorders)
            return
        if len(old) == len(new):
            for index, (a, b) in enumerate(zip(old, new)):
                reorders.extend(_reorders(a, b, [*parts, index]))
        if old_keys is not None or new_keys is not None:
            changes.append((parts, "changed", old, new))
        elif _scalar_list(old) and _scalar_list(new):
            changes.append((parts, "changed", old, new))
        else:
            changes.extend(_list_changes(_keyed(old), _keyed(new), parts))
        return
    changes.append((parts, "changed", old, new))


def _mapping_changes(old: dict[Any, Any], new: dict[Any, Any], parts: list[Any], changes: list[Raw], reorders: list[Reorder]) -> None:
    for key in old:
        if key not in new:
            changes.append(([*parts, key], "removed", old[key], ABSENT))
    for key in new:
        if key not in old:
            changes.append(([*parts, key], "added", ABSENT, new[key]))
    for key in old:
        if key in new:
            _changes(old[key], new[key], [*parts, key], changes, reorders)


def _list_changes(old: list[Any], new: list[Any], parts: list[Any]) -> Iterator[tuple[list[Any], str, Any, Any]]:
    """Lists of unnamed items: deepdiff aligns them; plain-value sublists are reported whole."""
    from deepdiff import DeepDiff

    found = DeepDiff(old, new, view="tree", verbose_level=2)
    collapsed: set[tuple[Any, ...]] = set()
    for kind, changes in found.items():
        for change in changes:
            rel = list(change.path(output_format="list"))
            parent = rel[:-1]
            if rel and isinstance(rel[-1], int) and _scalar_list(_walk(old, parent)) and _scalar_list(_walk(new, parent)):
                if tuple(parent) not in collapsed:
                    collapsed.add(tuple(parent))
                    yield [*parts, *parent], "changed", _walk(old, parent), _walk(new, parent)
                continue
            t1 = ABSENT if kind in ("dictionary_item_added", "iterable_item_added") else change.t1
            t2 = ABSENT if kind in ("dictionary_item_removed", "iterable_item_removed") else change.t2
            label = "added" if t1 is ABSENT else "removed" if t2 is ABSENT else "changed"
            yield [*parts, *rel], label, t1, t2


def _reorders(old: Any, new: Any, parts: list[Any]) -> Iterator[tuple[list[Any], list[Any], list[Any]]]:
    """Named lists whose common items changed order (deepdiff sees keyed lists as unordered dicts)."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in old:
            if key in new:
                yield from _reorders(old[key], new[key], [*parts, key])
    elif isinstance(old, list) and isinstance(new, list):
        old_keys, new_keys = _item_key(old), _item_key(new)
        if old_keys is not None and new_keys is not None:
            common_old = [k for k in old_keys if k in new_keys]
            common_new = [k for k in new_keys if k in old_keys]
            if common_old != common_new:
                yield parts, [format_path([k]) for k in old_keys], [format_path([k]) for k in new_keys]
            by_key = dict(zip(new_keys, new))
            for key, item in zip(old_keys, old):
                if key in by_key:
                    yield from _reorders(item, by_key[key], [*parts, key])
        elif len(old) == len(new):
            for index, (a, b) in enumerate(zip(old, new)):
                yield from _reorders(a, b, [*parts, index])


def _field_causes(parts: Sequence[Any], overlays: list[str], facts: list[str]) -> tuple[str, ...]:
    if parts[:2] == ["metadata", "annotations"] and len(parts) >= 3:
        if parts[2] == ANNOTATION_APPLIED_OVERLAYS:
            return tuple(overlays) or (UNCHANGED_PROVENANCE,)
        if parts[2] == ANNOTATION_RENDER_FACTS:
            return tuple(facts) or (UNCHANGED_PROVENANCE,)
    return tuple(overlays + facts) or (UNCHANGED_PROVENANCE,)


def diff_objects(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[tuple[FieldChange, ...], tuple[str, ...]]:
    """Field changes between two versions of one object, and the causes the provenance names."""
    overlays, facts = overlay_causes(old, new), fact_causes(old, new)
    raw: list[Raw] = []
    reorders: list[Reorder] = []
    _changes(dict(old), dict(new), [], raw, reorders)
    changes = [
        FieldChange(format_path(parts), label, _plain_value(t1), _plain_value(t2), _field_causes(parts, overlays, facts))
        for parts, label, t1, t2 in raw
    ]
    for parts, before, after in reorders:
        changes.append(
            FieldChange(format_path(parts), "reordered", redact_value(before), redact_value(after), _field_causes(parts, overlays, facts))
        )
    changes.sort(key=lambda c: c.path)
    return tuple(changes), tuple(overlays + facts) or (UNCHANGED_PROVENANCE,)


def _plain_value(value: Any) -> Any:
    """A value as the review shows it: plain data, with URL credentials hidden."""
    return value if value is ABSENT else redact_value(_plain(value))


def _occurrences(documents: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, str, int]]:
    """Identity of each object plus its occurrence number, so repeated names still pair up in order."""
    seen: dict[tuple[str, str, str], int] = {}
    keys = []
    for document in documents:
        identity = _identity(document)
        seen[identity] = seen.get(identity, 0) + 1
        keys.append((*identity, seen[identity]))
    return keys


def diff_renders(old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]) -> RenderDiff:
    """Every object added, removed, renamed or changed between two renders, in the new render's order."""
    old_keys, new_keys = _occurrences(old), _occurrences(new)
    old_by_key = dict(zip(old_keys, old))
    new_key_set = set(new_keys)
    # Objects only one side has may still be one object renamed: same kind, source and category.
    lineage_old: dict[tuple[str, str, str], list[tuple[str, str, str, int]]] = {}
    for key, document in zip(old_keys, old):
        lin = _lineage(document)
        if key not in new_key_set and lin is not None:
            lineage_old.setdefault(lin, []).append(key)
    lineage_new: dict[tuple[str, str, str], int] = {}
    for key, document in zip(new_keys, new):
        lin = _lineage(document)
        if key not in old_by_key and lin is not None:
            lineage_new[lin] = lineage_new.get(lin, 0) + 1

    results: list[ObjectChange] = []
    paired: set[tuple[str, str, str, int]] = set()
    for key, document in zip(new_keys, new):
        kind, _, name, _ = key
        before_key: tuple[str, str, str, int] | None = key if key in old_by_key else None
        status = "changed"
        if before_key is None:
            lin = _lineage(document)
            candidates = lineage_old.get(lin, []) if lin is not None else []
            if lin is not None and len(candidates) == 1 and lineage_new.get(lin) == 1:
                before_key, status = candidates[0], "renamed"
        if before_key is None:
            results.append(
                ObjectChange(category_of(document), kind, name, "added", ("not in the old render", *_provenance_summary(document)))
            )
            continue
        paired.add(before_key)
        before = old_by_key[before_key]
        if status == "changed" and before == document and _strict_equal(before, document):
            continue
        fields, causes = diff_objects(before, document)
        if status == "renamed":
            fields = tuple(f for f in fields if f.path != "metadata.name")
        results.append(
            ObjectChange(category_of(document), kind, name, status, causes, fields, before_key[2] if status == "renamed" else None)
        )
    for key, document in zip(old_keys, old):
        if key not in new_key_set and key not in paired:
            results.append(ObjectChange(category_of(document), key[0], key[2], "removed", ("not in the new render",)))
    return RenderDiff(tuple(results))
