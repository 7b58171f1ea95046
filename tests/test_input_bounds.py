"""Every input the CLI reads is bounded: no crash, no hang, no unbounded read, exit 2 with a path.

Each case runs the CLI as a user does (a fresh ``python -m nvcre.cli.main`` process). Before, a
30,000-deep ``[[[...]]]`` crashed the YAML composer (SIGSEGV), ``/dev/zero`` grew to 3.7 GB, a
FIFO blocked forever, and directory mode and ``diff`` parsed files of any size.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.yamlio import MAX_FLOW_NESTING, check_nesting, read_text


def nvcrectl(*args: str, stdin: object = subprocess.DEVNULL) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nvcre.cli.main", *args], stdin=stdin, capture_output=True, text=True, timeout=60)


def _refused(done: subprocess.CompletedProcess, *codes: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr[-500:])
    assert done.stdout == ""
    assert any(f"[{code}]" in done.stderr for code in codes) and "Traceback" not in done.stderr, done.stderr


def test_deep_flow_nesting_is_refused_not_a_crash(tmp_path: Path) -> None:
    deep = tmp_path / "deep.yaml"
    deep.write_text("[" * 30_000 + "]" * 30_000 + "\n")
    for command in ("validate", "render"):
        _refused(nvcrectl("certification", command, str(deep)), "NestingTooDeep")


def test_devices_fifos_and_directories_are_refused_without_reading(tmp_path: Path) -> None:
    _refused(nvcrectl("certification", "validate", "/dev/zero"), "NotARegularFile")
    link = tmp_path / "zero.yaml"
    link.symlink_to("/dev/zero")
    _refused(nvcrectl("certification", "render", str(link)), "NotARegularFile")
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    _refused(nvcrectl("certification", "validate", str(fifo)), "NotARegularFile")
    for source in (str(tmp_path), str(fifo), "/dev/zero"):
        done = nvcrectl("cluster", "info", "--facts", source)
        _refused(done, "FactsUnreadable")
        assert "not a regular file" in done.stderr or "a directory" in done.stderr


def test_standard_input_is_read_only_up_to_the_cap() -> None:
    with open("/dev/zero", "rb") as zero:
        _refused(nvcrectl("certification", "validate", "-", stdin=zero), "InputTooLarge")


def test_directory_mode_and_diff_cap_each_file(tmp_path: Path) -> None:
    big = tmp_path / "renders" / "big.yaml"
    big.parent.mkdir()
    big.write_text("items:\n" + "- aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n" * 120_000)  # about 5 MB
    _refused(nvcrectl("certification", "validate", str(big.parent)), "InputTooLarge")
    _refused(nvcrectl("certification", "diff", str(big), str(big)), "DocumentTooLarge")


def test_nesting_is_counted_across_the_text() -> None:
    check_nesting("[" * MAX_FLOW_NESTING + "]" * MAX_FLOW_NESTING, "ok")
    check_nesting("[]" * 50_000, "wide, not deep")
    with pytest.raises(CompileError):
        check_nesting("{" * (MAX_FLOW_NESTING + 1), "deep")


def test_read_text_refuses_a_file_over_its_cap(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("x" * 100)
    assert read_text(path, max_bytes=100) == "x" * 100
    with pytest.raises(CompileError) as caught:
        read_text(path, max_bytes=99)
    assert caught.value.diagnostics[0].code == "InputTooLarge"
