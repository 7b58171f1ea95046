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

from tests.goldenharness import cases, check_render_case

CASES = cases("workloadrun")


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 12
    assert sum(1 for case in CASES if case.name.startswith("error-")) >= 5


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_workloadrun_case(case: Path, update_golden: bool) -> None:
    from nvcre.compiler.workloadrun import render_workloadrun

    check_render_case(case, "workloadrun.yaml", render_workloadrun, update_golden)
