"""The CEL parser tables shipped as data: current, deterministic, and parsing as the grammar does."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from nvcre.compiler import cel_tables
from nvcre.compiler.api.kinds import KINDS
from nvcre.compiler.api.validate import installed_schema, iter_rules
from nvcre.compiler.overlays import load_overlays

REPO = Path(__file__).resolve().parents[2]


def _fresh_text(seed: str) -> str:
    """The tables file as a build in a fresh interpreter with ``seed`` as its hash seed writes it."""
    program = (
        "import json; from nvcre.compiler import cel_tables as t; print(json.dumps(t.serialise(t.build_parser()), separators=(',', ':')))"
    )
    env = {**os.environ, "PYTHONHASHSEED": seed}
    result = subprocess.run([sys.executable, "-c", program], cwd=REPO, capture_output=True, text=True, env=env, timeout=120, check=True)
    return result.stdout


def test_the_committed_tables_are_current_and_independent_of_the_hash_seed() -> None:
    committed = cel_tables.TABLES_FILE.read_text(encoding="utf-8")
    assert _fresh_text("1") == committed, "stale: run python -m nvcre.compiler.cel_tables --write"
    assert _fresh_text("2") == committed


def test_the_check_command_agrees() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "nvcre.compiler.cel_tables", "--check"], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr


def _corpus() -> list[str]:
    rules = [rule["rule"] for cls in KINDS for _, rule in iter_rules(installed_schema(cls))]
    conditions = [o.when.expression for o in load_overlays().overlays if o.when.expression]
    extra = [
        'a.b[1].c in [1, 2, 3] ? "x" : b"y"',
        "has(self.x) || !(1.5e3 >= 2u) && -x < 0",
        "size(self.filter(e, e.matches('^[a-z]+$'))) == 1",
        "{'k': [1, 2.0, null]}.k.exists_one(v, v == null)",
        r"'''multi\nline''' + r'raw\d' != ''",
        "x +",
        "(1 + 2",
        "a.?b",
        "1 = 2",
        '"unterminated',
    ]
    assert rules and conditions
    return sorted(set(rules + conditions)) + extra


def _outcome(parser, text: str) -> object:
    try:
        return parser.parse(text)
    except Exception as exc:  # the error by type, position, token and expected terminals (a set: Lark
        # lists them in hash-seed order whichever way the parser was made)
        expected = getattr(exc, "expected", None) or getattr(exc, "allowed", None)
        return (
            type(exc).__name__,
            getattr(exc, "line", None),
            getattr(exc, "column", None),
            repr(getattr(exc, "token", None)),
            frozenset(expected) if expected is not None else str(exc),
        )


def test_the_shipped_parser_gives_the_grammar_parser_s_trees_and_errors() -> None:
    shipped = cel_tables.load_parser()
    assert shipped is not None
    built = cel_tables.build_parser()
    for text in _corpus():
        assert _outcome(shipped, text) == _outcome(built, text), text


def test_tables_for_another_grammar_or_format_are_ignored(tmp_path: Path) -> None:
    document = json.loads(cel_tables.TABLES_FILE.read_text(encoding="utf-8"))
    for change in ({"key": "0" * 64}, {"format": 99}):
        path = tmp_path / "tables.json"
        path.write_text(json.dumps({**document, **change}), encoding="utf-8")
        assert cel_tables.load_parser(path) is None
    (tmp_path / "broken.json").write_text("{not json", encoding="utf-8")
    assert cel_tables.load_parser(tmp_path / "broken.json") is None
    assert cel_tables.load_parser(tmp_path / "missing.json") is None
    path.write_text(json.dumps({**document, "data": {"rules": []}}), encoding="utf-8")
    assert cel_tables.load_parser(path) is None  # readable JSON Lark cannot load


def test_the_key_follows_the_grammar_text() -> None:
    grammar = cel_tables.grammar_text()
    assert cel_tables.tables_key(grammar) != cel_tables.tables_key(grammar + "\n")


def test_the_encoding_keeps_every_value_kind_apart() -> None:
    value = {
        "list": [1, "1", 1.5, True, None],
        "tuple": (1, (2, "x")),
        "set": frozenset({"a", "b", (1, 2)}),
        "ints": {3: "three", 1: "one"},
        "sets": {frozenset({1, 2}): (0, 5)},
        "flag": re.M,
    }
    assert cel_tables.decode(cel_tables.encode(value)) == value
    decoded = cel_tables.decode(cel_tables.encode(value))
    assert isinstance(decoded["tuple"], tuple) and isinstance(decoded["set"], frozenset)
    assert list(decoded["ints"]) == [3, 1] and decoded["flag"] is re.M


@pytest.mark.parametrize("bad", [{"$t": 1}, {object(): 1}, {1.5j}])
def test_the_encoding_refuses_what_it_could_not_read_back(bad: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        cel_tables.encode(bad)
