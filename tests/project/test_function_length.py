"""Function length: a function over 60 lines says why, in a ``# Long:`` comment above it.

Long functions are allowed where splitting would scatter something that reads best in one
place (a command's flag list, a record assembled field by field, a log written in the order a
tool prints it). The comment must sit directly above the ``def`` or its first decorator.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("compiler", "runtime", "cli", "testing")
LIMIT = 60
MARK = "# Long:"


def _comment_above(lines: list[str], first_line: int) -> list[str]:
    """The comment block that ends directly above line ``first_line`` (1-based)."""
    block: list[str] = []
    index = first_line - 2
    while index >= 0 and lines[index].strip().startswith("#"):
        block.append(lines[index].strip())
        index -= 1
    return block


def _functions(source: str) -> Iterator[tuple[str, int, int, list[str]]]:
    """``(name, line, length, comment block above)`` of every function in ``source``."""
    lines = source.splitlines()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            assert node.end_lineno is not None
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            yield node.name, node.lineno, node.end_lineno - node.lineno + 1, _comment_above(lines, first)


def long_functions_without_reason(source: str) -> list[tuple[str, int, int]]:
    """``(name, line, length)`` of every function over the limit with no ``# Long:`` comment."""
    return [
        (name, line, length)
        for name, line, length, above in _functions(source)
        if length > LIMIT and not any(c.startswith(MARK) and len(c) > len(MARK) + 3 for c in above)
    ]


def stale_reasons(source: str) -> list[tuple[str, int, int]]:
    """``(name, line, length)`` of every function of at most the limit that still carries a
    ``# Long:`` comment (a reason left behind when the function was shortened)."""
    return [
        (name, line, length)
        for name, line, length, above in _functions(source)
        if length <= LIMIT and any(c.startswith(MARK) for c in above)
    ]


def test_no_short_function_keeps_a_long_reason() -> None:
    offenders = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for name, line, length in stale_reasons(path.read_text(encoding="utf-8")):
                offenders.append(f"{path.relative_to(ROOT)}:{line} {name} ({length} lines)")
    assert not offenders, "functions of 60 lines or fewer with a stale '# Long:' comment:\n" + "\n".join(offenders)


def test_a_stale_reason_is_found() -> None:
    short = "# Long: it was long once.\ndef f() -> None:\n    pass\n"
    assert stale_reasons(short) == [("f", 2, 2)]
    body = "".join(f"    x{i} = {i}\n" for i in range(LIMIT))
    assert stale_reasons("# Long: a table.\ndef g() -> None:\n" + body) == []


def test_every_long_function_says_why() -> None:
    offenders = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for name, line, length in long_functions_without_reason(path.read_text(encoding="utf-8")):
                offenders.append(f"{path.relative_to(ROOT)}:{line} {name} ({length} lines)")
    assert not offenders, "functions over 60 lines without a '# Long: <why>' comment:\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    ("comment", "flagged"),
    [("", True), ("# Long:\n", True), ("# Long: a flag list is data.\n", False), ("# long because\n", True)],
)
def test_the_check_reads_the_comment(comment: str, flagged: bool) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(LIMIT))
    source = f"{comment}def f():\n{body}"
    assert bool(long_functions_without_reason(source)) is flagged


def test_a_short_function_needs_nothing() -> None:
    assert long_functions_without_reason("def f():\n    return 1\n") == []
