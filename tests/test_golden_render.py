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

from goldenharness import cases, check
from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.emit import dump_yaml_stream
from nvcre.compiler.yamlio import load_documents, load_file

RENDER_CASES = cases("render")
VALIDATE_CASES = cases("validate")


def _render_case(case: Path) -> tuple[str, str, bool]:
    """(stdout, diagnostics text, failed) for one case, as the CLI would produce them."""
    from nvcre.compiler.facts import load_facts
    from nvcre.compiler.render import render_certification

    flags = load_file(case / "flags.yaml")[0] if (case / "flags.yaml").exists() else {}
    document = load_file(case / "certification.yaml")[0]
    facts = load_facts(case / "facts.yaml") if (case / "facts.yaml").exists() else None
    try:
        rendered = render_certification(
            document, facts=facts, platform=flags.get("platform"), gpu_arch=flags.get("gpuArch"), check_purity=True
        )
    except CompileError as exc:
        return "", "".join(f"{d.severity.value}: {d.render()}\n" for d in exc.diagnostics), True
    notes = "".join(f"{d.severity.value}: {d.render()}\n" for d in rendered.diagnostics)
    return dump_yaml_stream(rendered.workflows), notes, False


@pytest.mark.parametrize("case", RENDER_CASES, ids=[c.name for c in RENDER_CASES])
def test_render_case(case: Path, update_golden: bool) -> None:
    stdout, notes, failed = _render_case(case)
    if failed:
        assert not (case / "expected.yaml").exists() or update_golden, f"{case.name}: render failed:\n{notes}"
        check(case / "error.txt", notes, update_golden)
        return
    assert not (case / "error.txt").exists() or update_golden, f"{case.name}: expected an error, render succeeded"
    check(case / "expected.yaml", stdout, update_golden, parse=lambda text: load_documents(text))
    if notes or (case / "diagnostics.txt").exists():
        check(case / "diagnostics.txt", notes, update_golden)


@pytest.mark.parametrize("case", VALIDATE_CASES, ids=[c.name for c in VALIDATE_CASES])
def test_validate_case(case: Path, update_golden: bool) -> None:
    from nvcre.compiler.api.validate import validate

    source = next(p for p in (case / "certification.yaml", case / "workloadrun.yaml") if p.exists())
    found = validate(load_file(source)[0])
    text = "".join(f"{d.severity.value}: {d.render()}\n" for d in found if d.is_error)
    check(case / "error.txt", text, update_golden)
