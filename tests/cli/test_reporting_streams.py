"""Where ``run --wait`` prints the report: ours on stdout whatever the verdict, NVCRE's with ``--nvcre-streams``.

NVCRE v0.8.2 prints a ``certification run --wait`` report on stdout only when it PASSED, on stderr
when it FAILED (``handleReport`` in ``pkg/certification/certification.go``), and every
``workloadrun run --wait`` report on stderr (``out: os.Stderr`` in ``pkg/workloadrun/workloadrun.go``).
Runs go through the scripted cluster of the CLI goldens; the reports are the report goldens'.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_certification_run_golden import GOLDEN, ScriptedCluster, _cert_file, _golden_objects, invoke

REPO = Path(__file__).resolve().parents[2]
WORKLOADRUN = str(REPO / "examples" / "workloadrun-nccl-all-reduce.yaml")


def _report(case: str) -> str:
    return (GOLDEN / "report" / case / "expected.txt").read_text(encoding="utf-8")


def _certification(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, case: str, *extra: str) -> tuple[int, str, str]:
    objects = _golden_objects(case)
    cert = _cert_file(objects, tmp_path / "cert.yaml")
    return invoke(
        monkeypatch, ScriptedCluster(objects), ["certification", "run", "--cert-file", str(cert), "--wait", "--timeout", "30m", *extra]
    )


@pytest.mark.parametrize(("case", "code"), [("passed", 0), ("failed-hardware", 1)])
def test_the_report_is_on_stdout_whatever_the_verdict(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, case: str, code: int) -> None:
    got, stdout, stderr = _certification(monkeypatch, tmp_path, case)
    assert got == code, stderr
    assert _report(case) in stdout and _report(case) not in stderr


def test_nvcre_streams_puts_a_failed_certification_report_on_stderr(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    code, stdout, stderr = _certification(monkeypatch, tmp_path, "failed-hardware", "--nvcre-streams")
    assert code == 1
    assert _report("failed-hardware") in stderr and stdout == ""


def test_nvcre_streams_keeps_a_passed_certification_report_on_stdout(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    code, stdout, stderr = _certification(monkeypatch, tmp_path, "passed", "--nvcre-streams")
    assert code == 0, stderr
    assert _report("passed") in stdout and _report("passed") not in stderr


def test_nvcre_streams_puts_every_workloadrun_report_on_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    args = ["workloadrun", "run", WORKLOADRUN, "--wait", "--timeout", "10m"]
    code, stdout, stderr = invoke(monkeypatch, ScriptedCluster(_golden_objects("workloadrun-unpinned")), args)
    assert code == 0 and _report("workloadrun-unpinned") in stdout
    code, stdout, stderr = invoke(monkeypatch, ScriptedCluster(_golden_objects("workloadrun-unpinned")), [*args, "--nvcre-streams"])
    assert code == 0, stderr
    assert _report("workloadrun-unpinned") in stderr and stdout == ""


def test_nvcre_streams_needs_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    code, stdout, stderr = invoke(
        monkeypatch,
        ScriptedCluster(_golden_objects("passed")),
        ["certification", "run", "--category", "communication/nccl-all-reduce", "--nvcre-streams"],
    )
    assert code == 2 and stdout == "" and "--nvcre-streams requires --wait" in stderr
