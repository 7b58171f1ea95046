"""Credentials in a ``sourceRepo`` URL never reach the output of the review commands.

``certification images`` and ``certification diff`` (text, markdown, JSON) printed
``https://user:TOKEN@...`` as given; markdown is what a pipeline posts as a pull-request comment.
The commands run as the installed CLI runs them (``python -m nvcre.cli.main``), stdout and stderr
both searched.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nvcre.compiler.redact import redact_text

OLD_TOKEN = "ghp_OLDSECRET1234"
NEW_TOKEN = "ghp_NEWSECRET5678"


def _certification(path: Path, token: str) -> Path:
    path.write_text(
        "apiVersion: nvcre.nvidia.com/v1alpha1\n"
        "kind: Certification\n"
        "metadata: {name: c}\n"
        "spec:\n"
        "  target: {}\n"
        f"  sourceRepo: https://robot:{token}@git.example.com/mirrors/Megatron-LM.git\n"
        "  categories:\n"
        "  - {domain: training, variant: nemotron5-8b}\n",
        encoding="utf-8",
    )
    return path


def _nvcrectl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nvcre.cli.main", *args], capture_output=True, text=True, timeout=120)


def _render(source: Path, target: Path) -> Path:
    done = _nvcrectl("certification", "render", str(source), "--platform", "onprem", "--gpu-arch", "h100")
    assert done.returncode == 0, done.stderr
    assert OLD_TOKEN in done.stdout or NEW_TOKEN in done.stdout  # the workload still gets the URL it was given
    target.write_text(done.stdout, encoding="utf-8")
    return target


def test_images_hides_the_token(tmp_path: Path) -> None:
    source = _certification(tmp_path / "c.yaml", OLD_TOKEN)
    for output in ("text", "json"):
        done = _nvcrectl("certification", "images", str(source), "--platform", "onprem", "--gpu-arch", "h100", "-o", output)
        assert done.returncode == 0, done.stderr
        assert "git.example.com/mirrors/Megatron-LM.git" in done.stdout
        assert OLD_TOKEN not in done.stdout + done.stderr and "robot" not in done.stdout


@pytest.mark.parametrize("output", ["text", "markdown", "json"])
def test_diff_hides_both_tokens(tmp_path: Path, output: str) -> None:
    old = _render(_certification(tmp_path / "old-c.yaml", OLD_TOKEN), tmp_path / "old.yaml")
    new = _render(_certification(tmp_path / "new-c.yaml", NEW_TOKEN), tmp_path / "new.yaml")
    done = _nvcrectl("certification", "diff", str(old), str(new), "-o", output)
    assert done.returncode == 1, done.stderr  # the renders differ
    assert "git.example.com" in done.stdout
    for token in (OLD_TOKEN, NEW_TOKEN):
        assert token not in done.stdout + done.stderr


def test_only_userinfo_that_can_hold_a_secret_is_hidden() -> None:
    assert redact_text("https://u:p@h/x") == "https://***@h/x"
    assert redact_text("https://tok@h/x") == "https://***@h/x"
    assert redact_text("ssh://u:p@h/x") == "ssh://***@h/x"
    assert redact_text("ssh://git@h/x.git") == "ssh://git@h/x.git"
    assert redact_text("git clone https://h/x and mail a@b") == "git clone https://h/x and mail a@b"
