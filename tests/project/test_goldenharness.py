"""The golden harness itself: a mismatch leaves <file>.actual and explains itself; update rewrites."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvcre.compiler.yamlio import load_documents
from tests import goldenharness


@pytest.fixture
def golden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(goldenharness, "REPO", tmp_path)
    path = tmp_path / "case" / "expected.yaml"
    path.parent.mkdir()
    path.write_text("a: 1\nb:\n- x\n")
    return path


def test_match_passes_and_cleans_a_stale_actual(golden: Path) -> None:
    stale = golden.with_name("expected.yaml.actual")
    stale.write_text("old")
    goldenharness.check(golden, "a: 1\nb:\n- x\n", update=False)
    assert not stale.exists()


def test_mismatch_writes_actual_and_puts_the_semantic_diff_first(golden: Path) -> None:
    with pytest.raises(pytest.fail.Exception) as exc:
        goldenharness.check(golden, "a: 2\nb:\n- x\n", update=False, parse=load_documents)
    message = str(exc.value)
    assert golden.with_name("expected.yaml.actual").read_text() == "a: 2\nb:\n- x\n"
    assert message.index("semantic diff:") < message.index("--- expected")
    assert "values_changed" in message and "-a: 1" in message and "+a: 2" in message


def test_formatting_only_changes_are_called_out(golden: Path) -> None:
    with pytest.raises(pytest.fail.Exception) as exc:
        goldenharness.check(golden, "b: [x]\na: 1\n", update=False, parse=load_documents)
    assert "only formatting differs" in str(exc.value)


def test_missing_golden_fails_and_update_creates_it(golden: Path) -> None:
    fresh = golden.with_name("new.yaml")
    with pytest.raises(pytest.fail.Exception):
        goldenharness.check(fresh, "z: 1\n", update=False)
    goldenharness.check(fresh, "z: 1\n", update=True)
    assert fresh.read_text() == "z: 1\n" and not fresh.with_name("new.yaml.actual").exists()
