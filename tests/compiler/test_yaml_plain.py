"""The direct walk over composed YAML nodes gives exactly ruamel's documents, or declines.

``yaml_plain.plain_documents`` may return None for anything (the usual load then runs); when it
returns documents they must be ruamel's, value for value and type for type, and whenever ruamel
refuses a text it must decline, so every error still comes from the usual load.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nvcre.compiler import templating
from nvcre.compiler.catalog import load_catalog
from nvcre.compiler.detect import platform_names
from nvcre.compiler.overlays import load_overlays
from nvcre.compiler.render import render_certification
from nvcre.compiler.yaml_plain import plain_documents
from nvcre.compiler.yamlio import load_documents, make_loader

REPO = Path(__file__).resolve().parents[2]
VERSIONS = [(1, 1), None]


def _same(a: Any, b: Any) -> bool:
    """Equal with the same types all the way down (1, 1.0, True and "1" told apart; NaN equals NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and a != a:
        return b != b
    return bool(a == b)


def _ruamel(text: str, version: tuple[int, int] | None) -> list[Any]:
    return [doc for doc in make_loader(version).load_all(text) if doc is not None]


def _check(text: str, version: tuple[int, int] | None) -> bool:
    """True when the walk built the documents itself (False: it declined); fails on any difference."""
    fast = plain_documents(make_loader(version), text)
    try:
        expected = _ruamel(text, version)
    except Exception:  # noqa: BLE001 - ruamel refuses it: the walk must have declined
        assert fast is None, f"built documents from a text ruamel refuses: {text!r}"
        return False
    if fast is None:
        return False
    assert _same(fast, expected), f"{text!r}: {fast!r} != {expected!r}"
    return True


def _yaml_files(*roots: str) -> list[Path]:
    return sorted(path for root in roots for path in (REPO / root).rglob("*.yaml"))


def test_the_package_s_own_files_read_the_same() -> None:
    files = _yaml_files("catalog", "platforms", "compiler/api/crds", "examples")
    assert len(files) > 100
    built = sum(_check(path.read_text(encoding="utf-8"), version) for path in files for version in VERSIONS)
    assert built == 2 * len(files)  # all of them plain: the walk is what reads them


@pytest.mark.slow
def test_every_yaml_file_of_the_repository_reads_the_same() -> None:
    files = _yaml_files("golden", "tests/fixtures", "charts")
    assert len(files) > 500
    built = sum(_check(path.read_text(encoding="utf-8"), version) for path in files for version in VERSIONS)
    assert built > len(files)  # nearly every file is plain: the walk is what reads them


@pytest.mark.slow
def test_every_template_the_platform_matrix_renders_reads_the_same() -> None:
    catalog = load_catalog()
    categories = [{"domain": e.domain, "variant": e.variant, "options": {"nodesPerJob": 8}} for e in catalog.entries]
    document = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": "m"},
        "spec": {"target": {}, "categories": categories},
    }
    for platform, arch in itertools.product(platform_names(), sorted(catalog.gpu_defaults.architectures)):
        render_certification(document, platform=platform, gpu_arch=arch)
    texts = {text for templates in _template_sets() for text in templates._texts.values()}
    assert len(texts) > 100
    assert all(_check(text, (1, 1)) for text in texts)


def _template_sets() -> list[templating.TemplateSet]:
    """The template set every render of the package uses (catalog and platforms folders)."""
    return [templating.template_set(str(load_catalog().root), str(load_overlays().root))]


