"""``dev up --real --with-controller`` is taken (JobSet, the Trainer and the nvcre controller run on
real nodes) and reaches the supervisor; what real nodes still lack is refused with exit 2 before
anything starts. No environment is started here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from nvcre.cli.dev import app


@pytest.fixture
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache root of its own, so no real environment's state is seen or touched."""
    monkeypatch.setenv("NVCRE_CONTROLPLANE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_with_controller_passes_the_option_checks_on_real_nodes(isolated_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import nvcre.testing.simsession as simsession

    # A simulated cluster "running" stops the command right after the option checks, before any build or start.
    monkeypatch.setattr(simsession, "read_state", lambda: {"supervisor_pid": 1})
    result = CliRunner().invoke(app, ["up", "--real", "--nodes", "2", "--with-controller"])
    assert result.exit_code == 1, result.output
    assert "a simulated cluster is running" in result.output and "not available with --real" not in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--with-prometheus"], "--with-prometheus and --system-nodes are not available with --real yet"),
        (["--system-nodes", "1"], "--with-prometheus and --system-nodes are not available with --real yet"),
    ],
)
def test_what_real_nodes_still_lack_is_refused_with_exit_2(isolated_cache: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["up", "--real", *args])
    assert result.exit_code == 2 and message in result.output, result.output
    assert "Traceback" not in result.output and not (isolated_cache / "run").exists()


def test_with_controller_on_real_nodes_is_refused_when_the_controller_is_not_importable(
    isolated_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nvcre.testing.simsession as simsession

    monkeypatch.setattr(simsession, "controller_available", lambda: False)
    result = CliRunner().invoke(app, ["up", "--real", "--with-controller"])
    assert result.exit_code == 2 and "--with-controller: the nvcre controller (nvcre.runtime) is not importable here" in result.output


def test_the_supervisor_takes_with_controller_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from nvcre.testing.realnodes import session

    seen: dict[str, Any] = {}
    monkeypatch.setattr(session, "serve", lambda **kwargs: seen.update(kwargs) or 0)
    assert session.main(["--nodes", "2", "--with-controller"]) == 0
    assert seen["with_controller"] is True and seen["nodes"] == 2
    seen.clear()
    assert session.main(["--nodes", "1"]) == 0
    assert seen["with_controller"] is False


def test_controllers_without_their_crds_are_refused_before_anything_starts() -> None:
    from nvcre.testing.realnodes.cluster import RealCluster, RealClusterError

    with pytest.raises(RealClusterError, match="need their CRDs"):
        RealCluster(nodes=1, crd_dirs=[], controllers=True)
