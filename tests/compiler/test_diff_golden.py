"""Golden cases for `certification diff`: old.yaml + new.yaml in, the reviewed markdown, text and JSON out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nvcre.cli.diff import format_json, format_markdown, format_text
from nvcre.cli.gitops import read_render
from nvcre.compiler.diff import diff_renders
from tests.goldenharness import GOLDEN, check

REPO = Path(__file__).resolve().parents[2]
CASES = sorted(p for p in (GOLDEN / "diff").iterdir() if p.is_dir())


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_diff_golden(case: Path, update_golden: bool) -> None:
    result = diff_renders(read_render(case / "old.yaml"), read_render(case / "new.yaml"))
    check(case / "expected.md", format_markdown(result), update_golden)
    check(case / "expected.txt", format_text(result), update_golden)
    check(case / "expected.json", format_json(result), update_golden, parse=json.loads)


@pytest.mark.parametrize("output", ["markdown", "json"])
def test_cli_prints_the_golden_and_exits_1(output: str) -> None:
    case = GOLDEN / "diff" / "aws-to-gcp-h100"
    result = subprocess.run(
        [sys.executable, "-m", "nvcre.cli.main", "certification", "diff", "old.yaml", "new.yaml", "-o", output],
        cwd=case,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1, result.stderr
    assert result.stdout == (case / ("expected.md" if output == "markdown" else "expected.json")).read_text()


def test_golden_inputs_span_overlays_facts_renames_and_category_changes() -> None:
    """The cases keep covering what reviewers rely on (a guard against goldens regenerated too narrowly)."""
    platform = json.loads((GOLDEN / "diff/aws-to-gcp-h100/expected.json").read_text())
    causes = {c for o in platform["objects"] for c in o["causes"]}
    assert "overlay gcp-h100-tcpxo-daemon now applies" in causes
    assert "overlay aws-efa-nccl-mpi no longer applies" in causes
    assert "fact platform: aws (supplied) -> gcp (supplied)" in causes
    options = json.loads((GOLDEN / "diff/options-and-categories/expected.json").read_text())
    assert sorted(o["status"] for o in options["objects"]) == ["added", "removed", "renamed"]
