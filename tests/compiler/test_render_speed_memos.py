"""The render memos keyed by what a template reads, the copies they hand out, the merge and the
emitter's memo of repeated parts: faster, and never a different byte.

A template is rendered again only when something it can read changed; the places it reads come
from its syntax tree (``template_reads``), ship in the template snapshot, and are followed through
the templates that share its context. These tests pin the analysis on small templates, prove on
the whole platform x GPU grid that every memoised text is the text Jinja renders, and hold the
merge and the emitter to their plain definitions.
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Any

import pytest

import nvcre.compiler.templating as templating
from nvcre.compiler import emit_writer, template_snapshot
from nvcre.compiler.catalog import load_catalog
from nvcre.compiler.datacopy import plain_copy
from nvcre.compiler.detect import platform_names
from nvcre.compiler.emit import dump_yaml_stream
from nvcre.compiler.merge import identity, merge
from nvcre.compiler.overlays import load_overlays
from nvcre.compiler.render import render_certification
from nvcre.compiler.template_reads import MISSING, Reads, own_reads, project
from nvcre.compiler.templating import TemplateSet

REPO = Path(__file__).resolve().parents[2]


def _reads(source: str) -> Reads | None:
    return own_reads(TemplateSet().yaml_env, source, "t.yaml.j2")


# --- what a template reads ----------------------------------------------------------------------


def test_reads_are_names_with_their_constant_steps() -> None:
    found = _reads('{{ o.a }} {{ o["b"] }} {{ x | tojson }}{% for i in items %}{{ i.name }}{% endfor %}{{ deep.a.b.c }}')
    assert found == Reads((("deep", "a", "b", "c"), ("i", "name"), ("items",), ("o", "a"), ("o", "b"), ("x",)), ())


def test_a_value_read_whole_covers_its_parts_and_computed_keys_read_the_whole_value() -> None:
    assert _reads("{{ o.a }}{{ o }}") == Reads((("o",),), ())
    assert _reads("{{ o[key] }}") == Reads((("key",), ("o",)), ())
    assert _reads("{{ o.list[0].name }}") == Reads((("o", "list"),), ())


def test_templates_sharing_the_context_are_named_and_others_are_not() -> None:
    found = _reads('{% include "a.yaml.j2" %}{% import "b.j2" as b with context %}{% import "c.j2" as c %}{{ c.x }}')
    assert found is not None
    assert found.shares_context_with == ("a.yaml.j2", "b.j2")
    assert found.paths == (("c", "x"),)


@pytest.mark.parametrize(
    "source",
    [
        '{% extends "base.j2" %}',
        "{% block body %}{{ o.a }}{% endblock %}",
        "{% include name %}",
        '{% include ["a", "b"] %}',
        "{% import name as n %}",
        "{{ broken",
    ],
    ids=["extends", "block", "computed-include", "include-list", "computed-import", "syntax-error"],
)
def test_templates_read_in_ways_not_followed_have_no_reads(source: str) -> None:
    assert _reads(source) is None


def test_the_projection_records_depth_and_stops_where_a_step_could_reach_an_attribute() -> None:
    paths = (("entry", "variant", "startswith"), ("o", "items"), ("o", "gone"), ("absent",))
    values = {"entry": {"variant": "abc"}, "o": {"items": [1], "gone_not": 1}}
    assert project(values, paths) == [(1, "value", "abc"), (0, "value", values["o"]), (1, MISSING), (0, MISSING)]
    # The same final value reached one step deeper is another key: the template would see a mapping.
    deeper = {"entry": {"variant": {"startswith": "abc"}}, "o": values["o"]}
    assert project(deeper, paths)[0] == (2, "value", "abc")


# --- the memo, on small templates ---------------------------------------------------------------


@pytest.fixture
def roots(tmp_path: Path) -> Path:
    (tmp_path / "doc.yaml.j2").write_text('name: {{ o.name }}\n{% include "part.yaml.j2" %}\n')
    (tmp_path / "part.yaml.j2").write_text("size: {{ o.size }}\n")
    (tmp_path / "method.yaml.j2").write_text("keys: {{ o.keys() | list }}\n")
    return tmp_path


def _counting(templates: TemplateSet, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    renders: list[str] = []
    real = templates._render

    def counting(name: str, values: dict[str, Any], where: str) -> str:
        renders.append(name)
        return real(name, values, where)

    monkeypatch.setattr(templates, "_render", counting)
    return renders


def test_values_a_template_never_reads_do_not_cause_a_render(roots: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    templates = TemplateSet(roots)
    renders = _counting(templates, monkeypatch)
    first = templates.render_yaml("doc.yaml.j2", {"o": {"name": "a", "size": 1, "unread": 1}, "cluster": "aws"}, "here")
    again = templates.render_yaml("doc.yaml.j2", {"o": {"name": "a", "size": 1, "unread": 2}, "cluster": "gcp"}, "here")
    assert first == again == {"name": "a", "size": 1}
    assert renders == ["doc.yaml.j2"]
    # What the included template reads is read too.
    changed = templates.render_yaml("doc.yaml.j2", {"o": {"name": "a", "size": 2, "unread": 2}, "cluster": "gcp"}, "here")
    assert changed == {"name": "a", "size": 2} and len(renders) == 2


def test_a_method_call_reads_the_whole_value(roots: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    templates = TemplateSet(roots)
    renders = _counting(templates, monkeypatch)
    assert templates.render_yaml("method.yaml.j2", {"o": {"a": 1}}, "here") == {"keys": ["a"]}
    assert templates.render_yaml("method.yaml.j2", {"o": {"a": 1, "b": 2}}, "here") == {"keys": ["a", "b"]}
    assert len(renders) == 2


def test_the_recorded_text_is_the_one_compiled_even_after_the_file_changes(roots: Path) -> None:
    templates = TemplateSet(roots)
    assert templates.render_yaml("doc.yaml.j2", {"o": {"name": "a", "size": 1}}, "here") == {"name": "a", "size": 1}
    (roots / "part.yaml.j2").write_text("size: {{ other }}\n")  # the environment keeps what it loaded
    assert templates.render_yaml("doc.yaml.j2", {"o": {"name": "a", "size": 3}, "other": 9}, "here") == {"name": "a", "size": 3}


def test_a_missing_template_is_reported_as_ever(roots: Path) -> None:
    templates = TemplateSet(roots)
    with pytest.raises(Exception, match="does not exist"):
        templates.render_yaml("nowhere.yaml.j2", {}, "here")


def test_each_kept_parse_is_handed_out_as_a_private_copy(roots: Path) -> None:
    templates = TemplateSet(roots)
    values = {"o": {"name": "a", "size": 1}}
    first = templates.render_yaml("doc.yaml.j2", values, "here")
    first["name"] = "changed"
    second = templates.render_yaml("doc.yaml.j2", values, "here")
    second["size"] = 5
    assert templates.render_yaml("doc.yaml.j2", values, "here") == {"name": "a", "size": 1}


# --- the package's own templates ---------------------------------------------------------------


def test_the_snapshot_ships_the_reads_of_every_yaml_template() -> None:
    environment = TemplateSet().yaml_env
    checked = 0
    for path, name in template_snapshot.template_files():
        if template_snapshot.kind_of(name) != "yaml":
            continue
        source = path.read_text(encoding="utf-8")
        known, shipped = template_snapshot.shipped_reads("yaml", name, source)
        assert known, name
        assert shipped == own_reads(environment, source, name), name
        checked += 1
    assert checked > 40
    assert template_snapshot.shipped_reads("yaml", "x.yaml.j2", "{{ a }}") == (False, None)


def _grid() -> list[tuple[str, str]]:
    return list(itertools.product(platform_names(), sorted(load_catalog().gpu_defaults.architectures)))


@pytest.mark.slow
def test_every_memoised_text_on_the_grid_is_what_jinja_renders(monkeypatch: pytest.MonkeyPatch) -> None:
    catalog, overlays = load_catalog(), load_overlays()
    memoised = templating.template_set(str(catalog.root), str(overlays.root))  # the one the passes use
    fresh = TemplateSet(catalog.root, overlays.root)
    compared: list[str] = []
    real = memoised._memo_key

    def checking(name: str, values: dict[str, Any]) -> Any:
        key = real(name, values)
        kept = memoised._texts.get(key) if key is not None else None
        if kept is not None:
            assert kept == fresh._render(name, values, "check"), name
            compared.append(name)
        return key

    monkeypatch.setattr(memoised, "_memo_key", checking)
    categories = [{"domain": e.domain, "variant": e.variant, "options": {"nodesPerJob": 8}} for e in catalog.entries]
    document = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": "grid"},
        "spec": {"target": {}, "categories": categories},
    }
    for platform, arch in _grid():
        render_certification(document, platform=platform, gpu_arch=arch)
    assert len(compared) > 1000  # most renders of the grid are answered by the memo
    assert not any(key[0] == "all" for key in memoised._texts)  # every package template's reads are followed


# --- merge ---------------------------------------------------------------------------------------


def _reference_merge(base: Any, patch: Any) -> Any:
    """The merge rules of ``nvcre.compiler.merge``, spelt out with a fresh copy at every level."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = {key: plain_copy(value) for key, value in base.items()}
        for key, value in patch.items():
            if value is None:
                out.pop(key, None)
            elif key in out:
                out[key] = _reference_merge(out[key], value)
            else:
                out[key] = _without_nulls(value)
        return out
    named = isinstance(base, list) and isinstance(patch, list) and base and patch
    if named and all(identity(i) is not None for i in base) and all(identity(i) is not None for i in patch):
        out_list = [plain_copy(item) for item in base]
        where = {identity(item): index for index, item in enumerate(out_list)}
        for item in patch:
            key = identity(item)
            if key in where:
                out_list[where[key]] = _reference_merge(out_list[where[key]], item)
            else:
                where[key] = len(out_list)
                out_list.append(_without_nulls(item))
        return out_list
    return _without_nulls(patch)


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value


