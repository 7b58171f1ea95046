"""The reports a run command prints and writes: text or JSON on stdout, JSON, JUnit and evidence files.

Every report is a projection of the one verdict model (``nvcre.runtime.judge``), built from
what the API server holds now; ``report_runs`` prints it for one or more runs and exits 1 when
any of them failed or still runs.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from . import common
from .output import EXIT_FAILURE, fail_invalid

if TYPE_CHECKING:
    from nvcre.runtime.evidence.dsse import Signer


class ReportFormat(str, Enum):
    text = "text"
    json = "json"


OutputOption = Annotated[ReportFormat, typer.Option("--output", "-o")]


def build_verdict(kube: Any, kind: str, name: str, namespace: str) -> Any:
    """Collect a run's objects and judge them (the one verdict model)."""
    from nvcre.runtime.ops.queries import verdict_of

    return verdict_of(kube, kind, name, namespace)


def _json_report(verdicts: list[Any]) -> str:
    """The JSON report: one object for one run, a list for several."""
    from nvcre.runtime.report import json as report_json

    data = [report_json.to_dict(v) for v in verdicts]
    return json.dumps(data[0] if len(data) == 1 else data, indent=2, sort_keys=True) + "\n"


def render_report(verdicts: list[Any], output: ReportFormat) -> str:
    from nvcre.runtime.report import text as report_text

    if output is ReportFormat.json:
        return _json_report(verdicts)
    return report_text.render_many(verdicts)  # one banner, then each run with its own Summary


@dataclass(frozen=True)
class ReportFiles:
    """Where a command also writes its report: JSON (``--results-file``) and JUnit XML (``--junit``)."""

    results: Path | None = None
    junit: Path | None = None
    #: ``--evidence DIR`` (and the loaded ``--sign-key``): the bundle the run writes once it ends
    evidence: Path | None = None
    signer: Signer | None = None

    def write(self, verdicts: list[Any]) -> None:
        from nvcre.runtime.report import junit as report_junit

        if self.results is not None:
            _write_file(self.results, _json_report(verdicts), "Results", "results file")
        if self.junit is not None:
            _write_file(self.junit, report_junit.dumps(verdicts), "JUnit report", "JUnit report")


EvidenceOption = Annotated[
    Path | None, typer.Option("--evidence", help="With --wait: write the run's evidence bundle to this new directory.")
]
SignKeyOption = Annotated[
    Path | None, typer.Option("--sign-key", help="With --evidence: sign the bundle with this PEM private key (ECDSA P-256 or Ed25519).")
]


def run_report_files(results: Path | None, junit: Path | None, evidence: Path | None, sign_key: Path | None, wait: bool) -> ReportFiles:
    """The report files of a run command; ``--evidence``/``--sign-key`` are checked (exit 2) before anything runs."""
    if evidence is None and sign_key is None:
        return ReportFiles(results, junit)
    if sign_key is not None and evidence is None:
        raise fail_invalid("--sign-key requires --evidence: it signs the evidence bundle")
    if not wait:
        raise fail_invalid("--evidence requires --wait: the bundle is written once the run ends")
    assert evidence is not None
    if evidence.exists() and (not evidence.is_dir() or any(evidence.iterdir())):
        raise fail_invalid(f"--evidence: {evidence} exists and is not an empty directory")
    from .evidence import load_signer_or_exit

    return ReportFiles(results, junit, evidence, load_signer_or_exit(sign_key))


def _write_file(path: Path, text: str, label: str, what: str) -> None:
    try:
        path.write_text(text)
        sys.stderr.write(f"{label} written to {path}\n")
    except OSError as exc:
        sys.stderr.write(f"Warning: failed to write {what} {path}: {exc}\n")


def run_not_found(kube: Any, error: Exception, kind: str, name: str, namespace: str) -> typer.Exit:
    """Print the not-found error, with where the run is when it is elsewhere; exit 1."""
    sys.stderr.write(f"error: {error}{_wrong_namespace_hint(kube, kind, name, namespace)}\n")
    return typer.Exit(EXIT_FAILURE)


def _wrong_namespace_hint(kube: Any, kind: str, name: str, namespace: str) -> str:
    from nvcre.runtime.ops.submit import resource_for_kind

    if namespace != "default":
        return ""
    try:
        found = kube.list(resource_for_kind(kind), None, field_selector=f"metadata.name={name}").items
    except Exception:  # noqa: BLE001 - the hint is a courtesy; a failed list just omits it
        return ""
    spaces = sorted({str(o["metadata"]["namespace"]) for o in found})
    if not spaces:
        return ""
    return (
        f"\n{kind} {name!r} exists in namespace(s) {', '.join(spaces)}; `certification run` creates its own "
        f"namespace, so pass -n {spaces[0]}"
    )


def report_runs(
    kind: str, names: list[str], namespace: str, output: ReportFormat, files: ReportFiles, kubeconfig: Path | None, context: str | None
) -> None:
    from nvcre.runtime.ops.collect import RunNotFound

    kube = common.kube_client(kubeconfig, context)
    verdicts = []
    for name in names:
        try:
            verdicts.append(build_verdict(kube, kind, name, namespace))
        except RunNotFound as exc:
            raise run_not_found(kube, exc, kind, name, namespace) from None
    sys.stdout.write(render_report(verdicts, output))
    files.write(verdicts)
    problems = []
    for name, verdict in zip(names, verdicts):
        result = verdict_result(verdict)
        if result == "FAILED":
            problems.append(f'{kind.lower()} "{name}" failed')
        elif result != "PASSED":
            problems.append(f'{kind.lower()} "{name}" is still running')
    if problems:
        sys.stderr.write("error: " + "; ".join(problems) + "\n")
        raise typer.Exit(EXIT_FAILURE)


def verdict_result(verdict: Any) -> str:
    """PASSED, FAILED or IN PROGRESS as the verdict model says (INCOMPLETE counts as passed)."""
    from nvcre.runtime.ops.run import verdict_result as result

    return result(verdict)
