"""The fast YAML writer gives exactly the reference emitter's bytes, on the corpus and on random data.

The reference (``emit_ruamel``, ruamel.yaml's emitter with the canonical representer) is the
oracle: every golden ``expected.yaml`` re-emitted, every catalog entry on every platform x GPU
pair, and random nested data full of strings that YAML readers disagree about must come out of
``emit.dump_yaml`` byte for byte as the reference writes them.
"""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nvcre.compiler.emit import canonicalize, dump_yaml, dump_yaml_stream
from nvcre.compiler.emit_ruamel import ambiguous_reference, dump_yaml_reference
from nvcre.compiler.emit_writer import Declined, scalar_ambiguous, write_document
from nvcre.compiler.yamlio import load_documents

REPO = Path(__file__).resolve().parents[2]


def reference(document: object) -> str:
    return dump_yaml_reference(canonicalize(document))


# --- the corpus -----------------------------------------------------------------------------------

GOLDEN_FILES = sorted((REPO / "golden").rglob("expected.yaml"))


@pytest.mark.parametrize("path", GOLDEN_FILES, ids=[str(p.parent.relative_to(REPO / "golden")) for p in GOLDEN_FILES])
def test_golden_expected_file_re_emits_to_its_own_bytes(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    documents = load_documents(text)
    assert dump_yaml_stream(documents) == text
    assert "---\n".join(reference(doc) for doc in documents) == text


@lru_cache(maxsize=1)
def _grid_workflows() -> tuple[dict, ...]:
    from nvcre.compiler.catalog import load_catalog
    from nvcre.compiler.detect import platform_names
    from nvcre.compiler.render import render_certification

    catalog = load_catalog()
    categories = [{"domain": e.domain, "variant": e.variant, "options": {"nodesPerJob": 8}} for e in catalog.entries]
    document = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": "grid"},
        "spec": {"target": {}, "categories": categories, "rdmaDeviceAccess": "hostPath"},
    }
    workflows: list[dict] = []
    for platform, arch in itertools.product(platform_names(), sorted(catalog.gpu_defaults.architectures)):
        workflows.extend(render_certification(document, platform=platform, gpu_arch=arch).workflows)
    return tuple(workflows)


@pytest.mark.slow
def test_every_entry_on_every_platform_and_gpu_matches_the_reference() -> None:
    workflows = _grid_workflows()
    assert len(workflows) >= 90 * 8
    for workflow in workflows:
        # The fast path must take every rendered Workflow itself, not hand it to the reference.
        assert write_document(workflow) == reference(workflow), workflow["metadata"]["name"]


# --- random data ----------------------------------------------------------------------------------

NASTY = [
    "",
    " ",
    "  lead",
    "trail ",
    "a: b",
    "a:",
    ":a",
    ":",
    "?",
    "-",
    "- x",
    "-x",
    "#c",
    "a #c",
    "a#c",
    "x,y",
    "[x]",
    "{x}",
    "&a",
    "*a",
    "!tag",
    "|",
    ">",
    "'q'",
    '"d"',
    "it's",
    "%p",
    "@a",
    "`b",
    "---",
    "...",
    "--- x",
    "a\n---\nb",
    "yes",
    "No",
    "ON",
    "off",
    "y",
    "N",
    "true",
    "FALSE",
    "null",
    "Null",
    "~",
    "<<",
    "=",
    "!",
    "&",
    "*",
    "0755",
    "0o17",
    "0x1F",
    "0b101",
    "1e3",
    "1E-3",
    "1_000",
    "-_",
    "+1",
    ".5",
    "-.5",
    "1.",
    "1:20",
    "1:20:30.5",
    ".inf",
    "-.INF",
    ".NaN",
    "2001-12-14",
    "2001-12-14t21:59:43.10-05:00",
    "2001-12-14 21:59:43.10 Z",
    "é",
    "naïve ünïcode",
    "\U0001f600",
    "\u00a0",
    "\u0085",
    "\u2028",
    "\u2029",
    "\ufeff",
    "\x00",
    "\x07",
    "\x1b",
    "\x7f",
    "tab\there",
    "cr\rhere",
    "\ttab",
    "\\back",
    "line\n",
    "line\n\n",
    "a\nb",
    "a\n\nb",
    "\nlead break",
    " \nx",
    "trailing \nspaces",
    "a\nb \n",
    "a\n\tb",
    'set -eu\necho "$X"\n  indented\n',
    "x\n...\ny",
    "a\u2028b",
    "a" * 200,
    "b " * 70,
    "k" * 122,
    "k" * 123,
    "'" + "k" * 121,
]

