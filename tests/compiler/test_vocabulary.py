"""Every label, annotation and finalizer of the API group is spelled once, in nvcre.compiler.vocabulary.

A key written as a literal somewhere else (``"nvcre.nvidia.com/workflow"``) is a second
spelling that can drift from the one the other side reads; the check walks the syntax trees of
the packages and refuses such a literal, while messages that merely mention a key are fine.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from nvcre.compiler import vocabulary

REPO = Path(__file__).resolve().parents[2]
FOLDERS = ("compiler", "runtime", "cli", "testing")
#: a whole key (``nvcre.nvidia.com/<name>``), not the API version
KEY = re.compile(r"^nvcre\.nvidia\.com/(?!v1alpha1$)[a-z0-9][a-z0-9.-]*$")


def _key_literals(source: str) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and KEY.match(node.value):
            found.append((node.lineno, node.value))
        elif isinstance(node, ast.JoinedStr) and node.values:
            head = node.values[0]
            if isinstance(head, ast.Constant) and isinstance(head.value, str) and head.value == "nvcre.nvidia.com/":
                found.append((node.lineno, "nvcre.nvidia.com/{...}"))
    return found


def _offenders(root: Path) -> list[str]:
    out = []
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            if path == root / "compiler" / "vocabulary.py":
                continue
            for line, text in _key_literals(path.read_text(encoding="utf-8")):
                out.append(f"{path.relative_to(root)}:{line}: {text}")
    return out


def test_no_key_is_spelled_outside_the_vocabulary() -> None:
    assert _offenders(REPO) == []


@pytest.mark.parametrize(
    "source",
    ['LABEL = "nvcre.nvidia.com/workflow"\n', 'def f(x):\n    return {f"nvcre.nvidia.com/{x}": 1}\n'],
)
def test_a_second_spelling_is_found(source: str) -> None:
    assert _key_literals(source)


def test_messages_and_the_api_version_are_not_keys() -> None:
    assert not _key_literals('A = "nvcre.nvidia.com/v1alpha1"\nB = "the nvcre.nvidia.com/certification label is too long"\n')


def test_every_name_lives_under_the_group() -> None:
    names = [getattr(vocabulary, n) for n in vocabulary.__all__ if n not in ("GROUP", "RESERVED_PREFIX")]
    keys = [n for n in names if "/" in n]
    assert keys and all(k.startswith(vocabulary.RESERVED_PREFIX) for k in keys)
    assert len(set(keys)) == len(keys), "two names for one key"
