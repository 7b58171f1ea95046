"""Overlay failures become diagnostics that name the pass and the overlay, never bare exceptions.

Each test writes a one-overlay platforms folder, renders one category against it and checks the
CompileError: a ``when`` expression CEL cannot evaluate, and operations whose values have the
wrong shape (``replaceArgs`` with a list, non-string arguments, a ``pod`` given a list...).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.overlays import PatchError, apply_operation, load_overlays
from nvcre.compiler.render import render_certification

CERT = {
    "apiVersion": "nvcre.nvidia.com/v1alpha1",
    "kind": "Certification",
    "metadata": {"name": "cert"},
    "spec": {
        "target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}},
        "categories": [{"domain": "communication", "variant": "nccl-all-reduce", "options": {"nodesPerJob": 2}}],
    },
}


def _overlay_root(tmp_path: Path, expression: str | None, patches: str) -> Path:
    folder = tmp_path / "site"
    folder.mkdir()
    when = "  platform: {in: [onprem]}\n  gpuArchitecture: {in: [h100]}\n"
    if expression is not None:
        when += f"  expression: '{expression}'\n"
    (folder / "probe.yaml").write_text(
        "name: site-probe\nreason: a probe overlay for the error tests\norder: 100\nwhen:\n"
        + when
        + "patches: site/probe.patches.yaml.j2\n",
        encoding="utf-8",
    )
    (folder / "probe.patches.yaml.j2").write_text(patches, encoding="utf-8")
    return tmp_path


def _errors(tmp_path: Path, expression: str | None, patches: str) -> list[str]:
    overlays = load_overlays(str(_overlay_root(tmp_path, expression, patches)))
    with pytest.raises(CompileError) as caught:
        render_certification(CERT, platform="onprem", gpu_arch="h100", overlays=overlays)
    return [d.render() for d in caught.value.errors]


@pytest.mark.parametrize(
    "expression",
    [
        "options.noSuchOption > 0",  # a missing key: cel-python's CELEvalError
        'options.nodesPerJob > "two"',  # int against string
        "options.nodesPerJob / 0 == 1",  # division by zero
    ],
)
def test_a_when_expression_that_cannot_evaluate_names_the_overlay_and_the_pass(tmp_path, expression):
    lines = _errors(tmp_path, expression, "- trainer: {}\n")
    assert len(lines) == 1, lines
    line = lines[0]
    assert "overlay site-probe (site/probe.yaml) when.expression" in line
    assert "pass apply_overlays" in line and "communication/nccl-all-reduce" in line
    assert line.endswith("[OverlayConditionFailed]")


def test_a_when_expression_that_is_fine_still_matches(tmp_path):
    rendered = render_certification(
        CERT,
        platform="onprem",
        gpu_arch="h100",
        overlays=load_overlays(str(_overlay_root(tmp_path, "options.nodesPerJob == 2", "- trainer: {numNodes: 2}\n"))),
    )
    assert "site-probe" in rendered.workflows[0]["metadata"]["annotations"]["nvcre.nvidia.com/applied-overlays"]


@pytest.mark.parametrize(
    "patches,needle",
    [
        ("- replaceArgs: [a, b]\n", "replaceArgs takes a mapping"),
        ("- replaceArgs: {}\n", "non-empty mapping"),
        ("- replaceArgs: {'-x': 3}\n", "must be strings"),
        ("- replaceArgs: {'no-such-arg': x}\n", "trainer args hold no 'no-such-arg'"),
        ("- pod: [node]\n", "pod takes a mapping"),
        ("- container: {jobs: 7, name: node}\n", "container: the patch does not fit"),
        ("- mpiEnv: {NCCL_DEBUG: INFO}\n", "mpiEnv takes a list"),
        ("- mpiEnv: [NCCL_DEBUG]\n", "mpiEnv takes a list of {name, value} mappings"),
        ("- dependencies: {kind: ConfigMap}\n", "dependencies takes a list"),
        ("- jsonPatch: [{op: remove, path: /spec/nothing}]\n", "jsonPatch:"),
    ],
)
def test_a_malformed_operation_is_a_diagnostic_naming_the_overlay(tmp_path, patches, needle):
    lines = _errors(tmp_path, None, patches)
    assert len(lines) == 1, lines
    line = lines[0]
    assert "overlay site-probe (site/probe.yaml) patch[0]" in line
    assert "pass apply_overlays" in line
    assert needle in line, line
    assert line.endswith("[OverlayPatchFailed]")


def test_replace_args_without_trainer_args_is_a_patch_error():
    with pytest.raises(PatchError, match="needs trainer args"):
        apply_operation({"spec": {}}, {"replaceArgs": {"a": "b"}}, {}, "probe")
