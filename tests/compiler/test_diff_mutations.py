"""Mutation test: every single-field change to a golden render is reported at its path, with its cause.

Each mutation changes one leaf of one rendered object. The diff must report exactly one field,
at the path a reviewer would write (named list items by name, a list of plain values as a
whole), with the old and new values, and name the cause: the source or catalog for ordinary
fields, the overlay or fact for a change to the provenance annotations.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nvcre.compiler.diff import UNCHANGED_PROVENANCE, diff_renders
from nvcre.compiler.yamlio import load_documents
from tests.goldenharness import GOLDEN

OVERLAYS = "nvcre.nvidia.com/applied-overlays"
FACTS = "nvcre.nvidia.com/render-facts"
RENDERS = sorted(p / "expected.yaml" for p in (GOLDEN / "render").iterdir() if (p / "expected.yaml").is_file())
#: Every leaf of these renders is mutated; the others are sampled (every STRIDE-th leaf).
EXHAUSTIVE = {"aws-h100-all-reduce", "gcp-h100-all-reduce", "nemotron5-8b-onprem-gb300"}
STRIDE = 13


def load(path: Path) -> list[dict]:
    return load_documents(path.read_text())


def leaves(tree: Any, parts: tuple = ()) -> Iterator[tuple]:
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from leaves(value, (*parts, key))
    elif isinstance(tree, list):
        for index, value in enumerate(tree):
            yield from leaves(value, (*parts, index))
    else:
        yield parts


def selector(items: list, index: int) -> str:
    """How a reviewer names item ``index``: by name when every item is uniquely named."""
    names = [i.get("name") if isinstance(i, dict) else None for i in items]
    if all(isinstance(n, str) for n in names) and len(set(names)) == len(names):
        return f"[name={names[index]}]"
    pairs = [(i.get("kind"), (i.get("metadata") or {}).get("name")) if isinstance(i, dict) else None for i in items]
    if all(p and isinstance(p[0], str) and isinstance(p[1], str) for p in pairs) and len(set(pairs)) == len(pairs):
        return f"[kind={pairs[index][0]},name={pairs[index][1]}]"
    return f"[{index}]"


def expected_path(document: dict, parts: tuple) -> str:
    out, node = "", document
    for part in parts:
        if isinstance(part, int):
            out += selector(node, part)
        elif re.match(r"^[A-Za-z_][A-Za-z0-9_-]*$", part):
            out += f".{part}" if out else part
        else:
            out += f'["{part}"]'
        node = node[part]
    return out


def identity_field(document: dict, parts: tuple) -> bool:
    """Leaves that name an object or a named list item: changing them renames, not edits."""
    if parts in (("kind",), ("metadata", "name")):
        return True
    parent = document
    for part in parts[:-2]:
        parent = parent[part]
    if len(parts) >= 2 and isinstance(parts[-2], int) and parts[-1] in ("name", "kind"):
        return selector(parent, parts[-2]) != f"[{parts[-2]}]"
    if len(parts) >= 3 and parts[-2:] == ("metadata", "name") and isinstance(parts[-3], int):
        holder = document
        for part in parts[:-3]:
            holder = holder[part]
        return selector(holder, parts[-3]) != f"[{parts[-3]}]"
    return False


def mutated(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "-mutated"
    return "mutated"


def set_leaf(document: dict, parts: tuple, value: Any) -> dict:
    copied = copy.deepcopy(document)
    node = copied
    for part in parts[:-1]:
        node = node[part]
    node[parts[-1]] = value
    return copied


def mutations() -> list[tuple[str, int, tuple]]:
    found = []
    for render in RENDERS:
        case = render.parent.name
        for index, document in enumerate(load(render)):
            paths = [p for p in leaves(document) if p[:2] != ("metadata", "annotations") and not identity_field(document, p)]
            chosen = paths if case in EXHAUSTIVE else paths[index % STRIDE :: STRIDE]
            found.extend((case, index, p) for p in chosen)
    return found


MUTATIONS = mutations()


def test_the_sample_is_large_and_covers_every_golden() -> None:
    assert len(RENDERS) >= 40
    assert {case for case, _, _ in MUTATIONS} == {r.parent.name for r in RENDERS}
    assert len(MUTATIONS) > 1000


@pytest.mark.parametrize("case", sorted({c for c, _, _ in MUTATIONS}))
def test_every_single_field_change_is_reported_at_its_path(case: str) -> None:
    documents = load(GOLDEN / "render" / case / "expected.yaml")
    for _, index, parts in (m for m in MUTATIONS if m[0] == case):
        document = documents[index]
        node = document
        for part in parts[:-1]:
            node = node[part]
        whole_list = isinstance(node, list) and all(not isinstance(v, (dict, list)) for v in node)
        old_value = node[parts[-1]]
        changed = set_leaf(document, parts, mutated(old_value))
        result = diff_renders(documents, [*documents[:index], changed, *documents[index + 1 :]])
        assert len(result.objects) == 1, parts
        (obj,) = result.objects
        assert obj.status == "changed" and obj.name == document["metadata"]["name"]
        (field,) = obj.fields
        where = parts[:-1] if whole_list else parts
        assert field.path == expected_path(document, where), parts
        assert field.change == "changed"
        if whole_list:
            assert (field.old, field.new) == (node, [mutated(v) if i == parts[-1] else v for i, v in enumerate(node)])
        else:
            assert (field.old, field.new) == (old_value, mutated(old_value))
        assert field.causes == (UNCHANGED_PROVENANCE,)


def provenance(document: dict, key: str) -> Any:
    return json.loads(document["metadata"]["annotations"][key])


def with_annotation(document: dict, key: str, value: Any) -> dict:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return set_leaf(document, ("metadata", "annotations", key), text)


@pytest.mark.parametrize("render", RENDERS, ids=[r.parent.name for r in RENDERS])
def test_provenance_changes_name_the_overlay_or_fact(render: Path) -> None:
    documents = load(render)
    document = documents[0]
    path = f'metadata.annotations["{OVERLAYS}"]'
    overlays = provenance(document, OVERLAYS)

    added = diff_renders([document], [with_annotation(document, OVERLAYS, [*overlays, "extra-overlay"])])
    (field,) = added.objects[0].fields
    assert (field.path, field.causes) == (path, ("overlay extra-overlay now applies",))
    if overlays:
        dropped = diff_renders([document], [with_annotation(document, OVERLAYS, overlays[:-1])])
        (field,) = dropped.objects[0].fields
        assert (field.path, field.causes) == (path, (f"overlay {overlays[-1]} no longer applies",))

    facts = provenance(document, FACTS)
    name = sorted(facts)[0]
    before = facts[name]
    after = {**before, "source": "detected" if before.get("source") != "detected" else "supplied"}
    moved = diff_renders([document], [with_annotation(document, FACTS, {**facts, name: after})])
    (field,) = moved.objects[0].fields
    assert field.path == f'metadata.annotations["{FACTS}"]'
    (cause,) = field.causes
    assert cause.startswith(f"fact {name}: ") and f"({before['source']}) -> " in cause and cause.endswith(f"({after['source']})")
    # the object-level causes name the same fact for every other field that changed with it
    both = set_leaf(with_annotation(document, FACTS, {**facts, name: after}), ("spec", "orchestration", "iterations"), 7)
    result = diff_renders([document], [both])
    by_path = {f.path: f for f in result.objects[0].fields}
    assert by_path["spec.orchestration.iterations"].causes == (cause,)


def test_an_edited_annotation_is_called_out() -> None:
    (document,) = load(GOLDEN / "render" / "aws-h100-all-reduce" / "expected.yaml")
    edited = set_leaf(document, ("metadata", "annotations", OVERLAYS), "not json")
    (field,) = diff_renders([document], [edited]).objects[0].fields
    assert field.causes == (f"annotation {OVERLAYS} was edited: it no longer holds the JSON the renderer writes",)
