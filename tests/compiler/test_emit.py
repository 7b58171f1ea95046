"""Canonical emission: the Kubernetes YAML convention, quoting that every reader agrees on, stable bytes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nvcre.compiler.emit import dump_json, dump_yaml, dump_yaml_stream
from nvcre.compiler.yamlio import load_documents


def test_keys_sorted_by_bytes_and_sequences_not_indented() -> None:
    text = dump_yaml({"b": [{"z": 1, "a": 2}], "B": 1, "a": {"w": "x"}})
    assert text == "B: 1\na:\n  w: x\nb:\n- a: 2\n  z: 1\n"


@pytest.mark.parametrize(
    "value",
    ["yes", "no", "on", "off", "y", "n", "true", "False", "null", "~", "", "0755", "8", "1e3", "1_000", "1:20", ".inf", "0x1F", "<<", "="],
)
def test_ambiguous_strings_are_quoted_and_read_back_as_strings(value: str) -> None:
    text = dump_yaml({"k": value})
    assert text.startswith('k: "') or text.startswith("k: '"), text
    assert load_documents(text) == [{"k": value}]


@pytest.mark.parametrize("value", ["nvcr.io/nvidia/pytorch:26.01-py3", "node.spec.unschedulable == true", "kai-scheduler", "16G"])
def test_plain_strings_stay_plain(value: str) -> None:
    assert dump_yaml({"k": value}) == f"k: {value}\n"


def test_multiline_strings_use_literal_blocks_and_survive() -> None:
    script = "set -eu\necho one\n  indented\n"
    text = dump_yaml({"script": script})
    assert "script: |\n" in text
    assert load_documents(text) == [{"script": script}]


def test_trailing_spaces_fall_back_to_a_quoted_scalar() -> None:
    value = "line with trailing space \nnext"
    assert load_documents(dump_yaml({"k": value})) == [{"k": value}]


def test_no_anchors_for_shared_objects_and_no_folding() -> None:
    shared = {"a": 1}
    long = "word " * 200
    text = dump_yaml({"x": shared, "y": shared, "long": long.strip()})
    assert "&" not in text and "*" not in text
    assert len([line for line in text.splitlines() if line.startswith("long:")]) == 1


def test_stream_separators_only_between_documents() -> None:
    assert dump_yaml_stream([{"a": 1}, {"b": 2}, {"c": 3}]) == "a: 1\n---\nb: 2\n---\nc: 3\n"
    assert dump_yaml_stream([{"a": 1}]) == "a: 1\n"


def test_json_is_sorted_and_ends_with_newline() -> None:
    assert dump_json([{"b": 1, "a": "x"}]) == '[\n  {\n    "a": "x",\n    "b": 1\n  }\n]\n'


def test_unsupported_values_are_refused() -> None:
    with pytest.raises(TypeError):
        dump_yaml({"k": {1, 2}})
    with pytest.raises(TypeError):
        dump_yaml({1: "non-string key"})
    with pytest.raises(ValueError):
        dump_yaml({"k": float("nan")})


scalars = st.one_of(st.text(max_size=30), st.integers(-(2**40), 2**40), st.booleans(), st.none())
documents = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(st.text(max_size=12), children, max_size=4)),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=12), documents, max_size=5))
def test_any_plain_document_round_trips(doc: dict) -> None:
    text = dump_yaml(doc)
    assert load_documents(text) == [doc]
    assert dump_yaml(load_documents(text)[0]) == text


def test_bytes_do_not_depend_on_insertion_order_or_hash_seed() -> None:
    code = (
        "from nvcre.compiler.emit import dump_yaml\n"
        "import sys\n"
        "d = {k: {'v': [k, 1]} for k in ('delta', 'alpha', 'charlie', 'bravo')}\n"
        "sys.stdout.write(dump_yaml({'s': {x for x in ()} and 0 or sorted(d), 'd': d}))\n"
    )
    outputs = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": seed}).stdout
        for seed in ("1", "2", "3")
    }
    assert len(outputs) == 1
    reordered = {"b": 1, "a": {"d": 2, "c": 3}}
    assert dump_yaml(reordered) == dump_yaml({"a": {"c": 3, "d": 2}, "b": 1})
