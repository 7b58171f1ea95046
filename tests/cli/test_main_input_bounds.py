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
from nvcre.compiler.yamlio import MAX_BLOCK_INDENT, MAX_FLOW_NESTING, check_nesting, read_text


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


# ---------------------------------------------------------------- block nesting (the installed CLI)

INSTALLED = Path(sys.executable).with_name("nvcrectl")
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "certification.yaml"


def installed(*args: str) -> tuple[subprocess.CompletedProcess, float]:
    import time

    start = time.monotonic()
    done = subprocess.run([str(INSTALLED), *args], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    return done, time.monotonic() - start


def _deep_inputs(tmp_path: Path) -> dict[str, Path]:
    """The audit's reproducers: a 30,000-deep block sequence (60 KB) and a 30,000-deep flow mapping."""
    sequence = tmp_path / "nb.yaml"
    sequence.write_text("- " * 30_000 + "1\n")
    mapping = tmp_path / "nm.yaml"
    mapping.write_text("{a: " * 30_000 + "1" + "}" * 30_000 + "\n")
    block_mapping = tmp_path / "bm.yaml"
    block_mapping.write_text("".join(" " * i + "a:\n" for i in range(3_000)) + " " * 3_000 + "1\n")
    as_json = tmp_path / "deep.json"
    as_json.write_text('{"items": ' + "[" * 30_000 + "]" * 30_000 + "}\n")
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / "nb.yaml").write_text(sequence.read_text())
    return {"sequence": sequence, "mapping": mapping, "block_mapping": block_mapping, "folder": folder, "json": as_json}


@pytest.mark.parametrize(
    "command",
    [
        ["certification", "validate", "{sequence}"],
        ["certification", "render", "{sequence}"],
        ["workloadrun", "render", "{sequence}"],
        ["cluster", "info", "--facts", "{sequence}"],
        ["certification", "diff", "{sequence}", "{sequence}"],
        ["setup", "render", "-f", "{sequence}"],
        ["certification", "validate", "{folder}"],
        ["cluster", "info", "--facts", "{mapping}"],
        ["certification", "render", str(EXAMPLE), "--facts", "{mapping}"],
        ["cluster", "info", "--facts", "{block_mapping}"],
        ["cluster", "info", "--facts", "{json}"],
    ],
    ids=lambda c: " ".join(a for a in c if not a.startswith("/")),
)
def test_deep_block_and_mapping_nesting_exits_2_fast_in_every_command(tmp_path: Path, command: list[str]) -> None:
    # Before: SIGSEGV (exit 139, no message) in each, the facts reader after 6.9-11.4 s.
    inputs = _deep_inputs(tmp_path)
    done, seconds = installed(*(part.format(**{k: str(v) for k, v in inputs.items()}) for part in command))
    assert done.returncode == 2, (done.returncode, done.stderr[-400:])
    assert done.stdout == "" and "Traceback" not in done.stderr
    assert "nest" in done.stderr and ("[NestingTooDeep]" in done.stderr or "[FactsMalformed]" in done.stderr), done.stderr[-400:]
    assert seconds < 5, seconds


def test_block_nesting_bound_names_the_line(tmp_path: Path) -> None:
    text = "kind: Certification\nspec:\n" + "  x:\n" + "- " * (MAX_BLOCK_INDENT // 2 + 1) + "1\n"
    with pytest.raises(CompileError) as caught:
        check_nesting(text, "c.yaml")
    (diag,) = caught.value.diagnostics
    assert diag.code == "NestingTooDeep" and diag.path == "c.yaml:4" and str(MAX_BLOCK_INDENT) in diag.message


def test_block_nesting_under_the_bound_reads_and_is_refused_at_its_path(tmp_path: Path) -> None:
    # 1,000 block levels plus 9,999 flow levels: both bounds nearly reached, still no crash.
    deep = tmp_path / "mixed.yaml"
    deep.write_text("- " * 1_000 + "[" * 9_999 + "1" + "]" * 9_999 + "\n")
    done, _ = installed("certification", "validate", str(deep))
    assert done.returncode == 2 and "[DocumentTooDeep]" in done.stderr and done.stdout == ""


def test_ordinary_indentation_is_not_refused() -> None:
    text = "a:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 60)) + "  " * 60 + "v\n" + "b: " + "x" * 5_000 + "\n"
    check_nesting(text, "ok.yaml")
