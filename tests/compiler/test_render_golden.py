"""Golden cases for the compiler: ``golden/render/<case>/`` and ``golden/validate/<case>/``.

A render case holds ``certification.yaml`` and optionally ``facts.yaml`` (cluster objects) and
``flags.yaml`` (``platform``, ``gpuArch``). It expects either ``expected.yaml`` (the exact
``nvcrectl certification render`` output, plus ``diagnostics.txt`` when the render warns) or
``error.txt`` (every error line, exit code 2). A validate case holds ``certification.yaml``
(or ``workloadrun.yaml``) and ``error.txt`` with the offline validation errors.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nvcre.compiler.yamlio import load_file
from tests.goldenharness import cases, check, check_render_case, diagnostics_text

RENDER_CASES = cases("render")
VALIDATE_CASES = cases("validate")


@pytest.mark.parametrize("case", RENDER_CASES, ids=[c.name for c in RENDER_CASES])
def test_render_case(case: Path, update_golden: bool) -> None:
    from nvcre.compiler.render import render_certification

    check_render_case(case, "certification.yaml", render_certification, update_golden)


@pytest.mark.parametrize("case", VALIDATE_CASES, ids=[c.name for c in VALIDATE_CASES])
def test_validate_case(case: Path, update_golden: bool) -> None:
    from nvcre.compiler.api.validate import validate

    source = next(p for p in (case / "certification.yaml", case / "workloadrun.yaml") if p.exists())
    found = validate(load_file(source)[0])
    text = diagnostics_text(d for d in found if d.is_error)
    check(case / "error.txt", text, update_golden)
