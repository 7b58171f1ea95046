"""JSON input with a character outside the BMP, written as a surrogate pair, reads as kubectl reads it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.yamlio import load_documents


def test_a_surrogate_pair_is_one_character() -> None:
    assert load_documents(r'{"a": "\ud83d\ude42 ok", "b": "\u00e9"}') == [{"a": "\U0001f642 ok", "b": "\u00e9"}]


def test_an_escaped_backslash_and_a_lone_surrogate_keep_their_meaning() -> None:
    assert load_documents(r'{"a": "\\ud83d"}') == [{"a": "\\ud83d"}]
    with pytest.raises(CompileError):
        load_documents(r'{"a": "\ud83d alone"}')


def test_the_cli_validates_such_a_document(tmp_path: Path) -> None:
    document = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": "c"},
        "spec": {
            "target": {},
            "categories": [
                {"domain": "communication", "variant": "nccl-loopback", "options": {"env": [{"name": "NOTE", "value": "\U0001f642"}]}}
            ],
        },
    }
    path = tmp_path / "c.json"
    path.write_text(json.dumps(document), encoding="utf-8")  # ensure_ascii: written as \ud83d\ude42
    assert "\\ud83d\\ude42" in path.read_text()
    done = subprocess.run(
        [sys.executable, "-m", "nvcre.cli.main", "certification", "validate", str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
