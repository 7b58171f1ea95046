"""Golden cases for WorkloadRun rendering: ``golden/workloadrun/<case>/``.

A case holds ``workloadrun.yaml`` and optionally ``facts.yaml`` (cluster objects) and
``flags.yaml`` (``platform``, ``gpuArch``). It expects either ``expected.yaml`` (the exact
``nvcrectl workloadrun render`` output, plus ``diagnostics.txt`` when the render prints any
diagnostic) or ``error.txt`` (every diagnostic of a failed render, exit code 2). Every case runs with
the purity check, which proves no pass changed its input.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from goldenharness import cases, check
from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.emit import dump_yaml_stream
from nvcre.compiler.yamlio import load_documents, load_file

CASES = cases("workloadrun")


def _lines(diagnostics) -> str:
    return "".join(f"{d.severity.value}: {d.render()}\n" for d in diagnostics)


def _render_case(case: Path) -> tuple[str, str, bool]:
    """(stdout, diagnostics text, failed) for one case, as the CLI would produce them."""
    from nvcre.compiler.facts import load_facts
    from nvcre.compiler.workloadrun import render_workloadrun

    flags = load_file(case / "flags.yaml")[0] if (case / "flags.yaml").exists() else {}
    document = load_file(case / "workloadrun.yaml")[0]
    facts = load_facts(case / "facts.yaml") if (case / "facts.yaml").exists() else None
    try:
        rendered = render_workloadrun(
            document, facts=facts, platform=flags.get("platform"), gpu_arch=flags.get("gpuArch"), check_purity=True
        )
    except CompileError as exc:
        return "", _lines(exc.diagnostics), True
    return dump_yaml_stream(rendered.workflows), _lines(rendered.diagnostics), False


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 12
    assert sum(1 for case in CASES if case.name.startswith("error-")) >= 5


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_workloadrun_case(case: Path, update_golden: bool) -> None:
    stdout, notes, failed = _render_case(case)
    if failed:
        assert not (case / "expected.yaml").exists() or update_golden, f"{case.name}: render failed:\n{notes}"
        check(case / "error.txt", notes, update_golden)
        return
    assert not (case / "error.txt").exists() or update_golden, f"{case.name}: expected an error, render succeeded"
    check(case / "expected.yaml", stdout, update_golden, parse=lambda text: load_documents(text))
    if notes or (case / "diagnostics.txt").exists():
        check(case / "diagnostics.txt", notes, update_golden)
