"""A small golden-file harness: compare produced text to a reviewed file, or rewrite it on request.

A mismatch leaves ``<file>.actual`` beside the golden file and fails with a short semantic diff
(what changed in the parsed documents, from deepdiff) above the unified text diff, so a reviewer
sees the meaning first and the bytes second. ``pytest --update-golden`` rewrites golden files
instead; read every changed line before committing them.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Callable

import pytest

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "golden"


def cases(suite: str) -> list[Path]:
    return sorted(p for p in (GOLDEN / suite).iterdir() if p.is_dir())


def _semantic_diff(expected: str, actual: str, parse: Callable[[str], Any] | None) -> str:
    if parse is None:
        return ""
    from deepdiff import DeepDiff

    try:
        diff = DeepDiff(parse(expected), parse(actual), view="tree")
    except Exception as exc:  # a golden that no longer parses is itself the news
        return f"(semantic diff unavailable: {exc})\n"
    if not diff:
        return "semantic diff: none (only formatting differs)\n"
    lines = []
    for kind, changes in diff.items():
        for change in list(changes)[:20]:
            lines.append(f"  {kind}: {change.path(output_format='list')}")
    return "semantic diff:\n" + "\n".join(lines) + "\n"


def check(golden_file: Path, actual: str, update: bool, parse: Callable[[str], Any] | None = None) -> None:
    """Assert ``actual`` equals the golden file's text (or rewrite it when ``update``)."""
    actual_file = golden_file.with_name(golden_file.name + ".actual")
    if update:
        golden_file.write_text(actual, encoding="utf-8")
        actual_file.unlink(missing_ok=True)
        return
    if not golden_file.exists():
        actual_file.write_text(actual, encoding="utf-8")
        pytest.fail(f"{golden_file.relative_to(REPO)} does not exist; wrote {actual_file.name} (run pytest --update-golden to accept)")
    expected = golden_file.read_text(encoding="utf-8")
    if expected == actual:
        actual_file.unlink(missing_ok=True)
        return
    actual_file.write_text(actual, encoding="utf-8")
    text_diff = "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True), "expected", "actual", n=2))
    pytest.fail(
        f"{golden_file.relative_to(REPO)} differs (actual output in {actual_file.name})\n"
        + _semantic_diff(expected, actual, parse)
        + text_diff[:6000],
        pytrace=False,
    )


def diagnostics_text(diagnostics) -> str:
    """Diagnostics the way the CLI prints them on stderr."""
    return "".join(f"{d.severity.value}: {d.render()}\n" for d in diagnostics)


def check_render_case(case: Path, source: str, renderer, update: bool) -> None:
    """Render ``case/source`` (+ optional ``facts.yaml``, ``flags.yaml``) and compare with the case.

    A case expects ``expected.yaml`` (the YAML stream, plus ``diagnostics.txt`` when the render
    warns) or ``error.txt`` (every diagnostic of a failed render). Every render runs with the
    purity check, so a pass that mutates its input fails the golden suite too.
    """
    from nvcre.compiler.diagnostics import CompileError
    from nvcre.compiler.emit import dump_yaml_stream
    from nvcre.compiler.facts import load_facts
    from nvcre.compiler.yamlio import load_documents, load_file

    flags = load_file(case / "flags.yaml")[0] if (case / "flags.yaml").exists() else {}
    facts = load_facts(case / "facts.yaml") if (case / "facts.yaml").exists() else None
    try:
        rendered = renderer(
            load_file(case / source)[0],
            facts=facts,
            platform=flags.get("platform"),
            gpu_arch=flags.get("gpuArch"),
            check_purity=True,
        )
    except CompileError as exc:
        notes = diagnostics_text(exc.diagnostics)
        assert not (case / "expected.yaml").exists() or update, f"{case.name}: render failed:\n{notes}"
        check(case / "error.txt", notes, update)
        return
    notes = diagnostics_text(rendered.diagnostics)
    assert not (case / "error.txt").exists() or update, f"{case.name}: expected an error, render succeeded"
    check(case / "expected.yaml", dump_yaml_stream(rendered.workflows), update, parse=lambda text: load_documents(text))
    if notes or (case / "diagnostics.txt").exists():
        check(case / "diagnostics.txt", notes, update)
