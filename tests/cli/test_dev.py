"""`nvcrectl dev up/env/fault/status/down`: bad input exits 2 before anything starts, and no
cluster is reported plainly (a real simulated cluster coming up and going away: tests/integration/test_dev_up_sim.py)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nvcre.cli.dev import app


@pytest.fixture
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache root of its own, so no real cluster state is seen or touched."""
    monkeypatch.setenv("NVCRE_CONTROLPLANE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["up", "--profile", "a10"], "--profile: unknown profile 'a10'"),
        (["up", "--nodes", "0"], "--nodes: must be at least 1"),
        (["up", "--platform", "mars"], "--platform: unknown platform 'mars'"),
        (["up", "--fault", "h100-onprem-0"], "--fault[0]: fault 'h100-onprem-0' must look like NODE=KIND"),
        (["up", "--fault", "h100-onprem-0=melt"], "--fault[0]: unknown fault 'melt'"),
        (["up", "--nodes", "2", "--fault", "h100-onprem-5=xid"], "--fault[0]: no node 'h100-onprem-5'"),
        (["up", "--system-nodes", "-1"], "--system-nodes: must not be negative, got -1"),
        (["fault", "gpu-0=slow-link:7"], "fault[0]: fault 'slow-link:7': the slow-link factor must be in (0, 1]"),
        (["status", "-o", "yaml"], "--output: must be text or json"),
        (["up", "--real", "--profile", "a10"], "--profile: unknown profile 'a10'"),
        (["up", "--real", "--profile", "gb200-dra"], "--profile: gb200-dra publishes GPUs through DRA"),
        (["up", "--real", "--nodes", "17"], "--nodes: at most 16 real nodes, got 17"),
        (["up", "--real", "--fault", "h100-onprem-0=xid"], "--fault[0]: unknown fault 'xid' on real nodes"),
        (
            ["up", "--real", "--fault", "h100-onprem-0=killed-rank", "--fault", "h100-onprem-9=killed-rank"],
            "--fault[1]: no node 'h100-onprem-9'",
        ),
        (
            ["up", "--real", "--platform", "aws", "--fault", "h100-onprem-0=stopped-kubelet"],
            "--fault[0]: no node 'h100-onprem-0'; the nodes will be h100-aws-0, h100-aws-1",
        ),
        (["up", "--real", "--fault", "h100-onprem-0=slow-link"], "--fault[0]: fault 'slow-link': give a rate"),
        (["up", "--real", "--with-prometheus"], "--with-prometheus and --system-nodes are not available with --real"),
    ],
)
def test_bad_input_exits_2_with_the_option_named(isolated_cache: Path, args: list[str], message: str) -> None:
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    assert not (isolated_cache / "run").exists()  # nothing was started or written


def test_without_a_running_cluster_each_command_says_so(isolated_cache: Path) -> None:
    env = invoke("env")
    assert env.exit_code == 1 and "no simulated cluster is running" in env.output
    status = invoke("status", "-o", "json")
    assert status.exit_code == 0 and json.loads(status.output) == {"running": False}
    assert invoke("status").output.strip() == "no simulated cluster is running"
    assert invoke("down").output.strip() == "no simulated cluster is running"
    fault = invoke("fault", "gpu-0=xid")
    assert fault.exit_code == 1 and "no simulated cluster is running" in fault.output


def test_with_controller_is_refused_when_the_controller_is_not_importable(isolated_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import nvcre.testing.simsession as simsession

    monkeypatch.setattr(simsession, "controller_available", lambda: False)
    result = invoke("up", "--with-controller")
    assert result.exit_code == 2 and "--with-controller" in result.output


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


def test_a_recorded_supervisor_is_known_by_pid_and_start_time_whatever_its_command_line() -> None:
    from nvcre.testing.session import _is_recorded, _started

    me = os.getpid()
    assert _is_recorded({"supervisor_pid": me, "supervisor_started": _started(me)}, "no-such-marker")
    assert not _is_recorded({"supervisor_pid": me, "supervisor_started": (_started(me) or 0) + 1}, "no-such-marker")
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert not _is_recorded({"supervisor_pid": gone.pid, "supervisor_started": 1}, "true")


def test_dev_up_real_without_what_real_nodes_need_says_so_and_starts_nothing(isolated_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nvcre.testing.realnodes import toolchain

    monkeypatch.setattr(toolchain, "machine_problems", lambda: ["real nodes need root (the kubelet, containerd and the namespaces)"])
    result = invoke("up", "--real", "--nodes", "2")
    assert result.exit_code == 1, result.output
    assert "error: real nodes need root" in result.output and "Traceback" not in result.output
    assert not (isolated_cache / "run").exists()
