"""Directory mode reads only the YAML files of the tree it is given: no loops, no other filesystems, a bound."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from nvcre.cli import certification
from nvcre.compiler.diagnostics import CompileError

REPO = Path(__file__).resolve().parents[2]


def test_symlinked_folders_and_hidden_entries_are_not_walked(tmp_path: Path) -> None:
    (tmp_path / "team" / "a").mkdir(parents=True)
    shutil.copy(REPO / "examples" / "certification.yaml", tmp_path / "team" / "a" / "cert.yaml")
    (tmp_path / "team" / "a" / "loop").symlink_to(tmp_path / "team")  # would repeat the tree for ever if followed
    (tmp_path / "team" / ".git").mkdir()
    (tmp_path / "team" / ".git" / "x.yaml").write_text("{not: [valid")
    (tmp_path / "team" / ".hidden.yaml").write_text("{not: [valid")
    assert certification.yaml_files(tmp_path / "team") == [tmp_path / "team" / "a" / "cert.yaml"]
    found = certification.certifications_in(tmp_path / "team")
    assert [label for label, _ in found] == ["a/cert.yaml"]


def test_a_tree_with_too_many_yaml_files_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(certification, "MAX_DIRECTORY_FILES", 3)
    for index in range(4):
        (tmp_path / f"{index}.yaml").write_text("a: 1\n")
    with pytest.raises(CompileError) as raised:
        certification.yaml_files(tmp_path)
    assert [d.code for d in raised.value.diagnostics] == ["TooManyFiles"]
