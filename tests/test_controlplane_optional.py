"""The control-plane build is optional off CI (the integration tests then skip) and required on CI."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BUILD = Path(__file__).resolve().parent / "controlplane" / "build.py"


@pytest.fixture
def build(monkeypatch: pytest.MonkeyPatch):
    spec = importlib.util.spec_from_file_location("controlplane_build", BUILD)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "find_go", lambda: None)
    monkeypatch.setattr(module, "missing_components", lambda wanted: list(wanted))
    return module


def test_without_go_off_ci_the_build_is_skipped(build, monkeypatch, capsys) -> None:
    monkeypatch.delenv("CI", raising=False)
    assert build.main(["--optional"]) == 0
    assert "Go not found" in capsys.readouterr().err


def test_without_go_on_ci_the_build_fails(build, monkeypatch, capsys) -> None:
    monkeypatch.setenv("CI", "true")
    assert build.main(["--optional"]) == 1
    assert "Go toolchain was not found" in capsys.readouterr().err


def test_without_optional_a_missing_toolchain_is_an_error(build, monkeypatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    assert build.main([]) == 1


def test_the_simulated_cluster_build_follows_the_same_rules(build, monkeypatch, capsys) -> None:
    monkeypatch.setattr(build, "missing_sim_components", lambda wanted=(): list(wanted))
    monkeypatch.delenv("CI", raising=False)
    assert build.main(["--optional", "--sim"]) == 0
    assert "Go not found" in capsys.readouterr().err
    monkeypatch.setenv("CI", "true")
    assert build.main(["--optional", "--sim-only"]) == 1
    assert "Go toolchain was not found" in capsys.readouterr().err


def test_fetching_crds_without_go_says_what_it_needs(build, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("NVCRE_CONTROLPLANE_CACHE", str(tmp_path))
    assert build.sim_data_missing() == ["jobset", "trainer", "kwok"]
    with pytest.raises(build.BuildError, match="JobSet and Trainer CRDs"):
        build.fetch_sim_data(["jobset"])


def test_crds_and_stages_are_copied_out_of_a_module_tree(build, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("NVCRE_CONTROLPLANE_CACHE", str(tmp_path / "cache"))
    kwok = build.SIM_COMPONENTS["kwok"]
    module = tmp_path / "kwok@v0.8.0"
    (module / kwok.crd_dir).mkdir(parents=True)
    (module / kwok.crd_dir / "kwok.x-k8s.io_stages.yaml").write_text("kind: CustomResourceDefinition\n")
    (module / kwok.crd_dir / "kustomization.yaml").write_text("resources: []\n")
    for rel in kwok.stage_files:
        (module / rel).parent.mkdir(parents=True, exist_ok=True)
        (module / rel).write_text("kind: Stage\n")
    crds, stages = build._copy_sim_data(kwok, module)
    assert crds == ["kwok.x-k8s.io_stages.yaml"]
    assert sorted(stages) == sorted(Path(r).name for r in kwok.stage_files)
    assert build.sim_data_missing(["kwok"]) == []
    assert build.missing_sim_components(["kwok"]) == ["kwok"]  # CRDs alone are not a build
