"""``run --wait --evidence DIR`` writes its bundle from the verdict it printed, reading the run once.

The run plays against the scripted API server of the run goldens. Once the wait ends, the run's
objects are collected and judged once; the report, the results file and the bundle all come from
that verdict, so the run object is read exactly as often as without ``--evidence``, and the
bundle's JSON report is the results file's. The "elapsed" wording of the run and of the progress
view is one function.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_certification_run_golden import ScriptedCluster, _cert_file, _golden_objects, invoke


def _run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, case: str, *extra: str) -> tuple[int, str, ScriptedCluster, Path]:
    objects = _golden_objects(case)
    cluster = ScriptedCluster(objects)
    results = tmp_path / f"results{len(extra)}.json"
    cert = _cert_file(objects, tmp_path / "cert.yaml")
    args = ["certification", "run", "--cert-file", str(cert), "--wait", "--timeout", "30m", "--results-file", str(results), *extra]
    code, _, stderr = invoke(monkeypatch, cluster, args)
    return code, stderr, cluster, results


@pytest.mark.parametrize(("case", "result", "exit_code"), [("passed", "PASSED", 0), ("failed-hardware", "FAILED", 1)])
def test_the_bundle_comes_from_the_verdict_in_hand(
    case: str, result: str, exit_code: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, stderr, plain, results = _run(monkeypatch, tmp_path, case)
    assert code == exit_code, stderr
    bundle = tmp_path / "bundle"
    code, stderr, cluster, with_evidence = _run(monkeypatch, tmp_path, case, "--evidence", str(bundle))
    assert code == exit_code, stderr
    assert f"Evidence written to {bundle} ({result})\n" in stderr
    assert cluster.run_gets == plain.run_gets  # the bundle read nothing of the run again
    written = json.loads((bundle / "report.json").read_text(encoding="utf-8"))
    assert written == json.loads(with_evidence.read_text(encoding="utf-8"))  # the verdict the run reported
    assert json.loads(results.read_text(encoding="utf-8")) == written


def test_a_bundle_that_cannot_be_written_fails_the_run_with_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nvcre.runtime.evidence import EvidenceError, of_run

    def refuse(objects: object, verdict: object, request: of_run.EvidenceRequest) -> str:
        raise EvidenceError(f"{request.directory}: no room")

    monkeypatch.setattr(of_run, "write_objects", refuse)
    bundle = tmp_path / "bundle"
    code, stderr, _, results = _run(monkeypatch, tmp_path, "passed", "--evidence", str(bundle))
    assert code == 1 and f"error: {bundle}: no room\n" in stderr and "Traceback" not in stderr
    assert results.is_file()  # the report files were written before the bundle failed


def test_one_elapsed_wording_for_the_run_and_its_progress() -> None:
    from nvcre.cli import progress
    from nvcre.runtime.ops import run
    from nvcre.runtime.report import format

    assert run.elapsed_text is format.elapsed_text and progress.elapsed_text is format.elapsed_text
    assert [format.elapsed_text(s) for s in (0, 3.9, 123, 3723, 86400)] == ["0s", "3s", "2m3s", "1h2m3s", "24h0m0s"]
