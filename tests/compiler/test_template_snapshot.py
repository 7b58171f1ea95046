"""Shipped parses of the package's YAML and Jinja's generated template code: current, exact, optional."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nvcre.compiler import template_snapshot, yaml_snapshot
from nvcre.compiler.datacopy import is_plain, plain_copy
from nvcre.compiler.overlays import _CONDITIONS, MatchFacts, _cel_matches, _condition_inputs, _condition_key
from nvcre.compiler.templating import TemplateSet
from nvcre.compiler.yamlio import INTERNAL_LIMITS, load_documents

REPO = Path(__file__).resolve().parents[2]


def _same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (1, 1.0 and True are told apart)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def test_the_committed_snapshots_are_current() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "nvcre.compiler.snapshot_build", "--check"], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr


def test_every_shipped_parse_is_exactly_what_the_loader_gives() -> None:
    files = yaml_snapshot.source_files()
    assert len(files) > 50
    hits = 0
    for path in files:
        text = path.read_text(encoding="utf-8")
        shipped = yaml_snapshot.lookup(text, (1, 1))
        if shipped is None:
            continue
        hits += 1
        assert _same(shipped, load_documents(text, str(path), limits=INTERNAL_LIMITS, snapshot=False)), path
    assert hits == len(files)


def test_a_text_not_shipped_is_parsed_and_each_hit_is_a_fresh_copy() -> None:
    path = yaml_snapshot.source_files()[0]
    text = path.read_text(encoding="utf-8")
    assert yaml_snapshot.lookup(text + "\n# edited\n", (1, 1)) is None
    assert yaml_snapshot.lookup(text, (1, 2)) is None  # another YAML version reads other scalars
    first, second = load_documents(text), load_documents(text)
    assert first == second and first is not second and first[0] is not second[0]
    assert load_documents("a: yes\n") == [{"a": True}]  # not shipped: parsed, YAML 1.1 as ever


def test_a_missing_or_foreign_snapshot_file_is_no_snapshot(tmp_path: Path) -> None:
    text = yaml_snapshot.source_files()[0].read_text(encoding="utf-8")
    assert yaml_snapshot.lookup(text, (1, 1), tmp_path / "missing.jsonl") is None
    other = tmp_path / "other.jsonl"
    other.write_text(f"something else\n{yaml_snapshot.text_key(text, (1, 1))}\t[1]\n", encoding="utf-8")
    assert yaml_snapshot.lookup(text, (1, 1), other) is None
    bad = tmp_path / "bad.jsonl"
    bad.write_text(f"nvcre-yaml-snapshot 1\n{yaml_snapshot.text_key(text, (1, 1))}\t{{broken\n", encoding="utf-8")
    assert yaml_snapshot.lookup(text, (1, 1), bad) is None


def test_generated_template_code_renders_what_jinja_renders() -> None:
    catalog, platforms = (REPO / "catalog"), (REPO / "platforms")
    shipped = TemplateSet(catalog, platforms)
    files = template_snapshot.template_files()
    assert len(files) > 50
    checked = 0
    for path, name in files:
        source = path.read_text(encoding="utf-8")
        kind = template_snapshot.kind_of(name)
        code = template_snapshot.generated(kind, name, source)
        env = shipped.yaml_env if kind == "yaml" else shipped.script_env
        assert code == env.compile(source, name, str(path), raw=True), name  # what Jinja generates today
        checked += 1
    assert checked == len(files)


def test_a_changed_template_is_generated_by_jinja() -> None:
    path, name = next((p, n) for p, n in template_snapshot.template_files() if n.endswith(".yaml.j2"))
    source = path.read_text(encoding="utf-8")
    assert template_snapshot.generated("yaml", name, source) is not None
    assert template_snapshot.generated("yaml", name, source + "{# edited #}") is None
    assert template_snapshot.generated("script", name, source) is None
    assert template_snapshot.generated("yaml", name, source, Path(__file__).parents[1] / "no-such-snapshot.json") is None
    env = TemplateSet().yaml_env
    assert env.from_string("v: {{ x }}\n").render(x=[1, "a"]) == 'v: [1, "a"]\n'


def test_plain_copy_copies_containers_and_hands_other_values_to_deepcopy() -> None:
    inner = {"k": [1, {"z": None}]}
    value = {"a": inner, "b": [inner], "t": ({"m": 1},), "s": "x"}
    copied = plain_copy(value)
    assert copied == value
    assert copied["a"] is not inner and copied["b"][0] is not inner and copied["a"]["k"] is not inner["k"]
    assert copied["t"] == value["t"] and copied["t"][0] is not value["t"][0]
    assert is_plain(value) and not is_plain({"a": object()}) and not is_plain({1.5j})


def _facts(**options: Any) -> MatchFacts:
    return MatchFacts(
        platform="aws", gpu_arch="h100", entry="communication/nccl-all-reduce", launch="mpi", source_kind="Certification", options=options
    )


def test_conditions_are_keyed_by_what_they_can_read() -> None:
    assert _condition_inputs("options.mlnxPerNode > 0 && has(options.nic)") == (("options",), ("mlnxPerNode", "nic"))
    assert _condition_inputs('options["mlnxPerNode"] > 0') == (("options",), None)
    assert _condition_inputs("options.exists(k, k == 'x')") == (("options",), None)
    assert _condition_inputs('launch == "single" || gpuArchitecture != "a100"') == (("gpuArchitecture", "launch"), ())
    narrow = _condition_key("options.a > 0", {"options": {"a": 1, "b": 2}, "platform": "aws"})
    assert narrow == _condition_key("options.a > 0", {"options": {"a": 1, "b": 3}, "platform": "gcp"})
    assert narrow != _condition_key("options.a > 0", {"options": {"b": 2}, "platform": "aws"})
    assert _condition_key("options.a > 0", {"options": {"a": 1, "b": 2**70}}) is None  # CEL would refuse it


def test_memoised_conditions_give_cel_s_answers_and_errors_every_time() -> None:
    _CONDITIONS.clear()
    for value, expected in ((1, True), (0, False), (1, True)):
        assert _cel_matches("options.a > 0", _facts(a=value, other=value)) is expected
    assert _cel_matches('options["a"] > 0', _facts(a=2)) is True
    for _ in range(2):
        with pytest.raises(Exception, match="no such|missing|a"):
            _cel_matches("options.missing > 0", _facts(a=1))
    with pytest.raises(ValueError):
        _cel_matches("options.a > 0", _facts(a=1, huge=2**70))