text = st.one_of(
    st.sampled_from(NASTY),
    st.text(max_size=24),
    st.text(alphabet="ab :#-?'\"\n\t .\\|>&*!%@`,[]{}", max_size=14),
    st.text(alphabet="0123456789_-+.:eExXobBinfINF", max_size=10),
)
keys = st.one_of(
    st.sampled_from([k for k in NASTY if "\n" not in k and len(k) < 128]),
    st.text(max_size=16),
    st.integers(118, 126).map(lambda n: "'" * (n % 2) + "k" * (n - n % 2)),
)
scalars = st.one_of(
    text,
    st.integers(-(2**70), 2**70),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 2.0, -3.0, 1e15, 1e16, 1e-7, 0.1, 123456789012345.0]),
)
documents = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(keys, children, max_size=4),
    ),
    max_leaves=30,
)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.dictionaries(keys, documents, max_size=5), st.lists(documents, max_size=4)))
def test_random_documents_match_the_reference_byte_for_byte(document: object) -> None:
    assert dump_yaml(document) == reference(document)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.dictionaries(keys, documents, max_size=3), max_size=4))
def test_streams_match_the_reference(documents_: list) -> None:
    assert dump_yaml_stream(documents_) == "---\n".join(reference(doc) for doc in documents_)


@settings(max_examples=2000, deadline=None)
@given(st.one_of(st.sampled_from(NASTY), st.text(alphabet="0123456789_-+.:eExXobBoOinfaINFNyYnNtTrule~<=!&* \t", max_size=12)))
def test_ambiguity_agrees_with_both_yaml_resolvers(value: str) -> None:
    assert scalar_ambiguous(value) == ambiguous_reference(value)


@pytest.mark.parametrize("value", NASTY)
def test_every_nasty_string_as_value_and_key(value: str) -> None:
    for document in ({"k": value}, [value], {"k": [value, {"v": value}]}, {value: 1}, {value: {value: [value]}}):
        assert dump_yaml(document) == reference(document)


def test_the_writer_handles_typical_shapes_itself() -> None:
    document = {
        "metadata": {"name": "n", "labels": {"a.b/c": "true", "x": "8"}, "annotations": {"k": "v: w"}},
        "spec": {
            "args": ["-x", "NCCL_DEBUG=INFO", "--flag"],
            "script": "set -eu\necho hi\n",
            "empty": {},
            "none": [],
            "n": 3,
            "f": 0.5,
            "whole": 2.0,
            "b": False,
            "z": None,
            "nested": [[1, [2]], [{}], [[]], {"a": [{"b": "c\nd"}]}],
        },
    }
    assert write_document(document) == reference(document)


@pytest.mark.parametrize(
    "document",
    ["bare scalar", 3, None, "multi\nline", {"multi\nline key": 1}, {"k" * 123: 1}, {"k" * 122: 1}, {"a\x85b": 1}],
    ids=["str", "int", "none", "block", "multiline-key", "long-key", "longest-simple-key", "nel-key"],
)
def test_declined_shapes_fall_back_to_the_reference(document: object) -> None:
    assert dump_yaml(document) == reference(document)


def test_declines_are_limited_to_the_documented_shapes() -> None:
    with pytest.raises(Declined):
        write_document("scalar")
    with pytest.raises(Declined):
        write_document({"two\nlines": 1})
    with pytest.raises(Declined):
        write_document({"k" * 123: 1})
    assert write_document({"k" * 122: 1}) == reference({"k" * 122: 1})


def test_bad_input_raises_the_reference_errors() -> None:
    with pytest.raises(TypeError):
        dump_yaml({"k": {1, 2}})
    with pytest.raises(TypeError):
        dump_yaml({1: "non-string key"})
    with pytest.raises(TypeError):
        dump_yaml({"a": 1, 2: "mixed keys"})
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError):
            dump_yaml({"k": [bad]})


def test_output_reads_back_as_the_input() -> None:
    document = {value: value for value in NASTY}
    assert load_documents(dump_yaml(document)) == [document]


def test_importing_the_emitter_does_not_load_ruamel() -> None:
    code = "import sys, nvcre.compiler.emit as e; e.dump_yaml({'a': [1, 'x']}); print('ruamel.yaml' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
