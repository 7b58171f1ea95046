"""The Flux example: the committed render is current and kustomize-controller-ready."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from nvcre.cli.gitops import load_config, stale_outputs
from nvcre.compiler.emit import dump_yaml_stream
from nvcre.compiler.render import render_certification
from nvcre.compiler.yamlio import load_documents

REPO = Path(__file__).resolve().parents[2]
FLUX = REPO / "examples" / "flux"
KUBECTL = shutil.which("kubectl")
REFRESH = "python -m nvcre.cli.gitops check-renders -c examples/flux/nvcre-renders.yaml --fix"


def test_the_committed_render_is_current() -> None:
    stale = [line for spec in load_config(FLUX / "nvcre-renders.yaml") for line in stale_outputs(spec)]
    assert stale == [], f"examples/flux is stale; refresh it with: {REFRESH}"


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kustomize_builds_the_render_of_the_source() -> None:
    (spec,) = load_config(FLUX / "nvcre-renders.yaml")
    built = subprocess.run([KUBECTL, "kustomize", str(spec.output_dir)], capture_output=True, text=True, timeout=60, check=True)
    source = load_documents(spec.source.read_text())[0]
    expected = render_certification(source, platform=spec.platform, gpu_arch=spec.gpu_arch)
    assert built.stdout == dump_yaml_stream(expected.workflows), f"refresh with: {REFRESH}"


def test_flux_kustomization_points_at_the_render_folder() -> None:
    docs = load_documents((FLUX / "clusters" / "lab" / "nvcre-certifications.yaml").read_text())
    by_kind = {d["kind"]: d for d in docs}
    assert set(by_kind) == {"GitRepository", "Kustomization"}
    kustomization = by_kind["Kustomization"]
    assert kustomization["apiVersion"] == "kustomize.toolkit.fluxcd.io/v1"
    assert kustomization["spec"]["sourceRef"] == {"kind": "GitRepository", "name": by_kind["GitRepository"]["metadata"]["name"]}
    path = REPO / kustomization["spec"]["path"]
    (spec,) = load_config(FLUX / "nvcre-renders.yaml")
    assert path.resolve() == spec.output_dir.resolve()
    assert (path / "kustomization.yaml").is_file()
