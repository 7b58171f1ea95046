"""The fast render reader of ``certification diff`` gives exactly what the project's reader gives: the same
objects (types included) for every file the repository holds, and the same objects or the same errors for
every awkward YAML scalar and construct."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nvcre.cli.gitops import read_render
from nvcre.cli.render_fast import read_render_fast
from nvcre.compiler.diagnostics import CompileError

REPO = Path(__file__).resolve().parents[2]


def same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (``True`` is not ``1``, ``1`` is not ``1.0``)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return bool(a == b) or (a != a and b != b)


def outcome(read: Any, path: Path) -> Any:
    try:
        return ("objects", read(path))
    except CompileError as exc:
        return ("error", [d.render() for d in exc.diagnostics])


def check_files(files: list[Path]) -> None:
    for path in files:
        fast, slow = outcome(read_render_fast, path), outcome(read_render, path)
        assert fast[0] == slow[0] and (same(fast[1], slow[1]) if fast[0] == "objects" else fast[1] == slow[1]), path


def test_golden_renders_read_the_same() -> None:
    files = sorted((REPO / "golden" / "render").glob("*/expected.yaml"))[::8]
    assert len(files) > 10
    check_files(files)


@pytest.mark.slow
def test_every_yaml_file_of_the_golden_tree_reads_the_same() -> None:
    files = sorted((REPO / "golden").glob("**/*.yaml"))
    assert len(files) > 500
    check_files(files)


SCALARS = [
    "y",
    "Y",
    "n",
    "N",
    "yes",
    "No",
    "on",
    "OFF",
    "true",
    "False",
    "~",
    "null",
    "",
    "0755",
    "0o17",
    "0b101",
    "0x1F",
    "1_000",
    "190:20:30",
    "1e3",
    "-1E-3",
    "1.5",
    ".5",
    ".inf",
    "-.Inf",
    ".nan",
    "=",
    "2026-12-06",
    "2026-12-06T05:00:00Z",
    "1" * 70,
    "9223372036854775808",
    "+12",
    "'quoted'",
    '"\\ud83d\\ude42"',
    "!!binary aGk=",
    "!!str 12",
    "!!int '7'",
    "!custom x",
    "&a v",
    "[1, 2]",
    "{a: 1}",
    "'a: b'",
]


@pytest.mark.filterwarnings("ignore::ruamel.yaml.error.MantissaNoDotYAML1_1Warning")
@pytest.mark.parametrize("scalar", SCALARS)
def test_every_awkward_scalar_reads_the_same(tmp_path: Path, scalar: str) -> None:
    path = tmp_path / "render.yaml"
    path.write_text(
        f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: x}}\ndata:\n  value: {scalar}\n  list: [{scalar}]\n", encoding="utf-8"
    )
    fast, slow = outcome(read_render_fast, path), outcome(read_render, path)
    assert fast[0] == slow[0], (fast, slow)
    assert same(fast[1], slow[1]) if fast[0] == "objects" else fast[1] == slow[1]


@pytest.mark.parametrize(
    "text",
    [
        "kind: A\nmetadata: {name: x}\nbase: &b {k: 1}\nmore:\n  <<: *b\n  j: 2\n",
        "kind: A\nmetadata: {name: x}\na: &x [1, 2]\nb: *x\n",
        "kind: A\nkind: B\n",
        "kind: A\nmetadata: {name: x}\n? [1, 2]\n: v\n",
        "kind: A\n  bad indentation: [\n",
        "[{kind: A, metadata: {name: x}}, {kind: B, metadata: {name: y}}]\n",
        "- 1\n- 2\n",
        "%YAML 1.2\n---\nkind: A\non: yes\n",
        "kind: A\n---\n---\nkind: B\n",
        "kind: A\nx: !!set {a, b}\n",
        "kind: A\nx: !!omap [{a: 1}]\n",
        "kind: A\nx: !!seq [a:b, c?d]\n",
        "kind: A\nx: &anchor [a:b]\ny: {a:b: c}\n",
        "kind: A\nx: -x\ny: ?x\nz: :x\nw: a:b\nv: a #comment\nu: 'a''b'\n",
        "kind: A\nx: |2\n    indented\n   less\ny: >-\n  folded\n  text\n",
        "\ufeffkind: A\r\nmetadata:\r\n  name: x\r\n",
        "kind: A\nx:\t1\n",
        'kind: A\nx: "\\ud83d\\ude42 and \\ud800 alone"\n',
        "kind: A\nx: [\n  a:b\n]\n",
        "- key: |\n    if [ -x a ]; then :; fi\n  other: [a:b]\n",
        "kind: A\nscript: |\n  [ -x a ] && echo {a:b}\n\n  done\nnext: {a:b: c}\n",
        "kind: A\nx: a |\n  [a:b]\n",
    ],
)
def test_every_awkward_construct_reads_the_same(tmp_path: Path, text: str) -> None:
    path = tmp_path / "render.yaml"
    path.write_text(text, encoding="utf-8")
    fast, slow = outcome(read_render_fast, path), outcome(read_render, path)
    assert fast[0] == slow[0], (fast, slow)
    assert same(fast[1], slow[1]) if fast[0] == "objects" else fast[1] == slow[1]


def test_bounds_are_checked_before_parsing(tmp_path: Path) -> None:
    deep = tmp_path / "deep.yaml"
    deep.write_text("- " * 30_000 + "x\n", encoding="utf-8")
    big = tmp_path / "big.yaml"
    big.write_text("a: " + "x" * (5 * 1024 * 1024) + "\n", encoding="utf-8")
    for path in (deep, big):
        fast, slow = outcome(read_render_fast, path), outcome(read_render, path)
        assert fast[0] == "error" and fast == slow