def _random_value(rng: random.Random, depth: int) -> Any:
    roll = rng.random()
    if depth > 3 or roll < 0.3:
        return rng.choice([None, 1, "x", True, 2.5, "y"])
    if roll < 0.55:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if roll < 0.75:  # a named list, merged by identity
        return [{"name": rng.choice("abc"), "v": _random_value(rng, depth + 1)} for _ in range(rng.randint(1, 3))]
    return {rng.choice("abcd"): _random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def _shares_a_container(a: Any, b: Any) -> bool:
    ids: set[int] = set()

    def collect(value: Any, into: set[int]) -> None:
        if isinstance(value, (dict, list)):
            into.add(id(value))
            for item in value.values() if isinstance(value, dict) else value:
                collect(item, into)

    collect(a, ids)
    theirs: set[int] = set()
    collect(b, theirs)
    return bool(ids & theirs)


def test_merge_gives_the_rules_results_and_shares_nothing_with_its_inputs() -> None:
    rng = random.Random(40)
    for _ in range(3000):
        base, patch = _random_value(rng, 0), _random_value(rng, 0)
        base_before, patch_before = plain_copy(base), plain_copy(patch)
        result = merge(base, patch)
        assert result == _reference_merge(base, patch)
        assert base == base_before and patch == patch_before
        assert not _shares_a_container(result, base) and not _shares_a_container(result, patch)


# --- the emitter's memo of repeated parts -------------------------------------------------------


def test_repeated_parts_are_written_once_and_give_the_same_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    documents = [{"metadata": {"name": f"n{i % 3}"}, "spec": _random_value(rng, 0) or {"a": 1}} for i in range(300)]
    monkeypatch.setattr(emit_writer, "_chunks", {})
    with_memo = [emit_writer.write_document(d) for d in documents + documents]
    assert emit_writer._chunks, "no part was remembered"
    monkeypatch.setattr(emit_writer, "_CHUNK_DEPTH", -1)  # a depth never reached: the memo is off
    assert with_memo == [emit_writer.write_document(d) for d in documents + documents]


def test_parts_marshal_cannot_serialise_are_written_without_the_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    from collections import OrderedDict

    monkeypatch.setattr(emit_writer, "_chunks", {})
    plain = {"spec": {"part": {"a": 1, "b": [True, 1]}}}
    ordered = {"spec": {"part": OrderedDict([("a", 1), ("b", [True, 1])])}}
    assert emit_writer.write_document(plain) == emit_writer.write_document(ordered)
    assert len(emit_writer._chunks) == 1
    # 1 and True serialise apart, so neither is written as the other.
    assert emit_writer.write_document({"spec": {"part": {"a": True, "b": [1, True]}}}).count("true") == 2


def test_the_memo_of_parts_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(emit_writer, "_chunks", {})
    monkeypatch.setattr(emit_writer, "_CHUNKS_LIMIT", 5)
    for index in range(20):
        emit_writer.write_document({"spec": {"part": {"i": index}}})
        assert len(emit_writer._chunks) <= 5


def test_the_grid_renders_and_emits_the_same_bytes_with_every_memo_cleared() -> None:
    catalog = load_catalog()
    categories = [{"domain": e.domain, "variant": e.variant, "options": {"nodesPerJob": 8}} for e in catalog.entries]
    document = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": "memo"},
        "spec": {"target": {}, "categories": categories},
    }
    pairs = _grid()[::9]
    warm = [dump_yaml_stream(render_certification(document, platform=p, gpu_arch=a).workflows) for p, a in pairs * 2]
    templating.template_set.cache_clear()
    templating._parsed.clear()
    emit_writer._chunks.clear()
    cold = [dump_yaml_stream(render_certification(document, platform=p, gpu_arch=a).workflows) for p, a in pairs]
    assert warm[: len(pairs)] == warm[len(pairs) :] == cold


# --- the YAML loader ------------------------------------------------------------------------------


def test_the_yaml_loader_looks_for_plug_ins_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    from ruamel.yaml import YAML

    from nvcre.compiler import yamlio

    searches: list[int] = []
    real = YAML.official_plug_ins

    def counting(self: YAML) -> object:
        searches.append(1)
        return real(self)

    monkeypatch.setattr(YAML, "official_plug_ins", counting)
    monkeypatch.setattr(yamlio._Loader, "_plug_ins", None)
    loaders = [yamlio.make_loader() for _ in range(3)]
    assert len(searches) == 1
    assert all(loader.official_plug_ins() == real(loader) for loader in loaders)
    assert yamlio.load_documents("a: yes\nb: [1, 2.5, null]\n", snapshot=False) == [{"a": True, "b": [1, 2.5, None]}]