# A text made of fragments that hit every rule: plain and quoted keys, keys of other types, the
# merge and value keys, duplicates, anchors and aliases, explicit tags, YAML 1.1 numbers and
# booleans, dates, flow collections, several documents, and broken syntax.
KEYS = ["a", "b", "'a'", '"b"', "<<", "=", "~", "1", "yes", "null", "? c", "[x]", "!!str 2", "&k d", "*k", "0o7", "1:20"]
VALUES = [
    "x",
    "'x'",
    '"a\\u00e9"',
    "1",
    "012",
    "0x1F",
    "0o17",
    "1_000",
    "1:30",
    "1.5",
    ".inf",
    "-.nan",
    "1e3",
    "yes",
    "On",
    "~",
    "",
    "2001-12-14",
    "2001-12-14t21:59:43.10-05:00",
    "!!binary aGk=",
    "!!str 12",
    "!!int '7'",
    "!!float 3",
    "!!set {a, b}",
    "!!omap [a: 1]",
    "!custom x",
    "&s x",
    "*s",
    "[1, x, {a: b}]",
    "{a: 1, a: 2}",
    "{}",
    "[]",
    "'unterminated",
    "[open",
    "9" * 70,
    "|\n    block\n    text",
    ">-\n    folded\n    text",
    "- nested",
    "&m {a: 1}",
    "*m",
]


def _fragment(keys: list[str], values: list[str], indent: str = "") -> str:
    return "".join(f"{indent}{key}: {value}\n" for key, value in zip(keys, values))


texts = st.one_of(
    st.builds(_fragment, st.lists(st.sampled_from(KEYS), max_size=5), st.lists(st.sampled_from(VALUES), max_size=5)),
    st.builds(
        lambda outer, inner_keys, inner_values, items: (
            f"{outer}:\n" + _fragment(inner_keys, inner_values, "  ") + "".join(f"- {v}\n" for v in items)
        ),
        st.sampled_from(KEYS),
        st.lists(st.sampled_from(KEYS), max_size=4),
        st.lists(st.sampled_from(VALUES), max_size=4),
        st.lists(st.sampled_from(VALUES), max_size=3),
    ),
    st.lists(st.sampled_from(VALUES), max_size=4).map(lambda items: "".join(f"- {v}\n" for v in items)),
    st.lists(st.sampled_from([*VALUES, "---", "--- a: 1", "%YAML 1.2\n---", "..."]), max_size=5).map("\n".join),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts, st.sampled_from(VERSIONS))
def test_generated_texts_read_the_same_or_are_declined(text: str, version: tuple[int, int] | None) -> None:
    _check(text, version)


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\na: 2\n",  # a duplicate key: ruamel's error
        "base: &b {x: 1}\nuse: *b\n",  # an alias of a mapping: ruamel shares it
        "base: &b {x: 1}\nuse:\n  <<: *b\n  y: 2\n",  # a merge key
        "? [a, b]\n: c\n",  # a key that is a list
        "1: one\n",  # a key that is a number
        "s: !!set {a, b}\n",  # a tagged collection
        "a: [unclosed\n",  # broken syntax
        "a: !!omap x\n",  # a tagged scalar built in steps
    ],
)
def test_the_walk_declines_what_it_does_not_build(text: str) -> None:
    assert plain_documents(make_loader((1, 1)), text) is None


def test_numbers_booleans_and_dates_come_from_the_loader_s_own_constructor() -> None:
    text = "o: 012\ns: 1:30\nb: yes\nd: 2001-12-14\nf: 1.5\nnothing: ~\nq: '012'\nbig: " + "9" * 70 + "\n"
    assert _check(text, (1, 1))
    assert _check(text, None)
    (doc,) = plain_documents(make_loader((1, 1)), text) or [None]
    assert doc["o"] == 10 and doc["s"] == 90 and doc["b"] is True and doc["q"] == "012"
    (doc12,) = plain_documents(make_loader(None), text) or [None]
    assert doc12["o"] == 12 and doc12["b"] == "yes"


def test_yamlio_reads_through_the_walk_and_still_reports_errors() -> None:
    assert load_documents("a: 1\nb: [x, z]\n", snapshot=False) == [{"a": 1, "b": ["x", "z"]}]
    with pytest.raises(Exception, match="duplicate key"):
        load_documents("a: 1\na: 2\n", snapshot=False)
