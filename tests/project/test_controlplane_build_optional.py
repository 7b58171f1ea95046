"""The control-plane build is optional off CI (the integration tests then skip) and required on CI."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

import nvcre.testing.gobuild.build as shipped

# A fresh copy of the module per test, so the tests' stand-ins never reach the one the harness uses.
BUILD = Path(shipped.__file__)


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


def test_real_node_binaries_are_never_part_of_the_default_build(build) -> None:
    assert {"kubelet", "kube-proxy"} <= set(build.COMPONENTS)
    assert not {"kubelet", "kube-proxy"} & set(build.DEFAULT_COMPONENTS)
    assert build.NODE_COMPONENTS == ("kubelet", "kube-proxy")
    # their sources live apart, so adding them did not change the control plane's cache key
    assert not any(template.name.startswith(("pause", "coredns", "deviceplugin")) for template in build.TEMPLATE_DIR.glob("*.in"))


def test_real_without_go_says_what_it_needs(build, monkeypatch, capsys, tmp_path) -> None:
    monkeypatch.setenv("NVCRE_CONTROLPLANE_CACHE", str(tmp_path))
    monkeypatch.delenv("CI", raising=False)
    assert build.main(["--real"]) == 1
    assert "Go toolchain was not found" in capsys.readouterr().err
    assert {"kubelet", "kube-proxy", "cni-plugins", "coredns", "pause", "device-plugin"} == set(build.real_missing())


def _has_interpreter(elf: bytes) -> bool:
    """Whether a 64-bit little-endian ELF file asks for a dynamic loader (a PT_INTERP header)."""
    import struct

    phoff = struct.unpack_from("<Q", elf, 0x20)[0]
    size, count = struct.unpack_from("<HH", elf, 0x36)
    return any(struct.unpack_from("<I", elf, phoff + i * size)[0] == 3 for i in range(count))


def test_the_sandbox_program_is_compiled_static_and_cached_by_its_source(build, monkeypatch, tmp_path) -> None:
    if build.find_cc() is None:
        pytest.skip("no C compiler")
    monkeypatch.setenv("NVCRE_CONTROLPLANE_CACHE", str(tmp_path))
    path = build.build_pause()
    assert path.parent.parent.name == f"pause-{build._pause_inputs_digest()[:12]}"
    import subprocess

    assert subprocess.run([str(path), "-v"], capture_output=True, text=True, check=True).stdout.strip() == "nvcre-pause 1"
    assert not _has_interpreter(path.read_bytes())  # static: it runs alone in an empty image
    before = path.stat().st_mtime_ns
    assert build.build_pause() == path and path.stat().st_mtime_ns == before  # cached


def test_the_tools_real_nodes_need_are_pinned_modules_with_our_own_main_for_coredns(build) -> None:
    cni = build.TOOLS["cni-plugins"]
    assert (cni.module, cni.version) == ("github.com/containernetworking/plugins", "v1.10.0")
    assert [b for b, _ in cni.binaries] == ["bridge", "host-local", "loopback"]
    coredns = build.TOOLS["coredns"]
    assert coredns.overlay == (("cmd/nvcre-coredns/main.go", "real/coredns_main.go.in"),)
    main = (build.TEMPLATE_DIR / "real/coredns_main.go.in").read_text()
    assert "plugin/kubernetes" in main and "plugin/forward" not in main
