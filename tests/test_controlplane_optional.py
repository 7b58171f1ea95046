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
